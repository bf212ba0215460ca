"""Composable hypothesis strategies and exact-comparison oracles for rcfmt tests.

Built like ``pyarrow/tests/strategies.py``: types -> fields -> schemas -> arrays ->
tables, each level taking the strategy of the level below, plus writer options.
Other suites import this module (``import strategies``; ``tests/conftest.py`` puts
``tests/`` on ``sys.path``).

Values are generated in *storage form* and arrays are assembled from raw buffers, so
that what reaches rcfmt is exactly what the strategy drew:

- floats are drawn as bit patterns (NaNs with arbitrary payloads and either sign,
  signalling NaNs, -0.0, +/-inf, subnormals) and never pass through a Python float;
- null slots keep the value drawn for them (garbage under nulls, including NaN and
  non-empty strings), so statistics that peek under nulls are caught;
- arrays may start at a non-zero offset (sliced) and columns may be chunked.

The oracles (:func:`assert_tables_identical`, :func:`expected_stats`) are written
independently of rcfmt's own code: they compare float buffers bitwise and recompute
statistics by brute force from the rules documented in ``rcfmt/schema/statistics.py``.
"""
from __future__ import annotations

import os
import string
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

__all__ = [
    "decode_or_corrupt",
    # types
    "bool_type", "signed_integer_types", "unsigned_integer_types", "integer_types", "floating_types",
    "string_types", "binary_types", "date_types", "timestamp_types", "decimal128_types", "temporal_types",
    "primitive_types", "unsupported_types", "UNSUPPORTED_TYPES", "timezones",
    # values, arrays, tables
    "column_names", "fields", "schemas", "storage_values", "arrays", "chunked_arrays", "tables", "metadata_dicts",
    "write_options", "encodings_for", "ipc_table", "assert_written_once", "CORE_ENCODINGS", "COMPRESSIONS",
    # oracles
    "examples", "storage_type", "storage_schema", "assert_tables_identical", "assert_arrays_identical",
    "expected_stats", "assert_stats_equal", "ExpectedStats", "example_table", "ALL_TYPES",
]


def examples(n: int) -> int:
    """``max_examples`` for a hypothesis test, scaled by ``RCFMT_EXAMPLES_SCALE``."""
    return max(1, int(n * float(os.environ.get("RCFMT_EXAMPLES_SCALE", "1"))))


# ============================================================================ types
bool_type = st.just(pa.bool_())
signed_integer_types = st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64()])
unsigned_integer_types = st.sampled_from([pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()])
integer_types = st.one_of(signed_integer_types, unsigned_integer_types)
floating_types = st.sampled_from([pa.float32(), pa.float64()])
string_types = st.sampled_from([pa.string(), pa.large_string()])
binary_types = st.sampled_from([pa.binary(), pa.large_binary()])
date_types = st.just(pa.date32())
timezones = st.sampled_from([None, None, "UTC", "Europe/Paris", "America/New_York", "+05:30", "Asia/Kathmandu"])
timestamp_types = st.builds(pa.timestamp, st.sampled_from(["s", "ms", "us", "ns"]), tz=timezones)
temporal_types = st.one_of(date_types, timestamp_types)


@st.composite
def decimal128_types(draw, min_precision: int = 1, max_precision: int = 38) -> pa.Decimal128Type:
    """decimal128(p, s) with -p <= s <= p (the range format v1 can describe), mostly 0 <= s."""
    p = draw(st.integers(min_precision, max_precision))
    s = draw(st.one_of(st.integers(0, p), st.integers(-p, p)))
    return pa.decimal128(p, s)


primitive_types = st.one_of(
    bool_type, integer_types, floating_types, string_types, binary_types, temporal_types, decimal128_types(),
)

#: Arrow types rcfmt cannot store (the writer must raise SchemaError)
def _deep(t: pa.DataType, levels: int) -> pa.DataType:
    for _ in range(levels):
        t = pa.struct([("s", t)])
    return t


#: what rcfmt refuses by name (SchemaError): the bounds a reader enforces -- fixed_size_list
#: sizes up to 2^20, nesting up to 64 levels. (Every type pyarrow reads back is stored: structs
#: and unions without fields, run_end_encoded of nested and of run_end_encoded values, extensions
#: over dictionaries or views in tests/schema/test_last_shapes.py.)
UNSUPPORTED_TYPES = [
    pa.list_(pa.int8(), 2**20 + 1),
    _deep(pa.int8(), 65),
]
unsupported_types = st.sampled_from(UNSUPPORTED_TYPES)

