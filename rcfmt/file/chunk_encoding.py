"""Encoding one column chunk (docs/FORMAT.md, "Pages"): the encoding chosen, the chunk cut
into pages, each page encoded and compressed with its statistics, the chunk's record,
page-index entries and candidate bloom filter and bitmap index. :class:`rcfmt.file.writer.Writer`
calls :func:`encode_chunk` per (block, column), on its pool when the block is large.
"""
from __future__ import annotations

import numpy as np

from .. import codecs
from ..encodings import by_name
from ..encodings.base import ColumnValues, Encoding
from ..encodings.plain import Plain
from ..encodings.selector import Decision, analyze, choose
from ..errors import SchemaError
from ..format.footer import ColumnSchema
from ..format.layout import PAGE_DATA, PAGE_DICTIONARY, UNKNOWN_COUNT, chunk_record, page_record
from ..format.page import assemble_pages
from ..format.stats_slots import encode_slots, fill_slots
from ..index.bloom.sbbf import estimate_distinct
from ..index.bloom.chunks import BloomCandidate, chunk_hashes, filter_bits
from ..index.bitmap.build import dictionary_keys, key_counts, propose
from ..schema.statistics import (ColumnStats, StatsArrays, binary_chunk_and_page_stats,
                                 binary_stats_from_dictionary, compute_page_stats, compute_stats)
from ..schema.types import LogicalType, PhysicalKind
from ..schema.arrow_io import fill_null_slots

__all__ = ["encode_chunk", "page_bounds", "AUTO_MIN_SAVING", "FILE_VALUES_MAX", "FILE_VALUES_MAX_BYTES"]

#: "auto" keeps a codec only when it saves at least this fraction of the chunk
AUTO_MIN_SAVING = 0.10
#: a column's distinct values are reported for the whole file (from its equality and
#: range indexes, or its dictionaries) up to this many ...
FILE_VALUES_MAX = 64
#: ... taking at most this many bytes as keys (long strings are left unknown)
FILE_VALUES_MAX_BYTES = 4096


