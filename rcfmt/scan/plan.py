"""A scan's plan, apart from its execution.

A plan says, from metadata alone (the footer's statistics, bloom filters, bitmap-index
entries, the page index; never a data page), what each block of a file comes to: pruned,
and by what, or kept with the rows that may match (its candidates), the part of the
filter left to decode there, how the executor decides it (the block's ``mode``) and the
bytes it reads first (``fetch``), exactly. Execution takes a :class:`BlockPlan` per kept
block and makes no choice of its own but one: the projected columns' pages after a
filter, which only its answer names (:meth:`rcfmt.scan.scanner.FileScan.plan`).

A block's mode (:attr:`BlockPlan.mode`):

* :data:`ROWS`: no filter left to decode (none, or bitmap indexes and statistics decided
  it): the candidates are the rows; ``fetch`` is the projected columns' bytes at them.
* :data:`FUSED`: the executor decides the filter and decodes the projected columns at the
  rows it picks in one native call; ``fetch`` is both's whole chunks.
* :data:`PICK`: the executor decides the filter and picks the rows; the projected columns
  are decoded after, at those rows (``fetch``: the filter columns' bytes).
* :data:`MASK`: the executor decodes the filter columns into a mask of the leaves it
  takes; the rest of the filter (OR trees, list leaves) is evaluated on their values
  (a count, too, stops at the mask).
* :data:`LISTS`: a filter on lists alone, decided on the lists at the candidate rows.

How a block's first bytes are read (:attr:`BlockPlan.read`): :data:`CHUNKS` (whole
chunks: every row asked, or candidates dense enough), :data:`PAGES` (the candidate pages
and their dictionary pages), on object storage :data:`RANGED` (the candidate pages, and
the projected columns' candidate pages riding along when ``ride``) or :data:`GROUP` (with
the neighbouring blocks, in one request: :mod:`rcfmt.scan.fetch_plan`).

``explain()`` renders a plan as text (in the spirit of DuckDB's ``EXPLAIN``) and
``to_dict()`` as plain Python values (JSON-serialisable).
"""
from __future__ import annotations

import numpy as np

from ..runtime.records import record, field
from ..predicate.selection import Selection

__all__ = ["BlockPlan", "DatasetPlan", "FilePlan", "PRUNE_STAGES", "ROWS", "FUSED", "PICK", "MASK", "LISTS",
           "CHUNKS", "PAGES", "RANGED", "GROUP"]

#: the modes of a kept block (see the module)
ROWS, FUSED, PICK, MASK, LISTS = "rows", "fused", "pick", "mask", "lists"
#: how a block's first bytes are read (see the module)
CHUNKS, PAGES, RANGED, GROUP = "chunks", "pages", "ranged", "group"

_MODE_TEXT = {ROWS: "the candidates are the rows", FUSED: "filter and projection in one call",
              PICK: "filter picks the rows", MASK: "filter into a mask, the rest of it on the values",
              LISTS: "filter on the lists"}

#: the stages that prune whole blocks, in the order a scan asks them
PRUNE_STAGES = ("stats", "bloom", "bitmap", "pages")

#: candidate row ranges shown per block by explain() (to_dict() lists them all)
_SHOWN_RANGES = 4


@record(frozen=True)
class BlockPlan:
    """One kept block: its ``rows``, the ``candidates`` that may match (a
    :class:`~rcfmt.predicate.selection.Selection` over them), the ``residual`` filter to
    evaluate by decoding (None: the candidates are exactly the matching rows), what the
    bitmap indexes did (``index``: ``"exact"`` decided the whole filter, ``"narrowed"``
    decided part of it, None), its ``mode`` and ``read`` (see the module), ``every``
    (the filter runs on every row of the block, its candidates being nearly all of
    them), ``ride`` and the byte ranges its execution reads first, exactly
    (``fetch``: ``(starts, ends)``, half-open; None: nothing, or with its ``GROUP``);
    ``tables``: with ``read`` :data:`PAGES`, the filter columns' page tables as the
    executor takes them (file offsets).
    ``visible``: the block's rows a deletion vector leaves, when the filter is decided on
    the candidates first and the few deleted rows are taken out of its answer after (a
    scattered delete must not turn a block's run of candidates into thousands).
    ``proven``: the filter's conjuncts the block's statistics prove TRUE on every row,
    taken out of ``residual``."""

    block: int
    rows: int
    candidates: Selection
    residual: object | None
    index: str | None = None
    fetch: tuple[np.ndarray, np.ndarray] | None = None
    visible: Selection | None = None
    proven: tuple = ()  # (bound conjuncts: shown as text when asked)
    mode: str = ROWS
    read: str | None = None
    every: bool = False
    ride: bool = False
    tables: list | None = field(default=None, repr=False, compare=False)
    #: the native filter program the executor runs (:mod:`rcfmt.scan.programs`; None: no flat filter)
    program: object | None = field(default=None, repr=False, compare=False)

    @property
    def candidate_rows(self) -> int:
        return self.candidates.row_count

    @property
    def fetch_bytes(self) -> int:
        return 0 if self.fetch is None else int((self.fetch[1] - self.fetch[0]).sum())

    def to_dict(self) -> dict:
        ranges = self.candidates.to_ranges()
        out = {"block": self.block, "rows": self.rows, "candidate_rows": self.candidate_rows,
               "candidate_ranges": [[int(s), int(e)] for s, e in zip(ranges.starts, ranges.ends)],
               "index": self.index, "residual": None if self.residual is None else str(self.residual),
               "proven": [str(c) for c in self.proven], "mode": self.mode, "read": self.read, "every_row": self.every}
        if self.fetch is not None:
            out["fetch"] = [[int(s), int(e)] for s, e in zip(*self.fetch)]
            out["fetch_bytes"] = self.fetch_bytes
        return out

    def explain_line(self) -> str:
        ranges = self.candidates.to_ranges()
        shown = ", ".join(f"[{s}, {e})" for s, e in list(zip(ranges.starts.tolist(), ranges.ends.tolist()))[:_SHOWN_RANGES])
        more = f", ... {len(ranges) - _SHOWN_RANGES} more" if len(ranges) > _SHOWN_RANGES else ""
        index = f", bitmap index: {self.index}" if self.index else ""
        line = (f"block {self.block}: {self.candidate_rows}/{self.rows} candidate rows in {len(ranges)} ranges "
                f"{shown}{more}{index} -> {_MODE_TEXT[self.mode]}")
        if self.read == GROUP:
            line += "; reads with its neighbours"
        elif self.fetch is not None:
            how = ", ".join([self.read] + ["every row"] * self.every + ["projection along"] * self.ride)
            line += f"; reads {self.fetch_bytes} bytes in {len(self.fetch[0])} ranges ({how})"
        if self.mode in (PICK, MASK):
            line += ", then the projected columns' pages holding the rows"
        if self.proven:
            line += f"; proven by statistics: {' AND '.join(map(str, self.proven))}"
        return line


