"""The writer's options, validated once per file (:class:`WriteOptions`; their meaning
is :class:`rcfmt.file.writer.Writer`'s), and the defaults they start from."""
from __future__ import annotations

import inspect

import numpy as np
import pyarrow as pa

from ..runtime.records import record
from ..encodings import by_name
from ..errors import InvalidOptionError, SchemaError, UnknownOptionError
from ..format.stats_slots import DEFAULT_TRUNCATE
from ..index.bloom.chunks import DEFAULT_FPP, BloomPolicy
from ..index.bitmap.build import BitmapPolicy
from ..schema.types import logical_type_from_arrow
from ..schema.names import ambiguous_name, name_index
from ..schema.tables import physical_schema

__all__ = ["WriteOptions", "refuse_ambiguous", "DEFAULT_BLOCK_ROWS", "DEFAULT_PAGE_SIZE", "DEFAULT_PAGE_ROWS",
           "DEFAULT_COMPRESSED_PAGE_SIZE"]

DEFAULT_BLOCK_ROWS = 1 << 20
DEFAULT_PAGE_SIZE = 128 * 1024
DEFAULT_PAGE_ROWS = 8192
#: a page stored compressed (zstd, lz4) must be decompressed whole to reach any of its
#: values, so such pages hold at most this many uncompressed bytes: a random read of
#: one row (take, point lookups) then decompresses at most that much per column. On
#: lineitem's l_comment, 48 KiB pages instead of 128 KiB read 1,000 random rows 1.9x as
#: fast and store the column 3.4% larger (the file 1.3%); pages of incompressible or
#: uncompressed data, whose values are reached where they lie, keep ``page_size``
DEFAULT_COMPRESSED_PAGE_SIZE = 48 * 1024
_COMPRESSIONS = ("auto", "none", "zstd", "lz4")
#: the bounds of ``zstd_block_size`` (zstd's blocks hold at most 128 KiB)
ZSTD_BLOCK_MIN, ZSTD_BLOCK_MAX = 1024, 128 * 1024


