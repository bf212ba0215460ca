"""The byte codec of deletion vectors (:mod:`rcfmt.dataset.deletion_vector`): round
trips, agreement with an independent implementation (pyroaring, CRoaring's portable
64-bit layout), the container each set gets, and CorruptFileError for every forged
vector -- never another exception, a crash or a hang."""
from __future__ import annotations

import struct
import time

import numpy as np
import pyroaring
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from rcfmt.dataset.deletion_vector import decode, encode
from rcfmt.errors import CorruptFileError, InvalidOptionError

FAST = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BIG = 1 << 41  # num_rows above every position the strategies draw

# -- sets of positions -------------------------------------------------------------

_bases = st.sampled_from([0, 65536, 3 * 65536, (1 << 32) - 65536, 1 << 32, (5 << 32) + 65536, 1 << 40])
_edges = st.sampled_from([0, 1, 65535, 65536, 65537, 131071, 131072, (1 << 32) - 1, 1 << 32, (1 << 32) + 65535])


@st.composite
def _segment(draw) -> np.ndarray:
    kind = draw(st.sampled_from(["scattered", "run", "full", "dense", "edge", "runs"]))
    base = draw(_bases)
    if kind == "scattered":
        return base + np.array(draw(st.lists(st.integers(0, 1 << 20), max_size=60)), np.int64)
    if kind == "run":
        start, length = draw(st.integers(0, 1 << 18)), draw(st.integers(1, 70_000))
        return np.arange(base + start, base + start + length, dtype=np.int64)
    if kind == "full":  # whole 65536-position containers
        key, count = draw(st.integers(0, 8)), draw(st.integers(1, 2))
        return np.arange(base + key * 65536, base + (key + count) * 65536, dtype=np.int64)
    if kind == "dense":  # a bitmap container (more than 4096 values) or an array close to one
        rng = np.random.default_rng(draw(st.integers(0, 2**32)))
        count = draw(st.sampled_from([4095, 4096, 4097, 6000, 30_000, 65_535]))
        key = draw(st.integers(0, 4))
        return base + key * 65536 + rng.choice(65536, count, replace=False).astype(np.int64)
    if kind == "runs":  # many short runs: run, array or bitmap containers by their sizes
        starts = np.array(draw(st.lists(st.integers(0, 65_000), min_size=1, max_size=40)), np.int64)
        length = draw(st.integers(1, 300))
        return (base + starts[:, None] + np.arange(length)).ravel()
    return np.array(draw(st.lists(_edges, max_size=6)), np.int64)


@st.composite
def position_sets(draw) -> np.ndarray:
    segments = draw(st.lists(_segment(), max_size=5))
    return np.unique(np.concatenate([np.empty(0, np.int64), *segments]))


def _roundtrip(s: np.ndarray, data: bytes) -> np.ndarray:
    return decode(data, num_rows=BIG, cardinality=len(s))


def _pyroaring(s: np.ndarray, *, optimize: bool) -> bytes:
    bm = pyroaring.BitMap64()
    bm.update(s.astype(np.uint64))  # array and bitmap containers only: no run detection
    if optimize:
        bm.run_optimize()
    return bm.serialize()


# -- round trips and the oracle ------------------------------------------------------

@FAST
@given(position_sets())
def test_round_trip(s):
    out = _roundtrip(s, encode(s))
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, s)


@FAST
@given(position_sets())
def test_agrees_with_pyroaring(s):
    ours = encode(s)
    assert np.array_equal(np.array(list(pyroaring.BitMap64.deserialize(ours)), np.int64), s)
    for optimize in (False, True):
        np.testing.assert_array_equal(_roundtrip(s, _pyroaring(s, optimize=optimize)), s)
    # the same container choice as CRoaring's run_optimize: the same bytes
    assert ours == _pyroaring(s, optimize=True)


@pytest.mark.parametrize("s", [
    [], [0], [65535], [65536], [65535, 65536], [(1 << 32) - 1, 1 << 32], [(1 << 63) - 1],
    list(range(65536)), list(range(0, 65536, 2)), list(range(5, 4101)), list(range(0, 8192, 2)),
    [0, 1, 2], [0, 1, 2, 10, 11, 12],
])
def test_round_trip_examples(s):
    s = np.array(s, np.int64)
    data = encode(s)
    np.testing.assert_array_equal(decode(data, num_rows=1 << 63 if len(s) else 0, cardinality=len(s)), s)
    assert np.array_equal(np.array(list(pyroaring.BitMap64.deserialize(data)), np.int64), s)


def test_empty_set():
    assert encode([]) == encode(np.empty(0, np.int64)) == bytes(8)
    out = decode(bytes(8), num_rows=0, cardinality=0)
    assert out.dtype == np.int64 and out.size == 0


