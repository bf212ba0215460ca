"""The curve kernels against pure-Python references: Z-order bit interleaving and
Skilling's Hilbert transform (forward and inverse), plus the Hilbert adjacency
property on small grids."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import strategies as S
from rcfmt.errors import InvalidOptionError
from rcfmt.layout import curve_keys


def ref_interleave(x: list[int], bits: int) -> int:
    """MSB-first: bit j of dimension 0, of dimension 1, ..., then bit j-1."""
    h = 0
    for j in range(bits - 1, -1, -1):
        for v in x:
            h = (h << 1) | ((v >> j) & 1)
    return h


def ref_hilbert(x: list[int], bits: int) -> int:
    """Skilling, "Programming the Hilbert curve" (2004), AxesToTranspose, then interleave."""
    x = list(x)
    n = len(x)
    if n > 1:
        m = 1 << (bits - 1)
        q = m
        while q > 1:
            p = q - 1
            for i in range(n):
                if x[i] & q:
                    x[0] ^= p
                else:
                    t = (x[0] ^ x[i]) & p
                    x[0] ^= t
                    x[i] ^= t
            q >>= 1
        for i in range(1, n):
            x[i] ^= x[i - 1]
        t = 0
        q = m
        while q > 1:
            if x[n - 1] & q:
                t ^= q - 1
            q >>= 1
        for i in range(n):
            x[i] ^= t
    return ref_interleave(x, bits)


def ref_hilbert_inverse(h: int, n: int, bits: int) -> list[int]:
    """Skilling's TransposetoAxes after de-interleaving (for n > 1)."""
    x = [0] * n
    for p in range(n * bits):
        bit = (h >> (n * bits - 1 - p)) & 1
        j, d = bits - 1 - p // n, p % n
        x[d] |= bit << j
    big = 2 << (bits - 1)
    t = x[n - 1] >> 1
    for i in range(n - 1, 0, -1):
        x[i] ^= x[i - 1]
    x[0] ^= t
    q = 2
    while q != big:
        p = q - 1
        for i in range(n - 1, -1, -1):
            if x[i] & q:
                x[0] ^= p
            else:
                t = (x[0] ^ x[i]) & p
                x[0] ^= t
                x[i] ^= t
        q <<= 1
    return x


def as_ints(keys: np.ndarray, total_bits: int) -> list[int]:
    """Python ints of the indexes held left-aligned in ``keys``."""
    keys = keys.reshape(len(keys), -1)
    words = keys.shape[1]
    out = []
    for row in keys.tolist():
        v = 0
        for w in row:
            v = (v << 64) | int(w)
        out.append(v >> (64 * words - total_bits))
    return out


@st.composite
def coords(draw, min_k=1, max_k=6):
    k = draw(st.integers(min_k, max_k))
    bits = draw(st.integers(1, 64))
    n = draw(st.integers(1, 12))
    top = (1 << bits) - 1
    vals = draw(st.lists(st.lists(st.one_of(st.integers(0, top), st.sampled_from([0, top])), min_size=n, max_size=n),
                         min_size=k, max_size=k))
    return np.array(vals, dtype=np.uint64), bits


@settings(max_examples=S.examples(200))
@given(case=coords())
def test_zorder_matches_reference(case):
    c, bits = case
    got = as_ints(curve_keys(c, bits, "zorder"), c.shape[0] * bits)
    assert got == [ref_interleave([int(v) for v in col], bits) for col in c.T.tolist()]


@settings(max_examples=S.examples(200))
@given(case=coords())
def test_hilbert_matches_reference_and_inverts(case):
    c, bits = case
    k = c.shape[0]
    got = as_ints(curve_keys(c, bits, "hilbert"), k * bits)
    points = [[int(v) for v in col] for col in c.T.tolist()]
    assert got == [ref_hilbert(p, bits) if k > 1 else p[0] for p in points]
    if k > 1:
        assert [ref_hilbert_inverse(h, k, bits) for h in got] == points


@pytest.mark.parametrize("k,bits", [(2, 1), (2, 2), (2, 3), (2, 5), (3, 1), (3, 2), (3, 3), (4, 2), (5, 2), (6, 1)])
def test_hilbert_adjacency_on_small_grids(k, bits):
    """Every cell of the grid has one index, and consecutive indexes are cells that
    differ by 1 in exactly one coordinate."""
    pts = np.array(list(itertools.product(range(1 << bits), repeat=k)), dtype=np.uint64)
    h = np.array(as_ints(curve_keys(pts.T, bits, "hilbert"), k * bits))
    assert sorted(h.tolist()) == list(range(1 << (k * bits)))
    walk = pts[np.argsort(h)].astype(np.int64)
    steps = np.abs(np.diff(walk, axis=0))
    assert (steps.sum(axis=1) == 1).all()
    assert (walk[0] == 0).all()  # starts at the origin


@pytest.mark.parametrize("k,bits", [(2, 3), (3, 2)])
def test_zorder_on_small_grids_is_a_bijection(k, bits):
    pts = np.array(list(itertools.product(range(1 << bits), repeat=k)), dtype=np.uint64)
    z = as_ints(curve_keys(pts.T, bits, "zorder"), k * bits)
    assert sorted(z) == list(range(1 << (k * bits)))


def test_one_dimension_is_the_identity():
    c = np.array([[0, 5, 3, 2**40, 7]], np.uint64)
    for curve in ("zorder", "hilbert"):
        assert as_ints(curve_keys(c, 41, curve), 41) == [0, 5, 3, 2**40, 7]


def test_curve_keys_validates():
    with pytest.raises(InvalidOptionError):
        curve_keys(np.array([[4]], np.uint64), 2)
    with pytest.raises(InvalidOptionError):
        curve_keys(np.zeros((65, 1), np.uint64), 1)
    with pytest.raises(InvalidOptionError):
        curve_keys(np.zeros((2, 1), np.uint64), 3, "sort")
