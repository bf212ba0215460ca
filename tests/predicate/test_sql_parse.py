"""The filter option's own parser (:mod:`rcfmt.predicate.sql_parse`) against sqlglot's
Spark dialect: whatever it parses, it parses into a tree of sqlglot's shape (same node
names, arguments and literal text), which the translator reads the same way; whatever it
does not parse goes to sqlglot. Checked on hand-picked predicates, on the random
predicates of the differential tests, on token soup (hypothesis) and on every keyword
sqlglot knows used as a column name."""
from __future__ import annotations

import sys

import pytest
from hypothesis import given, settings, strategies as st

import rcfmt
from rcfmt.errors import InvalidOptionError
from rcfmt.predicate import sql_parse
from rcfmt.predicate.sql_filter import parse_filter
from spark_sample import sample_table
from sql_predicates import PredicateGenerator
from strategies import examples

sqlglot = pytest.importorskip("sqlglot")

SCHEMA = sample_table().schema

#: arguments that do not reach the translation (how a name was quoted, a type's nesting)
_IGNORED = {"quoted", "nested"}


def shape(node):
    """A node as nested tuples of its class name and its set arguments."""
    if isinstance(node, list):
        return tuple(shape(n) for n in node)
    if hasattr(node, "args"):
        args = sorted((key, shape(value)) for key, value in node.args.items()
                      if value not in (None, False, []) and key not in _IGNORED)
        return type(node).__name__, tuple(args)
    return getattr(node, "name", node) if not isinstance(node, (str, bool)) else node


def sqlglot_shape(text: str):
    try:
        return shape(sqlglot.parse_one(text, read="spark"))
    except sqlglot.errors.ParseError:
        return "ParseError"


def check(text: str) -> bool:
    """True when this module parsed ``text`` (into sqlglot's shape, asserted)."""
    ours = sql_parse.parse(text)
    if ours is None:
        return False
    assert shape(ours) == sqlglot_shape(text), text
    return True


PARSED = [
    "a = 1", "a == 1", "a <> 1", "a != 1", "1 < a", "a <= -1.5", "a >= 1e3", "a > 1E+3", "a = 1.", "a = 00012",
    "a = 1.50", "a <=> 1", "a = - -5", "a = -(1)", "a = -'1'", "a = - 1.5e-3", "a IS NULL", "a IS NOT NULL",
    "a IS TRUE", "a IS NOT FALSE", "a BETWEEN 1 AND 2", "a NOT BETWEEN -1 AND 'NaN'", "a IN (1, NULL, 'x')",
    "a NOT IN (1)", "a LIKE 'x%'", "a NOT LIKE 'x%'", "NOT a NOT LIKE 'x%'", "NOT a = 1 AND b = 2 OR c",
    "not a", "a and b or not c", "(a) = 1", "a = (1)", "a IN ((1), 2)", "((a = 1) OR (b = 2)) AND c",
    "`a b` = 1", "`a``b` = 1", "a.b = 1", "a.b.c = 1", "a.b.c.d = 1", "a.`b c`.d = 1", "A = 1",
    "a = 'it\\'s'", "a = 'a\\\\b'", 'a = "dq"', "a = 'é'", "DATE '2024-01-01' < d", "date = 1",
    "ts >= TIMESTAMP '2024-01-01 00:00:00+00:00'", "x = double('NaN')", "x = float('1.5')", "x = DOUBLE('inf')",
    "x = -double('Infinity')", "x = 'nan'::double", "x = CAST('1.5' AS DECIMAL(10,2))", "x = CAST('1' AS DECIMAL)",
    "x = CAST('1' AS decimal(38))", "x = TRY_CAST('1' AS INT)", "x = CAST('a' AS TIMESTAMP_NTZ)",
    "x = CAST('a' AS STRING)", "x = CAST('a' AS TIMESTAMP)", "x = CAST('1' AS BIGINT)", "x = CAST('1' AS SMALLINT)",
    "x = CAST('1' AS TINYINT)", "x = CAST('1' AS FLOAT)", "x = CAST('1' AS DATE)",
    "x = CAST(1 AS BOOLEAN)", "x = CAST('1' AS INTEGER)", "array_contains(t, 'x')", "ARRAY_CONTAINS(t, -1)",
    "value = 1", "\ta\n=\r1 ", "TRUE", "a = TRUE", "a = NULL", "x = 1.e3", "x = ''", "`a.b` = 1", "x = '\\''",
    "date.x = 1", "date BETWEEN DATE '2024-01-01' AND DATE '2024-02-01'", "x = -DATE '2024-01-01'",
]

OUTSIDE = [
    "a = 1 -- c", "a = 1 /* c */", "a = 1;", "a = 1 a", "a = 1 = 2", "a IS NULL IS NULL", "a = 10L", "a = 1.5D",
    "a = .5", "a = 0x1F", "a = 1_000", "a = +5", "a = 'a''b'", "a = 'x' 'y'", "a = 'a\\nb'", "a.b.c.d.e = 1",
    "a IS DISTINCT FROM 1", "a IS NOT DISTINCT FROM 1", "a BETWEEN SYMMETRIC 1 AND 2", "a ILIKE 'x%'",
    "a RLIKE 'x'", "a LIKE 'x%' ESCAPE '!'", "a LIKE ANY ('x%')", "a IN (1,)", "a IN ()", "a IN (SELECT 1)",
    "upper(a) = 'x'", "a + 1 = 2", "a = INTERVAL 1 DAY", "select = 1", "a = current_date", "x'1F' = a",
    "a = DATE'2024-01-01'", "a = CAST('1' AS TIMESTAMP_LTZ)", "a = CAST('1' AS DECIMAL(1,2,3))", "é = 1",
    "x = 1 AND", "AND x = 1", "x = ()", "x\f= 1", "a = 'unterminated", "a IN (SELECT)", "x = CAST('1' AS VARCHAR(3))", "`` = 1", "", "a =", "(a = 1", "a = 1)",
]