def test_accepts_integer_array_likes():
    expected = encode(np.array([1, 5, 70_000], np.int64))
    for s in ([1, 5, 70_000], (1, 5, 70_000), np.array([1, 5, 70_000], np.uint32), np.array([1, 5, 70_000], np.int32)):
        assert encode(s) == expected
    assert encode(np.array([1, 5], np.uint8)) == encode([1, 5])
    assert decode(bytearray(expected), num_rows=70_001, cardinality=3).tolist() == [1, 5, 70_000]
    assert decode(memoryview(expected), num_rows=70_001, cardinality=3).tolist() == [1, 5, 70_000]


# -- container choice --------------------------------------------------------------

def _container_kinds(data: bytes) -> list[str]:
    """The kinds of the containers of a single-bucket vector, read off its header."""
    (buckets,) = struct.unpack_from("<Q", data)
    assert buckets == 1
    (cookie,) = struct.unpack_from("<I", data, 12)
    if cookie == 12346:
        (count,) = struct.unpack_from("<I", data, 16)
        cards = np.frombuffer(data, "<u2", 2 * count, 20)[1::2].astype(int) + 1
        return ["bitmap" if c > 4096 else "array" for c in cards]
    count = (cookie >> 16) + 1
    runs = np.unpackbits(np.frombuffer(data, np.uint8, (count + 7) // 8, 16), bitorder="little")[:count]
    cards = np.frombuffer(data, "<u2", 2 * count, 16 + (count + 7) // 8)[1::2].astype(int) + 1
    return ["run" if r else "bitmap" if c > 4096 else "array" for r, c in zip(runs, cards)]


def test_ranges_become_run_containers():
    s = np.arange(123_456, 723_456)
    data = encode(s)
    assert len(data) < 200
    assert set(_container_kinds(data)) == {"run"}
    np.testing.assert_array_equal(decode(data, num_rows=1_000_000, cardinality=len(s)), s)


def test_sparse_sets_become_array_containers():
    rng = np.random.default_rng(7)
    s = np.unique(rng.integers(0, 6_000_000, 100_000))
    data = encode(s)
    assert set(_container_kinds(data)) == {"array"}
    containers = 6_000_000 // 65536 + 1
    assert len(data) == 8 + 4 + 8 + 8 * containers + 2 * len(s)  # headers, then 2 bytes a position


def test_dense_sets_become_bitmap_containers():
    s = np.arange(0, 65536, 2)
    assert _container_kinds(encode(s)) == ["bitmap"]
    assert _container_kinds(encode(np.arange(0, 8192, 2))) == ["array"]  # 4096 values: array
    assert _container_kinds(encode(np.arange(0, 8194, 2))) == ["bitmap"]  # 4097
    # a run container only when strictly smaller: [0, 1, 2] is 6 bytes either way
    assert _container_kinds(encode([0, 1, 2])) == ["array"]
    assert _container_kinds(encode([0, 1, 2, 3])) == ["run"]


def test_large_vectors_round_trip():
    """Runs, sparse arrays and dense bitmaps of millions of rows (their decode speed is
    the bench's, not a test's: a timed assertion fails on a busy machine)."""
    rng = np.random.default_rng(3)
    sets = [(np.arange(1000, 601_000), 1_000_000), (np.unique(rng.integers(0, 6_000_000, 100_000)), 6_000_000),
            (np.sort(rng.choice(6_000_000, 2_000_000, replace=False)), 6_000_000)]
    for s, num_rows in sets:
        out = decode(encode(s), num_rows=num_rows, cardinality=len(s))
        np.testing.assert_array_equal(out, s)


# -- encode's input checks -----------------------------------------------------------

@pytest.mark.parametrize("bad", [
    [3, 2], [1, 1], [0, 5, 5, 6], [-1, 0], [-5], [0.0, 1.0], np.array([1.5]), [[1, 2]], 3, ["a"],
    [True, False], np.array([1 << 63], np.uint64), [1 << 64], [[1], [2, 3]],
])
def test_encode_rejects_invalid_positions(bad):
    with pytest.raises(InvalidOptionError):
        encode(bad)


# -- forged vectors ------------------------------------------------------------------

def _bitmap32(containers, *, runs=None, offsets="auto") -> bytes:
    """A hand-built 32-bit portable bitmap: containers are (key, cardinality, body);
    ``runs`` the indexes of run containers (the run-cookie layout), or None."""
    n = len(containers)
    desc = b"".join(struct.pack("<HH", key, card - 1) for key, card, _ in containers)
    if runs is None:
        head = struct.pack("<II", 12346, n) + desc
        with_offsets = True
    else:
        bits = np.zeros(n, np.uint8)
        bits[list(runs)] = 1
        head = struct.pack("<I", 12347 | (n - 1) << 16) + np.packbits(bits, bitorder="little").tobytes() + desc
        with_offsets = n >= 4
    if with_offsets:
        at, offs = len(head) + 4 * n, []
        for _, _, body in containers:
            offs.append(at)
            at += len(body)
        if offsets != "auto":
            offs = offsets
        head += b"".join(struct.pack("<I", o) for o in offs)
    return head + b"".join(body for _, _, body in containers)


def _vector(*buckets) -> bytes:
    return struct.pack("<Q", len(buckets)) + b"".join(struct.pack("<I", high) + bm for high, bm in buckets)


def _array(*values) -> bytes:
    return np.array(values, "<u2").tobytes()


def _runs(*pairs) -> bytes:
    return struct.pack("<H", len(pairs)) + b"".join(struct.pack("<HH", s, l - 1) for s, l in pairs)


def _bitmap(values) -> bytes:
    bits = np.zeros(65536, np.uint8)
    bits[list(values)] = 1
    return np.packbits(bits, bitorder="little").tobytes()


def _corrupt(data, *, num_rows=BIG, cardinality, match=None):
    t = time.perf_counter()
    with pytest.raises(CorruptFileError, match=match) as info:
        decode(data, num_rows=num_rows, cardinality=cardinality, path="f.rc")
    assert time.perf_counter() - t < 20  # (a hang guard, not a speed bound: the forged sizes are not followed)
    assert info.value.path == "f.rc"


def test_hand_built_vectors_decode():
    """The forging helpers build valid vectors: the cases below break one thing each."""
    data = _vector((0, _bitmap32([(0, 2, _array(1, 7)), (3, 3, _runs((10, 2), (20, 1)))], runs=[1])),
                   (2, _bitmap32([(1, 4097, _bitmap(range(4097)))])))
    out = decode(data, num_rows=BIG, cardinality=4102)
    assert out[:5].tolist() == [1, 7, 3 * 65536 + 10, 3 * 65536 + 11, 3 * 65536 + 20]
    assert out[5:].tolist() == list(range((2 << 32) + 65536, (2 << 32) + 65536 + 4097))
    four = _bitmap32([(k, 1, _runs((k, 1))) for k in range(4)], runs=range(4))
    assert decode(_vector((0, four)), num_rows=BIG, cardinality=4).tolist() == [k * 65537 for k in range(4)]
    assert decode(_vector((0, _bitmap32([]))), num_rows=0, cardinality=0).size == 0  # an empty bucket


def test_truncated_at_every_length():
    rng = np.random.default_rng(1)
    s = np.unique(np.concatenate([[3, 9, 65536], np.arange(200_000, 200_050), rng.integers(1 << 32, (1 << 32) + 65536, 5000)]))
    for part in (s, s[:20]):
        data = encode(part)
        for end in range(len(data)):
            _corrupt(data[:end], cardinality=len(part))


def test_trailing_bytes():
    data = encode([1, 2, 1000])
    for extra in (b"\0", b"\0" * 8, data[8:]):
        _corrupt(data + extra, cardinality=3, match="trailing")


def test_bad_cookie():
    data = bytearray(encode([1, 5, 9]))
    for cookie in (0, 12345, 12348, 12346 | 1 << 16, 0xFFFFFFFF):
        data[12:16] = struct.pack("<I", cookie)
        _corrupt(bytes(data), cardinality=3)


def test_huge_counts_fail_fast():
    _corrupt(struct.pack("<Q", 2**64 - 1), cardinality=0, num_rows=0, match="buckets")
    _corrupt(struct.pack("<Q", 2**64 - 1) + bytes(100), cardinality=1, match="buckets")
    _corrupt(struct.pack("<Q", 2**40) + encode([1])[8:], cardinality=1, match="buckets")
    for count in (2**32 - 1, 65537, 100):
        _corrupt(_vector((0, struct.pack("<II", 12346, count) + bytes(64))), cardinality=1, match="containers")
    # a run cookie declaring 65536 containers in a few bytes
    _corrupt(_vector((0, struct.pack("<I", 12347 | 0xFFFF << 16) + bytes(64))), cardinality=1, match="truncated")
    # a tiny vector claiming a huge cardinality: refused before anything is allocated
    _corrupt(encode([1]), cardinality=10**15, num_rows=10**16)
    _corrupt(_vector((0, _bitmap32([(0, 65536, _runs((0, 65536)))], runs=[0]))), cardinality=10**12, num_rows=10**13)


def test_keys_not_ascending():
    a = _bitmap32([(0, 1, _array(5))])
    for highs in ((1, 1), (2, 1)):
        _corrupt(_vector((highs[0], a), (highs[1], a)), cardinality=2, match="bucket key")
    for keys in ((3, 3), (4, 2)):
        bm = _bitmap32([(keys[0], 1, _array(5)), (keys[1], 1, _array(6))])
        _corrupt(_vector((0, bm)), cardinality=2, match="container keys")


def test_cardinality_mismatch():
    data = encode([1, 2, 70_000])
    for cardinality in (0, 2, 4):
        _corrupt(data, cardinality=cardinality)
    _corrupt(data, cardinality=5, num_rows=4, match="exceeds")
    _corrupt(encode([]), cardinality=1)
    for bad in (-1, 1.5, "3", None):
        _corrupt(data, cardinality=bad)
        _corrupt(data, cardinality=3, num_rows=bad)


def test_positions_beyond_num_rows():
    data = encode([1, 2, 70_000])
    _corrupt(data, cardinality=3, num_rows=70_000, match="70000")
    _corrupt(data, cardinality=3, num_rows=65536)
    decode(data, cardinality=3, num_rows=70_001)
    _corrupt(encode([1 << 40]), cardinality=1, num_rows=1 << 40)
    top = _vector((2**32 - 1, _bitmap32([(0xFFFF, 1, _array(0xFFFF))])))  # 2**64 - 1: beyond int64
    _corrupt(top, cardinality=1, num_rows=2**70)


def test_bad_array_containers():
    for values in ((5, 5), (7, 5), (0, 3, 2)):
        _corrupt(_vector((0, _bitmap32([(0, len(values), _array(*values))]))), cardinality=len(values), match="ascending")


def test_bad_run_containers():
    cases = {
        "overlap": [(10, 5), (12, 3)],
        "unsorted": [(100, 2), (10, 2)],
        "past 65535": [(65530, 10)],
        "past 65535 first": [(65530, 10), (3, 1)],
    }
    for name, pairs in cases.items():
        card = sum(l for _, l in pairs)
        _corrupt(_vector((0, _bitmap32([(0, card, _runs(*pairs))], runs=[0]))), cardinality=card)
    # runs holding other than the declared cardinality
    for declared, pairs in ((5, [(0, 4)]), (3, [(0, 4)]), (1, [])):
        _corrupt(_vector((0, _bitmap32([(0, declared, _runs(*pairs))], runs=[0]))), cardinality=declared, match="runs hold")


def test_bitmap_popcount_mismatch():
    for declared, values in ((4097, range(4098)), (5000, range(4097)), (4097, [])):
        _corrupt(_vector((0, _bitmap32([(0, declared, _bitmap(values))]))), cardinality=declared, match="bits set")


def test_bad_offset_headers():
    containers = [(0, 1, _array(1)), (1, 2, _array(1, 2)), (5, 1, _array(9))]
    good = _bitmap32(containers)
    assert decode(_vector((0, good)), num_rows=BIG, cardinality=4).size == 4
    for offsets in ([0, 0, 0], [32, 34, 39], [32, 34, 38 + 65536], [33, 35, 39]):
        _corrupt(_vector((0, _bitmap32(containers, offsets=offsets))), cardinality=4, match="offset")
    runs4 = [(k, 1, _runs((k, 1))) for k in range(4)]
    assert decode(_vector((0, _bitmap32(runs4, runs=range(4)))), num_rows=BIG, cardinality=4).size == 4
    _corrupt(_vector((0, _bitmap32(runs4, runs=range(4), offsets=[0, 6, 12, 18]))), cardinality=4, match="offset")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(position_sets(), st.data())
def test_mutated_vectors_decode_or_raise(s, data):
    s = s[s < (1 << 34)][:20_000]  # small vectors: more of the mutations land in headers
    vector = bytearray(encode(s))
    for _ in range(data.draw(st.integers(1, 4))):
        i = data.draw(st.integers(0, len(vector) - 1))
        how = data.draw(st.sampled_from(["set", "flip", "cut", "insert"]))
        if how == "set":
            vector[i] = data.draw(st.integers(0, 255))
        elif how == "flip":
            vector[i] ^= 1 << data.draw(st.integers(0, 7))
        elif how == "cut":
            del vector[i:i + data.draw(st.integers(1, 8))]
        else:
            vector[i:i] = data.draw(st.binary(min_size=1, max_size=8))
        if not vector:
            vector = bytearray(b"\0")
    num_rows = data.draw(st.sampled_from([1 << 34, int(s[-1]) + 1 if len(s) else 0]))
    cardinality = data.draw(st.sampled_from([len(s), len(s) + 1, max(len(s) - 1, 0)]))
    try:
        out = decode(bytes(vector), num_rows=num_rows, cardinality=cardinality)
    except CorruptFileError:
        return
    assert out.dtype == np.int64 and out.shape == (cardinality,)
    if cardinality:
        assert out[0] >= 0 and out[-1] < num_rows
        assert np.all(out[1:] > out[:-1])
