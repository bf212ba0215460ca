"""Coverage-guided fuzzing harnesses (atheris: libFuzzer for Python and extensions), one
per attack surface. Each takes the fuzzer's bytes, reaches one parser or decoder, and
accepts only two outcomes: a result, or an error from rcfmt's hierarchy. Anything else
(another exception, a crash, a hang) is a finding.

Targets:

- ``footer``: a whole file (tail, footer JSON and tables) opened and described;
- ``pages``: the native page pipeline (headers, codecs, validity) over a run of pages;
- ``decoders``: every encoding's values kernel and reference decoder on a page body,
  for every type it holds, and dictionary codes against a dictionary size (the first
  input bytes choose encoding, type and rows);
- ``bloom``: the bloom filter reader and its probes;
- ``bitmaps``: a bitmap-index entry (byte 0: column type, bytes 1-2: block rows) parsed
  and asked comparisons, IN, IS NULL and NaN checks;
- ``index``: a dataset's stats index (an index version file) opened as the dataset;
- ``changes``: a changes version (an incremental index version) read through its chain;
- ``deletions``: a deletion vector (bytes 0-3: the file's rows, 4-7: the declared
  cardinality) decoded and loaded as an index entry describes it;
- ``scan``: a whole file read through filtered scans, ``read_dictionary`` and batches.

Checksums are not verified (or are recomputed), so mutations reach the structure checks
and decoders instead of stopping at a CRC. Seed corpora are the small committed files
under ``fuzz/corpus/<target>/`` (``--make-corpus`` rewrites them).

    fuzz/run.sh footer 600                       # a long campaign of one target
    python fuzz/harnesses.py --all --seconds 10  # every target briefly (CI, debug build)
"""
from __future__ import annotations

import argparse
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CORPUS = HERE / "corpus"
sys.path.insert(0, str(ROOT))
sys.path.insert(1, str(HERE))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["rcfmt"]):
    import decimal

    import numpy as np
    import pyarrow as pa

    import rcfmt
    from rcfmt import RcfmtError, col
    from rcfmt._native import decoders as _decoders
    from rcfmt._native import pages as _pages
    from rcfmt.cli import describe
    from rcfmt.dataset import deletion_vector, deletions
    from rcfmt.encodings import all_encodings
    from rcfmt.file.chunks import ChunkDecoder
    from rcfmt.format.layout import chunk_record
    from rcfmt.index.bitmap.layout import keys_parser, parse_entry
    from rcfmt.index.bitmap.answer import answer_block
    from rcfmt.index.bloom.sbbf import BloomFilter, hash_values
    from filters import pushed_conjunction
    from rcfmt.predicate.nnf import BoundAnd, BoundOr, Cmp, InSet, NanCheck, NullCheck, Ref
    from rcfmt.schema.types import logical_type_from_arrow

_SCRATCH = Path(tempfile.mkdtemp(prefix="rcfmt-fuzz-"))
_FILE = _SCRATCH / "case.rcfmt"
_TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint16(), pa.uint64(), pa.float32(), pa.float64(), pa.bool_(),
          pa.date32(), pa.timestamp("us"), pa.decimal128(9, 2), pa.decimal128(30, 3), pa.string(), pa.binary()]
_LTYPES = [logical_type_from_arrow(t) for t in _TYPES]
_PAGE_HEADER = struct.Struct("<BBBBIIIIIII")


def _as_file(data: bytes) -> Path:
    _FILE.write_bytes(data)
    return _FILE


def _validate(table) -> None:
    for column in table.columns:
        column.validate(full=True)


# ------------------------------------------------------------------ targets
def footer(data: bytes) -> None:
    try:
        with rcfmt.open(_as_file(data), verify_checksums=False) as f:
            describe(f)
            f.footer.bitmap_report  # noqa: B018 - checked when read, not at the open
            for name in f.schema.names:
                f.block_stats(name)
    except RcfmtError:
        pass


