"""Hive-style partitioning: ``<root>/dt=2024-01-01/country=FR/part-....rcfmt``.

A dataset partitioned by columns ``k1..kn`` stores each file under the directories
``k1=v1/.../kn=vn/``; the partition columns are *not* stored inside the files, their
values are the same for every row of a file and come from the path (and, in an indexed
dataset, from the stats index, where they are typed).

Values in paths
    ints as ``str(int)``, bools as ``true``/``false``, dates as ISO ``YYYY-MM-DD``,
    strings percent-escaped as Hive does (``%XX`` for control characters and
    ``"#%'*/:=?\\{[]^`` and DEL). NULL -- and the empty string, as in Hive and Spark --
    is written ``__HIVE_DEFAULT_PARTITION__`` and read back as NULL.

Types
    Writable partition columns are bool, int8..int64, uint8..uint64, date32 and string.
    An indexed dataset records the types it was written with. A plain directory (no
    index) infers them per key from all values seen: all canonical integers (``-?[1-9]\\d*``
    or ``0``) -> int32 if every value fits, else int64; else all ISO dates -> date32; else
    string. ``007`` stays a string (it would not round-trip as an int).
"""
from __future__ import annotations

import datetime as _dt
import re
from urllib.parse import unquote

import pyarrow as pa

from ..runtime.records import record
from ..errors import InvalidDataError, InvalidOptionError, SchemaError
from ..runtime.options import names as option_names
from ..schema.types import logical_type_from_arrow, logical_type_from_json

__all__ = ["Partitioning", "HIVE_NULL", "escape_value", "unescape_value", "parse_segments", "infer_partitioning"]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = frozenset('"#%\'*/:=?\\{[]^\x7f') | frozenset(chr(i) for i in range(0x20))
_INT_RE = re.compile(r"(0|-?[1-9][0-9]*)\Z")  # (canonical: "-0" and "007" stay strings)
_DATE_RE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}\Z")