@record(frozen=True)
class FilePlan:
    """The plan of a scan of one file: ``columns`` returned, the bound ``filter`` (None:
    every row), ``blocks_total`` in the scanned range, the blocks ``pruned`` by each stage
    (:data:`PRUNE_STAGES`), the filter's leaves ``pushed`` into the decode pass by column
    (each chunk's encoding decides whether its pipeline takes them; the rest are
    evaluated on the decoded values), the ``mask_only`` columns (decoded into the mask,
    not returned), the leaves ``after_decode`` (OR trees, list predicates) evaluated on
    decoded columns, and the kept ``blocks``."""

    path: str
    columns: tuple[str, ...]
    filter: str | None
    blocks_total: int
    rows_total: int
    pruned: dict[str, tuple[int, ...]]
    pushed: dict[str, tuple[str, ...]]
    mask_only: tuple[str, ...]
    after_decode: tuple[str, ...]
    blocks: tuple[BlockPlan, ...] = field(default=())

    @property
    def candidate_rows(self) -> int:
        return sum(b.candidate_rows for b in self.blocks)

    def to_dict(self) -> dict:
        return {"path": self.path, "columns": list(self.columns), "filter": self.filter,
                "blocks_total": self.blocks_total, "rows_total": self.rows_total,
                "pruned": {k: list(v) for k, v in self.pruned.items()},
                "pushed": {k: list(v) for k, v in self.pushed.items()}, "mask_only": list(self.mask_only),
                "after_decode": list(self.after_decode), "candidate_rows": self.candidate_rows,
                "blocks": [b.to_dict() for b in self.blocks]}

    def explain(self) -> str:
        pruned = ", ".join(f"{k} {len(v)}" for k, v in self.pruned.items())
        lines = [f"scan {self.path}",
                 f"  columns: {', '.join(self.columns) if self.columns else '(none: row count)'}",
                 f"  filter: {self.filter if self.filter is not None else '(none)'}",
                 f"  blocks: {len(self.blocks)} of {self.blocks_total} kept (pruned: {pruned})",
                 f"  candidate rows: {self.candidate_rows} of {self.rows_total}"]
        if self.pushed:
            lines.append("  decode pass: " + "; ".join(f"{c}: {' AND '.join(v)}" for c, v in self.pushed.items()))
        if self.mask_only:
            lines.append(f"  mask only (decoded, not returned): {', '.join(self.mask_only)}")
        if self.after_decode:
            lines.append(f"  after decode: {' AND '.join(self.after_decode)}")
        lines += ["  " + b.explain_line() for b in self.blocks]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()


@record(frozen=True)
class DatasetPlan:
    """The plan of a scan of a dataset: ``files_total`` in its version, the number
    ``files_pruned`` by its index (the table-level statistics and partition values of
    every file, before any file is opened), the ``skipped`` files opened but found unable
    to match (partition values, columns the file lacks) and a :class:`FilePlan` per file
    left to scan."""

    filter: str | None
    files_total: int
    files_pruned: int
    skipped: tuple[str, ...]
    files: tuple[FilePlan, ...]

    @property
    def candidate_rows(self) -> int:
        return sum(f.candidate_rows for f in self.files)

    def to_dict(self) -> dict:
        return {"filter": self.filter, "files_total": self.files_total, "files_pruned": self.files_pruned,
                "skipped": list(self.skipped), "candidate_rows": self.candidate_rows,
                "files": [f.to_dict() for f in self.files]}

    def explain(self) -> str:
        lines = [f"scan dataset: {len(self.files)} of {self.files_total} files to scan "
                 f"(pruned by the index: {self.files_pruned}, by partition or missing columns: {len(self.skipped)})",
                 f"  filter: {self.filter if self.filter is not None else '(none)'}",
                 f"  candidate rows: {self.candidate_rows}"]
        for f in self.files:
            lines += ["  " + line for line in f.explain().splitlines()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.explain()
