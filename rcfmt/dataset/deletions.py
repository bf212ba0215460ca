"""Deletion vectors of a dataset's files: where a version records them, how they are
written and read back (docs/DATASET.md §3.4).

A deletion vector is the set of deleted row positions of one data file, serialized as
a 64-bit Roaring bitmap in its portable layout (:mod:`rcfmt.dataset.deletion_vector`).
A version's index entry of the file describes it (:class:`DeletionVector`): its
cardinality, the CRC-32 and size of its bytes, and where they are -- inline in the
entry when small (:data:`INLINE_MAX` bytes), else at an offset of a deletion file
``_rcfmt/deletions/dv-<transaction>.rcdv`` that the committing writer wrote, holding
every vector of that commit back to back after an 8-byte header. Deletion files are
immutable under their unique names, published before the version that names them, and
removed by vacuum once no retained version names them.

Readers load a vector (:func:`load`) with every check a forged one needs: the size
bounded by what a file of its rows can need before anything is read, the CRC, then the
codec's own checks (positions below the file's rows, the declared cardinality).
"""
from __future__ import annotations

import collections
import os
import threading
import zlib

import numpy as np

from ..runtime.records import record, replace
from ..errors import CorruptFileError
from ..storage import is_remote, open_input, open_output
from ..storage.paths import check_inside
from . import deletion_vector, log

__all__ = ["DeletionVector", "DeletionFileWriter", "load", "DV_COLUMNS", "DV_DIR", "INLINE_MAX", "MAGIC",
           "max_vector_bytes", "union"]

#: the directory of deletion files, under ``_rcfmt/``
DV_DIR = "deletions"
#: vectors of at most this many bytes are kept in the index entry itself
INLINE_MAX = 256
#: the first bytes of a deletion file: magic and format version
MAGIC = b"RCDV\x01\x00\x00\x00"
#: the index columns of a file's deletion vector (docs/DATASET.md §3.4)
DV_COLUMNS = ("deleted_rows", "dv_path", "dv_offset", "dv_size", "dv_crc32", "dv_inline")
#: decoded vectors kept per process, by where their bytes are (they never change there)
_CACHE_BYTES = 64 << 20


@record(frozen=True)
class DeletionVector:
    """Where a file's deleted rows are. ``cardinality``: how many; ``path``: the deletion
    file holding the vector (relative to the dataset root in an index entry, absolute in
    a :class:`~rcfmt.dataset.scanning.Fragment`; None when ``inline``); ``offset``,
    ``size``: its bytes there; ``crc32``: of those bytes; ``inline``: the bytes
    themselves, when the entry holds them. Picklable (fragments travel to Spark)."""

    cardinality: int
    path: str | None
    offset: int
    size: int
    crc32: int
    inline: bytes | None = None

    def resolved(self, root: str, checked: dict | None = None) -> "DeletionVector":
        """This vector with its deletion file's path made absolute under ``root``
        (CorruptFileError for a local one that resolves outside it: a link).
        ``checked``: ``{relative path: absolute path}`` of the deletion files already
        checked, for a caller resolving many vectors (a commit's share one file); it is
        filled in."""
        if self.path is None:
            return self
        if is_remote(root):
            return replace(self, path=root.rstrip("/") + "/" + self.path)
        where = None if checked is None else checked.get(self.path)
        if where is None:
            where = check_inside(root, os.path.join(root, *self.path.split("/")), what="deletion file")
            if checked is not None:
                checked[self.path] = where
        return replace(self, path=where)


def max_vector_bytes(num_rows: int) -> int:
    """The most bytes the portable layout needs for any set of rows of a file of
    ``num_rows`` rows (every container a bitmap, plus headers): a declared size above
    it is forged."""
    containers = num_rows // 65536 + 1
    buckets = num_rows // (1 << 32) + 1
    # (per container: its header and offset, and a bit of the run bitset)
    return 8 + buckets * 16 + containers * (8192 + 8) + containers // 8 + buckets + 8


_cache: "collections.OrderedDict" = collections.OrderedDict()
_cache_bytes = 0
_cache_lock = threading.Lock()


def load(dv: DeletionVector, num_rows: int, file_path: str | None = None, cached: bool = True) -> np.ndarray:
    """The deleted row positions (sorted, distinct int64, read-only) of a file of
    ``num_rows`` rows; CorruptFileError for anything forged or missing. ``cached=False``
    reads and checks the bytes again (a vector is written once, under a unique name, so
    reads may keep what they decoded; ``rcfmt check`` does not)."""
    where = dv.path or file_path
    if not 0 < dv.cardinality <= num_rows:
        raise CorruptFileError(f"deletion vector of {dv.cardinality} rows for a file of {num_rows}", path=where)
    if not 0 < dv.size <= max_vector_bytes(num_rows) or dv.offset < 0:
        raise CorruptFileError(f"deletion vector declares {dv.size} bytes at offset {dv.offset}, more than a file "
                               f"of {num_rows} rows can need", path=where)
    key = (dv.path, dv.offset, dv.size, dv.crc32, dv.cardinality, num_rows, dv.inline)
    with _cache_lock:
        hit = _cache.get(key) if cached else None
        if hit is not None:
            _cache.move_to_end(key)
            return hit
    data = dv.inline if dv.inline is not None else _read(dv)
    if len(data) != dv.size:
        raise CorruptFileError(f"deletion vector holds {len(data)} bytes, its entry says {dv.size}", path=where)
    if zlib.crc32(data) != dv.crc32:
        raise CorruptFileError("deletion vector fails its checksum", path=where)
    rows = deletion_vector.decode(data, num_rows=num_rows, cardinality=dv.cardinality, path=where)
    rows.flags.writeable = False
    _remember(key, rows)
    return rows


