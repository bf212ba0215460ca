"""The located error of a column chunk the block executor refused.

The executor (:mod:`rcfmt._native.block`) answers a chunk it cannot decode with a
status code and the page that failed, not a message. :func:`raise_refused` turns that
answer into the located :class:`~rcfmt.errors.CorruptFileError` (ChecksumError,
UnsupportedError) a user sees: the reference decoder
(``file.chunk_decoder``: :class:`~rcfmt.file.chunks.ChunkDecoder`) runs over the same bytes -- the whole chunk,
or the pages the executor was given -- and raises what it finds, worded as every
decoder of the chunk's encoding words it. It never returns data: a chunk the reference
decoder accepts where the executor refused it is rcfmt's fault, not the file's (a
request the executor cannot serve), and is raised as an :class:`~rcfmt.errors.RcfmtError`
naming the status and page, asking for a report.
"""
from __future__ import annotations

import numpy as np

from .._native import abi as _abi
from ..errors import CorruptFileError, RcfmtError, UnsupportedError
from ..schema.arrow_io import too_big

__all__ = ["raise_refused"]

_STATUS = {
    _abi.ST_UNSUPPORTED: "an encoding or filter it has no kernel for",
    _abi.ST_CHUNK: "its chunk record disagrees with the bytes",
    _abi.ST_PAGES: "a page header or body fails its checks",
    _abi.ST_COUNTS: "its pages disagree with the footer",
    _abi.ST_DICTIONARY: "its dictionary page disagrees with its record",
    _abi.ST_VALUES: "a page's values fail their checks",
    _abi.ST_INVALID: "a value Arrow would refuse",
    _abi.ST_PYTHON: "a codec raised",
    _abi.ST_UNLISTED: "a wanted row lies in none of the pages listed",
}


def raise_refused(file, block: int, col: int, status: int, page: int, buf, base: int, rows: int,
                  table: np.ndarray | None = None):
    """Raise the located error of stored column ``col`` of ``block``, which the executor
    refused with ``status`` at ``page`` (-1: none, or the dictionary page), decoding
    ``buf`` (file bytes from ``base`` on): its whole chunk of ``rows`` rows, or the
    pages of ``table`` (:meth:`PageIndex.table <rcfmt.index.page.PageIndex.table>`,
    offsets made positions in ``buf``)."""
    ltype = file.footer.columns[col].type
    if status == _abi.ST_MEMORY:
        raise MemoryError(f"{file.path}: decoding column {file.footer.columns[col].name!r} of block {block}")
    if status == _abi.ST_TOO_BIG:
        raise file.locate_error(too_big(ltype), block, col)
    numbers = None
    try:
        decoder = file.chunk_decoder(block, col, buf, base)  # (locates a CorruptFileError of its own)
        if table is None:
            decoder.decode_all(rows)
        else:  # (the page index, read again: this is the error path)
            first = file.page_index(block, col)["first_row"].astype(np.int64)
            numbers = np.searchsorted(first, table[3])
            decoder.decode_run(table[0], numbers, table[1], expected_lengths=table[2])
    except (CorruptFileError, UnsupportedError) as exc:
        raise file.locate_error(exc, block, col) from None
    if numbers is not None and 0 <= page < len(numbers):  # (the executor counts the pages listed)
        page = int(numbers[page])
    where = "" if page < 0 else f", page {page}"
    raise RcfmtError(f"{file.path}, column {file.footer.columns[col].name!r}, block {block}: the block executor refused a "
                     f"chunk the reference decoder reads ({_STATUS.get(status, f'status {status}')}{where}); "
                     "this is a bug in rcfmt, please report it")
