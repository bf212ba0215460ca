"""Many ranges of a local file read in one GIL-free call (``rcfmt._native.preads``):
the bytes of every range land where the buffer keeps them, a range outside the buffer
is refused before anything is read, a file that ends first is reported (a scan then
raises CorruptFileError), and a scan's reads are the same bytes as one by one."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt._native.preads import read_ranges
from rcfmt.storage.fetch import halves
from rcfmt.storage.local import LocalFile


def _file(tmp_path, n=100_000):
    data = np.random.default_rng(0).integers(0, 256, n, dtype=np.uint8).tobytes()
    path = tmp_path / "bytes"
    path.write_bytes(data)
    return path, data


def test_every_range_lands_where_the_buffer_keeps_it(tmp_path):
    path, data = _file(tmp_path)
    starts = np.array([100, 5000, 5001 + 10, 99_000], np.int64)
    ends = np.array([200, 5010, 7000, 100_000], np.int64)
    out = np.full(ends[-1] - starts[0], 0xEE, np.uint8)
    src = LocalFile(str(path))
    try:
        assert src.read_ranges_into(starts, ends, out, 100) == -1
    finally:
        src.close()
    for a, b in zip(starts, ends):
        assert out[a - 100: b - 100].tobytes() == data[a:b]
    assert (out[200 - 100: 5000 - 100] == 0xEE).all()  # (between ranges: untouched)


def test_ranges_outside_the_buffer_are_refused_before_reading(tmp_path):
    path, _ = _file(tmp_path)
    fd = os.open(path, os.O_RDONLY)
    try:
        out = np.zeros(100, np.uint8)
        for starts, ends, base in (([0], [101], 0), ([10], [20], 11), ([30], [20], 0), ([0, 50], [10, 150], 0)):
            with pytest.raises(ValueError, match="outside the buffer"):
                read_ranges(fd, np.array(starts, np.int64), np.array(ends, np.int64), out, base)
        assert not out.any()
        with pytest.raises(ValueError, match="differ"):
            read_ranges(fd, np.array([0, 1], np.int64), np.array([1], np.int64), out, 0)
    finally:
        os.close(fd)


def test_a_file_that_ends_first_and_a_bad_descriptor_are_reported(tmp_path):
    path, _ = _file(tmp_path, 1000)
    fd = os.open(path, os.O_RDONLY)
    try:
        out = np.zeros(3000, np.uint8)
        assert read_ranges(fd, np.array([0, 900, 2000], np.int64), np.array([10, 1100, 2100], np.int64), out, 0) \
            == (1, 0)  # the second range runs past the end
    finally:
        os.close(fd)
    failed, err = read_ranges(fd, np.array([0], np.int64), np.array([10], np.int64), np.zeros(10, np.uint8), 0)
    assert failed == 0 and err != 0  # (a closed descriptor: EBADF)


def test_a_scan_of_a_file_cut_short_is_corrupt(tmp_path):
    path = tmp_path / "t.rcfmt"
    n = 20_000
    table = pa.table({"a": np.arange(n), "b": np.arange(n) * 2.5, "s": [f"v{i}" for i in range(n)]})
    rcfmt.write_table(table, path, block_rows=5000, page_rows=500, compression="none")
    with rcfmt.open(path) as f:
        assert f.take([10, 7000, 19_999]).equals(table.take([10, 7000, 19_999]))
        os.truncate(path, f.size // 2)  # (the footer read at the open stays)
        with pytest.raises(rcfmt.CorruptFileError, match="shrank|outside the file"):
            f.take([19_000, 19_500])


@st.composite
def _ranges(draw):
    """Sorted disjoint non-empty ranges holding two bytes or more."""
    cuts = sorted(draw(st.sets(st.integers(0, 10_000), min_size=2, max_size=20)))
    pairs = [(a, b) for a, b in zip(cuts[::2], cuts[1::2])]
    if sum(b - a for a, b in pairs) < 2:
        pairs = [(0, 2)]
    return np.array([a for a, _ in pairs], np.int64), np.array([b for _, b in pairs], np.int64)


@given(_ranges())
@settings(max_examples=300, deadline=None)
def test_halves_cut_ranges_in_two_without_loss_overlap_or_empty_ranges(ranges):
    starts, ends = ranges
    total = int((ends - starts).sum())
    first, second = halves(starts, ends, total)
    size = lambda part: int((part[1] - part[0]).sum())  # noqa: E731
    assert size(first) == total // 2 and size(second) == total - total // 2
    for part in (first, second):
        assert len(part[0]) and (part[1] > part[0]).all() and (part[0][1:] >= part[1][:-1]).all()
    assert first[1][-1] <= second[0][0]
    covered = lambda s, e: {x for a, b in zip(s.tolist(), e.tolist()) for x in range(a, b)}  # noqa: E731
    assert covered(*first) | covered(*second) == covered(starts, ends)


@pytest.mark.parametrize("ranges", [[(0, 1)], [(0, 0.001), (0.02, 0.7), (0.75, 1)]])  # (fractions of the file)
def test_a_split_read_reads_what_one_read_reads_and_a_shrunk_file_is_located(tmp_path, ranges, monkeypatch):
    """A large local read copied in halves side by side (one on a pool) gives the bytes
    one read gives, counts the same requests, and a file that ends early names the first
    range it ended in, whichever half holds it."""
    import rcfmt
    from rcfmt.errors import CorruptFileError
    from rcfmt.runtime.threads import shared_pool

    monkeypatch.setattr("rcfmt.file.reader.SPLIT_READ_BYTES", 1)
    path = tmp_path / "t.rcfmt"
    n = 40_000
    rcfmt.write_table(pa.table({"x": np.random.default_rng(1).integers(0, 1 << 40, n)}), path, compression="none")
    size = path.stat().st_size
    starts = np.array([int(a * size) for a, _ in ranges], np.int64)
    ends = np.array([int(b * size) for _, b in ranges], np.int64)
    with rcfmt.open(path) as f:
        before = f.requests
        plain = f.read_ranges(starts, ends)
        one = f.requests - before
        split = f.read_ranges(starts, ends, shared_pool("columns"))
        assert f.requests - before == 2 * one
    for a, b in zip(starts.tolist(), ends.tolist()):
        assert bytes(split[a - starts[0]: b - starts[0]]) == bytes(plain[a - starts[0]: b - starts[0]])
    with rcfmt.open(path) as f:
        with open(path, "r+b") as out:
            out.truncate(int(ends[-1]) - 10)  # (the last range, in the second half, ends early)
        with pytest.raises(CorruptFileError, match="file shrank") as err:
            f.read_ranges(starts, ends, shared_pool("columns"))
        assert err.value.offset == int(starts[-1]) if len(ranges) > 1 else err.value.offset > 0


@pytest.mark.parametrize("how", ["read_at", "read_into", "read_ranges_into"])
def test_a_file_closed_while_a_read_is_in_flight_reads_its_own_bytes(tmp_path, how, monkeypatch):
    """close() from another thread while a read is in flight leaves the descriptor open
    until that read is done (the number, if closed at once, could be reused by a file
    opened meanwhile and the read would return that file's bytes); reads after close()
    raise "file is closed"."""
    import threading

    import rcfmt.storage.local as local

    path, data = _file(tmp_path, 4096)
    other = tmp_path / "other"
    other.write_bytes(b"\xee" * 4096)
    f = LocalFile(str(path))
    started, release = threading.Event(), threading.Event()
    real = {"read_at": local.os.pread, "read_into": local.os.preadv}

    def paused(real_call):
        def call(*args):
            started.set()
            release.wait(10)
            return real_call(*args)
        return call

    if how == "read_ranges_into":
        import rcfmt._native.preads as preads

        monkeypatch.setattr(preads, "read_ranges", paused(preads.read_ranges))
    else:
        monkeypatch.setattr(local.os, "pread" if how == "read_at" else "preadv", paused(real[how]))
    got = {}

    def read():
        if how == "read_at":
            got["bytes"] = f.read_at(100, 64)
        else:
            out = bytearray(64)
            if how == "read_into":
                f.read_into(100, memoryview(out))
            else:
                f.read_ranges_into(np.array([100], np.int64), np.array([164], np.int64), out, 100)
            got["bytes"] = bytes(out)

    reader = threading.Thread(target=read)
    reader.start()
    assert started.wait(10)
    f.close()
    newcomer = os.open(other, os.O_RDONLY)  # (the lowest free number: the old one if it was closed)
    try:
        release.set()
        reader.join(10)
        assert got["bytes"] == data[100:164]
        with pytest.raises(rcfmt.RcfmtError, match="file is closed"):
            f.read_at(0, 8)
    finally:
        os.close(newcomer)
