"""The decoded rows of one column of a block, as the executor hands them to a filter's
evaluation (:mod:`rcfmt.predicate.evaluate`) and to Arrow: a module of its own, so that
a scan without a filter loads none of the evaluation."""
from __future__ import annotations

import numpy as np

from ..encodings.base import ColumnValues
from ..schema.arrow_io import Bitmap
from ..schema.types import LogicalType

__all__ = ["ColumnData"]


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