@pytest.mark.parametrize("text", PARSED)
def test_parsed_as_sqlglot_parses_them(text):
    assert check(text)


@pytest.mark.parametrize("text", OUTSIDE)
def test_outside_the_subset_is_left_to_sqlglot(text):
    assert sql_parse.parse(text) is None


@pytest.mark.parametrize("seed", range(6))
def test_the_differential_tests_predicates_are_parsed_as_sqlglot_parses_them(seed):
    gen = PredicateGenerator(sample_table(), seed=seed)
    texts = [gen.predicate().render("spark") for _ in range(examples(80))]
    parsed = sum(check(text) for text in texts)
    assert parsed == len(texts)  # all of them are in the subset: no sqlglot import for these


_VOCABULARY = ["a", "b", "`c d`", ".", "1", "-", "2.5", "1e3", "'x'", "'2024-01-01'", '"y"', "NULL", "TRUE",
               "FALSE", "NOT", "AND", "OR", "IS", "IN", "(", ")", ",", "BETWEEN", "LIKE", "=", "<=>", "<",
               ">=", "!=", "DATE", "TIMESTAMP", "CAST", "AS", "DOUBLE", "DECIMAL", "::", "array_contains",
               "double", "float", "int", "string", "'x%'", "ESCAPE", "DISTINCT", "FROM", "+", "*", ";"]


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(st.sampled_from(_VOCABULARY), max_size=12), st.sampled_from([" ", ""]))
def test_token_soup_is_parsed_as_sqlglot_parses_it_or_left_to_it(tokens, sep):
    check(sep.join(tokens))


@settings(max_examples=examples(200), deadline=None)
@given(st.recursive(
    st.sampled_from(["a = 1", "b IS NULL", "c IN (1, 2)", "d BETWEEN 1 AND 2", "e LIKE 'x%'", "f", "g <=> -1"]),
    lambda inner: st.one_of(st.tuples(inner, st.sampled_from([" AND ", " OR ", " and "]), inner).map("".join),
                            inner.map(lambda x: f"NOT {x}"), inner.map(lambda x: f"({x})")),
    max_leaves=8))
def test_nested_connectives_are_parsed_as_sqlglot_parses_them(text):
    assert check(text)


def _keywords() -> list[str]:
    from sqlglot.dialects.spark import Spark

    words = {k for k in Spark.Tokenizer.KEYWORDS if k.replace("_", "").isalpha()}
    words |= {k for k in sqlglot.tokens.Tokenizer.KEYWORDS if k.replace("_", "").isalpha()}
    return sorted(words)


def test_keywords_as_column_names_are_parsed_as_sqlglot_parses_them_or_left_to_it():
    for word in _keywords():
        for text in (f"{word} = 1", f"1 = {word}", f"{word}", f"NOT {word}", f"x.{word} = 1", f"{word.lower()} > 1"):
            check(text)


# ---------------------------------------------------------------- through parse_filter
@pytest.mark.parametrize("seed", range(3))
def test_translations_equal_sqlglots(seed, monkeypatch):
    """The same expression, or the same refusal, whichever parser reads the text."""
    gen = PredicateGenerator(sample_table(), seed=seed)
    for _ in range(examples(40)):
        text = gen.predicate().render("spark")
        outcomes = []
        for without_sqlglot in (False, True):
            with monkeypatch.context() as m:
                if without_sqlglot:
                    m.setitem(sys.modules, "sqlglot", None)  # import sqlglot raises ImportError
                else:
                    m.setattr(sql_parse, "parse", lambda text: None)  # everything through sqlglot
                try:
                    outcomes.append(repr(parse_filter(text, SCHEMA)))
                except InvalidOptionError:
                    outcomes.append("refused")
        assert outcomes[0] == outcomes[1], text


def test_without_sqlglot_common_predicates_work_and_the_rest_names_sqlglot(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "sqlglot", None)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(sample_table(), path)
    expr = parse_filter("id BETWEEN 3 AND 9 AND s NOT LIKE 'ab%' OR i8 IN (1, -2)", SCHEMA)
    got = rcfmt.read_table(path, columns=["id"], filter=expr)["id"].to_pylist()
    table = sample_table().to_pylist()
    want = [r["id"] for r in table if (r["id"] is not None and 3 <= r["id"] <= 9 and r["s"] is not None
                                       and not r["s"].startswith("ab")) or r["i8"] in (1, -2)]
    assert sorted(got) == sorted(want)
    with pytest.raises(InvalidOptionError, match="needs sqlglot"):
        parse_filter("upper(s) = 'AB'", SCHEMA)
    with pytest.raises(InvalidOptionError, match="unknown column"):  # refused by rcfmt's own reading
        parse_filter("nope = 1", SCHEMA)
