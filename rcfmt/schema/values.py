"""The holders of a column's values, every layer's currency: :class:`ColumnValues`
(consecutive rows in storage form, without validity: what encodings encode and decode),
:class:`Bitmap` (validity as Arrow lays it out) and :class:`ColumnData` (a block's
decoded rows of one column, as the executor hands them to a filter's evaluation and to
Arrow). One module, importing nothing of rcfmt's but records and the logical types: a
scan without a filter loads no evaluation for them."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..runtime.records import record
from .types import LogicalType

__all__ = ["ColumnValues", "Bitmap", "ColumnData"]


@record
class ColumnValues:
    """Values of consecutive rows of one column in storage form, without validity.

    - FIXED: ``values`` is a 1-D array of the logical type's storage dtype.
    - BOOL: ``values`` is a 1-D numpy ``bool`` array.
    - VARBINARY: ``values`` is the ``uint8`` data buffer and ``offsets`` an ``int64``
      (or ``int32``) array of length ``rows + 1``; value i is
      ``values[offsets[i]:offsets[i+1]]``. ``offsets[0]`` need not be 0.
    """

    values: np.ndarray
    offsets: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.values) if self.offsets is None else len(self.offsets) - 1

    def slice(self, start: int, stop: int) -> "ColumnValues":
        """Rows ``[start, stop)`` without copying."""
        if self.offsets is None:
            return ColumnValues(self.values[start:stop])
        return ColumnValues(self.values, self.offsets[start : stop + 1])

    @property
    def nbytes(self) -> int:
        """Bytes of value data these rows hold (plain size without offsets)."""
        if self.offsets is None:
            return self.values.nbytes
        return int(self.offsets[-1] - self.offsets[0]) if len(self.offsets) else 0


class Bitmap(NamedTuple):
    """Validity as Arrow lays it out (LSB first, unused trailing bits 0), as the page
    pipeline writes it: ``bits`` (uint8, ``ceil(length / 8)`` bytes) and how many of
    the ``length`` rows are null (> 0: a column without nulls has no bitmap)."""

    bits: np.ndarray
    length: int
    null_count: int

    def bools(self) -> np.ndarray:
        """One bool per row."""
        return np.unpackbits(self.bits, count=self.length, bitorder="little").view(bool)


class ColumnData:
    """Decoded rows of one column for evaluation: values + validity, or dictionary
    codes + the chunk's dictionary (then ``values`` is None). Validity is bools, or the
    Arrow bitmap the page pipeline wrote (:class:`~rcfmt.schema.arrow_io.Bitmap`), turned
    into bools only when a predicate or a gather asks (:attr:`valid`); Arrow output
    takes the bitmap as it is (:attr:`validity`)."""

    __slots__ = ("ltype", "values", "_valid", "bitmap", "codes", "dictionary", "entry_masks", "pushed")

    def __init__(self, ltype: LogicalType, values: ColumnValues | None, valid: np.ndarray | Bitmap | None,
                 codes: np.ndarray | None = None, dictionary: ColumnValues | None = None,
                 pushed: tuple[np.ndarray, frozenset] | None = None):
        self.ltype = ltype
        self.values = values
        self.bitmap, self._valid = (valid, None) if isinstance(valid, Bitmap) else (None, valid)
        self.codes = codes
        self.dictionary = dictionary
        #: per leaf (by ``id``) of a filter evaluated on the dictionary: its mask over the
        #: entries and whether NULL rows pass, kept while the block's leaves are evaluated
        self.entry_masks: dict = {}
        #: ``(mask, leaf ids)``: the AND of these leaves of the filter's top-level
        #: conjunction, evaluated while decoding (one bool per row); handed to the
        #: conjunction's evaluation, which may write into it
        self.pushed = pushed

    @property
    def valid(self) -> np.ndarray | None:
        """One bool per row (None: no nulls)."""
        if self._valid is None and self.bitmap is not None:
            self._valid = self.bitmap.bools()
        return self._valid

    @property
    def validity(self) -> np.ndarray | Bitmap | None:
        """Validity in the form at hand, for :func:`~rcfmt.schema.arrow_io.to_arrow`."""
        return self.bitmap if self.bitmap is not None else self._valid

    def __len__(self) -> int:
        return len(self.codes) if self.codes is not None else len(self.values)
