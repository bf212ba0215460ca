"""The ``filter`` option's translator (:mod:`rcfmt.predicate.sql_filter`, also the CLI's
``--filter``): Spark SQL predicates over the Spark tests' sample table, translated and run
through rcfmt's scan, select the rows DuckDB's SQL selects on the same Arrow table --
DuckDB shares Spark's float semantics (NaN equal to NaN and above every number, -0.0
equal to 0.0) and SQL's NULL rules, and no code with rcfmt. Needs no Java (Spark's own
answers: tests/spark/test_filter_differential.py)."""
from __future__ import annotations

import decimal

import pytest

import rcfmt
from rcfmt.errors import InvalidOptionError
from rcfmt.predicate.sql_filter import parse_filter
from spark_sample import sample_table
from sql_predicates import PredicateGenerator
from strategies import examples

duckdb = pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

SCHEMA = sample_table().schema


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """The sample as an rcfmt file of small blocks and pages (so that stats, page and
    dictionary paths all decide rows), with a bitmap index on two columns."""
    path = tmp_path_factory.mktemp("sql") / "sample.rcfmt"
    rcfmt.write_table(sample_table(), path, block_rows=128, page_rows=32, bitmap_indexes={"i32": "equality", "f": "range", "s": "auto"})
    return str(path)


@pytest.fixture(scope="module")
def duck():
    con = duckdb.connect()
    con.execute("SET TimeZone='UTC'")
    con.register("t", sample_table())
    return con


def rcfmt_ids(path: str, sql: str) -> list[int]:
    expr = parse_filter(sql, SCHEMA)
    return sorted(rcfmt.read_table(path, columns=["id"], filter=expr)["id"].to_pylist())


def duckdb_ids(con, sql: str) -> list[int]:
    return sorted(r[0] for r in con.execute(f"SELECT id FROM t WHERE {sql}").fetchall())


@pytest.mark.parametrize("sql", [
    "id = 5", "5 = id", "id <> 5", "id != 5", "id < 5 AND i32 >= 3", "NOT (id > 10) OR s IS NULL",
    "id BETWEEN 3 AND 9", "i8 IN (1, -2, 3)", "s IS NOT NULL", "s LIKE 'ab%'", "s LIKE 'ab3'",
    "d >= DATE '2024-01-10'", "d < '2024-01-05'", "ts > TIMESTAMP '2023-11-20 00:00:00+00:00'",
    "ntz <= '2023-11-15 01:00:00'", "dec < 1.5", "dec >= CAST('-2.25' AS DECIMAL(10,2))",
    "f > -1.5e0", "f >= 0", "NOT (f > 1)", "f < 1", "b", "NOT b", "(id < 3) OR (id > 590 AND p = 1)", "ID = 7",
    "`s` = 'zz1'", "big > 1000000000000000000", "s NOT LIKE 'ab%'", "NOT s NOT LIKE 'ab%'", "s NOT LIKE 'ab3'",
    # rounded half up to the cast's scale, as Spark (and DuckDB) cast
    "dec < CAST('1.55' AS DECIMAL(3,1))", "dec >= CAST('-2.249' AS DECIMAL(10,2))", "dec = CAST('-2.245' AS DECIMAL(5,2))",
])
def test_translations_select_what_sql_selects(sql, written, duck):
    """Each predicate, translated, selects the rows DuckDB's SQL selects on the same
    table (DuckDB orders NaN as Spark does: above every number)."""
    assert rcfmt_ids(written, sql) == duckdb_ids(duck, sql.replace("`", '"'))


