"""The exact filter evaluator's fast paths agree with plain Python arithmetic."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt.predicate.evaluate import _decimal_compare
from strategies import examples  # tests/ is on sys.path (tests/conftest.py)

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
EDGES = [0, 1, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, -(2**64), 10**37, -(10**37), 2**127 - 1, -(2**127)]
int128 = st.one_of(st.sampled_from(EDGES), st.integers(-(2**127), 2**127 - 1),
                   st.sampled_from(EDGES).flatmap(lambda e: st.integers(e - 2, e + 2)).filter(
                       lambda v: -(2**127) <= v < 2**127))


def _raw(values):
    return np.frombuffer(b"".join(v.to_bytes(16, "little", signed=True) for v in values), dtype="V16")


@settings(max_examples=examples(200), deadline=None)
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
from decimal import Decimal  # noqa: E402

import pyarrow as pa  # noqa: E402

import rcfmt  # noqa: E402
from rcfmt.schema.arrow_io import from_arrow  # noqa: E402
from rcfmt.predicate.evaluate import ColumnData, eval_nnf  # noqa: E402
from rcfmt.predicate.nnf import to_nnf  # noqa: E402
from rcfmt.predicate.bind import bind  # noqa: E402
from rcfmt.schema.types import logical_type_from_arrow  # noqa: E402
from oracle_filter import selection_mask  # noqa: E402  (the independent oracle, tests/oracle_filter.py)

N_ROWS = 40
CMP_OPS = ["==", "!=", "<", "<=", ">", ">="]
FLOATS = [0.0, -0.0, 1.5, -2.5, float("nan"), float("inf"), float("-inf"), 3.0]
COLUMNS = {  # name: (arrow type, value strategy, literal strategy)
    "i8": (pa.int8(), st.integers(-128, 127), st.integers(-130, 130)),
    "i32": (pa.int32(), st.integers(-5, 5), st.integers(-7, 7)),
    "u64": (pa.uint64(), st.sampled_from([0, 1, 2**63, 2**64 - 1]), st.sampled_from([-1, 0, 1, 2**63, 2**64 - 1, 2**64])),
    "i64": (pa.int64(), st.integers(-3, 3), st.integers(-4, 4)),
    "f64": (pa.float64(), st.sampled_from(FLOATS), st.sampled_from(FLOATS + [2])),
    "f32": (pa.float32(), st.sampled_from(FLOATS + [0.1]), st.sampled_from(FLOATS + [2, 0.1, 1e39])),
    "d": (pa.date32(), st.integers(0, 4).map(lambda k: dt.date(2024, 1, 1) + dt.timedelta(days=k)),
          st.integers(-1, 5).map(lambda k: dt.date(2024, 1, 1) + dt.timedelta(days=k))),
    "ts": (pa.timestamp("us"), st.integers(0, 4), st.integers(-1, 5)),
    "s": (pa.string(), st.sampled_from(["a", "ab", "b", ""]), st.sampled_from(["a", "ab", "b", "", "c"])),
    # code point order is UTF-8 byte order (dictionaries compare their few entries as bytes)
    "u": (pa.large_string(), st.sampled_from(["é", "e", "z", "\U0001F600", "a\x00", "\xff", "\uffff"]),
          st.sampled_from(["é", "f", "\U0001F600", "a", "\ufffd", ""])),
    "bin": (pa.binary(), st.sampled_from([b"\xff", b"\x00", b"a", b"", b"a\x00"]),
            st.sampled_from([b"\xfe", b"\x00\x00", b"a", b"", b"\xff\xff"])),
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


@settings(max_examples=examples(300), deadline=None)
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
    assert got.tolist() == selection_mask(expr, table).tolist()


# ---------------------------------------------------------------- the same, evaluated while the pages decode
from strategies import assert_tables_identical  # noqa: E402

def _leaf(name, op, value):
    c = rcfmt.col(name)
    return {"==": c == value, "!=": c != value, "<": c < value, "<=": c <= value, ">": c > value,
            ">=": c >= value}[op]


@settings(max_examples=examples(150), deadline=None)
@given(case=_case(), page_rows=st.integers(1, 12), block_rows=st.sampled_from([7, 40]),
       bitpack=st.booleans(), narrow=st.booleans(), project=st.sampled_from(["all", "k", "none"]),
       null_leaf=st.sampled_from([None, "is_null", "is_valid"]), data=st.data())
def test_conjunctions_evaluated_in_the_decode_pass_match_the_arrow_oracle(tmp_path_factory, case, page_rows,
                                                                          block_rows, bitpack, narrow, project,
                                                                          null_leaf, data):
    """A scan evaluates a column's conjuncts in the page pipeline's decode pass: an
    interval, sets the values must be in or not in (``==``, ``!=``, ``isin``, NOT
    ``isin``, with NULL among the members), validity alone (is_null, is_valid), or a
    per-entry table (whole chunks, selected pages, selected rows of BITPACK pages, with
    a conjunct on another column narrowing the candidates first; filter columns
    projected or, when not, decoded only into the mask; the columns of whole chunks
    ANDing into one mask, null rows TRUE for is_null): the rows Arrow selects."""
    table, leaves, dictionary = case
    table = table.append_column("k", pa.array(np.arange(table.num_rows, dtype=np.int64)))
    expr = None
    for name, op, value in leaves:
        expr = _leaf(name, op, value) if expr is None else expr & _leaf(name, op, value)
    for _ in range(data.draw(st.integers(0, 2), label="sets")):
        name = data.draw(st.sampled_from(sorted(dictionary)), label="set column")
        members = data.draw(st.lists(st.none() | COLUMNS[name][2], max_size=20), label="members")
        leaf = rcfmt.col(name).isin(members)
        expr = expr & (~leaf if data.draw(st.booleans(), label="not in") else leaf)
    if null_leaf:  # on the last column: after the others' answers are in the mask
        expr = expr & getattr(rcfmt.col(leaves[-1][0]), null_leaf)()
    if narrow:  # page-index pruning on k: the other columns are read at some pages / rows
        expr = expr & (rcfmt.col("k") >= 13) & (rcfmt.col("k") < 22)
    encoding = {name: "dictionary" if dictionary[name] else ("bitpack" if bitpack and pa.types.is_integer(
        table.schema.field(name).type) else None) for name in table.column_names if name != "k"}
    path = tmp_path_factory.mktemp("push") / "t.rcfmt"
    rcfmt.write_table(table, path, page_rows=page_rows, block_rows=block_rows,
                      encoding={n: e for n, e in encoding.items() if e}, compression="none")
    want = table.filter(pa.array(selection_mask(expr, table)))
    columns = {"all": None, "k": ["k"], "none": []}[project]
    got = rcfmt.read_table(path, columns=columns, filter=expr)
    assert_tables_identical(got, want if columns is None else want.select(columns), check_metadata=False)


def test_a_conjunction_is_decided_in_the_decode_pass(tmp_path, monkeypatch):
    """Q6's shape (two intervals and a dictionary column's leaves, nulls among the
    values): no separate mask pass runs after decoding, and the rows are Arrow's."""
    from rcfmt.predicate import evaluate

    rng = np.random.default_rng(7)
    n = 20_000
    table = pa.table({
        "qty": pa.array(rng.integers(1, 50, n), pa.int32(), mask=rng.random(n) < 0.1),
        "disc": pa.array(rng.integers(0, 11, n) / 100, pa.float64()),
        "flag": pa.array(rng.choice(["A", "N", "R"], n)),
        "day": pa.array(rng.integers(8000, 10000, n).astype(np.int32), pa.date32()),
        "price": pa.array(rng.random(n) * 1000),
        "tag": pa.array(rng.choice(["x", "y", "z"], n), mask=rng.random(n) < 0.3),
    })
    path = tmp_path / "q.rcfmt"
    rcfmt.write_table(table, path, block_rows=8192, page_rows=1000,
                      encoding={"flag": "dictionary", "day": "bitpack", "tag": "dictionary"})
    expr = ((rcfmt.col("day") >= dt.date(1992, 1, 1)) & (rcfmt.col("day") < dt.date(1995, 1, 1))
            & (rcfmt.col("disc") >= 0.05) & (rcfmt.col("disc") <= 0.07) & (rcfmt.col("qty") < 24)
            & rcfmt.col("flag").isin(["A", "R"]))
    want = table.filter(pa.array(selection_mask(expr, table)))

    def refuse(*args, **kwargs):
        raise AssertionError("a mask pass ran after decoding")

    monkeypatch.setattr(evaluate._select, "range_mask", refuse)
    monkeypatch.setattr(evaluate._select, "codes_mask", refuse)
    for threads in (False, True):
        got = rcfmt.read_table(path, filter=expr, use_threads=threads)
        assert got.equals(want) and 0 < got.num_rows < n
        # the filter columns not projected are decoded into their masks only
        got = rcfmt.read_table(path, columns=["price", "disc"], filter=expr, use_threads=threads)
        assert got.equals(want.select(["price", "disc"]))
    lone = rcfmt.read_table(path, columns=["price"], filter=rcfmt.col("qty") < 5)  # a lone leaf too
    assert lone.equals(table.filter(pa.compute.less(table["qty"], 5)).select(["price"]))
    # != / isin / NOT isin on columns without a dictionary, and is_null / is_valid:
    # decided in the decode pass too (no leaf is evaluated after decoding)
    monkeypatch.setattr(evaluate, "leaf_mask", refuse)
    for expr in [(rcfmt.col("qty") != 7) & ~rcfmt.col("day").isin([dt.date(1992, 3, 1), dt.date(1994, 5, 2)]),
                 rcfmt.col("qty").isin([3, 5, 7, 11, 13, None]) & (rcfmt.col("disc") != 0.05),
                 rcfmt.col("qty").is_null() & (rcfmt.col("day") >= dt.date(1993, 1, 1)),
                 rcfmt.col("qty").is_valid() & rcfmt.col("disc").isin([0.0, 0.1]) & (rcfmt.col("qty") > 30),
                 rcfmt.col("qty").is_null() & (rcfmt.col("qty") > 3)]:
        want = table.filter(pa.array(selection_mask(expr, table)))
        for threads in (False, True):
            for columns in (None, ["price"]):
                got = rcfmt.read_table(path, columns=columns, filter=expr, use_threads=threads)
                assert got.equals(want if columns is None else want.select(columns))
    monkeypatch.undo()
    # 16-byte decimals have no value kernel: only their validity is decided in the pass
    wide = pa.table({"w": pa.array([Decimal("123456789012345678901234.50"), None, Decimal("1.00")] * 700,
                                   pa.decimal128(38, 2)), "k": pa.array(np.arange(2100))})
    wide_path = tmp_path / "wide.rcfmt"
    rcfmt.write_table(wide, wide_path, block_rows=1000, encoding={"w": "plain"})
    w = rcfmt.col("w")
    for expr in [w.is_null(), w.is_valid(), w.is_null() & (w != Decimal("1.005")), w.is_null() & w.is_valid(),
                 w.is_valid() & (w > Decimal("2")), w.is_null() & (rcfmt.col("k") < 1500)]:
        want = wide.filter(pa.array(selection_mask(expr, wide)))
        for columns in (None, ["k"]):
            got = rcfmt.read_table(wide_path, columns=columns, filter=expr)
            assert got.equals(want if columns is None else want.select(columns)), expr
    # null rows TRUE, ANDed after another column's answers (day's, by column order)
    for tag in (rcfmt.col("tag").is_null(), rcfmt.col("tag").isin(["x", None])):
        expr = (rcfmt.col("day") < dt.date(1995, 1, 1)) & tag
        want = table.filter(pa.array(selection_mask(expr, table)))
        got = rcfmt.read_table(path, columns=["price"], filter=expr)
        assert got.equals(want.select(["price"])) and got.num_rows