#: one of everything, for deterministic tables (golden file, corruption tests)
ALL_TYPES = {
    "bool": pa.bool_(),
    "i8": pa.int8(), "i16": pa.int16(), "i32": pa.int32(), "i64": pa.int64(),
    "u8": pa.uint8(), "u16": pa.uint16(), "u32": pa.uint32(), "u64": pa.uint64(),
    "f32": pa.float32(), "f64": pa.float64(),
    "str": pa.string(), "lstr": pa.large_string(), "bin": pa.binary(), "lbin": pa.large_binary(),
    "date": pa.date32(),
    "ts_s": pa.timestamp("s"), "ts_ms_utc": pa.timestamp("ms", tz="UTC"),
    "ts_us_ny": pa.timestamp("us", tz="America/New_York"), "ts_ns_off": pa.timestamp("ns", tz="+05:30"),
    "dec38": pa.decimal128(38, 10), "dec5": pa.decimal128(5, 2), "dec_neg": pa.decimal128(4, -3),
}


def storage_type(t: pa.DataType) -> pa.DataType:
    """The type rcfmt stores and reads back for Arrow type ``t`` (dictionaries decoded)."""
    return t.value_type if pa.types.is_dictionary(t) else t


def storage_schema(schema: pa.Schema) -> pa.Schema:
    return pa.schema([pa.field(f.name, storage_type(f.type), f.nullable) for f in schema], metadata=schema.metadata)


# ============================================================================ names, fields, schemas
#: names that stress the footer's JSON: quotes, backslashes, unicode incl. non-BMP
column_names = st.one_of(
    st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6),
    st.text(min_size=1, max_size=8),
    st.sampled_from(['a"b', "back\\slash", "naïve", "日本", "emoji\U0001F600", " ", "x\ty", "\u2028"]),
)


def fields(type_strategy=primitive_types, nullable=st.booleans()):
    return st.builds(pa.field, column_names, type_strategy, nullable)


@st.composite
def metadata_dicts(draw, max_size: int = 3) -> dict:
    """Key-value metadata: str keys, str or bytes values (bytes may be non-UTF-8)."""
    keys = draw(st.lists(st.text(min_size=1, max_size=8), max_size=max_size, unique=True))
    values = st.one_of(st.text(max_size=10), st.binary(max_size=10))
    return {k: draw(values) for k in keys}


@st.composite
def schemas(draw, type_strategy=primitive_types, min_fields: int = 1, max_fields: int = 5,
            metadata: bool = True) -> pa.Schema:
    names = draw(st.lists(column_names, min_size=min_fields, max_size=max_fields, unique=True))
    fs = [pa.field(n, draw(type_strategy), draw(st.booleans())) for n in names]
    meta = draw(metadata_dicts()) if metadata and draw(st.booleans()) else None
    return pa.schema(fs, metadata=meta or None)


# ============================================================================ values in storage form
def _int_info(t: pa.DataType):
    if pa.types.is_date32(t):
        return np.iinfo(np.int32)
    if pa.types.is_timestamp(t):
        return np.iinfo(np.int64)
    return np.iinfo(np.dtype(t.to_pandas_dtype()))


def _float_bits(width: int):
    """Bit patterns (as unsigned ints) of floats of ``width`` bits, edge cases first."""
    if width == 32:
        mant, exp_all, sign = 23, 0xFF << 23, 1 << 31
        finite = st.floats(width=32, allow_nan=False).map(lambda v: int(np.float32(v).view(np.uint32)))
    else:
        mant, exp_all, sign = 52, 0x7FF << 52, 1 << 63
        finite = st.floats(allow_nan=False).map(lambda v: int(np.float64(v).view(np.uint64)))
    special = st.sampled_from([
        0, sign,  # +0.0, -0.0
        exp_all, exp_all | sign,  # +inf, -inf
        exp_all | (1 << (mant - 1)), exp_all | (1 << (mant - 1)) | sign,  # quiet NaN, negative quiet NaN
        exp_all | 1,  # signalling NaN, smallest payload
        exp_all | ((1 << mant) - 1) | sign,  # NaN, all payload bits set, negative
        1, sign | 1,  # smallest subnormals
        exp_all - 1, (exp_all - 1) | sign,  # largest finite
    ])
    nan_payload = st.builds(lambda s, m: exp_all | m | (sign if s else 0), st.booleans(), st.integers(1, (1 << mant) - 1))
    return st.one_of(special, finite, nan_payload)