@pytest.mark.parametrize("sql, part", [
    ("id + 1 = 5", "compares no column"), ("id = i32", "compares no column"), ("upper(s) = 'AB'", "UPPER"),
    ("s LIKE '%b'", "wildcards"), ("s LIKE 'a_b%'", "wildcards"), ("id = NULL", "NULL"),
    ("id IN (SELECT 1)", "subquery"), ("nope = 1", "unknown column"), ("", "empty"), ("id =", "not a SQL"),
    ("TRUE", "constant"), ("i32", "not a boolean"), ("d < DATE 'x'", "valid literal"),
    ("ts > TIMESTAMP '2023-11-20 00:00:00'", "session time zone"), ("id BETWEEN SYMMETRIC 9 AND 3", "SYMMETRIC"),
    # ISO forms Python reads and Spark does not (NULL or an error there)
    ("d = '20240101'", "valid literal"), ("d = '2024-W01-1'", "valid literal"), ("d = DATE '20240101'", "valid literal"),
    ("ts = TIMESTAMP '20240101T000000Z'", "valid literal"),
    # text sqlglot cannot split into tokens (an unclosed quote): its TokenError was not ours
    ("s = 'abc", "not a SQL"), ("s LIKE 'a%", "not a SQL"), ('s = "abc', "not a SQL"),
    # casts: beyond the decimal's digits (Spark fails the query), not a number, types not translated
    ("dec = CAST('123.456' AS DECIMAL(4,2))", "does not fit DECIMAL"), ("dec = CAST('9.96' AS DECIMAL(2,1))", "does not fit"),
    ("dec = CAST('abc' AS DECIMAL(5,2))", "valid literal"), ("dec = CAST('NaN' AS DECIMAL(5,2))", "valid literal"),
    ("dec = CAST('1_000' AS DECIMAL(10,2))", "valid literal"), ("dec = CAST('Infinity' AS DECIMAL(5,2))", "valid literal"),
    ("dec = CAST('1e250' AS DECIMAL(10,0))", "does not fit"), (f"dec = CAST('{'9' * 250}' AS DECIMAL(38,0))", "does not fit"),
    ("ts > TIMESTAMP_LTZ '2024-01-01 00:00:00+00:00'", "does not translate"), ("s = CAST('a' AS BINARY)", "does not translate"),
    # a TIMESTAMP (local time zone) against a TIMESTAMP_NTZ column: compared in Spark's session zone
    ("ntz <= TIMESTAMP '2023-11-15 01:00:00'", "session time zone"), ("ntz = CAST('2024-03-10 02:30:00' AS TIMESTAMP)",
                                                                      "session time zone"),
    ("s = X'01'", "binary literal"),
])
def test_untranslatable_parts_are_refused_by_name(sql, part):
    with pytest.raises(InvalidOptionError, match=part):
        parse_filter(sql, SCHEMA)


def test_ntz_literals_compare_wall_clocks_and_uint64_is_spark_s_decimal_20_0():
    """TIMESTAMP_NTZ literals and strings compare a TIMESTAMP_NTZ column's wall clock as
    Spark does; a uint64 column is DECIMAL(20, 0) there, which literals past 2**63 compare
    exactly (they were refused as if it were a BIGINT); a struct is named as such."""
    import datetime as dt

    import pyarrow as pa

    schema = pa.schema([("ntz", pa.timestamp("us")), ("u", pa.uint64()), ("st", pa.struct([("a", pa.int32())]))])
    want = repr(rcfmt.col("ntz") == dt.datetime(2024, 3, 10, 2, 30))
    assert repr(parse_filter("ntz = TIMESTAMP_NTZ '2024-03-10 02:30:00'", schema)) == want
    assert repr(parse_filter("ntz = '2024-03-10 02:30:00'", schema)) == want
    assert repr(parse_filter("u >= 9223372036854775808", schema)) == repr(rcfmt.col("u") >= 2**63)
    assert "18446744073709551615" in repr(parse_filter("u < CAST('18446744073709551615' AS DECIMAL(20,0))", schema))
    with pytest.raises(InvalidOptionError, match="'st' is a struct: predicates on whole struct values"):
        parse_filter("st IS NULL", pa.schema([("st.a", pa.int32())]))


def test_a_bare_decimal_cast_is_spark_s_decimal_10_0():
    """Spark's ``DECIMAL`` is ``DECIMAL(10, 0)``: '1.5' is 2 there (the cast's digits were
    ignored, and 1.5 compared)."""
    import decimal

    assert repr(parse_filter("dec = CAST('1.5' AS DECIMAL)", SCHEMA)) == repr(rcfmt.col("dec") == decimal.Decimal(2))
    assert repr(parse_filter("dec = CAST('1.55' AS DECIMAL(2,1))", SCHEMA)) == \
        repr(rcfmt.col("dec") == decimal.Decimal("1.6"))