def escape_value(s: str) -> str:
    """Percent-escape the characters Hive escapes in partition directory names."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in s)


def unescape_value(s: str) -> str:
    """A partition directory's value as written (``%XX`` escapes of UTF-8 bytes);
    InvalidDataError when its escapes are not UTF-8 (a directory no writer made so)."""
    try:
        return unquote(s, errors="strict")
    except UnicodeDecodeError:
        raise InvalidDataError(f"partition directory value {s!r}: its %-escapes are not UTF-8 text") from None


def _supported(t: pa.DataType) -> bool:
    return (pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_date32(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t))


@record(frozen=True)
class Partitioning:
    """Partition columns (in directory order) and their Arrow types."""

    names: tuple = ()
    types: tuple = ()

    def __post_init__(self):
        if len(self.names) != len(self.types):
            raise ValueError("names and types differ in length")
        for name, t in zip(self.names, self.types):
            if not isinstance(name, str) or not name or "/" in name or "=" in name:
                raise InvalidOptionError(f"invalid partition column name {name!r}")
            if not _supported(t):
                raise SchemaError(f"partition column {name!r} has type {t}; partition columns must be bool, "
                                  "an integer type, date32 or string")

    def __bool__(self) -> bool:
        return bool(self.names)

    @classmethod
    def from_schema(cls, schema: pa.Schema, names) -> "Partitioning":
        names = tuple(option_names(names, "partition_by")) if names is not None else ()
        if len(set(names)) != len(names):
            raise InvalidOptionError(f"partition_by lists a column twice: {list(names)}")
        types = []
        for name in names:
            if not isinstance(name, str) or schema.get_field_index(name) < 0:
                raise SchemaError(f"partition column {name!r} is not a column of the data; columns: {schema.names}")
            t = schema.field(name).type
            if pa.types.is_dictionary(t):
                t = t.value_type
            if pa.types.is_large_string(t):
                t = pa.string()
            types.append(t)
        if names and len(names) == len(schema):
            raise SchemaError("every column is a partition column: no data would be left in the files")
        return cls(names, tuple(types))

    def check_new_names(self, existing=()) -> None:
        """InvalidOptionError for a partition column, other than the ``existing`` ones (a
        dataset written before this rule keeps its own), whose name starts with '_' or
        '.': readers and vacuum skip such directories (DATASET.md section 1)."""
        for name in self.names:
            if name.startswith(("_", ".")) and name not in existing:
                raise InvalidOptionError(f"partition column {name!r}: a partition column's name cannot start with "
                                         "'_' or '.' (directories so named are never data); rename it first")

    @property
    def fields(self) -> list[pa.Field]:
        return [pa.field(n, t, nullable=True) for n, t in zip(self.names, self.types)]

    # ---------------------------------------------------------------- JSON
    def to_json(self) -> list:
        return [{"name": n, **logical_type_from_arrow(t).to_json()} for n, t in zip(self.names, self.types)]

    @classmethod
    def from_json(cls, obj) -> "Partitioning":
        names = tuple(o["name"] for o in obj)
        types = tuple(logical_type_from_json(o).to_arrow() for o in obj)
        return cls(names, types)

    # ---------------------------------------------------------------- paths
    def format_value(self, i: int, value) -> str:
        """The directory-name form of ``value`` for partition column ``i``."""
        if value is None:
            return HIVE_NULL
        t = self.types[i]
        if pa.types.is_boolean(t):
            return "true" if value else "false"
        if pa.types.is_integer(t):
            return str(int(value))
        if pa.types.is_date32(t):
            return value.isoformat()
        return escape_value(value) if value != "" else HIVE_NULL

    def too_long(self, values) -> str:
        """Why the directory of ``values`` cannot be made: the partition whose directory
        name is longest (a file system's names are at most 255 bytes)."""
        parts = [(n, f"{escape_value(n)}={self.format_value(i, v)}") for i, (n, v) in enumerate(zip(self.names, values))]
        name, part = max(parts, key=lambda p: len(p[1].encode()))
        shown = repr(values[self.names.index(name)])
        shown = shown if len(shown) <= 60 else f"{shown[:57]}..."
        return (f"partition column {name!r}: the value {shown} makes a directory name of {len(part.encode())} "
                "bytes, longer than the file system allows")

    def directory(self, values) -> str:
        """``k1=v1/k2=v2`` (posix) for a tuple of values, '' when unpartitioned."""
        return "/".join(f"{escape_value(n)}={self.format_value(i, v)}" for i, (n, v) in enumerate(zip(self.names, values)))

    def parse_value(self, i: int, text: str):
        """The typed value of partition column ``i`` from its directory-name form."""
        if text == HIVE_NULL:
            return None
        t = self.types[i]
        raw = unescape_value(text)
        try:
            if pa.types.is_boolean(t):
                if raw not in ("true", "false"):
                    raise ValueError(raw)
                return raw == "true"
            if pa.types.is_integer(t):
                value = int(raw)
                pa.scalar(value, t)  # range check
                return value
            if pa.types.is_date32(t):
                return _dt.date.fromisoformat(raw)
        except (ValueError, OverflowError, pa.ArrowInvalid):
            raise SchemaError(f"partition value {raw!r} of column {self.names[i]!r} is not a valid {t}") from None
        return raw or None

    def parse_path(self, relpath: str) -> tuple:
        """Typed partition values from a file path relative to the root."""
        segments = parse_segments(relpath)
        keys = tuple(k for k, _ in segments)
        if keys != self.names:
            raise SchemaError(f"file {relpath!r} is not under {'/'.join(f'{n}=...' for n in self.names) or 'the root'}")
        return tuple(self.parse_value(i, v) for i, (_, v) in enumerate(segments))

    def array(self, i: int, values: list) -> pa.Array:
        return pa.array(values, self.types[i])


def parse_segments(relpath: str) -> list[tuple[str, str]]:
    """``[(key, raw value), ...]`` of the ``key=value`` directories of a relative path."""
    parts = relpath.split("/")[:-1]
    out = []
    for part in parts:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise SchemaError(f"directory {part!r} in {relpath!r} is not a key=value partition directory")
        out.append((unescape_value(key), value))
    return out


def infer_partitioning(relpaths: list[str]) -> Partitioning:
    """Partition columns and types of a plain directory (see the module doc)."""
    if not relpaths:
        return Partitioning()
    keys = None
    values: list[list[str]] = []
    for rel in relpaths:
        segs = parse_segments(rel)
        k = tuple(key for key, _ in segs)
        if keys is None:
            keys = k
            values = [[] for _ in k]
        elif k != keys:
            raise SchemaError(f"inconsistent partition directories: {relpaths[0]!r} vs {rel!r}")
        for j, (_, v) in enumerate(segs):
            values[j].append(v)
    types = []
    for vals in values:
        present = [unescape_value(v) for v in vals if v != HIVE_NULL]
        if present and all(_INT_RE.match(v) for v in present):
            ints = [int(v) for v in present]
            if all(-(2**31) <= v < 2**31 for v in ints):
                types.append(pa.int32())
            elif all(-(2**63) <= v < 2**63 for v in ints):
                types.append(pa.int64())
            else:
                types.append(pa.string())
        elif present and all(_DATE_RE.match(v) and _is_date(v) for v in present):
            types.append(pa.date32())
        else:
            types.append(pa.string())
    return Partitioning(keys, tuple(types))


def _is_date(v: str) -> bool:
    try:
        _dt.date.fromisoformat(v)
        return True
    except ValueError:
        return False
