"""The ``filter`` option's common predicates parsed without sqlglot.

Importing sqlglot costs a fresh process about 0.15 s (and its first parse 18 ms), which a
one-shot ``rcfmt head --filter`` or the first query of a Spark worker would pay for a
predicate as plain as ``id = 5``. This module parses the subset of Spark SQL that the
translator (:mod:`rcfmt.predicate.sql_filter`) takes into a tree of the same shape as
sqlglot's Spark dialect gives -- the same node names, the same arguments, literal text
kept as written -- so that the translator, which reads both through the same attributes,
gives the same expression. A test checks the shapes against sqlglot's on random and
hand-picked predicates.

:func:`parse` returns None for anything outside the subset, so that the caller hands
the text to sqlglot: a parse here never guesses. Outside the subset are: comments,
functions but ``CAST``/``TRY_CAST``/``double``/``float``/``array_contains``, arithmetic,
chained comparisons, ``IS DISTINCT FROM``, ``ESCAPE``, ``ILIKE``, literal suffixes
(``10L``), ``.5``, doubled quotes and backslash escapes other than ``\\\\ \\' \\"`` in
strings, unquoted SQL keywords used as column names, references of more than four parts.
"""
from __future__ import annotations

__all__ = ["parse"]


class Node:
    """A parsed node: ``args`` as sqlglot names them; ``sql()`` gives the text it was
    parsed from (what an error names)."""

    __slots__ = ("args", "text")

    def __init__(self, text: str, **args):
        self.text = text
        self.args = args

    @property
    def this(self):
        return self.args.get("this")

    @property
    def expression(self):
        return self.args.get("expression")

    @property
    def expressions(self) -> list:
        return self.args.get("expressions") or []

    @property
    def name(self) -> str:
        this = self.this
        return this.name if isinstance(this, Node) else this

    def sql(self, dialect=None) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.args})"


class Paren(Node):
    __slots__ = ()


class And(Node):
    __slots__ = ()


class Or(Node):
    __slots__ = ()


class Not(Node):
    __slots__ = ()


class Is(Node):
    __slots__ = ()


class EQ(Node):
    __slots__ = ()


class NEQ(Node):
    __slots__ = ()


class GT(Node):
    __slots__ = ()


class GTE(Node):
    __slots__ = ()


class LT(Node):
    __slots__ = ()


class LTE(Node):
    __slots__ = ()


class NullSafeEQ(Node):
    __slots__ = ()


class Between(Node):
    __slots__ = ()


class In(Node):
    __slots__ = ()


class Like(Node):
    __slots__ = ()


class ArrayContains(Node):
    __slots__ = ()


class Boolean(Node):
    __slots__ = ()


class Null(Node):
    __slots__ = ()


class Neg(Node):
    __slots__ = ()


class Literal(Node):
    __slots__ = ()

    @property
    def is_string(self) -> bool:
        return self.args["is_string"]


class Identifier(Node):
    __slots__ = ()


class Column(Node):
    __slots__ = ()

    @property
    def parts(self) -> list:
        return [self.args[key] for key in ("catalog", "db", "table", "this") if self.args.get(key) is not None]

    @property
    def table(self) -> str:
        table = self.args.get("table")
        return table.name if table is not None else ""


class Cast(Node):
    __slots__ = ()

    @property
    def to(self):
        return self.args["to"]


class TryCast(Cast):
    __slots__ = ()


class DataTypeParam(Node):
    __slots__ = ()


class DataType(Node):
    __slots__ = ()

    class Type:
        """The names sqlglot's ``DataType.Type`` gives the types (strings here; the
        translator compares them with either)."""

        # produced by this parser
        DATE = "DATE"
        TIMESTAMPTZ = "TIMESTAMPTZ"
        TIMESTAMPNTZ = "TIMESTAMPNTZ"
        DECIMAL = "DECIMAL"
        INT = "INT"
        BIGINT = "BIGINT"
        SMALLINT = "SMALLINT"
        TINYINT = "TINYINT"
        DOUBLE = "DOUBLE"
        FLOAT = "FLOAT"
        TEXT = "TEXT"
        BOOLEAN = "BOOLEAN"
        # never produced here (sqlglot's own readings); named for the translator
        TIMESTAMP = "TIMESTAMP"
        DATETIME = "DATETIME"
        VARCHAR = "VARCHAR"
        CHAR = "CHAR"