def test_a_modifier_the_translation_does_not_know_is_refused_not_dropped():
    """A flag sqlglot may set on a node (as it set ``negate`` on LIKE for NOT LIKE) is
    refused by name unless the translation reads it: an IN carrying ``negate`` is not
    read as IN."""
    from sqlglot import exp

    from rcfmt.predicate.sql_filter import _Translator

    node = exp.In(this=exp.column("i32"), expressions=[exp.Literal.number(1)], negate=True)
    with pytest.raises(InvalidOptionError, match="NEGATE"):
        _Translator(exp, SCHEMA).predicate(node)
    like = exp.Like(this=exp.column("s"), expression=exp.Literal.string("ab%"), negate=True)
    assert repr(_Translator(exp, SCHEMA).predicate(like)) == repr(~rcfmt.col("s").startswith("ab"))


# ---------------------------------------------------------------- NaN literals (issue: the relation lost rows)
NAN_CASES = [
    # (Spark SQL, the same in DuckDB's spelling)
    ("f IN (1.5, 1e300, double('NaN'), 0)", "f IN (1.5, 1e300, 'NaN'::DOUBLE, 0)"),
    ("NOT (f NOT IN (double('NaN'), 1e300, 0))", "NOT (f NOT IN ('NaN'::DOUBLE, 1e300, 0))"),
    ("f NOT IN (-2.5, double('NaN'), -2.5)", "f NOT IN (-2.5, 'NaN'::DOUBLE, -2.5)"),
    ("NOT (f BETWEEN double('NaN') AND double('NaN'))", "NOT (f BETWEEN 'NaN'::DOUBLE AND 'NaN'::DOUBLE)"),
    ("(NOT (i32 IS NOT NULL) AND NOT (f < double('NaN'))) OR (i16 BETWEEN 500 AND 24) OR (s <= 'b')",
     "(NOT (i32 IS NOT NULL) AND NOT (f < 'NaN'::DOUBLE)) OR (i16 BETWEEN 500 AND 24) OR (s <= 'b')"),
    ("f = CAST('NaN' AS DOUBLE)", "f = 'NaN'::DOUBLE"), ("f = 'NaN'", "f = 'NaN'"), ("f <> 'nan'", "f <> 'NaN'"),
    ("f < 'NaN'", "f < 'NaN'"), ("f <= double('NaN')", "f <= 'NaN'::DOUBLE"),
    ("f > double('NaN')", "f > 'NaN'::DOUBLE"), ("f >= float('NaN')", "f >= 'NaN'::DOUBLE"),
    ("NOT (f >= 'NaN')", "NOT (f >= 'NaN')"), ("NOT (f = double('NaN'))", "NOT (f = 'NaN'::DOUBLE)"),
    ("f <=> double('NaN')", "f IS NOT DISTINCT FROM 'NaN'::DOUBLE"),
    ("NOT (f <=> double('NaN'))", "NOT (f IS NOT DISTINCT FROM 'NaN'::DOUBLE)"),
    ("f IN (double('NaN'), NULL)", "f IN ('NaN'::DOUBLE, NULL)"),
    ("NOT (f IN (double('NaN'), NULL))", "NOT (f IN ('NaN'::DOUBLE, NULL))"),
    ("f BETWEEN 0 AND double('NaN')", "f BETWEEN 0 AND 'NaN'::DOUBLE"),
    ("f NOT BETWEEN -1 AND 'NaN'", "f NOT BETWEEN -1 AND 'NaN'"),
    ("f > 1 OR f = -double('inf')", "f > 1 OR f = -'inf'::DOUBLE"), ("NOT (f > 1)", "NOT (f > 1)"),
    ("f = -0.0", "f = -0.0"), ("f IN (0)", "f IN (0)"), ("f > 'Infinity'", "f > 'Infinity'"),
    ("NOT (f IN (2.5, 'NaN') AND f IS NOT NULL)", "NOT (f IN (2.5, 'NaN') AND f IS NOT NULL)"),
]


@pytest.mark.parametrize("sql, duck_sql", NAN_CASES)
def test_nan_literals_select_what_spark_selects(written, duck, sql, duck_sql):
    want = duckdb_ids(duck, duck_sql)
    assert rcfmt_ids(written, sql) == want


@pytest.mark.parametrize("sql", ["i32 = double('NaN')", "dec IN (1, 'NaN')", "f = 'one'", "f < 'NaN1'"])
def test_nan_where_spark_would_not_compare_it_is_refused(sql):
    with pytest.raises(InvalidOptionError):
        parse_filter(sql, SCHEMA)