_EXTREME_BYTES = [b"", b"\x00", b"\x00\x00\x00", b"\xff", b"\xff" * 40, b"a\x00b", b"\x7f\x80", bytes(range(256))]
_EXTREME_TEXT = ["", "\x00", "a\x00b", "\U0010FFFF", "\U0001F600" * 20, "é", "\uffff", "z" * 300, "\x7f"]


def storage_values(t: pa.DataType):
    """Strategy of one value of Arrow type ``t`` in storage form.

    bool -> bool; ints, date32, timestamps -> int in the storage range; floats -> bit
    pattern int; decimal128 -> unscaled int with |v| < 10**precision; string -> str;
    binary -> bytes.
    """
    if pa.types.is_boolean(t):
        return st.booleans()
    if pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t):
        info = _int_info(t)
        lo, hi = int(info.min), int(info.max)
        edges = sorted({lo, hi, 0, max(lo, -1), min(hi, 1), lo + 1, hi - 1})
        return st.one_of(st.sampled_from(edges), st.integers(lo, hi), st.integers(max(lo, -100), min(hi, 100)))
    if pa.types.is_floating(t):
        return _float_bits(t.bit_width)
    if pa.types.is_decimal(t):
        bound = 10 ** t.precision - 1
        return st.one_of(st.sampled_from([0, bound, -bound, 1, -1]), st.integers(-bound, bound))
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.one_of(
            st.text(max_size=6),
            st.text(alphabet="ab", max_size=4),
            st.sampled_from(_EXTREME_TEXT),
            st.text(min_size=40, max_size=120),  # long: beyond any stats truncation
        )
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return st.one_of(st.binary(max_size=8), st.sampled_from(_EXTREME_BYTES), st.binary(min_size=40, max_size=100))
    raise TypeError(f"no value strategy for {t}")


def _with_common_prefix(t: pa.DataType):
    """Values sharing a long prefix (string/binary only), to stress stats truncation."""
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return st.text(min_size=20, max_size=50).flatmap(
            lambda p: st.lists(st.text(max_size=4).map(lambda s: p + s), min_size=1, max_size=5))
    return st.binary(min_size=20, max_size=50).flatmap(
        lambda p: st.lists(st.binary(max_size=4).map(lambda s: p + s), min_size=1, max_size=5))


@st.composite
def value_lists(draw, t: pa.DataType, n: int) -> list:
    """``n`` storage values; sometimes low-cardinality, sometimes in long runs."""
    elem = storage_values(t)
    mode = draw(st.sampled_from(["random", "few", "runs", "prefix"]))
    if n == 0:
        return []
    if mode == "prefix" and (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
                             or pa.types.is_large_binary(t)):
        pool = draw(_with_common_prefix(t))
        return [pool[i] for i in draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))]
    if mode == "few":  # duplicates / low cardinality: DICTIONARY territory
        pool = draw(st.lists(elem, min_size=1, max_size=4))
        return [pool[i] for i in draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))]
    if mode == "runs":  # long runs: RLE territory
        out: list = []
        while len(out) < n:
            out.extend([draw(elem)] * draw(st.integers(1, max(1, n // 2))))
        return out[:n]
    return draw(st.lists(elem, min_size=n, max_size=n))


# ============================================================================ arrays from buffers
def _validity(valid: np.ndarray | None):
    if valid is None or valid.all():
        return None, 0
    return pa.py_buffer(np.packbits(valid, bitorder="little")), int(len(valid) - valid.sum())


def build_array(t: pa.DataType, values: list, valid: np.ndarray | None = None) -> pa.Array:
    """Assemble an Arrow array of type ``t`` from storage ``values`` exactly (null slots
    keep their value). ``valid`` is a bool mask or None (no nulls)."""
    n = len(values)
    vbuf, nulls = _validity(valid)
    if pa.types.is_boolean(t):
        data = np.packbits(np.array(values, dtype=bool), bitorder="little")
        return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(data)], nulls)
    if pa.types.is_floating(t):
        bits = np.array(values, dtype=np.uint32 if t.bit_width == 32 else np.uint64)
        return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(bits)], nulls)
    if pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t):
        dtype = np.int32 if pa.types.is_date32(t) else np.int64 if pa.types.is_timestamp(t) else t.to_pandas_dtype()
        return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(np.array(values, dtype=dtype))], nulls)
    if pa.types.is_decimal(t):
        data = b"".join(int(v).to_bytes(16, "little", signed=True) for v in values)
        return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(data)], nulls)
    large = pa.types.is_large_string(t) or pa.types.is_large_binary(t)
    raw = [v.encode("utf-8") if isinstance(v, str) else bytes(v) for v in values]
    offsets = np.zeros(n + 1, dtype=np.int64 if large else np.int32)
    np.cumsum([len(r) for r in raw], out=offsets[1:])
    return pa.Array.from_buffers(t, n, [vbuf, pa.py_buffer(offsets), pa.py_buffer(b"".join(raw))], nulls)