def test_leaves_on_a_null_row_are_decided_as_evaluated():
    """The value each leaf takes on a null row (what a dictionary chunk's null rows get)
    is, kind by kind, what evaluating the leaf on a null value gives, and what the
    independent oracle gives the user's leaf on a NULL (only is_null is TRUE there)."""
    from rcfmt.predicate import evaluate
    from rcfmt.predicate.nnf import Leaf

    table = pa.table({"i": pa.array([3, None], pa.int8()), "f": pa.array([float("nan"), None]),
                      "s": pa.array(["ab", None]), "d": pa.array([dt.date(2024, 1, 1), None])})
    c = rcfmt.col
    exprs = [c("i") == 3, c("i") != 3, c("i") < 1000, c("i") > 1000, c("i").isin([3, None]), ~c("i").isin([3, None]),
             ~c("i").isin([4]), c("i").is_null(), c("i").is_valid(), c("f").is_nan(), ~c("f").is_nan(),
             c("f") <= 1.0, c("s").startswith("a"), ~c("s").startswith("a"), c("s") >= "a",
             c("d") == dt.date(2024, 1, 1)]
    seen = set()
    for expr in exprs:
        leaf = to_nnf(bind(expr, table.schema))
        if isinstance(leaf, Leaf):  # the leaf is the whole expression: the oracle's answer on the NULL row
            assert evaluate._on_null(leaf, _column_data(table.column(leaf.column.name).combine_chunks(),
                                                        False).values, leaf.column.ltype) == selection_mask(expr, table)[1], expr
        children = leaf.children if not isinstance(leaf, Leaf) else (leaf,)
        for leaf in children:
            name = leaf.column.name
            data = _column_data(table.column(name).combine_chunks(), False)
            evaluated = bool(evaluate._values_mask(leaf, data.values.slice(0, 1), np.zeros(1, bool), data.ltype)[0])
            assert evaluate._on_null(leaf, data.values, data.ltype) == evaluated, leaf
            seen.add((type(leaf).__name__, evaluated))
    assert {"Cmp", "InSet", "NullCheck", "NanCheck", "Prefix", "Folded"} <= {kind for kind, _ in seen}
    assert ("NullCheck", True) in seen
    assert ("NanCheck", True) not in seen  # is_nan and ~is_nan are NULL on a NULL row