def test_float_literal_function_is_a_float32_value(written, duck):
    """``float('0.1')`` is the float32 nearest 0.1, widened to double when compared with a
    double column (as Spark does), so it equals no double 0.1."""
    assert parse_filter("f = float('0.5')", SCHEMA) is not None
    assert rcfmt_ids(written, "f = float('0.1')") == []
    assert rcfmt_ids(written, "f = float('0.5')") == duckdb_ids(duck, "f = 0.5")


# ---------------------------------------------------------------- random predicates
@pytest.mark.parametrize("seed", range(4))
def test_random_predicates_select_what_duckdb_selects(written, duck, seed):
    """Random trees (comparisons either way round, <=>, BETWEEN, IN with NULL and NaN
    members, LIKE, IS NULL, boolean columns, NOT/AND/OR) over every column but the
    float32 one (DuckDB compares it as float32, Spark as double)."""
    gen = PredicateGenerator(sample_table(), seed=seed, duckdb=True)
    checked = 0
    for _ in range(examples(60)):
        tree = gen.predicate()
        sql, duck_sql = tree.render("spark"), tree.render("duckdb")
        try:
            got = rcfmt_ids(written, sql)
        except InvalidOptionError:  # refused by name (checked below to stay rare)
            continue
        assert got == duckdb_ids(duck, duck_sql), sql
        checked += 1
    assert checked >= 0.8 * examples(60)


# ---------------------------------------------------------------- rcfmt expressions in a Spark relation
F = rcfmt.col("f")


@pytest.mark.parametrize("expr", [
    F < 1.0, ~(F < 1.0), F.between(1, 2), F.isin([float("nan"), 1.0]), ~F.isin([float("nan")]), F.is_nan(),
    (F > 1.0) | F.is_nan(), F != 2.0, ~(F != 2.0), ((F < 1.0) | rcfmt.col("s").startswith("ab")) & (rcfmt.col("i32") >= 3),
    rcfmt.col("i32") > 3, ~rcfmt.col("s").isin(["a", None]),
])
def test_rcfmt_expressions_meaning_what_spark_means_are_taken(expr):
    from rcfmt.predicate.expr_json import dumps
    from rcfmt.predicate.sql_filter import parse_filter_expr

    assert repr(parse_filter_expr(dumps(expr), SCHEMA)) == repr(expr)


@pytest.mark.parametrize("expr, rows", [
    (F > 1.0, "f NaN"), (~(F > 1.0), "f NaN"), (F >= -1.0, "f NaN"), (F == float("nan"), "f NaN"),
    (F < float("nan"), "ordinary values"), (~F.is_nan(), "f NULL"), (F.between(1, float("nan")), "f"),
    ((rcfmt.col("i32") > 3) & ~(rcfmt.col("r") >= 2.0), "r NaN"),
])
def test_rcfmt_expressions_spark_would_read_otherwise_are_refused(expr, rows):
    """Refused, naming the rows where the meanings part, not applied with rcfmt's meaning."""
    from rcfmt.predicate.expr_json import dumps
    from rcfmt.predicate.sql_filter import parse_filter_expr

    with pytest.raises(InvalidOptionError, match="other rows than Spark SQL") as info:
        parse_filter_expr(dumps(expr), SCHEMA)
    assert rows in str(info.value)


def test_an_ambiguous_name_is_refused_by_name():
    """A name the data holds twice (a top-level ``st.x`` beside struct ``st``'s field, or
    a repeated column) is refused naming the ambiguity, as ``col("st.x")`` is."""
    import pyarrow as pa

    from rcfmt.schema.nested import bind_schema

    dotted = bind_schema(pa.schema([("st", pa.struct([("x", pa.int64())])), ("st.x", pa.int64())]))
    repeated = pa.schema([("a", pa.int64()), ("a", pa.int64())])
    for sql, schema in (("st.x = 2", dotted), ("a = 1", repeated)):
        with pytest.raises(InvalidOptionError, match="is ambiguous"):
            parse_filter(sql, schema)