@st.composite
def arrays(draw, type_strategy, size=st.integers(0, 40), nullable=True, sliced=True) -> pa.Array:
    """Arrays of a drawn type: no / some / all nulls, garbage under nulls, maybe sliced.

    ``type_strategy`` may be a strategy or a plain ``pa.DataType``; ``size`` a strategy
    or an int.
    """
    t = type_strategy if isinstance(type_strategy, pa.DataType) else draw(type_strategy)
    n = size if isinstance(size, int) else draw(size)
    skip = draw(st.integers(0, 9)) if sliced and draw(st.booleans()) else 0
    values = draw(value_lists(t, n + skip))
    valid = None
    nullable = draw(nullable) if isinstance(nullable, st.SearchStrategy) else nullable
    if nullable and n + skip:
        mode = draw(st.sampled_from(["none", "some", "all", "some"]))
        if mode == "some":
            valid = np.array(draw(st.lists(st.booleans(), min_size=n + skip, max_size=n + skip)), dtype=bool)
        elif mode == "all":
            valid = np.zeros(n + skip, dtype=bool)
    arr = build_array(t, values, valid)
    out = arr.slice(skip) if skip else arr
    out.validate(full=True)
    return out


@st.composite
def chunked_arrays(draw, type_strategy, size=st.integers(0, 40), nullable=True) -> pa.ChunkedArray:
    """An array of ``size`` rows split into 1..4 chunks (possibly empty ones)."""
    arr = draw(arrays(type_strategy, size, nullable))
    cuts = sorted(draw(st.lists(st.integers(0, len(arr)), max_size=3)))
    bounds = [0, *cuts, len(arr)]
    return pa.chunked_array([arr.slice(a, b - a) for a, b in zip(bounds[:-1], bounds[1:])], type=arr.type)


@st.composite
def tables(draw, schema_strategy=None, rows=st.integers(0, 60), chunked=True) -> pa.Table:
    """Tables of a drawn schema; non-nullable fields get no nulls."""
    schema = draw(schema_strategy if schema_strategy is not None else schemas())
    n = rows if isinstance(rows, int) else draw(rows)
    cols = []
    for f in schema:
        if chunked and draw(st.booleans()):
            cols.append(draw(chunked_arrays(f.type, n, nullable=f.nullable)))
        else:
            cols.append(pa.chunked_array([draw(arrays(f.type, n, nullable=f.nullable))], type=f.type))
    return pa.Table.from_arrays(cols, schema=schema)


# ============================================================================ writer options
CORE_ENCODINGS = ("plain", "dictionary", "rle")
COMPRESSIONS = ("auto", "none", "zstd", "lz4")


def encodings_for(t: pa.DataType) -> list[str]:
    """Core encodings able to store Arrow type ``t`` (as the writer decides)."""
    from rcfmt.encodings import by_name
    from rcfmt.schema.types import logical_type_from_arrow

    ltype = logical_type_from_arrow(t)
    return [name for name in CORE_ENCODINGS if by_name(name).supports(ltype)]