@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.binary()])
def test_small_dictionaries_compare_strings_as_arrow_does(arrow_type):
    """Every operator, entry and literal of a small dictionary (compared as bytes in
    Python) against Arrow's comparison: UTF-8 byte order, prefixes, empty strings, NUL."""
    from rcfmt.predicate.evaluate import _values_mask

    texts = ["", "a", "a\x00", "ab", "b", "e", "é", "z", "ÿ", "\uffff", "\U0001F600", "\ufffd"]
    entries = [t.encode("utf-8") for t in texts] if arrow_type == pa.binary() else texts
    arr = pa.array(entries, arrow_type)
    ltype = logical_type_from_arrow(arrow_type)
    values, _ = from_arrow(arr, ltype)
    table = pa.table({"s": arr})
    for literal in entries + (["f", "a\x00\x00"] if arrow_type != pa.binary() else [b"f", b"\xff"]):
        for op in CMP_OPS:
            expr = _leaf("s", op, literal)
            leaf = to_nnf(bind(expr, table.schema))
            got = _values_mask(leaf, values, None, ltype)
            assert got.tolist() == selection_mask(expr, table).tolist(), (op, literal)


# ---------------------------------------------------------------- prefixes (numpy, not Arrow compute)
_PREFIX_TEXTS = st.text(alphabet=st.sampled_from("ab\u00e9\u4e2d\U0001f600"), max_size=6)


