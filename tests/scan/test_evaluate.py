"""The exact filter evaluator's fast paths agree with plain Python arithmetic."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt.scan.evaluate import _decimal_compare

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
EDGES = [0, 1, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, -(2**64), 10**37, -(10**37), 2**127 - 1, -(2**127)]
int128 = st.one_of(st.sampled_from(EDGES), st.integers(-(2**127), 2**127 - 1),
                   st.sampled_from(EDGES).flatmap(lambda e: st.integers(e - 2, e + 2)).filter(
                       lambda v: -(2**127) <= v < 2**127))


def _raw(values):
    return np.frombuffer(b"".join(v.to_bytes(16, "little", signed=True) for v in values), dtype="V16")


@settings(max_examples=200, deadline=None)
@given(values=st.lists(int128, min_size=1, max_size=50), literal=int128, op=st.sampled_from(sorted(OPS)))
def test_decimal_compare_matches_python(values, literal, op):
    got = _decimal_compare(_raw(values), op, literal)
    assert got.tolist() == [OPS[op](v, literal) for v in values]


@pytest.mark.parametrize("op", sorted(OPS))
def test_decimal_compare_word_boundaries(op):
    values = [e + d for e in EDGES for d in (-1, 0, 1) if -(2**127) <= e + d < 2**127]
    for literal in EDGES:
        assert _decimal_compare(_raw(values), op, literal).tolist() == [OPS[op](v, literal) for v in values]


# ---------------------------------------------------------------- conjunctions (native interval and dictionary passes)
import datetime as dt  # noqa: E402

import pyarrow as pa  # noqa: E402

import rcfmt  # noqa: E402
from rcfmt.file.arrow_io import from_arrow  # noqa: E402
from rcfmt.scan.evaluate import ColumnData, eval_nnf  # noqa: E402
from rcfmt.scan.nnf import to_nnf  # noqa: E402
from rcfmt.scan.bind import bind  # noqa: E402
from rcfmt.scan.oracle import selection_mask  # noqa: E402
from rcfmt.types import logical_type_from_arrow  # noqa: E402

N_ROWS = 40
CMP_OPS = ["==", "!=", "<", "<=", ">", ">="]
FLOATS = [0.0, -0.0, 1.5, -2.5, float("nan"), float("inf"), float("-inf"), 3.0]
COLUMNS = {  # name: (arrow type, value strategy, literal strategy)
    "i8": (pa.int8(), st.integers(-128, 127), st.integers(-130, 130)),
    "i32": (pa.int32(), st.integers(-5, 5), st.integers(-7, 7)),
    "u64": (pa.uint64(), st.sampled_from([0, 1, 2**63, 2**64 - 1]), st.sampled_from([-1, 0, 1, 2**63, 2**64 - 1, 2**64])),
    "i64": (pa.int64(), st.integers(-3, 3), st.integers(-4, 4)),
    "f64": (pa.float64(), st.sampled_from(FLOATS), st.sampled_from(FLOATS + [2])),
    "d": (pa.date32(), st.integers(0, 4).map(lambda k: dt.date(2024, 1, 1) + dt.timedelta(days=k)),
          st.integers(-1, 5).map(lambda k: dt.date(2024, 1, 1) + dt.timedelta(days=k))),
    "ts": (pa.timestamp("us"), st.integers(0, 4), st.integers(-1, 5)),
    "s": (pa.string(), st.sampled_from(["a", "ab", "b", ""]), st.sampled_from(["a", "ab", "b", "", "c"])),
}


def _column_data(arr: pa.Array, dictionary: bool) -> ColumnData:
    ltype = logical_type_from_arrow(arr.type)
    if not dictionary:
        values, valid = from_arrow(arr, ltype)
        return ColumnData(ltype, values, valid)
    enc = arr.dictionary_encode()
    codes = np.asarray(enc.indices.fill_null(0), dtype=np.uint32)
    values, _ = from_arrow(enc.dictionary, ltype)
    valid = None if arr.null_count == 0 else np.asarray(arr.is_valid())
    return ColumnData(ltype, None, valid, codes, values)


@st.composite
def _case(draw):
    names = draw(st.lists(st.sampled_from(sorted(COLUMNS)), min_size=1, max_size=3, unique=True))
    table = {}
    for name in names:
        t, values, _ = COLUMNS[name]
        table[name] = pa.array(draw(st.lists(st.one_of(st.none(), values), min_size=N_ROWS, max_size=N_ROWS)), t)
    leaves = []
    for _ in range(draw(st.integers(1, 5))):
        name = draw(st.sampled_from(names))
        op = draw(st.sampled_from(CMP_OPS))
        leaves.append((name, op, draw(COLUMNS[name][2])))
    dictionary = {name: draw(st.booleans()) for name in names}
    return pa.table(table), leaves, dictionary


@settings(max_examples=300, deadline=None)
@given(case=_case())
def test_conjunctions_match_the_arrow_oracle(case):
    """Several comparisons per column (ANDed into one interval, or per dictionary entry),
    NULLs, NaN, -0.0, literals outside the column's type: the same rows as Arrow."""
    table, leaves, dictionary = case
    expr = None
    for name, op, value in leaves:
        leaf = {"==": rcfmt.col(name) == value, "!=": rcfmt.col(name) != value, "<": rcfmt.col(name) < value,
                "<=": rcfmt.col(name) <= value, ">": rcfmt.col(name) > value, ">=": rcfmt.col(name) >= value}[op]
        expr = leaf if expr is None else expr & leaf
    nnf = to_nnf(bind(expr, table.schema))
    data = {name: _column_data(table.column(name).combine_chunks(), dictionary[name]) for name in table.column_names}
    got = eval_nnf(nnf, data.__getitem__, table.num_rows)
    assert got.tolist() == selection_mask(nnf, table).tolist()