# ---------------------------------------------------------------- tokens
_COMPARISONS = {"=": EQ, "==": EQ, "!=": NEQ, "<>": NEQ, "<": LT, "<=": LTE, ">": GT, ">=": GTE, "<=>": NullSafeEQ}
_SYMBOLS = ("<=>", "::", "<=", ">=", "<>", "!=", "==", "=", "<", ">", "(", ")", ",", ".", "-")
#: type names as Spark writes them -> (sqlglot's type, how many parameters it may take)
_TYPES = {"DATE": ("DATE", 0), "TIMESTAMP": ("TIMESTAMPTZ", 0), "TIMESTAMP_NTZ": ("TIMESTAMPNTZ", 0),
          "INT": ("INT", 0), "INTEGER": ("INT", 0), "BIGINT": ("BIGINT", 0), "SMALLINT": ("SMALLINT", 0),
          "TINYINT": ("TINYINT", 0), "DOUBLE": ("DOUBLE", 0), "FLOAT": ("FLOAT", 0), "STRING": ("TEXT", 0),
          "BOOLEAN": ("BOOLEAN", 0), "DECIMAL": ("DECIMAL", 2)}
#: words that are never a column name here (sqlglot may read them as something else):
#: the grammar's own words, the SQL keywords a predicate could meet, and the words that
#: make sqlglot read a statement (checked against sqlglot's keyword tables by a test)
_KEYWORDS = frozenset("""
    ALL AND ANY ARRAY AS ASC BETWEEN BINARY BOTH BY CASE CAST CHAR CHARACTER COLLATE CROSS CUBE CURRENT
    CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURRENT_CATALOG CURRENT_SCHEMA DATE DATETIME
    DECIMAL DEFAULT DESC DISTINCT DIV ELSE END ESCAPE EXCEPT EXISTS EXTRACT FALSE FILTER FOR FROM FULL
    FUNCTION GLOB GROUP HAVING IF ILIKE IN INNER INTERSECT INTERVAL INTO IS JOIN LATERAL LEADING LEFT
    LIKE LIMIT LOCALTIME LOCALTIMESTAMP MAP MATCH MINUS NATURAL NOT NULL NULLS OF OFFSET ON OR ORDER
    OUTER OVER OVERLAPS PARTITION PIVOT POSITION QUALIFY RANGE REGEXP RIGHT RLIKE ROLLUP ROW ROWS
    SELECT SESSION_USER SIMILAR SOME STRUCT SYMMETRIC SYSTEM_USER TABLE TABLESAMPLE THEN TIME
    TIMESTAMP TIMESTAMP_LTZ TIMESTAMP_NTZ TO TRAILING TRUE TRY_CAST UNION UNIQUE UNKNOWN UNNEST
    UNPIVOT USER USING VALUES WHEN WHERE WINDOW WITH
    ALTER ANALYZE BEGIN CACHE CALL COMMENT COMMIT COPY CREATE DECLARE DELETE DESCRIBE DROP EXECUTE EXPLAIN
    FETCH GRANT INSERT KILL LOAD MERGE NOTNULL OPTIMIZE PARTITIONED_BY PRAGMA PREPARE REFRESH RELEASE
    RENAME RETURNING REVOKE ROLLBACK SAVEPOINT SERDEPROPERTIES SET SHOW TRUNCATE UNCACHE UPDATE USE
    VACUUM XOR
""".split())


class _Outside(Exception):
    """The text is outside the subset parsed here."""