@settings(max_examples=examples(300), deadline=None)
@given(values=st.lists(st.one_of(st.none(), _PREFIX_TEXTS), max_size=40), prefix=_PREFIX_TEXTS,
       negated=st.booleans(), skip=st.integers(0, 3), binary=st.booleans(), large=st.booleans())
def test_prefix_mask_selects_what_arrow_starts_with_selects(values, prefix, negated, skip, binary, large):
    """startswith / NOT startswith on strings or binaries (NULLs, the empty prefix,
    multi-byte characters, values shorter than the prefix, offsets not starting at 0,
    32- and 64-bit offsets) against pyarrow.compute.starts_with, NULL rows never TRUE."""
    import pyarrow.compute as pc

    from rcfmt.encodings.base import ColumnValues
    from rcfmt.predicate import evaluate
    from rcfmt.predicate.bind import bind
    from rcfmt.predicate.nnf import to_nnf

    kind = (pa.large_binary() if large else pa.binary()) if binary else (pa.large_string() if large else pa.string())
    arr = pa.array([v if v is None or not binary else v.encode() for v in values], kind).slice(min(skip, len(values)))
    literal = prefix.encode() if binary else prefix
    expr = rcfmt.col("s").startswith(literal)
    leaf = to_nnf(bind(~expr if negated else expr, pa.schema([("s", kind)])))
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if large else np.int32)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    got = evaluate._values_mask(leaf, ColumnValues(data, offsets), valid, leaf.column.ltype)
    hit = pc.starts_with(arr, pattern=literal)
    want = (pc.invert(hit) if negated else hit).fill_null(False).to_numpy(zero_copy_only=False)
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("offsets", [[0, 2, 9], [0, 3, 2], [-1, 2, 3], [0, 2, 4]])
def test_prefix_kernel_reads_nothing_outside_its_data(offsets):
    """Offsets past the data or running backwards are a status, never a read out of
    bounds ([0, 2, 4] is the in-bounds control)."""
    from rcfmt._native import varbinary

    out = np.zeros(2, np.uint8)
    status = varbinary.prefix_mask(np.array(offsets, np.int64), np.frombuffer(b"abab", np.uint8),
                                   np.frombuffer(b"ab", np.uint8), False, out)
    assert status == (0 if offsets == [0, 2, 4] else -1)
    if status == 0:
        assert out.tolist() == [1, 1]


