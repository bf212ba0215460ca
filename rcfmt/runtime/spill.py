"""A list of byte strings that a writer holds until it closes, in memory up to a
budget and in an anonymous temporary file beyond it.

A file's bloom filters and bitmap indexes are written after its data (docs/FORMAT.md
sections 6 and 6b), so the :class:`~rcfmt.file.writer.Writer` keeps every block's
until ``close()``: about a byte a row per bloom-filtered column. Held in a
:class:`SpillList`, what passes :data:`SPILL_BUDGET` goes to a temporary file (unlinked
from the start: nothing is left behind, even by a killed process), so a long write's
memory stays bounded by the budget, not by the rows written.
"""
from __future__ import annotations

import os
import tempfile
from concurrent.futures import Future

from ..errors import StorageError

#: bytes a :class:`SpillList` keeps in memory before it writes further entries to disk
SPILL_BUDGET = 32 << 20


class _Spilled(tuple):
    """``(offset, length)`` of an entry in the spill file."""

    __slots__ = ()


class SpillList:
    """Entries appended in order -- ``bytes``, ``None`` or a :class:`Future` of either --
    read back by index (``lst[k]``, ``lst[c::n]``, iteration) as ``bytes`` or ``None``.

    Entries are held in memory while they total at most ``budget`` bytes; later ones
    are written to a temporary file and read back from it on access. A future counts
    once it is settled: :meth:`settle` waits for those older than the last ``keep``
    entries (a writer calls it per block, so a bitmap built on the pool is held as
    bytes, or spilled, a few blocks after it was asked for). :meth:`close` removes the
    file; the list must not be read after it."""

    def __init__(self, budget: int = None):
        self._budget = SPILL_BUDGET if budget is None else int(budget)
        self._items: list = []
        self._held = 0  # bytes of the entries in memory
        self._unsettled: list[int] = []  # indexes of futures, oldest first
        self._file = None
        self._end = 0  # bytes written to the file

    def __len__(self) -> int:
        return len(self._items)

    @property
    def spilled_bytes(self) -> int:
        """Bytes written to the temporary file so far."""
        return self._end

    def append(self, entry) -> None:
        self._items.append(None)
        self._place(len(self._items) - 1, entry)

    def extend(self, entries) -> None:
        for entry in entries:
            self.append(entry)

    def settle(self, keep: int = 0) -> None:
        """Wait for the futures among all but the last ``keep`` entries and hold (or
        spill) their bytes."""
        limit = len(self._items) - keep
        while self._unsettled and self._unsettled[0] < limit:
            k = self._unsettled[0]
            self._place(k, self._items[k].result(), settling=True)
            del self._unsettled[0]

    def __getitem__(self, key):
        if isinstance(key, slice):
            return [self[k] for k in range(len(self._items))[key]]
        item = self._items[key]
        if isinstance(item, Future):
            return item.result()
        if isinstance(item, _Spilled):
            offset, length = item
            data = os.pread(self._file.fileno(), length, offset)
            if len(data) != length:  # (a file truncated under us: never a short entry)
                raise OSError(f"spill file: read {len(data)} of {length} bytes at {offset}")
            return data
        return item

    def present(self) -> list[int]:
        """Indexes of the entries that are not None (settled ones; read nothing)."""
        return [k for k, item in enumerate(self._items) if item is not None]

    def __iter__(self):
        for k in range(len(self._items)):
            yield self[k]

    def close(self) -> None:
        """Drop every entry and remove the temporary file (idempotent)."""
        self._items, self._unsettled, self._held = [], [], 0
        if self._file is not None:
            self._file.close()
            self._file = None

    def _place(self, k: int, entry, settling: bool = False) -> None:
        if isinstance(entry, Future) and not settling:
            self._items[k] = entry
            self._unsettled.append(k)
            return
        if entry is None or self._held + len(entry) <= self._budget:
            self._items[k] = entry
            self._held += 0 if entry is None else len(entry)
            return
        data = bytes(entry)
        try:
            if self._file is None:
                self._file = tempfile.TemporaryFile(prefix="rcfmt-spill-")
            written = os.pwrite(self._file.fileno(), data, self._end)
            while written < len(data):  # (pwrite may write less than asked)
                written += os.pwrite(self._file.fileno(), data[written:], self._end + written)
        except OSError as exc:
            raise StorageError(exc.errno, f"spilling index data (bloom filters, bitmap indexes) to a temporary file "
                                          f"in {tempfile.gettempdir()!r} failed: {exc.strerror or exc}; set TMPDIR "
                                          f"to a file system with room") from None
        self._items[k] = _Spilled((self._end, len(data)))
        self._end += len(data)
