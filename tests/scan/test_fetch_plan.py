"""The scan-level fetch plan for object storage (rcfmt.scan.fetch_plan): which blocks are
read together, and that a group's buffer is shared and released."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt.scan.fetch_plan import BlockGroups
from strategies import examples


def _span(lo, hi):
    return np.array([lo], np.int64), np.array([hi], np.int64)


def test_consecutive_dense_blocks_within_the_gap_are_grouped():
    spans = {0: _span(100, 1000), 1: _span(1000, 2000), 2: _span(2500, 4000),  # gaps 0, 500
             3: _span(10_000, 11_000),  # gap 6000 > 1000: a new group
             5: _span(11_500, 12_000),  # block 4 pruned: 3 and 5 are consecutive, 500 apart
             7: _span(30_000, 31_000)}  # alone: reads its own
    groups = BlockGroups(spans, gap=1000, max_bytes=1 << 20)
    assert len(groups) == 2
    assert [b for b in range(8) if b in groups] == [0, 1, 2, 3, 5]


def test_scattered_blocks_and_size_limit():
    scattered = (np.array([0, 5000], np.int64), np.array([100, 5100], np.int64))  # two ranges: reads its own
    spans = {0: _span(0, 400), 1: scattered, 2: _span(5200, 5600), 3: _span(5600, 6000), 4: _span(6000, 6400)}
    groups = BlockGroups(spans, gap=1000, max_bytes=800)
    assert 1 not in groups and 0 not in groups  # 0's only neighbour is scattered
    assert [b for b in (2, 3, 4) if b in groups] == [2, 3]  # 4 would make the group 1200 bytes


class _File:
    def __init__(self):
        self.reads = []

    def read_ranges(self, starts, ends):
        self.reads.append((int(starts[0]), int(ends[-1])))
        return np.arange(int(starts[0]), int(ends[-1]), dtype=np.int64).astype(np.uint8)


def test_a_group_is_read_once_shared_and_freed_after_its_last_block():
    groups = BlockGroups({0: _span(10, 20), 1: _span(20, 30), 2: _span(30, 45)}, gap=0, max_bytes=1 << 20)
    f = _File()
    buf, base, n = groups.fetch(1, f)
    assert (base, n, len(buf)) == (10, 35, 35) and f.reads == [(10, 45)]
    again, base2, n2 = groups.fetch(0, f)
    assert again is buf and (base2, n2) == (10, 0) and len(f.reads) == 1
    groups.done(0)
    groups.done(1)
    assert groups._of[2].buf is buf  # block 2 still needs it
    groups.done(2)
    assert groups._of[2].buf is None


def test_a_failed_group_read_is_not_sent_again_by_its_other_blocks():
    """The store failed the group's read (after its client's retries): every block of
    the group gets that error, and no block sends the request again -- ten blocks
    waiting on the lock each retrying would multiply the time a dead store takes to
    report (seen: a 4-block group took 4 x the client's retry budget)."""
    import pytest

    from rcfmt.errors import StorageError

    class _Failing(_File):
        def read_ranges(self, starts, ends):
            self.reads.append((int(starts[0]), int(ends[-1])))
            raise StorageError("store down")

    groups = BlockGroups({b: _span(10 * b, 10 * b + 10) for b in range(4)}, gap=0, max_bytes=1 << 20)
    f = _Failing()
    for block in range(4):
        with pytest.raises(StorageError, match="store down"):
            groups.fetch(block, f)
    assert f.reads == [(0, 40)]


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(1, 100)), min_size=1, max_size=40),
       st.integers(0, 60))
def test_coalescing_merges_exactly_the_ranges_within_the_gap(spans, gap):
    """Both paths of the scanner's range coalescing (a loop for a column's few ranges,
    numpy for many) merge a range into the one before when it begins at most ``gap``
    past the end of everything before it, and nothing else."""
    from rcfmt.storage.fetch import coalesce

    spans.sort()
    lo = np.array([a for a, _ in spans], np.int64)
    hi = lo + np.array([n for _, n in spans], np.int64)
    starts, ends = coalesce(lo, hi, gap)
    want_s, want_e = [int(lo[0])], [int(hi[0])]
    for a, b in zip(lo[1:].tolist(), hi[1:].tolist()):
        if a > want_e[-1] + gap:
            want_s.append(a)
            want_e.append(b)
        else:
            want_e[-1] = max(want_e[-1], b)
    assert starts.tolist() == want_s and ends.tolist() == want_e


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 100)), max_size=12), st.integers(0, 60))
def test_one_read_covers_every_span_or_none(spans, gap):
    """``one_read`` (the rule for ranges read together or one by one: page indexes of a
    block, bitmap entries) gives the one range coalescing leaves, holding every
    non-empty span, exactly when there are two or more and ``coalesce`` merges them."""
    from rcfmt.storage.fetch import coalesce, one_read

    got = one_read(spans, gap)
    real = sorted((a, n) for a, n in spans if n)
    if len(real) < 2:
        assert got is None
        return
    lo = np.array([a for a, _ in real], np.int64)
    starts, _ = coalesce(lo, lo + np.array([n for _, n in real], np.int64), gap)
    if len(starts) > 1:
        assert got is None
    else:
        assert got == (min(a for a, _ in real), max(a + n for a, n in real))


def test_one_read_takes_offsets_past_int64():
    """Spans come from footers and directories a forged file controls: an offset past
    2**63 is no overflow here (its read fails where reads are checked)."""
    from rcfmt.storage.fetch import one_read

    assert one_read([(2**64 - 1, 112), (10, 5)], 64) is None
    assert one_read([(2**64 - 200, 100), (2**64 - 100, 100)], 0) == (2**64 - 200, 2**64)