@st.composite
def write_options(draw, schema: pa.Schema, *, forced: bool = True, small: bool = True) -> dict:
    """Keyword options for ``write_table``/``Writer`` (only valid ones), small sizes
    so that many blocks and pages occur."""
    opts: dict = {}
    if small or draw(st.booleans()):
        opts["block_rows"] = draw(st.one_of(st.integers(1, 8), st.integers(1, 70)))
    if draw(st.booleans()):
        opts["page_size"] = draw(st.one_of(st.just(64), st.integers(64, 600)))
    if draw(st.booleans()):
        opts["page_rows"] = draw(st.integers(1, 30))
    compression = draw(st.sampled_from(COMPRESSIONS))
    opts["compression"] = compression
    if compression in ("zstd", "auto") and draw(st.booleans()):
        opts["compression_level"] = draw(st.sampled_from([-7, -1, 1, 3, 9, 19]))
    if forced and draw(st.booleans()):
        chosen = {}
        for f in schema:
            if draw(st.booleans()):
                chosen[f.name] = draw(st.sampled_from(encodings_for(storage_type(f.type))))
        if chosen:
            opts["encoding"] = chosen
    if draw(st.booleans()):
        opts["dictionary"] = draw(st.booleans())
    if draw(st.booleans()):
        opts["stats_truncate"] = draw(st.sampled_from([1, 2, 5, 16, 32, 255]))
    if draw(st.booleans()):
        opts["bloom_filter_columns"] = draw(st.one_of(
            st.sampled_from(["auto", None]),
            st.lists(st.sampled_from(schema.names), unique=True, max_size=len(schema.names))))
        if draw(st.booleans()):
            opts["bloom_filter_fpp"] = draw(st.sampled_from([0.001, 0.05, 0.5]))
    return opts


# ============================================================================ oracles
def _fixed_dtype(t: pa.DataType) -> np.dtype:
    if pa.types.is_floating(t):
        return np.dtype(f"<u{t.bit_width // 8}")  # compare floats as bits
    if pa.types.is_decimal(t):
        return np.dtype(f"V{t.bit_width // 8}")
    if pa.types.is_fixed_size_binary(t):
        return np.dtype(f"V{t.byte_width}")
    if pa.types.is_duration(t) or pa.types.is_date64(t):
        return np.dtype("<i8")
    if pa.types.is_date32(t):
        return np.dtype("<i4")
    if pa.types.is_timestamp(t):
        return np.dtype("<i8")
    return np.dtype(t.to_pandas_dtype()).newbyteorder("<")


def _is_varbinary(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_binary(t)
            or pa.types.is_large_binary(t))


def _plain_array(arr) -> pa.Array:
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if isinstance(arr.type, pa.BaseExtensionType):
        arr = arr.storage
    return arr


def validity_of(arr) -> np.ndarray:
    """Bool mask of non-null slots, read from the validity bitmap."""
    arr = _plain_array(arr)
    n = len(arr)
    buf = arr.buffers()[0]
    if pa.types.is_null(arr.type):
        return np.zeros(n, dtype=bool)
    if buf is None or arr.null_count == 0:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little", count=arr.offset + n)
    return bits[arr.offset:].astype(bool)


def storage_of(arr: pa.Array) -> list | np.ndarray:
    """All slots of ``arr`` in comparable storage form: numpy array (floats as bits,
    decimals as V16), bool numpy array, or list of bytes for string/binary."""
    arr = _plain_array(arr)
    t, n, off = arr.type, len(arr), arr.offset
    bufs = arr.buffers()
    if pa.types.is_null(t):
        return np.zeros(n, bool)
    if pa.types.is_boolean(t):
        if n == 0:
            return np.zeros(0, bool)
        return np.unpackbits(np.frombuffer(bufs[1], np.uint8), bitorder="little", count=off + n)[off:].astype(bool)
    if _is_varbinary(t):
        odt = np.int64 if (pa.types.is_large_string(t) or pa.types.is_large_binary(t)) else np.int32
        if n == 0:
            return []
        offsets = np.frombuffer(bufs[1], dtype=odt, count=off + n + 1)[off:]
        data = b"" if bufs[2] is None else bufs[2].to_pybytes()
        return [data[int(a):int(b)] for a, b in zip(offsets[:-1], offsets[1:])]
    dtype = _fixed_dtype(t)
    if n == 0 or dtype.itemsize == 0:
        return np.zeros(n, dtype if dtype.itemsize else np.int8)
    return np.frombuffer(bufs[1], dtype=dtype, count=off + n)[off:]


