"""The writer's null-slot filling (``fill_null_slots``): every null slot repeats the
previous valid value, leading nulls the first valid one, no valid value gives zeros --
checked against a plain-Python walk for every fixed width the native pass takes (bools,
half floats, decimals, timestamps) and the numpy path it leaves other widths to."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt._native import stats as _stats
from rcfmt.encodings.base import ColumnValues
from rcfmt.schema.arrow_io import fill_null_slots
from strategies import examples


def reference(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Slot by slot, as the docstring says."""
    items = list(values)
    if not valid.any():
        return np.zeros(len(values), values.dtype)
    last = items[int(np.flatnonzero(valid)[0])]
    out = []
    for item, ok in zip(items, valid):
        last = item if ok else last
        out.append(last)
    return np.array(out, dtype=values.dtype)


DTYPES = ["bool", "int8", "uint16", "float16", "int32", "float32", "int64", "float64", "datetime64[us]", "V16", "V3"]


@settings(max_examples=examples(150), deadline=None)
@given(dtype=st.sampled_from(DTYPES), n=st.integers(0, 600), null_share=st.sampled_from([0.0, 0.2, 0.9, 1.0]),
       leading=st.integers(0, 20), seed=st.integers(0, 2**32 - 1))
def test_fill_null_slots_matches_reference(dtype, n, null_share, leading, seed):
    rng = np.random.default_rng(seed)
    size = np.dtype(dtype).itemsize
    values = rng.integers(0, 2 if dtype == "bool" else 256, n * size, dtype=np.uint8).view(dtype)
    before = values.tobytes()
    valid = rng.random(n) >= null_share
    valid[: min(leading, n)] = False
    got = fill_null_slots(ColumnValues(values), valid).values
    want = reference(values, valid) if n else values
    assert got.dtype == values.dtype and got.tobytes() == want.tobytes()
    assert values.tobytes() == before  # (a copy: the caller's values untouched)


def test_fill_null_slots_native_contract():
    """None when no row is valid; read-only input taken; refusals named."""
    values = np.arange(5, dtype=np.int16)
    values.flags.writeable = False
    assert _stats.fill_null_slots(values, np.zeros(5, np.uint8)) is None
    got = _stats.fill_null_slots(values, np.array([0, 1, 0, 0, 1], np.uint8))
    assert got.tolist() == [1, 1, 1, 1, 4]
    for bad in (lambda: _stats.fill_null_slots(values, np.ones(4, np.uint8)),
                lambda: _stats.fill_null_slots(np.zeros(3, "V3"), np.ones(3, np.uint8))):
        try:
            bad()
        except ValueError:
            continue
        raise AssertionError("accepted")