@record(frozen=True)
class WriteOptions:
    """Validated writer options (see :class:`Writer` for their meaning)."""

    block_rows: int = DEFAULT_BLOCK_ROWS
    page_size: int = DEFAULT_PAGE_SIZE
    page_rows: int = DEFAULT_PAGE_ROWS
    compressed_page_size: int = DEFAULT_COMPRESSED_PAGE_SIZE
    compression: str = "auto"
    compression_level: int | None = None
    encoding: dict | None = None  # column -> Encoding
    dictionary: bool = True
    stats_truncate: int = DEFAULT_TRUNCATE
    bloom: BloomPolicy | None = None
    use_threads: bool = True
    bitmaps: BitmapPolicy | None = None
    zstd_block_size: int | None = None

    @classmethod
    def create(cls, schema: pa.Schema, *, block_rows=DEFAULT_BLOCK_ROWS, page_size=DEFAULT_PAGE_SIZE,
               page_rows=DEFAULT_PAGE_ROWS, compression="auto", compression_level=None, encoding=None,
               dictionary=True, stats_truncate=DEFAULT_TRUNCATE, bloom_filter_columns="auto",
               bloom_filter_fpp=DEFAULT_FPP, use_threads=True, bitmap_indexes="auto",
               compressed_page_size=DEFAULT_COMPRESSED_PAGE_SIZE, zstd_block_size=None, **unknown) -> "WriteOptions":
        if unknown:
            known = [p for p in inspect.signature(cls.create).parameters if p not in ("schema", "unknown")]
            raise UnknownOptionError(f"unknown write option(s) {sorted(unknown)}; write options are {known}")
        def positive_int(name, value, lo=1, hi=None):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo or (hi and value > hi):
                bound = f" and <= {hi}" if hi else ""
                raise InvalidOptionError(f"{name} must be an integer >= {lo}{bound}, got {value!r}")
            return int(value)

        block_rows = min(positive_int("block_rows", block_rows), rows_run_ends_address(schema))
        schema = physical_schema(schema)  # options name stored columns: nested leaves by dotted path
        page_size = positive_int("page_size", page_size, 64, 1 << 30)
        page_rows = positive_int("page_rows", page_rows, 1, 1 << 20)
        compressed_page_size = positive_int("compressed_page_size", compressed_page_size, 64, 1 << 30)
        stats_truncate = positive_int("stats_truncate", stats_truncate, 1, 255)
        if zstd_block_size is not None:  # (zstd's blocks hold at most 128 KiB)
            zstd_block_size = positive_int("zstd_block_size", zstd_block_size, ZSTD_BLOCK_MIN, ZSTD_BLOCK_MAX)
        if compression not in _COMPRESSIONS:
            raise InvalidOptionError(f"compression must be one of {_COMPRESSIONS}, got {compression!r}")
        if compression_level is not None:
            if compression not in ("zstd", "auto"):
                raise InvalidOptionError("compression_level applies to zstd (or auto) only")
            compression_level = positive_int("compression_level", compression_level, -7, 22)
        names = schema.names
        refuse_ambiguous(names, encoding=encoding if isinstance(encoding, dict) else (),
                          bloom_filter_columns=bloom_filter_columns if isinstance(bloom_filter_columns, list) else (),
                          bitmap_indexes=bitmap_indexes if isinstance(bitmap_indexes, dict) else ())
        forced = None
        if encoding is not None:
            if isinstance(encoding, str):  # (every column: by position, as names may repeat)
                pairs = [(f, encoding) for f in schema]
            elif isinstance(encoding, dict):
                unknown = [col for col in encoding if col not in names]
                if unknown:
                    raise SchemaError(f"encoding given for unknown column {unknown[0]!r}; columns: {names}")
                pairs = [(schema.field(col), enc_name) for col, enc_name in encoding.items()]
            else:
                raise InvalidOptionError("encoding must be a name or a dict of column name -> name")
            forced = {}
            for field, enc_name in pairs:
                enc = by_name(enc_name)
                ltype = logical_type_from_arrow(field.type)
                if not enc.supports(ltype):
                    raise InvalidOptionError(f"encoding {enc_name!r} cannot store column {field.name!r} of type {ltype}")
                forced[field.name] = enc
        if not isinstance(dictionary, bool):
            raise InvalidOptionError(f"dictionary must be True or False, got {dictionary!r}")
        bloom = BloomPolicy(bloom_filter_columns, bloom_filter_fpp, names)
        if not isinstance(use_threads, bool):
            raise InvalidOptionError(f"use_threads must be True or False, got {use_threads!r}")
        bitmaps = BitmapPolicy(bitmap_indexes, schema,
                               {f.name: logical_type_from_arrow(f.type) for f in schema})
        return cls(block_rows, page_size, page_rows, compressed_page_size, compression, compression_level, forced,
                   dictionary, stats_truncate, bloom, use_threads, bitmaps, zstd_block_size)


def rows_run_ends_address(schema: pa.Schema) -> int:
    """The most rows a block of ``schema`` can hold: what the narrowest run-end type of
    a run_end_encoded column (or struct field: one slot per row) addresses, 2^15 - 1
    for int16 (a reader encodes each block's runs again). Below a list, slots are
    elements, which a block's rows do not bound: a block holding too many is refused
    when written."""
    def walk(t: pa.DataType) -> int:
        if isinstance(t, pa.BaseExtensionType):
            return walk(t.storage_type)
        if pa.types.is_run_end_encoded(t):
            return min(np.iinfo(t.run_end_type.to_pandas_dtype()).max, walk(t.value_type))
        if pa.types.is_struct(t):
            return min((walk(f.type) for f in t), default=_NO_LIMIT)
        return _NO_LIMIT

    return min((walk(f.type) for f in schema), default=_NO_LIMIT)


_NO_LIMIT = 1 << 62


def refuse_ambiguous(names: list, **options) -> None:
    """Raise :class:`SchemaError` when an option names a column whose name repeats."""
    if len(set(names)) == len(names):
        return
    index = name_index(names)
    for option, given in options.items():
        for name in given:
            if index.get(name) == -1:
                raise SchemaError(f"{option}: {ambiguous_name(name, names)}")
