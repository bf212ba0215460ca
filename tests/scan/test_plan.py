"""The scan plan (``FileScan.plan()`` / ``explain()``): built from metadata only, sound
against a brute-force filter computed by code that shares nothing with the engine, and
the same blocks and rows that executing the scan finds."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
from oracle_filter import selection_mask
from rcfmt import col
from rcfmt.scan.plan import PRUNE_STAGES
from rcfmt.scan.scanner import scan_file
from strategies import examples
from strategies_expr import exprs, tables

SETTINGS = settings(max_examples=examples(60), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture,
                                           HealthCheck.data_too_large])


class _Recorder:
    """A byte source that records every ``(offset, length)`` read through it."""

    def __init__(self, source):
        self.source, self.reads = source, []

    def read_at(self, offset, length):
        self.reads.append((offset, length))
        return self.source.read_at(offset, length)

    def read_into(self, offset, out):
        self.reads.append((offset, len(out)))
        return self.source.read_into(offset, out)

    def __getattr__(self, name):
        return getattr(self.source, name)


def _data_ranges(f) -> list[tuple[int, int]]:
    """``[start, end)`` of every column chunk (dictionary and data pages) of ``f``."""
    out = []
    for c in range(len(f.footer.columns)):
        for b in range(f.num_blocks):
            rec = f.footer.chunks[c][b]
            if int(rec["length"]):
                out.append((int(rec["offset"]), int(rec["offset"]) + int(rec["length"])))
    return out


@st.composite
def cases(draw):
    data = draw(tables(min_rows=0, max_rows=120, max_columns=3))
    expr = draw(exprs(data, max_leaves=4))
    names = data.table.column_names
    options = dict(block_rows=draw(st.integers(1, 50)), page_rows=draw(st.integers(1, 20)),
                   dictionary=draw(st.booleans()), bloom_filter_columns=draw(st.sampled_from(["auto", None, names])))
    table = data.table.sort_by([(names[0], "ascending")]) if draw(st.booleans()) else data.table
    return table, expr, options


@SETTINGS
@given(case=cases())
def test_plan_is_sound_reads_no_data_page_and_matches_execution(tmp_path_factory, case):
    table, expr, options = case
    path = tmp_path_factory.mktemp("plan") / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    truth = selection_mask(expr, table)
    with rcfmt.open(path) as f:
        scan = f.scan(filter=expr)
        recorder = f._source = _Recorder(f._source)
        plan = scan.plan()
        for offset, length in recorder.reads:  # metadata only
            assert not any(offset < hi and lo < offset + length for lo, hi in _data_ranges(f)), (offset, length)
        assert scan.stats.rows_selected == 0 and scan.stats.bytes_read == 0  # planning leaves stats alone

        # every block is kept or pruned by exactly one stage
        kept = [b.block for b in plan.blocks]
        pruned = [b for stage in PRUNE_STAGES for b in plan.pruned[stage]]
        assert sorted(kept + pruned) == list(range(f.num_blocks))
        # sound: every matching row is a candidate of a kept block
        starts = np.concatenate(([0], np.cumsum([int(f.footer.blocks[b]["row_count"]) for b in range(f.num_blocks)])))
        candidates = np.zeros(table.num_rows, bool)
        for b in plan.blocks:
            candidates[starts[b.block] + b.candidates.to_indices()] = True
            assert b.candidate_rows <= b.rows
        assert not (truth & ~candidates).any()
        assert plan.candidate_rows == int(candidates.sum())
        json.dumps(plan.to_dict())
        assert plan.explain().startswith(f"scan {path}")

        got = scan.read()  # execution: the rows the oracle selects, in order
        assert got.num_rows == int(truth.sum())
        assert scan.stats.rows_selected == int(truth.sum())


def test_each_stage_is_named(tmp_path):
    """Blocks pruned by statistics, bloom filters, bitmap indexes and the page index are
    listed under their stage, and explain() says so."""
    n = 40_000
    k = np.arange(n)
    table = pa.table({
        "k": k,                                                      # sorted: statistics prune
        "h": (k * 7919) % 100_003,                                   # scattered: only blooms prune
        "m": np.where(k % 10_000 < 5_000, k % 3, 3 + k % 3).astype(np.int64),  # bitmap index
        "p": np.where(k % 10_000 < 500, 0, 1_000 + k % 10_000),      # the page index: page 0 all zeros
    })
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=10_000, page_rows=500, bloom_filter_columns=["h"],
                      bitmap_indexes={"m": "equality"})
    with rcfmt.open(path) as f:
        by_stats = f.scan(filter=col("k") < 10_000).plan()
        assert by_stats.pruned["stats"] == (1, 2, 3) and [b.block for b in by_stats.blocks] == [0]
        absent = next(v for v in range(50_000, 100_003) if v not in set(table["h"].to_pylist()))  # inside every block's range
        by_bloom = f.scan(filter=col("h") == absent).plan()
        assert len(by_bloom.pruned["bloom"]) >= 3 and not by_bloom.pruned["stats"] and not by_bloom.blocks
        by_pages = f.scan(filter=col("p") == 0).plan()
        assert all(b.candidate_rows == 500 for b in by_pages.blocks) and len(by_pages.blocks) == 4
        assert "decode pass: p: col('p') == 0" in by_pages.explain()
        by_index = f.scan(["k"], filter=col("m") == 4).plan()
        m = table["m"].to_numpy()
        for b in by_index.blocks:
            assert b.index == "exact" and b.residual is None
            assert b.candidate_rows == int((m[b.block * 10_000:(b.block + 1) * 10_000] == 4).sum())
        assert f.scan(filter=col("m") == 6).plan().pruned["stats"] == (0, 1, 2, 3)
        nowhere = f.scan(filter=col("p") == 5).plan()  # inside every block's range, in no page's
        assert nowhere.pruned["pages"] == (0, 1, 2, 3) and not nowhere.pruned["stats"]
        text = f.scan(["k"], filter=(col("k") < 10_000) & ((col("m") == 1) | (col("p") == 0))).explain()
        assert "pruned: stats 3" in text and "after decode: (col('m') == 1) | (col('p') == 0)" in text


def test_dataset_plan_names_pruned_files_and_holds_every_match(tmp_path):
    rng = np.random.default_rng(3)
    root = tmp_path / "ds"
    parts = []
    for i in range(4):
        t = pa.table({"a": np.sort(rng.integers(i * 1_000, (i + 1) * 1_000, 2_000)), "b": rng.integers(0, 5, 2_000),
                      "p": np.full(2_000, i % 2)})
        rcfmt.write_dataset(t, root, partition_by=["p"], block_rows=500, page_rows=100)
        parts.append(t)
    table = pa.concat_tables(parts)
    expr = (col("a") >= 1_500) & (col("a") < 2_100) & (col("b") == 3)
    scan = rcfmt.dataset(root).scan(["a"], filter=expr)
    plan = scan.plan()
    assert plan.files_total == 4 and plan.files_pruned == 2 and len(plan.files) == 2
    truth = int(selection_mask(expr, table).sum())
    assert plan.candidate_rows >= truth
    text = plan.explain()
    assert text.startswith("scan dataset: 2 of 4 files to scan (pruned by the index: 2")
    assert text.count("\n  scan ") == 2 and "decode pass: a: col('a') >= 1500 AND col('a') < 2100" in text
    json.dumps(plan.to_dict())
    assert scan.read().num_rows == truth
    by_partition = rcfmt.dataset(root).scan(filter=col("p") == 0).plan()
    assert len(by_partition.files) == 2 and by_partition.files_pruned == 2


# ---------------------------------------------------------------- the plan is what runs
def _recorded_scan(f, columns, expr, **options):
    """``(plan, data reads, table)``: the plan of a scan and, from another scan of the same
    arguments run on one thread, every ``read_ranges`` call that touched a column chunk
    (page-index and bitmap-index reads left out), as ``(starts, ends)`` lists."""
    plan = scan_file(f, columns, filter=expr, use_threads=False, **options).plan()
    scan = scan_file(f, columns, filter=expr, use_threads=False, **options)
    chunks = _data_ranges(f)
    reads, real = [], f.read_ranges

    def recording(starts, ends, *pool):
        if any(s < hi and lo < e for s, e in zip(starts.tolist(), ends.tolist()) for lo, hi in chunks):
            reads.append((starts.tolist(), ends.tolist()))
        return real(starts, ends, *pool)

    f.read_ranges = recording
    try:
        got = scan.read()
    finally:
        del f.read_ranges
    return plan, reads, got


def _block_chunks(f, block: int, names) -> list[tuple[int, int]]:
    """The byte spans of ``names``' chunks in ``block``, adjacent ones merged (a read
    may span the chunks of neighbouring columns)."""
    spans = []
    for name in names:
        rec = f.footer.chunks[f.column_index(name)][block]
        spans.append((int(rec["offset"]), int(rec["offset"]) + int(rec["length"])))
    merged: list[tuple[int, int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
        else:
            merged.append((lo, hi))
    return merged


def _check_reads_follow_plan(f, plan, reads, columns):
    """Each kept block's first read is its plan's ``fetch``, exactly; after it, only
    the projected columns' pages that the filter's answer names (within those columns'
    chunks of that block, and only in the modes that project after the filter); nothing
    else is read."""
    projected = columns if columns is not None else f.schema.names
    i = 0
    for b in plan.blocks:
        if b.read == "group":  # (its group's one read, made by the group's first block)
            first = _block_chunks(f, b.block, projected)[0][0]
            if i < len(reads) and reads[i][0][0] <= first < reads[i][1][-1]:
                i += 1
        elif b.fetch is not None:
            assert i < len(reads), (b.block, b.mode, "planned read not made")
            assert reads[i] == (b.fetch[0].tolist(), b.fetch[1].tolist()), (b.block, b.mode, b.read)
            i += 1
        within = _block_chunks(f, b.block, projected)
        while i < len(reads) and b.mode in ("pick", "mask") and all(
                any(lo <= s and e <= hi for lo, hi in within) for s, e in zip(*reads[i])):
            i += 1
    assert i == len(reads), ("reads beyond the plan", reads[i:])


@SETTINGS
@given(case=cases(), data=st.data())
def test_execution_reads_exactly_what_the_plan_fetches(tmp_path_factory, case, data):
    table, expr, options = case
    path = tmp_path_factory.mktemp("reads") / "t.rcfmt"
    rcfmt.write_table(table, path, **options)
    names = table.column_names
    columns = data.draw(st.none() | st.lists(st.sampled_from(names), unique=True), label="columns")
    with rcfmt.open(path) as f:
        plan, reads, got = _recorded_scan(f, columns, expr)
        _check_reads_follow_plan(f, plan, reads, columns)
    assert got.num_rows == int(selection_mask(expr, table).sum())


def test_every_mode_reads_what_its_plan_says(tmp_path):
    """On a file large enough for every physical choice: each mode appears in a plan, its
    execution reads exactly the plan's first bytes, and explain() names the mode."""
    n = 64_000
    k = np.arange(n)
    rng = np.random.default_rng(5)
    table = pa.table({"k": k, "v": rng.integers(0, 1_000, n), "s": pa.array([f"s{i % 977:05d}" for i in range(n)]),
                      "m": (k // 4_000) % 4})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=16_000, page_rows=1_000, bitmap_indexes={"m": "equality"})
    cases = {  # (columns, filter, options) -> the modes expected among its blocks
        "rows, pages (a lookup by position)": (None, None, {"rows": np.array([3, 17_000, 40_001])}, {"rows"}),
        "rows, chunks (every row)": (["k", "v"], None, {}, {"rows"}),
        "rows (decided by the bitmap index)": (["k"], col("m") == 2, {}, {"rows"}),
        "fused (dense filter, narrow projection)": (["k"], col("v") < 900, {}, {"fused"}),
        "pick, pages (a narrow window)": (None, (col("k") >= 20_100) & (col("k") < 20_300), {}, {"pick"}),
        "mask (an OR tree)": (["s"], (col("v") == 3) | (col("k") < 10), {}, {"mask"}),
    }
    with rcfmt.open(path) as f:
        for name, (columns, expr, options, modes) in cases.items():
            plan, reads, got = _recorded_scan(f, columns, expr, **options)
            assert {b.mode for b in plan.blocks} == modes, (name, plan.explain())
            _check_reads_follow_plan(f, plan, reads, columns)
            assert reads, name
            want = table if expr is None else table.filter(selection_mask(expr, table))
            if "rows" in options:
                want = table.take(options["rows"])
            assert got.equals(want.select(got.column_names)), name
            assert all(f"-> {_MODE_WORDS[m]}" in plan.explain() for m in modes), (name, plan.explain())


_MODE_WORDS = {"rows": "the candidates are the rows", "fused": "filter and projection in one call",
               "pick": "filter picks the rows", "mask": "filter into a mask"}