def assert_arrays_identical(actual, expected, where: str = "") -> None:
    """Same type, same null positions, bit-identical values in non-null slots."""
    if isinstance(actual, pa.ChunkedArray):
        actual = actual.combine_chunks()
    etype = storage_type(expected.type)
    expected = _plain_array(expected)
    actual.validate(full=True)
    assert actual.type == etype, f"{where}: type {actual.type} != {etype}"
    assert len(actual) == len(expected), f"{where}: length {len(actual)} != {len(expected)}"
    va, ve = validity_of(actual), validity_of(expected)
    assert actual.null_count == expected.null_count, f"{where}: null_count {actual.null_count} != {expected.null_count}"
    bad = np.flatnonzero(va != ve)
    assert not len(bad), f"{where}: null positions differ first at row {bad[0]}"
    sa, se = storage_of(actual), storage_of(expected)
    if isinstance(se, list):
        for i in np.flatnonzero(ve):
            assert sa[i] == se[i], f"{where}: row {i}: {sa[i]!r} != {se[i]!r}"
    else:
        diff = np.flatnonzero(ve & (sa != se))
        assert not len(diff), f"{where}: row {diff[0]}: {sa[diff[0]]!r} != {se[diff[0]]!r} (bitwise)"


def ipc_table(path) -> pa.Table:
    """The table of an Arrow IPC file (golden files' expected content)."""
    import pyarrow.ipc as ipc

    with ipc.open_file(path) as reader:
        return reader.read_all()


def assert_written_once(*files) -> None:
    """Golden files: each ``(path, sha256)`` still holds the bytes it was written with."""
    import hashlib

    for path, digest in files:
        assert hashlib.sha256(Path(path).read_bytes()).hexdigest() == digest, f"{path} was rewritten"


def assert_tables_identical(actual: pa.Table, expected: pa.Table, check_metadata: bool = True) -> None:
    """Exact equality: schema (names, types, nullability, metadata), rows, null positions,
    and bit-identical values (NaN payloads, -0.0)."""
    want = storage_schema(expected.schema)
    assert actual.schema.equals(want, check_metadata=check_metadata), \
        f"schema differs:\n{actual.schema}\n!=\n{want}"
    assert actual.num_rows == expected.num_rows, f"{actual.num_rows} rows != {expected.num_rows}"
    for name, a, e in zip(expected.schema.names, actual.columns, expected.columns):
        assert_arrays_identical(a, e, where=f"column {name!r}")


@dataclass
class ExpectedStats:
    """Statistics of one unit in the stats domain (see rcfmt/schema/types.py), by brute force."""

    null_count: int
    nan_count: int
    has_min_max: bool
    min: object = None
    max: object = None
    min_exact: bool = True
    max_exact: bool = True


def _truncated_max(value: bytes, limit: int):
    if len(value) <= limit:
        return value, True
    prefix = bytearray(value[:limit])
    while prefix and prefix[-1] == 0xFF:
        prefix.pop()
    if not prefix:
        return None, False
    prefix[-1] += 1
    return bytes(prefix), False


def expected_stats(arr, truncate: int = 32) -> ExpectedStats:
    """Recompute min/max/null_count/nan_count of ``arr`` from the documented rules.

    - NaN never enters min/max; nan_count counts non-null NaNs (floats only);
    - a zero minimum is -0.0, a zero maximum +0.0;
    - string/binary: bytewise order; min truncated to a prefix, max truncated and
      rounded up (no bound at all when the kept prefix is all 0xFF);
    - no min/max when no non-null, non-NaN value exists.
    """
    arr = _plain_array(arr)
    t = arr.type
    valid = validity_of(arr)
    nulls = int(len(arr) - valid.sum())
    slots = storage_of(arr)
    if _is_varbinary(t):
        vals = [v for v, ok in zip(slots, valid) if ok]
        if not vals:
            return ExpectedStats(nulls, 0, False)
        lo, hi = min(vals), max(vals)
        lo_exact = len(lo) <= truncate
        lo = lo if lo_exact else lo[:truncate]
        hi, hi_exact = _truncated_max(hi, truncate)
        if hi is None:
            return ExpectedStats(nulls, 0, False)
        return ExpectedStats(nulls, 0, True, lo, hi, lo_exact, hi_exact)
    vals = slots[valid]
    if pa.types.is_floating(t):
        f = vals.view(np.float32 if t.bit_width == 32 else np.float64)
        nan = np.isnan(f)
        f = f[~nan]
        if not len(f):
            return ExpectedStats(nulls, int(nan.sum()), False)
        lo, hi = f.min(), f.max()
        lo = f.dtype.type(-0.0) if lo == 0 else lo
        hi = f.dtype.type(0.0) if hi == 0 else hi
        return ExpectedStats(nulls, int(nan.sum()), True, lo, hi)
    if not len(vals):
        return ExpectedStats(nulls, 0, False)
    if pa.types.is_decimal(t):
        ints = [int.from_bytes(bytes(v), "little", signed=True) for v in vals]
        return ExpectedStats(nulls, 0, True, min(ints), max(ints))
    if pa.types.is_boolean(t):
        return ExpectedStats(nulls, 0, True, bool(vals.min()), bool(vals.max()))
    return ExpectedStats(nulls, 0, True, int(vals.min()), int(vals.max()))