def scan(data: bytes) -> None:
    try:
        with rcfmt.open(_as_file(data), verify_checksums=False) as f:
            names = f.schema.names
            if not names:
                return
            _validate(f.scan(filter=col(names[0]).is_valid() | col(names[-1]).is_null()).read())
            f.scan([], filter=col(names[0]).is_null() & col(names[-1]).is_valid()).count()
            pushed = pushed_conjunction(f.schema)  # evaluated in the decode pass
            if pushed is not None:
                _validate(f.scan(filter=pushed).read())
                f.scan([], filter=pushed, use_threads=False).count()
            _validate(f.scan(read_dictionary=names, use_threads=False).read())
            for batch in f.iter_batches(batch_size=50, filter=col(names[0]).is_null()):
                _validate(pa.Table.from_batches([batch]))
            _validate(f.read(columns=names[:1]))
            n = f.num_rows
            if n:  # rows by position: the page index locates them (forged: CorruptFileError)
                _validate(f.take([n - 1, 0, n // 2, n // 3, n // 2], use_threads=False))
                got = f.read(filter=col(names[0]).is_valid(), with_row_position=True)
                _validate(got)
                _validate(f.take(got.column("_row_position")))
    except RcfmtError:
        pass


def pages(data: bytes) -> None:
    """A run of pages from byte 1 on; byte 0 picks the expected page type and whether
    the pages' CRCs are recomputed first (so the bodies reach the codecs)."""
    if len(data) < 1:
        return
    mode, buf = data[0], bytearray(data[1:])
    if mode & 1:  # recompute header and body CRCs of every header the walk finds
        pos = 0
        while pos + 32 <= len(buf):
            head = list(_PAGE_HEADER.unpack_from(buf, pos))
            end = min(len(buf), pos + 32 + head[7])
            head[9] = zlib.crc32(buf[pos + 32 : end])
            packed = _PAGE_HEADER.pack(*head[:10], 0)
            buf[pos : pos + 32] = packed[:28] + zlib.crc32(packed[:28]).to_bytes(4, "little")
            pos = end
    try:
        run = _pages.read_pages(bytes(buf), 0, start=0, end=len(buf), max_pages=64, max_rows=1 << 16,
                                page_type=(mode >> 1) & 1, verify=bool(mode & 1))
        run.valid()
        for k in range(run.count):
            _feature(len(run.body(k)) % 17, int(run.pages[k, 1]) % 13, int(run.pages[k, 2]) > 0)
    except RcfmtError as exc:
        _outcome(str(exc))


# The native kernels give the fuzzer no coverage of their own (they are built without
# sanitizer coverage), so the harnesses turn what they did into Python branches: each
# distinct outcome is a new edge, and inputs reaching it are kept in the corpus.
_WORDS = ("checksum", "header", "type", "flags", "encoding", "codec", "zstd", "lz4", "size", "rows", "values",
          "null", "validity", "bitmap", "dictionary", "past", "runs", "offsets", "UTF-8", "precision", "width",
          "padding", "reference", "exponent", "count", "truncated", "limit")


@atheris.instrument_func
def _outcome(message: str) -> None:
    for word in _WORDS:
        if word in message:
            _feature(len(word), 0, True)


@atheris.instrument_func
def _feature(a: int, b: int, c: bool) -> None:
    if a == 0: pass
    elif a == 1: pass
    elif a == 2: pass
    elif a == 3: pass
    elif a == 4: pass
    elif a == 5: pass
    elif a == 6: pass
    elif a == 7: pass
    elif a == 8: pass
    elif a < 12: pass
    else: pass
    if b == 0: pass
    elif b == 1: pass
    elif b == 2: pass
    elif b < 6: pass
    else: pass
    if c:
        pass


def decoders(data: bytes) -> None:
    """Byte 0 picks the encoding, byte 1 the type, byte 2 the row count; the rest is a
    page body decoded by the native kernel (through a one-page chunk) and the reference
    decoder, which must agree on accepting it."""
    if len(data) < 3:
        return
    encodings = [e for e in all_encodings()]
    enc = encodings[data[0] % len(encodings)]
    ltype = _LTYPES[data[1] % len(_LTYPES)]
    rows, body = data[2], bytes(data[3:])
    if enc.name == "dictionary":
        _dictionary_codes(body, rows, data[1] % 7)
        return
    if not enc.supports(ltype):
        return
    ref_ok = True
    try:
        enc.decode(body, rows, ltype)
    except RcfmtError:
        ref_ok = False
    page = _page(enc.id, rows, body)
    record = np.zeros(1, dtype=chunk_record(8))[0]  # a footer chunk record (no codec, no dictionary)
    record["length"], record["page_count"], record["encoding"] = len(page), 1, enc.id
    record["uncompressed_size"] = len(body)
    native_ok = True
    try:
        values, _valid = ChunkDecoder(page, 0, record, ltype).decode_all(rows)
        _feature(enc.id, data[1] % len(_LTYPES) % 13, rows > 0)
    except RcfmtError as exc:
        native_ok = False
        _outcome(str(exc))
    if native_ok and not ref_ok:
        raise AssertionError(f"{enc.name}/{ltype.name}: the native kernel accepted a body the reference refuses")


def _page(encoding_id: int, rows: int, body: bytes) -> bytes:
    """One uncompressed data page without validity, both CRCs right."""
    header = _PAGE_HEADER.pack(0, encoding_id, 0, 0, rows, rows, 0, len(body), len(body), zlib.crc32(body), 0)
    return header[:28] + zlib.crc32(header[:28]).to_bytes(4, "little") + body


def _dictionary_codes(body: bytes, rows: int, dictionary_size: int) -> None:
    """Dictionary codes of a page: the native kernel must refuse what the reference
    decoder refuses (a code beyond the dictionary, a bad layout or length)."""
    from rcfmt.encodings.dictionary import decode_codes

    ref_ok = True
    try:
        decode_codes(body, rows, dictionary_size)
    except RcfmtError:
        ref_ok = False
    page = _page(1, rows, body)
    try:
        run = _pages.read_pages(page, 0, start=0, end=len(page), max_pages=1, max_rows=rows, page_type=0,
                                encoding=1)
        out = np.empty(run.rows, np.uint32)
        native_ok = _pages.decode_values(run, _decoders.MODE_CODES, 4, False, out, dictionary_size) < 0
    except RcfmtError as exc:
        native_ok = False
        _outcome(str(exc))
    _feature(rows % 11, dictionary_size, native_ok)
    if native_ok and not ref_ok:
        raise AssertionError("dictionary codes: the native kernel accepted a body the reference refuses")


def bloom(data: bytes) -> None:
    try:
        bf = BloomFilter.from_bytes(data)
    except RcfmtError:
        return
    for ltype, values in ((_LTYPES[2], [0, 1, -5, 2**40]), (_LTYPES[12], [b"", b"abc", "é".encode()])):
        bf.might_contain_hashes(hash_values(values, ltype))


def _domain_values(ltype) -> list:
    if ltype.is_float:
        return [-1.5, 0.0, 2.0]
    if ltype.name == "bool":
        return [False, True]
    if ltype.name in ("string", "binary"):
        return [b"", b"a", b"zz"]
    return [-3, 0, 7]


def bitmaps(data: bytes) -> None:
    if len(data) < 3:
        return
    t, lt = _TYPES[data[0] % len(_TYPES)], _LTYPES[data[0] % len(_LTYPES)]
    rows = int.from_bytes(data[1:3], "little")
    try:
        entry = parse_entry(data[3:], rows, keys_parser(lt))
    except RcfmtError:
        return
    ref = Ref("x", t, lt)
    values = _domain_values(lt)
    leaves = [Cmp(ref, op, v, None) for op in ("==", "!=", "<", "<=", ">", ">=") for v in values]
    leaves += [InSet(ref, tuple(values), False, negated, None) for negated in (False, True)]
    leaves += [NullCheck(ref, False), NullCheck(ref, True), NanCheck(ref, False), NanCheck(ref, True)]
    try:
        answer_block(BoundOr.of(*leaves[:6]) if data[0] & 0x80 else BoundAnd.of(*leaves[6:12]), {"x": entry}, rows)
        for leaf in leaves:
            answer_block(leaf, {"x": entry}, rows)
    except RcfmtError:
        pass


_INDEX_ROOT = _SCRATCH / "ds"


def index(data: bytes) -> None:
    """The bytes as the latest index version of the seed dataset (whose data files
    ``fuzz/corpus/index-data/`` holds)."""
    meta = _INDEX_ROOT / "_rcfmt"
    if not meta.exists():
        import shutil

        shutil.copytree(CORPUS / "index-data", _INDEX_ROOT)
        meta.mkdir(exist_ok=True)
    for p in meta.glob("v*.rcfmt"):
        p.unlink()
    (meta / "v00000000000000000001.rcfmt").write_bytes(data)
    try:
        ds = rcfmt.dataset(_INDEX_ROOT)
        _validate(ds.to_table(filter=col(ds.schema.names[0]).is_valid()) if ds.schema.names else ds.to_table())
        ds.history()
    except RcfmtError:
        pass


def deletions_target(data: bytes) -> None:
    """A forged deletion vector: decoded, and loaded through its (inline) descriptor
    with the right checksum, for a file of the rows bytes 0-3 say; a result must be
    sorted, distinct, of the declared cardinality and below the rows."""
    if len(data) < 8:
        return
    rows, cardinality = struct.unpack_from("<II", data)
    body = data[8:]
    for attempt in (lambda: deletion_vector.decode(body, num_rows=rows, cardinality=cardinality),
                    lambda: deletions.load(deletions.DeletionVector(cardinality, None, 0, len(body), zlib.crc32(body),
                                                                    body), rows)):
        try:
            got = attempt()
        except RcfmtError:
            continue
        assert got.dtype == np.int64 and len(got) == cardinality, (got.dtype, len(got), cardinality)
        assert len(got) == 0 or (got[0] >= 0 and got[-1] < rows and bool(np.all(np.diff(got) > 0)))


def make_deletions_corpus() -> None:
    """Seeds of the ``deletions`` target: vectors of array, run and bitmap containers."""
    out = CORPUS / "deletions"
    out.mkdir(parents=True, exist_ok=True)
    sets = {"array": np.array([3, 7, 65536, 65539], np.int64), "run": np.arange(100, 70_000, dtype=np.int64),
            "bitmap": np.arange(0, 140_000, 3, dtype=np.int64), "high": np.array([5, (1 << 32) + 9], np.int64)}
    for name, rows in sets.items():
        (out / name).write_bytes(struct.pack("<II", min(int(rows[-1]) + 1, 2 ** 32 - 1), len(rows))
                                 + deletion_vector.encode(rows))


_CHANGES_ROOT = _SCRATCH / "ds-changes"


def changes(data: bytes) -> None:
    """The bytes as version 2 of the seed dataset whose checkpoint (version 1) and data
    files ``fuzz/corpus/changes-data/`` holds: a changes version (docs/DATASET.md §4.2)
    read through its chain."""
    from rcfmt.dataset import snapshot

    meta = _CHANGES_ROOT / "_rcfmt"
    if not meta.exists():
        import shutil

        shutil.copytree(CORPUS / "changes-data", _CHANGES_ROOT)
    (meta / "v00000000000000000002.rcfmt").write_bytes(data)
    snapshot._CHAINS.clear()
    snapshot._RUNS.clear()
    try:
        ds = rcfmt.dataset(_CHANGES_ROOT, version=2)
        _validate(ds.to_table(filter=col(ds.schema.names[0]).is_valid()) if ds.schema.names else ds.to_table())
        ds.history()
    except RcfmtError:
        pass


def make_changes_corpus(table) -> None:
    """Seeds of the ``changes`` target: version 2 of a dataset, an append and a delete
    (a deletion vector), over the same checkpoint."""
    import shutil

    out = CORPUS / "changes"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(CORPUS / "changes-data", ignore_errors=True)
    out.mkdir(parents=True)
    root = _SCRATCH / "seed-changes"
    rcfmt.write_dataset(table, root, partition_by=["s"])
    shutil.copytree(root, CORPUS / "changes-data", ignore=shutil.ignore_patterns("_last_version", "_tmp", "_staging"))
    for k, change in enumerate([lambda: rcfmt.write_dataset(table.slice(0, 7), root, mode="append"),
                                lambda: rcfmt.dataset(root).delete(col("i") < 0)]):
        change()
        v2 = root / "_rcfmt" / "v00000000000000000002.rcfmt"
        (out / f"seed{k}.rcfmt").write_bytes(v2.read_bytes())
        for p in root.rglob("*.rcfmt"):  # (the append's data file; the delete writes none)
            rel = p.relative_to(root)
            if "_rcfmt" not in rel.parts and not (CORPUS / "changes-data" / rel).exists():
                (CORPUS / "changes-data" / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(p, CORPUS / "changes-data" / rel)
        v2.unlink()
        for d in ("deletions",):
            if (root / "_rcfmt" / d).exists():
                shutil.copytree(root / "_rcfmt" / d, CORPUS / "changes-data" / "_rcfmt" / d, dirs_exist_ok=True)


TARGETS = {"footer": footer, "pages": pages, "decoders": decoders, "bloom": bloom, "bitmaps": bitmaps, "index": index,
           "scan": scan, "deletions": deletions_target, "changes": changes}


# ------------------------------------------------------------------ seed corpora
def _seed_table() -> pa.Table:
    rng = np.random.default_rng(0)
    n = 60
    valid = rng.random(n) > 0.2
    return pa.table({
        "i": pa.array(rng.integers(-50, 50, n), pa.int32(), mask=~valid),
        "f": pa.array(np.round(rng.normal(0, 10, n), 1)),
        "s": pa.array([f"v{k % 5}" for k in range(n)], mask=~valid),
        "d": pa.array([f"x{k}" for k in range(n)]),
    })


def make_corpus() -> None:
    """Write the small seed files of every target (deterministic)."""
    import shutil

    table = _seed_table()
    shutil.rmtree(CORPUS, ignore_errors=True)
    (CORPUS / "index-data").parent.mkdir(parents=True, exist_ok=True)
    for target in TARGETS:
        (CORPUS / target).mkdir(parents=True)
    variants = [dict(compression="none"), dict(compression="zstd", encoding={"i": "bitpack", "s": "dictionary"}),
                dict(compression="lz4", encoding={"i": "rle", "d": "delta_length", "f": "alp"}, bloom_filter_columns=["d"]),
                dict(bitmap_indexes={"i": "bitsliced", "s": "equality", "f": "range", "d": "equality"})]
    for k, opts in enumerate(variants):
        path = _SCRATCH / f"seed{k}.rcfmt"
        rcfmt.write_table(table, path, block_rows=32, page_rows=16, **opts)
        raw = path.read_bytes()
        for target in ("footer", "scan"):
            (CORPUS / target / f"seed{k}.rcfmt").write_bytes(raw)
        with rcfmt.open(path) as f:
            for c in range(len(f.schema)):
                rec = f.footer.chunks[c][0]
                chunk = raw[int(rec["offset"]) + int(rec["dictionary_length"]): int(rec["offset"]) + int(rec["length"])]
                (CORPUS / "pages" / f"seed{k}-{c}").write_bytes(bytes([1]) + chunk)
                if int(rec["bloom_length"]):
                    bloom_raw = raw[int(rec["bloom_offset"]): int(rec["bloom_offset"]) + int(rec["bloom_length"]) - 4]
                    (CORPUS / "bloom" / f"seed{k}-{c}").write_bytes(bloom_raw)
                pos = int(rec["offset"]) + int(rec["dictionary_length"])
                head = _PAGE_HEADER.unpack_from(raw, pos)
                body = raw[pos + 32: pos + 32 + head[7]]
                if head[2] == 0 and head[6] == 0:  # uncompressed, no validity: a values body
                    encodings = all_encodings()
                    e = [x.id for x in encodings].index(head[1])
                    t = [str(x) for x in _TYPES].index(str(table.schema.field(c).type)) \
                        if str(table.schema.field(c).type) in [str(x) for x in _TYPES] else 0
                    (CORPUS / "decoders" / f"seed{k}-{c}").write_bytes(bytes([e, t, head[4]]) + body)
    make_bitmap_corpus(table)
    make_types_corpus()
    make_deletions_corpus()
    make_changes_corpus(table)
    ds_root = _SCRATCH / "seed-ds"
    rcfmt.write_dataset(table, ds_root, partition_by=["s"])
    rcfmt.write_dataset(table.slice(0, 7), ds_root, mode="append")
    for v in sorted((ds_root / "_rcfmt").glob("v*.rcfmt")):
        (CORPUS / "index" / v.name).write_bytes(v.read_bytes())
    shutil.copytree(ds_root, CORPUS / "index-data", ignore=shutil.ignore_patterns("_rcfmt"))


def make_types_corpus() -> None:
    """Seeds of the ``footer`` and ``scan`` targets holding the types stored under another
    (docs/FORMAT.md 3.1: durations, date64, decimal32/256, float16, fixed-size binary,
    UUIDs, null, intervals; 3a: sparse and dense unions), with NULLs and a bloom filter
    and bitmap index on some."""
    import uuid

    n = 40
    valid = np.arange(n) % 7 != 3
    codes = np.where(valid, 5, 9)  # a dense union: each child's slots ranked in order
    ranks = np.zeros(n, np.int32)
    for code in (5, 9):
        ranks[codes == code] = np.arange(int((codes == code).sum()))
    table = pa.table({
        "dur": pa.array(np.arange(n) * 1_000 - 7_000, pa.duration("ms"), mask=~valid),
        "d64": pa.array(np.arange(n) * 86_400_000, pa.date64(), mask=~valid),
        "d32": pa.array([decimal.Decimal(k) / 100 for k in range(n)], pa.decimal32(6, 2), mask=~valid),
        "d256": pa.array([decimal.Decimal(10) ** 50 - k for k in range(n)], pa.decimal256(60, 0)),
        "h": pa.array(np.linspace(-2, 2, n).astype(np.float16), mask=~valid),
        "fsb": pa.array([bytes([k, 255 - k, 0]) for k in range(n)], pa.binary(3), mask=~valid),
        "u": pa.ExtensionArray.from_storage(pa.uuid(), pa.array([uuid.UUID(int=k * 7919).bytes for k in range(n)],
                                                                pa.binary(16))),
        "nothing": pa.nulls(n),
        "iv": pa.array([pa.MonthDayNano([k, -k, k * 1000]) for k in range(n)], pa.month_day_nano_interval()),
        "su": pa.UnionArray.from_sparse(pa.array(np.arange(n) % 2, pa.int8()),
                                        [pa.array(np.arange(n)), pa.array([f"s{k}" for k in range(n)])], ["i", "s"]),
        "du": pa.UnionArray.from_dense(pa.array(codes, pa.int8()), pa.array(ranks),
                                       [pa.array(np.arange(int(valid.sum())) * 0.5),
                                        pa.nulls(int((~valid).sum()), pa.int16())], ["f", "n"], [5, 9]),
    })
    path = _SCRATCH / "seed-types.rcfmt"
    rcfmt.write_table(table, path, block_rows=16, page_rows=8, bloom_filter_columns=["u", "d256"],
                      bitmap_indexes={"d32": "range", "fsb": "equality"})
    for target in ("footer", "scan"):
        (CORPUS / target / "seed-types.rcfmt").write_bytes(path.read_bytes())


def make_bitmap_corpus(table) -> None:
    """Seeds of the ``bitmaps`` target: every kind of entry of the seed table's columns."""
    import shutil

    out = CORPUS / "bitmaps"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    path = _SCRATCH / "seed-bitmaps.rcfmt"
    for kind in ("equality", "range", "bitsliced"):
        kinds = {name: kind for name in table.column_names if kind != "bitsliced" or name == "i"}
        rcfmt.write_table(table, path, block_rows=40, bitmap_indexes=kinds)
        raw = path.read_bytes()
        with rcfmt.open(path) as f:
            for c in f.bitmap_columns:
                offset, length = f.bitmap_span(0, c)
                t = [str(x) for x in _TYPES].index(str(table.schema.field(c).type))
                rows = int(f.footer.blocks[0]["row_count"])
                (out / f"{kind}-{c}").write_bytes(bytes([t]) + rows.to_bytes(2, "little") + raw[offset : offset + length])


# ------------------------------------------------------------------ driver
def fuzz(target: str, seconds: int, extra: list[str]) -> None:
    """Run one target in this process (libFuzzer takes over argv)."""
    work = _SCRATCH / f"corpus-{target}"
    work.mkdir(exist_ok=True)
    args = [sys.argv[0], f"-max_total_time={seconds}", "-timeout=20", "-rss_limit_mb=3072",
            f"-artifact_prefix={_SCRATCH}/", *extra, str(work), str(CORPUS / target)]
    atheris.Setup(args, TARGETS[target])
    atheris.Fuzz()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("target", nargs="?", choices=sorted(TARGETS))
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--all", action="store_true", help="every target in turn, each in a child process")
    ap.add_argument("--make-corpus", action="store_true")
    args, extra = ap.parse_known_args()
    if args.make_corpus:
        make_corpus()
        return 0
    if args.all:
        failed = []
        for target in TARGETS:
            proc = subprocess.run([sys.executable, __file__, target, "--seconds", str(args.seconds), *extra],
                                  capture_output=True, text=True)
            tail = [ln for ln in proc.stderr.splitlines() if ln.startswith(("#", "Done", "=="))][-2:]
            print(f"{target}: exit {proc.returncode}; {' | '.join(tail)}", flush=True)
            if proc.returncode != 0:
                failed.append(target)
                print(proc.stderr[-3000:])
        return 1 if failed else 0
    if not args.target:
        ap.error("name a target or use --all")
    fuzz(args.target, args.seconds, extra)
    return 0


if __name__ == "__main__":
    sys.exit(main())