def page_bounds(chunk: ColumnValues, ltype: LogicalType, encoding: Encoding, estimate: int,
                page_size: int, page_rows: int) -> list[int]:
    """Row offsets where pages start (first 0, last ``len(chunk)``)."""
    n = len(chunk)
    if n == 0:
        return [0]
    if ltype.kind == PhysicalKind.VARBINARY and isinstance(encoding, Plain):
        # cut by the real bytes of each row: offsets entry + value
        sizes = (chunk.offsets.astype(np.int64) - int(chunk.offsets[0])) + 4 * np.arange(n + 1)
        cuts = np.searchsorted(sizes, np.arange(page_size, int(sizes[-1]), page_size), side="right") - 1
        bounds = np.unique(np.concatenate(([0], cuts[cuts > 0], [n])))
        # also honour the row cap
        out = [0]
        for stop in bounds[1:]:
            while stop - out[-1] > page_rows:
                out.append(out[-1] + page_rows)
            out.append(int(stop))
        return out
    per_row = max(estimate / n, 1e-9)
    rows = int(max(1, min(page_rows, page_size // per_row if per_row else page_rows)))
    return list(range(0, n, rows)) + [n]


def encode_chunk(values: ColumnValues, valid, col: ColumnSchema, options,
                 forced: Encoding | None = None, bitmap_request: str | None = None, hint=None,
                 bloom: bool = True):
    """Encode one column chunk; return ``(bytes, chunk record, page-index records, bloom
    candidate or None, bitmap-index proposal or None, the selector's sampled decision or
    None, the chunk's distinct values when a dictionary shows at most FILE_VALUES_MAX)``;
    ``bitmap_request``: "auto", a kind, or None; ``hint``: a decision sampled on an
    earlier chunk of the column (:func:`rcfmt.encodings.selector.choose`); ``bloom``:
    False leaves an auto filter out unbuilt (a candidate without bits);
    ``options``: the writer's :class:`~rcfmt.file.writer.WriteOptions`.

    Offsets in the record and the page-index records are relative to the chunk's start;
    the caller adds the chunk's file offset once it knows where the chunk lands.
    """
    ltype = col.type
    n = len(values)
    values = fill_null_slots(values, valid)
    by_pages = ltype.kind == PhysicalKind.VARBINARY  # min/max found with the pages' (below)
    if by_pages:  # (choosing the encoding of strings needs their null count only)
        stats = ColumnStats(0 if valid is None else n - int(np.count_nonzero(valid)))
    else:
        stats = compute_stats(values, valid, ltype, options.stats_truncate)
    if stats.null_count and not col.nullable:
        raise SchemaError(f"column {col.name!r} is not nullable but holds nulls")
    use_dict = options.dictionary and (forced is None or forced.name == "dictionary")
    analysis = analyze(values, ltype, stats, dictionary=use_dict, valid=valid)
    if forced is None:
        encoding = choose(values, ltype, analysis, compression=options.compression, hint=hint)
    elif forced.name != "dictionary" and forced.estimate_size(values, ltype, analysis) is None:
        encoding = by_name("plain")  # e.g. bitpack forced on decimals beyond 64 bits
    else:
        encoding = forced
    estimate = encoding.estimate_size(values, ltype, analysis) or analysis.plain_size
    codec, dictionary_codec, min_saving = _codec(options, analysis.compression)
    # (a compressed page is decompressed whole to reach one value: smaller ones)
    page_size = options.page_size if codec == codecs.NONE else min(options.page_size, options.compressed_page_size)
    bounds = page_bounds(values, ltype, encoding, estimate, page_size, options.page_rows)
    encoded = encoding.encode_chunk(values, ltype, bounds, analysis=analysis)

    # statistics of the pages (and, for strings, of the chunk from theirs)
    both = None
    if by_pages and analysis.dictionary is not None:
        both = binary_stats_from_dictionary(analysis.dictionary, valid, bounds, options.stats_truncate)
    if by_pages and both is None:
        both = binary_chunk_and_page_stats(values, valid, bounds, options.stats_truncate)
    if both is not None:  # strings: chunk and pages from one pass
        stats, page_stats = both
    else:
        if by_pages:
            stats = compute_stats(values, valid, ltype, options.stats_truncate)
        page_stats = compute_page_stats(values, valid, ltype, bounds, options.stats_truncate, stats)
    # pages: [validity bitmap] + encoded values, compressed and checksummed in one native call
    out, codec, dict_len, entries, uncompressed = _pages(encoded, encoding.id, bounds, page_stats,
                                                          valid if stats.null_count else None, col, codec,
                                                          options.compression_level, min_saving, dictionary_codec,
                                                          options.zstd_block_size or 0)
    width = col.stat_width

    record = np.zeros(1, dtype=chunk_record(width))
    r = record[0]
    r["length"] = len(out)
    r["uncompressed_size"] = uncompressed
    r["null_count"] = stats.null_count
    r["nan_count"] = stats.nan_count
    distinct = encoded.distinct_count if encoded.distinct_count is not None else analysis.distinct_count
    r["distinct_count"] = UNKNOWN_COUNT if distinct is None else distinct
    r["dictionary_length"] = dict_len
    r["dictionary_size"] = encoded.dictionary_size
    r["page_count"] = len(page_stats)
    r["encoding"] = encoding.id
    r["compression"] = codec
    for key, value in encode_slots(stats, ltype, width).items():
        r[key] = value
    candidate, proposal, keys = _index_candidates(values, valid, col, options, analysis, encoded, distinct,
                                                  bloom, bitmap_request, len(out))
    return out, record, entries, candidate, proposal, analysis.decision, keys


def _index_candidates(values: ColumnValues, valid, col: ColumnSchema, options, analysis, encoded,
                      distinct: int | None, bloom: bool, bitmap_request: str | None, chunk_bytes: int):
    """The chunk's bloom candidate (the block's budget decides), bitmap-index proposal,
    and its few distinct values for the file's report (DATASET.md §3.2); the rows per
    entry of the writer's dictionary are counted once for both."""
    ltype = col.type
    dictionary = analysis.dictionary
    wants = options.bloom.wants(col.name, ltype, len(values), encoded.dictionary is not None, analysis.is_sorted)
    few = bitmap_request is not None and dictionary is not None and len(dictionary[1]) <= FILE_VALUES_MAX + 2
    # (null slots: one value of their own)
    counts = key_counts(dictionary, valid) if dictionary is not None and (few or (wants and bloom)) else None
    candidate = None
    if wants and not bloom:
        candidate = BloomCandidate(col.name, None, None, False)
    elif wants:
        hashes = chunk_hashes(values, valid, ltype, dictionary, counts)
        ndv = distinct if distinct is not None else estimate_distinct(hashes)
        candidate = BloomCandidate(col.name, ndv, filter_bits(hashes, options.bloom.filter_size(ndv)),
                                   distinct is None)
    proposal, keys = None, None
    if bitmap_request is not None:
        proposal = propose(values, valid, ltype, bitmap_request, distinct=distinct, is_sorted=analysis.is_sorted,
                           dictionary=dictionary, counts=counts if few else None, chunk_bytes=chunk_bytes)
        if few:
            keys = dictionary_keys(dictionary, counts, ltype, FILE_VALUES_MAX)
    return candidate, proposal, keys


def _pages(encoded, encoding_id: int, bounds: list[int], page_stats: StatsArrays, valid, col: ColumnSchema, codec: int,
           level: int | None, min_saving: float | None, dictionary_codec: int | None = None, zstd_block: int = 0):
    """The chunk's pages laid out (its dictionary page first) in one native call, and
    their page-index records: ``(bytes, codec used, dictionary page length, records with
    offsets relative to the chunk, uncompressed bytes)``. ``zstd_block`` > 0: the zstd
    pages of a PLAIN/DELTA_LENGTH string chunk end a zstd block every that many bytes."""
    starts = np.asarray(bounds[:-1], dtype=np.int64)
    rows = np.diff(np.asarray(bounds, dtype=np.int64))
    nulls = page_stats.null_count
    bodies = list(encoded.pages)
    types = np.full(len(bodies), PAGE_DATA, np.uint8)
    has_dict = encoded.dictionary is not None
    if has_dict:  # the dictionary page comes first
        bodies.insert(0, encoded.dictionary)
        types = np.concatenate(([PAGE_DICTIONARY], types)).astype(np.uint8)
        rows = np.concatenate(([encoded.dictionary_size], rows))
        nulls = np.concatenate(([0], nulls))
        starts = np.concatenate(([0], starts))
    # (a take or a filter's few rows then inflate a prefix of such a page)
    zstd_block = zstd_block if col.type.kind == PhysicalKind.VARBINARY and not has_dict else 0
    out, codec, lengths, raw = assemble_pages(bodies, types, rows, nulls, starts, valid, encoding_id, codec, level,
                                              min_saving, dictionary_codec, zstd_block)
    dict_len = int(lengths[0]) if has_dict else 0
    data = slice(1, None) if has_dict else slice(None)
    entries = np.zeros(len(page_stats), dtype=page_record(col.stat_width))
    entries["first_row"] = starts[data]
    entries["offset"] = dict_len + np.cumsum(lengths[data]) - lengths[data]
    entries["length"] = lengths[data]
    entries["row_count"] = rows[data]
    entries["null_count"] = nulls[data]
    entries["nan_count"] = page_stats.nan_count
    fill_slots(entries, page_stats, col.type, col.stat_width)
    return out, codec, dict_len, entries, int(raw.sum())


def _codec(options, advice: str | None) -> tuple[int, int | None, float | None]:
    """The codec of the chunk's data pages, that of its dictionary page (None: the
    data pages'), and the share of its bytes a codec must save to be kept (None: kept
    whatever it saves). With "auto", the selector's advice (from compressing a sample)
    decides first: dense data pages are not compressed at all; otherwise zstd is kept
    only if it saves at least ``AUTO_MIN_SAVING`` of the data pages. A dictionary page
    is judged by that rule on its own: distinct strings often compress where their
    bit-packed codes do not."""
    if options.compression == "none":
        return codecs.NONE, None, None
    if options.compression == "auto":
        return (codecs.NONE if advice == "none" else codecs.ZSTD), codecs.ZSTD, AUTO_MIN_SAVING
    return (codecs.LZ4 if options.compression == "lz4" else codecs.ZSTD), None, None


#: a table with at least this many rows gets a progress bar on a terminal (progress=None)


def chunk_hints(footer) -> dict:
    """The encodings a file's last block chose, per stored column (dotted paths for
    nested leaves), as hints for a writer of more rows like them (``Writer``'s
    ``_hints``): ``{column: selector.Decision}``, columns of unknown encodings left out."""
    if not footer.num_blocks:
        return {}
    last = footer.chunk_fields(("encoding", "compression"))[-1]
    out = {}
    for col, (encoding_id, codec) in zip(footer.columns, last.tolist()):
        decision = Decision.of_chunk(encoding_id, codec)
        if decision is not None:
            out[col.name] = decision
    return out