def test_long_chains_and_lists_and_deep_nesting(tmp_path):
    """An OR of 3,000 equalities, an AND of 3,000 comparisons and an IN of 20,000
    members are filters like any other (a raw RecursionError, and an IN list checked
    member against member, before); parentheses or NOTs nested beyond what can be
    walked are an InvalidOptionError, not a RecursionError."""
    import pyarrow as pa

    table = pa.table({"x": pa.array(range(10_000), pa.int64())})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=1000)
    wanted = list(range(0, 9000, 3))
    cases = [(" OR ".join(f"x = {v}" for v in wanted), wanted),
             (" AND ".join(f"x > {v}" for v in range(3000)), list(range(3000, 10_000))),
             (f"x IN ({', '.join(str(v) for v in range(5, 40_000, 2))})", list(range(5, 10_000, 2))),
             (f"NOT x IN ({', '.join(str(v) for v in range(20_000))})", [])]
    for text, rows in cases:
        expr = parse_filter(text, table.schema)
        assert rcfmt.read_table(path, filter=expr)["x"].to_pylist() == rows
    for text in ("(" * 600 + "x = 1" + ")" * 600, "NOT " * 3000 + "x = 1"):
        with pytest.raises(InvalidOptionError, match="nested too deeply"):
            parse_filter(text, table.schema)


def test_double_literals_against_integer_and_decimal_columns(tmp_path):
    """A number with an exponent is a DOUBLE in Spark SQL, compared with the column cast
    to DOUBLE. Exact comparisons with the double agree where the column's values are
    doubles exactly near it, so those are kept (the rows below are Spark's, measured on
    its Parquet reader); a long near or beyond 2^53, or a decimal, is refused (the
    literal compared as an exact decimal gave other rows)."""
    import pyarrow as pa

    table = pa.table({"k": pa.array([1, 2], pa.int64()), "i": pa.array([1, 2], pa.int32()),
                      "l": pa.array([1, 1_700_000_000_000_000_001], pa.int64()),
                      "dec": pa.array([decimal.Decimal("0.10"), decimal.Decimal("1.00")], pa.decimal128(9, 2))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    for text, rows in (("i = 1.00000000000000001E0", [1]), ("i < 1.00000000000000001E0", []),
                       ("l > 1.5E3", [2]), ("i IN (2E0, 5)", [2]), ("NOT i BETWEEN -1E1 AND 1.5E0", [2])):
        got = rcfmt.read_table(path, filter=parse_filter(text, table.schema))["k"].to_pylist()
        assert got == rows, text
    for text in ("l > 1.7E18", "dec = 0.10000000000000000001E0", "dec < 1E0"):
        with pytest.raises(InvalidOptionError, match="is a DOUBLE in Spark SQL"):
            parse_filter(text, table.schema)


@pytest.mark.parametrize("tz", [None, "UTC"])
def test_nanosecond_timestamps_compare_as_spark_reads_them(tmp_path, tz):
    """Spark reads a nanosecond timestamp floored to microseconds, and its literals hold
    microseconds: every comparison, IN list and BETWEEN of the filter option selects
    the rows whose floored value compares (the nanoseconds were compared: other rows)."""
    import numpy as np
    import pyarrow as pa

    ns = [1000, 1999, -1, 2000, None, -1000, 999]
    table = pa.table({"k": list(range(len(ns))), "t": pa.array(ns, pa.timestamp("ns", tz))})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    micros = [None if v is None else int(np.floor_divide(v, 1000)) for v in ns]  # (what Spark sees)
    kind = "TIMESTAMP" if tz else "TIMESTAMP_NTZ"
    offset = "+00:00" if tz else ""
    lit = {1: f"{kind}'1970-01-01 00:00:00.000001{offset}'", -1: f"{kind}'1969-12-31 23:59:59.999999{offset}'",
           0: f"{kind}'1970-01-01 00:00:00{offset}'"}
    ops = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
           ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}
    cases = []
    for v, text in lit.items():
        for op, fn in ops.items():
            cases.append((f"t {op} {text}", [k for k, m in enumerate(micros) if m is not None and fn(m, v)]))
            cases.append((f"NOT t {op} {text}", [k for k, m in enumerate(micros) if m is not None and not fn(m, v)]))
    cases += [(f"t IN ({lit[-1]}, {lit[1]})", [k for k, m in enumerate(micros) if m in (-1, 1)]),
              (f"t NOT IN ({lit[-1]}, NULL)", []),
              (f"t BETWEEN {lit[-1]} AND {lit[0]}", [k for k, m in enumerate(micros) if m is not None and -1 <= m <= 0])]
    for text, rows in cases:
        got = rcfmt.read_table(path, filter=parse_filter(text, table.schema))["k"].to_pylist()
        assert got == rows, text
