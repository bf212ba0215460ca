"""A scan stops asking an index that decides nothing (scanner.PROBE_BLOCKS): rows stay
exact, and an index that prunes keeps being asked."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

import rcfmt
from rcfmt import col
from rcfmt.scan.scheduling import PROBE_BLOCKS

BLOCK, PAGE = 1000, 100


def _write(tmp_path, blocks: list[np.ndarray], **options):
    x = np.concatenate(blocks)
    t = pa.table({"x": pa.array(x), "k": pa.array(np.arange(len(x)))})
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(t, path, block_rows=BLOCK, page_rows=PAGE, **options)
    return t, path


def _scan(path, expr):
    with rcfmt.open(path) as f:
        scan = f.scan(columns=["k"], filter=expr)
        return scan.read()["k"].to_pylist(), scan.stats


def test_page_index_that_prunes_nothing_is_no_longer_asked_and_rows_stay_exact(tmp_path):
    rng = np.random.default_rng(3)
    # unsorted blocks first (every page spans the values), then sorted ones whose pages prune
    shuffled = [rng.permutation(BLOCK) for _ in range(PROBE_BLOCKS + 2)]
    ordered = [np.arange(BLOCK) for _ in range(6)]
    t, path = _write(tmp_path, shuffled + ordered, bitmap_indexes=None)
    expr = col("x") < 50
    want = t.filter(pc.less(t["x"], 50))["k"].to_pylist()
    got, stats = _scan(path, expr)
    assert sorted(got) == want
    # the sorted blocks were read without their page index: every page of x decoded
    per_block = BLOCK // PAGE
    assert stats.pages_read >= (len(shuffled) + len(ordered)) * per_block
    with rcfmt.open(path) as f:  # a sorted block's page index, asked, prunes its pages
        one = f.scan(columns=["k"], filter=expr, blocks=(len(shuffled), len(shuffled) + 1))
        assert one.read()["k"].to_pylist() == [k for k in want if k >= len(shuffled) * BLOCK][:50]
        assert one.stats.pages_read < per_block


def test_a_page_index_that_prunes_is_asked_for_every_block(tmp_path):
    ordered = [np.arange(BLOCK) for _ in range(PROBE_BLOCKS + 6)]
    t, path = _write(tmp_path, ordered, bitmap_indexes=None)
    got, stats = _scan(path, col("x") < 50)
    assert sorted(got) == t.filter(pc.less(t["x"], 50))["k"].to_pylist()
    assert stats.pages_read == 2 * len(ordered)  # per block one page of x and the page of k it selects


def test_bitmap_indexes_that_decide_nothing_are_no_longer_asked(tmp_path):
    rng = np.random.default_rng(5)
    # four values everywhere: an equality index per block, and "x != 3" leaves most rows
    blocks = [rng.integers(0, 4, BLOCK) for _ in range(PROBE_BLOCKS + 8)]
    t, path = _write(tmp_path, blocks, bitmap_indexes={"x": "equality"})
    for expr, oracle in [(col("x") != 3, pc.not_equal(t["x"], 3)), (col("x") == 7, pc.equal(t["x"], 7))]:
        got, stats = _scan(path, expr)
        assert sorted(got) == t.filter(oracle)["k"].to_pylist()
    # x == 7 is decided by every block's index (no such value): all pruned, all asked
    assert stats.blocks_pruned_index + stats.blocks_pruned_stats == len(blocks)
    with rcfmt.open(path) as f:  # an exact count needs every block's index: still asked
        assert f.scan(filter=col("x") == 2).count() == int(np.sum(np.concatenate(blocks) == 2))