def _same_bound(actual, expected) -> bool:
    if isinstance(expected, np.floating):  # bitwise: -0.0 is not +0.0
        return np.asarray(actual, dtype=expected.dtype).tobytes() == expected.tobytes()
    if isinstance(expected, bytes):
        return bytes(actual) == expected
    if isinstance(expected, bool):
        return bool(actual) == expected
    return int(actual) == expected


def assert_stats_equal(stats, i: int, expected: ExpectedStats, where: str = "") -> None:
    """Entry ``i`` of a :class:`rcfmt.schema.statistics.StatsArrays` equals ``expected``."""
    got = (int(stats.null_count[i]), int(stats.nan_count[i]), bool(stats.has_min_max[i]))
    want = (expected.null_count, expected.nan_count, expected.has_min_max)
    assert got == want, f"{where}: (null_count, nan_count, has_min_max) {got} != {want}"
    if not expected.has_min_max:
        return
    assert _same_bound(stats.min[i], expected.min), f"{where}: min {stats.min[i]!r} != {expected.min!r}"
    assert _same_bound(stats.max[i], expected.max), f"{where}: max {stats.max[i]!r} != {expected.max!r}"
    exact = (bool(stats.min_exact[i]), bool(stats.max_exact[i]))
    assert exact == (expected.min_exact, expected.max_exact), f"{where}: exactness {exact}"


