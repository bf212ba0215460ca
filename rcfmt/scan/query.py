"""What a scan asks of one open file, bound to it once: the columns returned and how, the
filter bound and normalized, the rows asked for (``take``) and those a deletion vector
removes, the scanned block range and the switches of each pruning stage.

A :class:`ScanQuery` is built once per scan and only read afterwards: the planner
(:mod:`rcfmt.scan.planner`) and the executor (:mod:`rcfmt.scan.executor`) share it.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pyarrow as pa

from ..errors import InvalidOptionError
from ..runtime.options import flag
from ..schema.annotated import Relabeling
from ..storage.fetch import LOCAL_COALESCE_GAP
from .programs import keep

#: projections kept with a footer (``footer.derived``): a loader's or a lookup's one, a few
#: more; each holds schemas of the columns asked, which the footer cache does not weigh
DERIVED_PROJECTIONS = 4
from .positions import by_unit, check_no_position_column, position_name, row_position_field
from ..predicate.selection import Selection
from .source import ScanFile

__all__ = ["ScanQuery"]


class ScanQuery:
    """A scan's request of ``file`` (see :class:`~rcfmt.scan.scanner.FileScan` for the
    arguments), bound: ``outputs`` (per output field a stored column's index or a nested
    field's pruned node) and ``col_ids`` (the flat ones), the bound filter ``nnf`` (None:
    every row) with its columns (``filter_ids``; ``list_filters``: ``list_contains``
    leaves, by name; ``row_filter_ids``: the flat others), ``take`` and ``visible`` per
    block as selections, and what the output is (``output_schema``, ``labels``,
    ``required``: outputs declared not nullable)."""

    def __init__(self, file: ScanFile, columns: Sequence[str] | None = None, filter=None, *,
                 read_dictionary: Sequence[str] | None = None, use_bloom: bool = True, use_page_index: bool = True,
                 blocks: tuple[int, int] | None = None, use_bitmap_index: bool = True, rows: np.ndarray | None = None,
                 with_row_position: bool | str = False, deleted: np.ndarray | None = None):
        self.file = file
        #: the name of the positions' column (None: no positions)
        self.position = position_name(with_row_position)
        self.with_row_position = self.position is not None
        #: ranges at most this far apart are read together (remote files: the file's FetchOptions)
        self.gap = file.fetch.coalesce_gap if file.remote else LOCAL_COALESCE_GAP
        if read_dictionary is not None and (isinstance(read_dictionary, str) or not isinstance(read_dictionary, Sequence)):
            raise InvalidOptionError("read_dictionary must be a list of column names")
        # (what is returned depends on the columns asked alone: worked out once per open file)
        (self.outputs, self.dictionary_ids, self.output_schema, self.labels, self.required,
         self.nested_outputs) = self._projection(columns, read_dictionary)
        if self.with_row_position:
            check_no_position_column(self.output_schema.names[:-1], self.position)
        self.col_ids = [o for o in self.outputs if isinstance(o, int)]
        self.bound = self.nnf = None
        self.filter_names, self.filter_ids, self.list_filters = [], {}, {}
        if filter is not None:  # (binding, NNF and the rest: 4-5 ms of imports at a first call)
            self._bind(filter)
        self.row_filter_ids = {name: c for name, c in self.filter_ids.items() if name not in self.list_filters}
        #: the stored columns a scan of every kind may read: the row filter's, then the projected ones
        self.needed = list(dict.fromkeys([*self.row_filter_ids.values(), *self.col_ids]))
        self.use_bloom = flag(use_bloom, "use_bloom")
        self.use_page_index = flag(use_page_index, "use_page_index")
        self.use_bitmap_index = flag(use_bitmap_index, "use_bitmap_index")
        self.block_range = _block_range(blocks, file.num_blocks)
        block_rows = np.asarray(file.footer.blocks["row_count"], np.int64)
        #: each block's first row in the file (row positions)
        self.first_rows = np.concatenate(([0], np.cumsum(block_rows)[:-1])).tolist() if len(block_rows) else []
        #: ``rows`` asked for (take), per block as a Selection (None: every row)
        self.take = None if rows is None else {
            b: Selection.from_indices(local, int(block_rows[b])) for b, local in by_unit(rows, block_rows).items()}
        self.deleted = deleted
        #: per block holding deleted rows, the rows left (a deletion vector's complement)
        self.visible = None if deleted is None or not len(deleted) else {
            b: Selection.from_indices(local, int(block_rows[b])).complement()
            for b, local in by_unit(deleted, block_rows).items()}
        self.pushdown_whole = None if self.nnf is None else self._pushdown(self.nnf)

    def _projection(self, columns, read_dictionary) -> tuple:
        """``(outputs, dictionary_ids, output_schema, labels, required, nested_outputs)``
        of the projection ``columns`` (``labels``: interval types built as their storage;
        ``required``: output positions of flat columns declared not nullable, where nulls
        mean a corrupt file). Derived from the footer alone, so kept with it
        (``footer.derived``) by the names asked: a loader's takes and repeated lookups ask
        the same, and a dataset's data files share their footers across opens. None of
        it is changed after."""
        file = self.file
        key = None
        if (columns is None or isinstance(columns, (list, tuple))) and all(
                isinstance(n, str) for n in (*(columns or ()), *(read_dictionary or ()))):
            key = ("projection", None if columns is None else tuple(columns),
                   tuple(read_dictionary or ()), self.position)
            held = file.footer.derived.setdefault("projections", {})  # (beside other derived values)
            got = held.get(key)
            if got is not None:
                return got
        outputs = file.resolve_outputs(columns)
        dictionary_ids = frozenset(file.column_index(name) for name in (read_dictionary or ()))
        schema = self._output_schema(outputs, dictionary_ids)
        got = (outputs, dictionary_ids, schema, Relabeling(schema, file.schema),
               [i for i, c in enumerate(outputs) if isinstance(c, int) and not file.footer.columns[c].nullable],
               any(not isinstance(c, int) for c in outputs))
        if key is not None:  # (a few: the footer cache charges a footer for about as much again as it)
            keep(held, key, got, DERIVED_PROJECTIONS)
        return got

    def _output_schema(self, outputs: list, dictionary_ids) -> pa.Schema:
        out = []
        for c in outputs:
            if not isinstance(c, int):
                out.append(c.field)
                continue
            field = self.file.physical_schema.field(c)
            if c in dictionary_ids:
                field = field.with_type(pa.dictionary(pa.int32(), field.type))
            out.append(field)
        if self.with_row_position:
            out.append(row_position_field(self.position))
        return pa.schema(out, metadata=self.file.schema.metadata)

    def _bind(self, filter) -> None:
        """The filter bound to the file, in NNF, and the columns it reads."""
        from ..predicate.bind import bind
        from ..predicate.nnf import BoundListContains, NanCheck, columns as expr_columns, leaves, to_nnf, \
            without_nan_checks

        file = self.file
        self.bound = bind(filter, file.bind_schema)
        if self.bound is None:  # (what bind makes of a filter that is none)
            return
        self.nnf = to_nnf(self.bound)
        self.filter_names = sorted(expr_columns(self.nnf))
        self.filter_ids = {name: file.column_index(name) for name in self.filter_names}
        # (is_nan of a column the file holds no NaN in: a constant)
        self.nnf = without_nan_checks(self.nnf, {
            leaf.column.name for leaf in leaves(self.nnf) if isinstance(leaf, NanCheck)
            and leaf.column.name in self.filter_ids
            and not file.footer.chunks[self.filter_ids[leaf.column.name]]["nan_count"].any()})
        # list_contains leaves: their element columns prune blocks (stats, bloom filters);
        # rows are decided on the lists, decoded for the candidate rows (not the elements)
        self.list_filters = {leaf.column.name: leaf.list_name for leaf in leaves(self.nnf)
                             if isinstance(leaf, BoundListContains)}

    def block_rows(self, block: int) -> int:
        return int(self.file.footer.blocks[block]["row_count"])

    def pushdown(self, nnf) -> tuple[dict, set]:
        """``(conjuncts, mask-only columns)`` of a predicate: the leaves of its top-level
        AND by column (evaluated in the decode pass where the executor can), and the
        columns whose values serve nothing else (not projected, no leaf elsewhere in the
        tree): decoded only into the mask when every one of their leaves is pushed."""
        return self.pushdown_whole if nnf is self.nnf else self._pushdown(nnf)

    def _pushdown(self, nnf) -> tuple[dict, set]:
        from ..predicate.evaluate import column_conjuncts
        from ..predicate.nnf import leaves

        conjuncts = column_conjuncts(nnf)
        counts: dict[str, int] = {}
        for leaf in leaves(nnf):
            counts[leaf.column.name] = counts.get(leaf.column.name, 0) + 1
        projected = set(self.col_ids)
        only = {name for name, group in conjuncts.items()
                if counts[name] == len(group) and self.filter_ids.get(name) not in projected}
        return conjuncts, only

    def residual_columns(self, nnf) -> tuple[dict, dict]:
        """``(flat filter columns, list filters)`` of ``nnf``, the scan's filter or a residual of it."""
        if nnf is self.nnf:
            return self.row_filter_ids, self.list_filters
        from ..predicate.nnf import columns as expr_columns

        names = expr_columns(nnf)
        return ({n: c for n, c in self.row_filter_ids.items() if n in names},
                {n: p for n, p in self.list_filters.items() if n in names})

    def asked(self, block: int, candidates: Selection, less_deleted: bool = True) -> Selection:
        """``candidates`` of ``block`` among the rows asked for (``rows=``, take), less
        the deleted ones (``deleted=``; unless ``less_deleted`` is False: the plan then
        takes them out after the filter): ``pruning ∩ requested − deleted``."""
        if self.take is not None:
            asked = self.take[block]
            candidates = asked if candidates.is_all else candidates.intersect(asked)
        if less_deleted and self.visible is not None and block in self.visible:
            candidates = candidates.intersect(self.visible[block])
        return candidates

    def deferred(self, block: int, defer: int) -> Selection | None:
        """The rows of ``block`` its deletion vector leaves, when they are so many (all
        but 1/``defer`` at most) that the filter is best decided on the candidates as
        they are and the deleted rows taken out of its answer; else None."""
        if self.visible is None or block not in self.visible or self.take is not None:
            return None
        visible = self.visible[block]
        return visible if (visible.num_rows - visible.row_count) * defer <= visible.num_rows else None

    def changed(self, block: int) -> bool:
        """Whether ``block``'s rows are narrowed by ``rows=`` or ``deleted=``."""
        return self.take is not None or (self.visible is not None and block in self.visible)


def _block_range(blocks, n: int) -> tuple[int, int]:
    if blocks is None:
        return 0, n
    try:
        lo, hi = blocks
    except (TypeError, ValueError):
        lo = hi = None
    if not all(isinstance(b, (int, np.integer)) and not isinstance(b, bool) for b in (lo, hi)):
        raise InvalidOptionError(f"blocks must be (start, stop), two block numbers, got {blocks!r}") from None
    lo, hi = int(lo), int(hi)
    if not 0 <= lo <= hi <= n:
        raise InvalidOptionError(f"blocks=({lo}, {hi}) is outside the file's {n} blocks")
    return lo, hi