def _remember(key, rows: np.ndarray) -> None:
    global _cache_bytes
    with _cache_lock:
        if key in _cache:
            return
        _cache[key] = rows
        _cache_bytes += rows.nbytes
        while _cache_bytes > _CACHE_BYTES and len(_cache) > 1:
            _, old = _cache.popitem(last=False)
            _cache_bytes -= old.nbytes


def _read(dv: DeletionVector) -> bytes:
    """The vector's bytes from its deletion file (one ranged read)."""
    try:
        _, source = open_input(dv.path, tail=0)
    except FileNotFoundError:
        raise CorruptFileError("deletion file named by the dataset index is missing", path=dv.path) from None
    try:
        if dv.offset + dv.size > source.size:  # (before any allocation: the size may be forged)
            raise CorruptFileError(f"deletion file of {source.size} bytes ends before the {dv.size} bytes at offset "
                                   f"{dv.offset} its entry names", path=dv.path)
        out = bytearray(dv.size)
        got = source.read_into(dv.offset, memoryview(out))
    except FileNotFoundError:
        raise CorruptFileError("deletion file named by the dataset index is missing", path=dv.path) from None
    finally:
        source.close()
    if got != dv.size:
        raise CorruptFileError(f"deletion file ends before the {dv.size} bytes at offset {dv.offset} its entry "
                               f"names", path=dv.path)
    return bytes(out)


def union(old: np.ndarray | None, new: np.ndarray) -> np.ndarray:
    """Rows deleted before and now (sorted, distinct)."""
    return new if old is None or not len(old) else np.union1d(old, new).astype(np.int64)


class DeletionFileWriter:
    """The vectors of one commit: small ones inline, the others in one deletion file
    ``_rcfmt/deletions/dv-<txn>.rcdv`` written whole at :meth:`close` (locally under a
    temporary name, fsync'd and renamed; on object storage one upload to a key no
    version names yet). :meth:`discard` removes it (a commit that failed)."""

    def __init__(self, root: str, txn_id: str):
        self.root = root
        self.relpath = f"{log.META_DIR}/{DV_DIR}/dv-{txn_id}.rcdv"
        self._parts = [MAGIC]
        self._offset = len(MAGIC)
        self.written: str | None = None

    def add(self, rows: np.ndarray) -> DeletionVector:
        """The descriptor of the vector of ``rows`` (sorted, distinct file positions)."""
        data = deletion_vector.encode(rows)
        crc = zlib.crc32(data)
        if len(data) <= INLINE_MAX:
            return DeletionVector(len(rows), None, 0, len(data), crc, data)
        dv = DeletionVector(len(rows), self.relpath, self._offset, len(data), crc)
        self._parts.append(data)
        self._offset += len(data)
        return dv

    def close(self) -> None:
        """Write the deletion file, if any vector went to it."""
        if len(self._parts) == 1:
            return
        path = DeletionVector(0, self.relpath, 0, 0, 0).resolved(self.root).path
        if not is_remote(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        sink = open_output(path, atomic=not is_remote(path))
        try:
            for part in self._parts:
                sink.write(part)
            sink.commit()
        except BaseException:
            sink.abort()
            raise
        self.written = path
        if not is_remote(path):
            log.fsync_dir(os.path.dirname(path))

    def discard(self) -> None:
        from ..storage import delete_files

        if self.written is not None:
            delete_files([self.written])
            self.written = None


def file_positions(visible: np.ndarray, deleted: np.ndarray | None) -> np.ndarray:
    """File positions of the rows that are ``visible`` (ascending) among a file's rows
    left after ``deleted``: the k-th row left is row ``k + #(deleted rows before it)``."""
    if deleted is None or not len(deleted):
        return visible
    before = deleted - np.arange(len(deleted), dtype=np.int64)  # rows left before each deleted row
    return visible + np.searchsorted(before, visible, side="right")


def visible_positions(rows: np.ndarray, deleted: np.ndarray | None) -> np.ndarray:
    """The inverse of :func:`file_positions`: each of ``rows`` (not deleted) numbered
    among the rows left."""
    if deleted is None or not len(deleted):
        return rows
    return rows - np.searchsorted(deleted, rows)