# ============================================================================ deterministic tables
def example_table(n: int = 100, seed: int = 0, *, nulls: bool = True, types: dict | None = None) -> pa.Table:
    """A deterministic table with one column per entry of ``types`` (default
    :data:`ALL_TYPES`): extremes of every int width, NaNs with payloads, -0.0, inf,
    non-BMP unicode, zero bytes, low-cardinality strings (DICTIONARY) and runs (RLE).
    Every nullable column has some nulls (if ``nulls``) and garbage under them."""
    rng = np.random.default_rng(seed)
    types = ALL_TYPES if types is None else types
    cols, fs = [], []
    for k, (name, t) in enumerate(types.items()):
        if pa.types.is_boolean(t):
            values = list(np.repeat(rng.random(n // 8 + 1) < 0.5, 8)[:n])  # runs: RLE
        elif pa.types.is_floating(t):
            w = t.bit_width
            f = rng.standard_normal(n).astype(np.float32 if w == 32 else np.float64)
            u = f.view(np.uint32 if w == 32 else np.uint64).astype(np.uint64)
            special = [0, 1 << (w - 1), 0x7F800000 if w == 32 else 0x7FF0 << 48,
                       0x7FC00000 if w == 32 else 0x7FF8 << 48, 0xFFC00123 if w == 32 else 0xFFF8_0000_0000_0ABC,
                       0x7F800001 if w == 32 else 0x7FF0_0000_0000_0001]
            u[: min(n, len(special))] = special[: min(n, len(special))]
            values = [int(x) for x in rng.permutation(u)]
        elif pa.types.is_integer(t) or pa.types.is_date32(t) or pa.types.is_timestamp(t):
            info = _int_info(t)
            if k % 2:  # runs
                values = list(np.repeat(rng.integers(-5 if info.min < 0 else 0, 5, size=n // 10 + 1), 10)[:n])
            else:
                values = list(rng.integers(info.min, info.max, size=n, endpoint=True, dtype=np.int64 if info.min < 0 else np.uint64))
            for j, v in enumerate([int(info.min), int(info.max), 0]):
                if j < n:
                    values[j * 7 % n] = v
            values = [int(v) for v in values]
        elif pa.types.is_decimal(t):
            bound = 10 ** t.precision - 1
            values = [int(x) for x in rng.integers(-(10 ** min(t.precision, 18)) + 1, 10 ** min(t.precision, 18), size=n)]
            if n >= 2:
                values[0], values[1] = bound, -bound
        elif pa.types.is_string(t) or pa.types.is_large_string(t):
            if pa.types.is_string(t):  # low cardinality: DICTIONARY
                pool = ["apple", "banana", "cherry", "\U0001F34E", ""]
            else:
                pool = ["x" * 40 + str(i) for i in range(30)] + ["日本語", "\U0010FFFF", "a\x00b"]
            values = [pool[i] for i in rng.integers(0, len(pool), size=n)]
        else:
            pool = [bytes(rng.integers(0, 256, size=int(rng.integers(0, 12)), dtype=np.uint8)) for _ in range(20)]
            pool += [b"", b"\x00" * 5, b"\xff" * 40]
            values = [pool[i] for i in rng.integers(0, len(pool), size=n)]
        nullable = nulls and k % 3 != 2
        valid = rng.random(n) < 0.8 if nullable else None
        cols.append(build_array(t, values, valid))
        fs.append(pa.field(name, t, nullable=nullable))
    return pa.Table.from_arrays(cols, schema=pa.schema(fs))


def decode_or_corrupt(decode, body, rows, ltype, **kw):
    """``decode(body, rows, ltype, **kw)`` on hostile input: it must either raise
    CorruptFileError with a message (-> None) or return ``rows`` values; fixed-width
    results must also have the column's dtype."""
    from rcfmt.errors import CorruptFileError
    from rcfmt.schema.types import PhysicalKind

    try:
        got = decode(body, rows, ltype, **kw)
    except CorruptFileError as exc:
        assert str(exc)
        return None
    assert len(got) == rows
    if ltype.kind == PhysicalKind.FIXED:
        assert got.values.dtype == ltype.numpy_dtype
    return got


def native_decode(encoding, body, rows, ltype):
    """Decode one page body with the native page pipeline (the reader's only path):
    the body is wrapped in a page, run through ``read_pages`` and the values kernel.
    Returns ColumnValues; raises CorruptFileError when a check fails."""
    import zlib as _zlib

    from rcfmt._native import decoders, pages
    from rcfmt.errors import CorruptFileError
    from rcfmt.file.chunks import _native_mode
    from rcfmt.format.page import build_page
    from rcfmt.schema.types import PhysicalKind

    body = bytes(body)
    page = build_page(0, encoding.id, rows, body)
    buf = b"\0" * 3 + page  # an odd position, as inside a file
    run = pages.read_pages(buf, 0, start=3, end=len(buf), max_pages=1, max_rows=rows, encoding=encoding.id)
    assert _zlib.crc32(page[32:]) == int.from_bytes(page[24:28], "little")
    if ltype.kind == PhysicalKind.VARBINARY:
        offsets = np.empty(rows + 1, np.int64 if ltype.large else np.int32)
        data = np.empty(len(body), np.uint8)
        mode = decoders.VB_PLAIN if encoding.name == "plain" else decoders.VB_DELTA_LENGTH
        bad, size = pages.decode_varbinary(run, mode, offsets, data)
        if bad >= 0:
            raise CorruptFileError("native kernel refused the page")
        from rcfmt.encodings.base import ColumnValues

        return ColumnValues(data[:size], offsets)
    mode, itemsize, signed = _native_mode(encoding.id, ltype)
    narrow = mode == decoders.MODE_BITPACK_DECIMAL  # int64 low words, widened for Arrow
    out = np.empty(rows, np.int64 if narrow else ltype.numpy_dtype)
    if pages.decode_values(run, mode, itemsize, signed, out, 0, ltype.precision or 0) >= 0:
        raise CorruptFileError("native kernel refused the page")
    from rcfmt.encodings.base import ColumnValues
    from rcfmt.schema.arrow_io import wide_decimals

    return ColumnValues(wide_decimals(out) if narrow else out)