# ---------------------------------------------------------------- integer sets (native, not Arrow compute)
_INT_TYPES = [pa.int8(), pa.uint8(), pa.int16(), pa.int32(), pa.uint32(), pa.int64(), pa.uint64(), pa.date32()]


@settings(max_examples=examples(300), deadline=None)
@given(data=st.data(), kind=st.sampled_from(_INT_TYPES), negated=st.booleans())
def test_integer_set_mask_follows_sql(data, kind, negated):
    """IN / NOT IN on integer-stored columns against SQL's rules computed in Python:
    NULL rows never TRUE, NOT IN a list holding NULL never TRUE, members beyond the
    column's range (small and large sets: the bit-table and the linear kernels)."""
    from rcfmt.encodings.base import ColumnValues
    from rcfmt.predicate import evaluate
    from rcfmt.predicate.bind import bind
    from rcfmt.predicate.nnf import to_nnf

    storage = pa.int32() if kind == pa.date32() else kind
    info = np.iinfo(storage.to_pandas_dtype())
    lo, hi = (-719_162, 2_932_896) if kind == pa.date32() else (info.min, info.max)  # (Python's dates)
    near = st.integers(max(lo, -40), min(hi, 40)) | st.sampled_from([lo, hi])
    values = data.draw(st.lists(st.none() | near, max_size=40))
    members = data.draw(st.lists(st.none() | near | st.integers(-(2**64), 2**64).filter(
        lambda m: kind != pa.date32() or lo <= m <= hi), max_size=30))
    in_range = [m for m in members if m is not None and lo <= m <= hi]
    literal = [None if m is None else (dt.date(1970, 1, 1) + dt.timedelta(days=m) if kind == pa.date32() else m)
               for m in (in_range + [None] * (None in members))]
    expr = rcfmt.col("x").isin(literal)
    leaf = to_nnf(bind(~expr if negated else expr, pa.schema([("x", kind)])))
    raw = np.array([0 if v is None else v for v in values], storage.to_pandas_dtype())
    valid = np.array([v is not None for v in values], bool)
    got = evaluate._values_mask(leaf, ColumnValues(raw), valid, leaf.column.ltype)
    members_set, has_null = set(in_range), None in members
    want = [v is not None and ((v not in members_set and not has_null) if negated else v in members_set)
            for v in values]
    assert got.tolist() == want