def _tokens(text: str) -> list[tuple[str, object, int, int]]:
    """``(kind, value, start, end)``: kinds ``word`` (value upper-cased), ``ident``
    (a backquoted name), ``string``, ``number`` (value as written), ``op``, ``end``."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif text.startswith(("--", "/*"), i):
            raise _Outside
        elif c in "'\"":
            j, chars = i + 1, []
            while True:
                if j >= n:
                    raise _Outside
                d = text[j]
                if d == "\\":
                    if j + 1 >= n or text[j + 1] not in "\\'\"":
                        raise _Outside
                    chars.append(text[j + 1])
                    j += 2
                elif d == c:
                    break
                else:
                    chars.append(d)
                    j += 1
            if j + 1 < n and text[j + 1] in "'\"":  # 'a''b', 'a'"b": sqlglot joins them
                raise _Outside
            out.append(("string", "".join(chars), i, j + 1))
            i = j + 1
        elif c == "`":
            j, chars = i + 1, []
            while True:
                if j >= n:
                    raise _Outside
                if text[j] == "`":
                    if text.startswith("``", j):
                        chars.append("`")
                        j += 2
                        continue
                    break
                chars.append(text[j])
                j += 1
            if not chars:
                raise _Outside
            out.append(("ident", "".join(chars), i, j + 1))
            i = j + 1
        elif c.isascii() and c.isdigit():
            j = _digits(text, i)
            if j < n and text[j] == ".":
                j = _digits(text, j + 1)
            if j < n and text[j] in "eE":
                k = j + 1 + (j + 1 < n and text[j + 1] in "+-")
                if _digits(text, k) == k:
                    raise _Outside
                j = _digits(text, k)
            if j < n and (text[j].isalnum() or text[j] in "_.`'\""):  # 10L, 1_000, 1e, 1.5.2
                raise _Outside
            out.append(("number", text[i:j], i, j))
            i = j
        elif c.isascii() and (c.isalpha() or c == "_"):
            j = i + 1
            while j < n and text[j].isascii() and (text[j].isalnum() or text[j] == "_"):
                j += 1
            if j < n and (text[j] in "'\"`" or not text[j].isascii()):  # x'1F', r'...', names beyond ASCII
                raise _Outside
            out.append(("word", text[i:j].upper(), i, j))
            i = j
        else:
            for symbol in _SYMBOLS:
                if text.startswith(symbol, i):
                    out.append(("op", symbol, i, i + len(symbol)))
                    i += len(symbol)
                    break
            else:
                raise _Outside
    out.append(("end", None, n, n))
    return out


def _digits(text: str, i: int) -> int:
    while i < len(text) and text[i].isascii() and text[i].isdigit():
        i += 1
    return i


# ---------------------------------------------------------------- grammar
class _Parser:
    """Recursive descent over :func:`_tokens`: OR below AND below NOT below one
    predicate (a comparison, IS, BETWEEN, IN, LIKE, or an operand alone)."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokens(text)
        self.i = 0

    # tokens
    def peek(self, ahead: int = 0):
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def take(self):
        token = self.tokens[self.i]
        self.i += 1
        return token

    def at(self, kind: str, value=None, ahead: int = 0) -> bool:
        token = self.peek(ahead)
        return token[0] == kind and (value is None or token[1] == value)

    def expect(self, kind: str, value=None):
        if not self.at(kind, value):
            raise _Outside
        return self.take()

    def node(self, cls, start: int, **args):
        return cls(self.text[start:self.tokens[self.i - 1][3]], **args)

    # predicates
    def parse(self) -> Node:
        tree = self.disjunction()
        self.expect("end")
        return tree

    def disjunction(self) -> Node:
        return self.chain("OR", Or, self.conjunction)

    def conjunction(self) -> Node:
        return self.chain("AND", And, self.negation)

    def chain(self, word: str, cls, operand) -> Node:
        """``operand (word operand)*``, left-associative (as sqlglot nests them)."""
        start = self.peek()[2]
        left = operand()
        while self.at("word", word):
            self.take()
            left = self.node(cls, start, this=left, expression=operand())
        return left

    def negation(self) -> Node:
        start = self.peek()[2]
        if self.at("word", "NOT"):
            self.take()
            return self.node(Not, start, this=self.negation())
        return self.predicate()

    def predicate(self) -> Node:
        start = self.peek()[2]
        left = self.operand()
        kind, value, _, _ = self.peek()
        if kind == "op" and value in _COMPARISONS:
            self.take()
            return self.node(_COMPARISONS[value], start, this=left, expression=self.operand())
        if kind != "word" or value not in ("IS", "NOT", "BETWEEN", "IN", "LIKE"):
            return left  # an operand alone (a boolean column); what follows is the caller's
        self.take()
        negated = False
        if value == "NOT":  # x NOT BETWEEN / IN / LIKE
            negated, value = True, self.expect("word")[1]
        elif value == "IS" and self.at("word", "NOT"):
            negated = bool(self.take())
        if value == "IS":
            word = self.expect("word")[1]
            if word not in ("NULL", "TRUE", "FALSE"):
                raise _Outside  # IS DISTINCT FROM, IS UNKNOWN, ...
            right = Null("NULL") if word == "NULL" else Boolean(word, this=word == "TRUE")
            tree = self.node(Is, start, this=left, expression=right)
        elif value == "BETWEEN":
            low = self.operand()
            self.expect("word", "AND")
            tree = self.node(Between, start, this=left, low=low, high=self.operand())
        elif value == "IN":
            self.expect("op", "(")
            members = [self.operand()]
            while self.at("op", ","):
                self.take()
                members.append(self.operand())
            self.expect("op", ")")
            tree = self.node(In, start, this=left, expressions=members)
        elif value == "LIKE":  # sqlglot marks NOT LIKE on the node itself
            return self.node(Like, start, this=left, expression=self.operand(), negate=negated)
        else:
            raise _Outside
        return self.node(Not, start, this=tree) if negated else tree

    # operands
    def operand(self) -> Node:
        start = self.peek()[2]
        kind, value, _, _ = self.take()
        if kind == "op" and value == "(":
            inner = self.disjunction()
            self.expect("op", ")")
            node = self.node(Paren, start, this=inner)
        elif kind == "op" and value == "-":
            return self.node(Neg, start, this=self.operand())
        elif kind == "number":
            node = self.node(Literal, start, this=value, is_string=False)
        elif kind == "string":
            node = self.node(Literal, start, this=value, is_string=True)
        elif kind == "ident":
            node = self.column(start, Identifier(self.text[start:self.peek(-1)[3]], this=value))
        elif kind == "word":
            node = self.word(start, value)
        else:
            raise _Outside
        if self.at("op", "::"):
            self.take()
            node = self.node(TryCast, start, this=node, to=self.data_type())
        return node

    def word(self, start: int, word: str) -> Node:
        if word in ("TRUE", "FALSE"):
            return self.node(Boolean, start, this=word == "TRUE")
        if word == "NULL":
            return self.node(Null, start)
        if word in ("DATE", "TIMESTAMP", "TIMESTAMP_NTZ") and self.at("string"):  # DATE '2024-01-01'
            _, value, s, e = self.take()
            literal = Literal(self.text[s:e], this=value, is_string=True)
            return self.node(Cast, start, this=literal, to=DataType(word, this=_TYPES[word][0]))
        if self.at("op", "("):
            self.take()
            if word in ("CAST", "TRY_CAST"):
                inner = self.operand()
                self.expect("word", "AS")
                to = self.data_type()
                self.expect("op", ")")
                return self.node(TryCast, start, this=inner, to=to, **({"safe": True} if word == "TRY_CAST" else {}))
            if word in ("DOUBLE", "FLOAT"):  # double('NaN'): sqlglot reads it as a CAST
                inner = self.operand()
                self.expect("op", ")")
                return self.node(Cast, start, this=inner, to=DataType(word, this=word))
            if word == "ARRAY_CONTAINS":
                array = self.operand()
                self.expect("op", ",")
                element = self.operand()
                self.expect("op", ")")
                return self.node(ArrayContains, start, this=array, expression=element)
            raise _Outside
        if word in _KEYWORDS and word not in ("DATE", "TIMESTAMP"):  # (those two name columns as well)
            raise _Outside
        token = self.peek(-1)
        return self.column(start, Identifier(self.text[token[2]:token[3]], this=self.text[token[2]:token[3]]))

    def column(self, start: int, first: Identifier) -> Node:
        parts = [first]
        while self.at("op", "."):
            self.take()
            kind, value, s, e = self.take()
            if kind == "ident":
                parts.append(Identifier(self.text[s:e], this=value))
            elif kind == "word" and value not in _KEYWORDS:
                parts.append(Identifier(self.text[s:e], this=self.text[s:e]))
            else:
                raise _Outside
        if len(parts) > 4 or self.at("op", "("):
            raise _Outside
        keys = ("this", "table", "db", "catalog")
        return self.node(Column, start, **dict(zip(keys, reversed(parts))))

    def data_type(self) -> DataType:
        start = self.peek()[2]
        word = self.expect("word")[1]
        if word not in _TYPES:
            raise _Outside
        name, most = _TYPES[word]
        params = []
        if self.at("op", "("):
            self.take()
            while True:
                number = self.expect("number")[1]
                if not number.isdigit():
                    raise _Outside
                params.append(DataTypeParam(number, this=Literal(number, this=number, is_string=False)))
                if not self.at("op", ","):
                    break
                self.take()
            self.expect("op", ")")
            if not 0 < len(params) <= most:
                raise _Outside
        return self.node(DataType, start, this=name, **({"expressions": params} if params else {}))


def parse(text: str) -> Node | None:
    """The tree of the Spark SQL predicate ``text``, shaped as sqlglot's Spark dialect
    shapes it; None when ``text`` is outside the subset this module parses."""
    try:
        return _Parser(text).parse()
    except _Outside:
        return None