@settings(max_examples=examples(300), deadline=None)
@given(values=st.lists(st.one_of(st.none(), _PREFIX_TEXTS), max_size=40),
       members=st.lists(st.one_of(st.none(), _PREFIX_TEXTS), max_size=20), negated=st.booleans(),
       skip=st.integers(0, 3), binary=st.booleans(), large=st.booleans())
def test_bytes_set_mask_follows_sql(values, members, negated, skip, binary, large):
    """IN / NOT IN on strings or binaries (the empty string, shared prefixes, multi-byte
    characters, offsets not starting at 0, both offset widths) against SQL's rules
    computed in Python: NULL rows never TRUE, NOT IN a list holding NULL never TRUE."""
    from rcfmt.encodings.base import ColumnValues
    from rcfmt.predicate import evaluate
    from rcfmt.predicate.bind import bind
    from rcfmt.predicate.nnf import to_nnf

    kind = (pa.large_binary() if large else pa.binary()) if binary else (pa.large_string() if large else pa.string())
    enc = (lambda v: v if v is None or not binary else v.encode())
    arr = pa.array([enc(v) for v in values], kind).slice(min(skip, len(values)))
    expr = rcfmt.col("s").isin([enc(m) for m in members])
    leaf = to_nnf(bind(~expr if negated else expr, pa.schema([("s", kind)])))
    offsets = np.frombuffer(arr.buffers()[1], np.int64 if large else np.int32)[arr.offset:arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], np.uint8) if arr.buffers()[2] is not None else np.zeros(0, np.uint8)
    valid = arr.is_valid().to_numpy(zero_copy_only=False)
    got = evaluate._values_mask(leaf, ColumnValues(data, offsets), valid, leaf.column.ltype)
    present, has_null = {m for m in members if m is not None}, None in members
    want = [v is not None and ((v not in present and not has_null) if negated else v in present)
            for v in values[min(skip, len(values)):]]
    assert got.tolist() == want


def test_bytes_set_kernel_reads_nothing_outside_its_data():
    from rcfmt._native import varbinary

    out = np.zeros(2, np.uint8)
    members, member_offsets = np.frombuffer(b"abcd", np.uint8), np.array([0, 2, 4], np.int64)
    for offsets, status in (([0, 2, 4], 0), ([0, 2, 9], -1), ([0, 3, 2], -1), ([-1, 2, 3], -1)):
        assert varbinary.set_mask(np.array(offsets, np.int64), np.frombuffer(b"abcd", np.uint8), member_offsets,
                                  members, False, out) == status
        if status == 0:
            assert out.tolist() == [1, 1]  # ("ab" and "cd" are members)
    with pytest.raises(ValueError):  # members' offsets past their data
        varbinary.set_mask(np.array([0, 2], np.int64), np.frombuffer(b"ab", np.uint8), np.array([0, 9], np.int64),
                           members, False, out)
