"""Mutation fuzzing of the native read paths (page pipeline, value kernels, checks).

Base files (every encoding, every codec, nulls, strings, decimals) are mutated in their
page region: random byte changes, page-header fields set to hostile values, and
*forged* changes whose page checksums are recomputed, so the damage reaches the
decoders. Forged metadata too: footer table fields (row, page and null counts,
offsets, lengths, encodings; sometimes made to agree with each other), the footer's
schema (types, units, zones, widths, swapped or dropped entries) and page-index
records, each with its checksum recomputed. Each mutated file is read through every
read path (whole file with threads, no columns, block by block, column chunks,
filtered scans, dictionary scan, batches, the CLI's description, a dataset holding the
file, checksums off) in a child process, under an
address-space limit. A case fails if the child crashes, hangs, or raises anything
outside rcfmt's error hierarchy, or if a returned array fails ``validate(full=True)``.

    python fuzz/fuzz_pages.py --cases 20000 --seed 1       # a long campaign
    python fuzz/fuzz_pages.py --cases 300 --seed 7 --keep fuzz/out   # keep failing inputs
    python fuzz/fuzz_pages.py --cases 10000 --metadata-only         # forged footers only

The test suite runs a bounded campaign (tests/test_fuzz_pages.py).
"""
from __future__ import annotations

import argparse
import os
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "data"))
import make_bad  # noqa: E402 - the footer forging helpers (split_file, build_file, patch_page_index)
PAGE_HEADER = struct.Struct("<BBBBIIIIIII")  # docs/FORMAT.md 4.1
MEMORY_LIMIT = 3 << 30  # bytes of address space for the reading child

CHILD = textwrap.dedent("""
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
    import os, shutil, tempfile
    import pyarrow as pa
    import rcfmt
    from rcfmt import col
    from rcfmt.cli import describe
    sys.path.insert(0, sys.argv[2])
    from filters import pushed_conjunction

    def rcfmt_table(array):
        return pa.table({"c": array})

    def every_way(path, verify):
        yield rcfmt.read_table(path, verify_checksums=verify)
        yield rcfmt.read_table(path, columns=[], verify_checksums=verify)
        with rcfmt.open(path, verify_checksums=verify) as f:
            for b in range(f.num_blocks):
                yield f.read_block(b)
            for c in range(len(f.footer.columns)):  # stored columns (a nested field's too)
                yield rcfmt_table(f.read_column_chunk(f.num_blocks - 1, c)) if f.num_blocks else None
            names = f.schema.names
            yield f.scan(filter=col(names[0]).is_valid() | col(names[-1]).is_null()).read()
            yield f.scan(columns=[], filter=col(names[0]).is_valid()).read()
            describe(f)  # what `rcfmt inspect` prints
            f.footer.bitmap_report  # noqa: B018 - what `rcfmt meta` shows (checked when read)
            yield f.scan(read_dictionary=names, use_threads=False).read()
            for batch in f.iter_batches(batch_size=37):
                yield batch
            pushed = pushed_conjunction(f.schema)
            if pushed is not None:  # projected (values kept) and not (masks only)
                yield f.scan(filter=pushed).read()
                yield f.scan(columns=[], filter=pushed, use_threads=False).read()
        # the dataset path: a directory (without index) holding only this file
        root = tempfile.mkdtemp(dir=os.path.dirname(path))
        shutil.copyfile(path, os.path.join(root, "part-0.rcfmt"))
        try:
            ds = rcfmt.dataset(root)
            yield ds.to_table()
            yield ds.to_table(filter=col(ds.schema.names[0]).is_valid())
        finally:
            shutil.rmtree(root)

    for path in sys.stdin.read().split():
        print("case", path, flush=True)
        for verify in (True, False):
            try:
                for table in every_way(path, verify):
                    for column in (table.columns if table is not None else ()):
                        column.validate(full=True)
                print("outcome read", flush=True)
            except rcfmt.RcfmtError as exc:
                text = str(exc).split(" (file=")[0].split(": ")[-1]
                print("outcome", type(exc).__name__, text[:40], flush=True)
            except Exception as exc:
                print("BAD", path, type(exc).__name__, str(exc)[:300], flush=True)
    print("done", flush=True)
""")


def base_files(work: Path) -> list[Path]:
    """Small files covering every encoding and codec, with nulls, and nested fields."""
    import decimal

    import pyarrow as pa

    import rcfmt

    rng = np.random.default_rng(0)
    n = 300
    valid = rng.random(n) > 0.2
    ints = rng.integers(-50, 50, n)
    table = pa.table({
        "i": pa.array(ints, pa.int32(), mask=~valid),
        "u": pa.array(rng.integers(0, 1000, n).astype(np.uint16)),
        "t": pa.array(np.cumsum(rng.integers(0, 5, n)), pa.timestamp("us")),
        "f": pa.array(np.round(rng.normal(0, 100, n), 2), mask=~valid),
        "d": pa.array([decimal.Decimal(int(v)) / 100 for v in ints], pa.decimal128(9, 2)),
        "s": pa.array([f"v{v % 13}é" for v in ints], mask=~valid),
        "c": pa.array([f"comment {v} " * int(1 + abs(v) % 4) for v in ints]),
        "b": pa.array(ints % 3 == 0, mask=~valid),
    })
    variants = [
        ("auto", None), ("none", "plain"), ("zstd", "dictionary"), ("lz4", None), ("none", "rle"),
        ("none", {"i": "bitpack", "u": "bitpack", "t": "delta", "f": "alp", "d": "bitpack", "c": "delta_length"}),
        ("zstd", {"i": "delta", "u": "rle", "t": "bitpack", "d": "dictionary", "s": "delta_length"}),
    ]
    out = []
    for k, (codec, enc) in enumerate(variants):
        path = work / f"base{k}.rcfmt"
        opts = {"block_rows": 128, "page_rows": 40, "compression": codec}
        if isinstance(enc, str):
            from rcfmt.encodings import by_name
            from rcfmt.schema.types import logical_type_from_arrow

            enc = {f.name: enc for f in table.schema if by_name(enc).supports(logical_type_from_arrow(f.type))}
        if enc:
            opts["encoding"] = enc
        rcfmt.write_table(table, path, **opts)
        out.append(path)
    # nested fields (FORMAT.md 3a): presence and lengths columns, element columns, a map
    lists = pa.array([None if v % 7 == 0 else [int(v), None][: 1 + v % 3] for v in ints])
    nested = pa.table({
        "i": table["i"],
        "st": pa.StructArray.from_arrays([table["i"].combine_chunks(),
                                          pa.StructArray.from_arrays([table["s"].combine_chunks()], names=["s"])],
                                         names=["a", "in"], mask=pa.array(~valid)),
        "l": lists,
        "m": pa.array([[(f"k{v % 5}", int(v))] * int(v % 3) for v in ints], pa.map_(pa.string(), pa.int64())),
        "fx": pa.array([[int(v), int(v) + 1] for v in ints], pa.list_(pa.int16(), 2)),
        "s": table["s"],
    })
    for k, codec in enumerate(("none", "zstd")):
        path = work / f"nested{k}.rcfmt"
        rcfmt.write_table(nested, path, block_rows=128, page_rows=40, compression=codec)
        out.append(path)
    return out


def page_headers(raw: bytes, path: Path) -> list[int]:
    """Positions of every page header (dictionary and data pages) of ``path``."""
    import rcfmt

    out = []
    with rcfmt.open(path) as f:
        for chunks in f.footer.chunks:
            for rec in chunks:
                pos, end = int(rec["offset"]), int(rec["offset"]) + int(rec["length"])
                while pos < end:
                    out.append(pos)
                    pos += 32 + PAGE_HEADER.unpack_from(raw, pos)[7]
    return out


_HOSTILE = [0, 1, 2, 7, 8, 255, 256, 1023, 1024, 1025, 1 << 16, (1 << 20) - 1, 1 << 20, (1 << 20) + 1,
            (1 << 31) - 1, 1 << 31, (1 << 32) - 1]


def _fix_crcs(data: bytearray, pos: int, body: bool) -> None:
    head = list(PAGE_HEADER.unpack_from(data, pos))
    if body:
        end = min(len(data), pos + 32 + head[7])
        head[9] = zlib.crc32(data[pos + 32 : end])
    packed = PAGE_HEADER.pack(*head[:10], 0)
    data[pos : pos + 32] = packed[:28] + zlib.crc32(packed[:28]).to_bytes(4, "little")


_HUGE = [2**32 + 5, 2**40, 2**47, 2**48 - 1, 2**63, 2**64 - 1]
_BLOCK_FIELDS = ["first_row", "row_count", "offset", "length"]
_CHUNK_FIELDS = ["offset", "length", "null_count", "nan_count", "page_index_offset", "bloom_offset",
                 "page_index_length", "bloom_length", "dictionary_length", "page_count", "dictionary_size",
                 "encoding", "compression", "stats_flags", "min_len", "max_len"]
_TYPES = [{"type": "int64"}, {"type": "int8"}, {"type": "uint32"}, {"type": "float64"}, {"type": "float32"},
          {"type": "bool"}, {"type": "string"}, {"type": "binary", "large": True}, {"type": "date32"},
          {"type": "timestamp", "unit": "ns", "tz": "Mars/Olympus_Mons"}, {"type": "timestamp", "unit": "s"},
          {"type": "decimal128", "precision": 38, "scale": 2}, {"type": "decimal128", "precision": 1, "scale": 9}]
_PAGE_FIELDS = ["first_row", "offset", "length", "row_count", "null_count", "nan_count", "stats_flags", "min_len",
                "max_len"]


def _hostile(rng: np.random.Generator, old: int, bits: int) -> int:
    r = rng.random()
    if r < 0.4:
        value = int(rng.choice(_HOSTILE))
    elif r < 0.6:
        value = int(rng.choice(_HUGE))
    else:
        value = max(0, old + int(rng.integers(-3, 4)))
    return value & ((1 << bits) - 1)


def forge_metadata(raw: bytes, rng: np.random.Generator) -> bytes:
    """A copy of ``raw`` with forged footer tables, schema or page-index records, every
    checksum recomputed (so only the reader's structural checks stand in the way)."""
    parts = make_bad.split_file(raw)
    ncols, nblocks = len(parts.chunks), len(parts.blocks)
    kind = int(rng.integers(4))
    if kind == 0 and nblocks:  # a block's field; sometimes the rest of the footer made to agree
        b = int(rng.integers(nblocks))
        name = _BLOCK_FIELDS[int(rng.integers(len(_BLOCK_FIELDS)))]
        old = int(parts.blocks[b][name])
        parts.blocks[b][name] = _hostile(rng, old, 64)
        if name == "row_count" and rng.random() < 0.7:
            new = int(parts.blocks[b][name])
            parts.doc["num_rows"] = int(parts.doc["num_rows"]) - old + new
            for later in range(b + 1, nblocks):
                parts.blocks[later]["first_row"] = (int(parts.blocks[later]["first_row"]) - old + new) % 2**64
            if rng.random() < 0.5:
                for chunk in parts.chunks:
                    chunk[b]["page_count"] = min(2**32 - 1, max(1, -(-new // 2**20)))
    elif kind == 1 and ncols and nblocks:  # a chunk record's field
        c, b = int(rng.integers(ncols)), int(rng.integers(nblocks))
        name = _CHUNK_FIELDS[int(rng.integers(len(_CHUNK_FIELDS)))]
        bits = parts.chunks[c].dtype[name].itemsize * 8
        if name == "encoding":
            parts.chunks[c][b][name] = int(rng.integers(0, 8))
        else:
            parts.chunks[c][b][name] = _hostile(rng, int(parts.chunks[c][b][name]), bits)
    elif kind == 2 and ncols:  # the schema: a type, a width, swapped or dropped entries
        schema = parts.doc["schema"]
        c = int(rng.integers(ncols))
        how = int(rng.integers(4))
        if how == 0:
            keep = {k: schema[c][k] for k in ("name", "nullable", "stat_width")}
            schema[c] = {**keep, **_TYPES[int(rng.integers(len(_TYPES)))]}
        elif how == 1:
            schema[c]["stat_width"] = int(rng.choice([1, 2, 4, 8, 16, 255]))
        elif how == 2 and ncols > 1:
            d = int(rng.integers(ncols))
            schema[c], schema[d] = schema[d], schema[c]
        else:
            schema[c].pop(str(rng.choice(list(schema[c]))))
    elif ncols and nblocks:  # a page-index record
        c, b = int(rng.integers(ncols)), int(rng.integers(nblocks))
        if int(parts.chunks[c][b]["page_index_length"]):
            name = _PAGE_FIELDS[int(rng.integers(len(_PAGE_FIELDS)))]

            def edit(entries):
                k = int(rng.integers(len(entries)))
                bits = entries.dtype[name].itemsize * 8
                entries[k][name] = _hostile(rng, int(entries[k][name]), bits)

            make_bad.patch_page_index(parts, parts.doc["schema"][c]["name"], b, edit)
    return make_bad.build_file(parts)


def mutate(raw: bytes, headers: list[int], rng: np.random.Generator, metadata_only: bool = False) -> bytes:
    """One mutated copy of ``raw`` (see the module docstring)."""
    data = bytearray(raw)
    pos = headers[int(rng.integers(len(headers)))]
    head = list(PAGE_HEADER.unpack_from(data, pos))
    kind = 6 if metadata_only else int(rng.integers(8))
    if kind >= 6:  # forged metadata
        return forge_metadata(raw, rng)
    if kind == 0:  # raw flips anywhere in the page region, checksums left wrong
        lo, hi = headers[0], headers[-1] + 32 + PAGE_HEADER.unpack_from(data, headers[-1])[7]
        for _ in range(int(rng.integers(1, 8))):
            data[int(rng.integers(lo, hi))] = int(rng.integers(256))
        return bytes(data)
    if kind in (1, 2):  # forged body bytes
        size = head[7]
        if size:
            for _ in range(int(rng.integers(1, 6))):
                at = pos + 32 + int(rng.integers(size))
                data[at] = int(rng.choice([0, 0xFF, 0x80, 0x7F, int(rng.integers(256))]))
        _fix_crcs(data, pos, body=True)
        return bytes(data)
    if kind == 3:  # forged header field: a count or size set to a hostile value
        field = int(rng.choice([4, 5, 6, 7, 8]))
        head[field] = int(rng.choice(_HOSTILE)) if rng.random() < 0.7 else max(0, head[field] + int(rng.integers(-3, 4)))
        data[pos : pos + 32] = PAGE_HEADER.pack(*head)
        _fix_crcs(data, pos, body=False)
        return bytes(data)
    if kind == 4:  # forged type, encoding, codec or flags byte
        field = int(rng.integers(4))
        data[pos + field] = int(rng.integers(0, 8)) if rng.random() < 0.8 else int(rng.integers(256))
        _fix_crcs(data, pos, body=False)
        return bytes(data)
    # forged body truncated or extended: sizes agree with the stored bytes
    size = head[7]
    cut = int(rng.integers(0, size + 1)) if size else 0
    stored = bytes(data[pos + 32 : pos + 32 + size])
    new = stored[:cut] if rng.random() < 0.5 else stored + bytes(rng.integers(0, 256, int(rng.integers(1, 64)),
                                                                             dtype=np.uint8))
    head[7] = len(new)
    if head[2] == 0:
        head[8] = len(new)
    data = data[: pos + 32] + bytearray(new) + data[pos + 32 + size :]
    data[pos : pos + 32] = PAGE_HEADER.pack(*head)
    _fix_crcs(data, pos, body=True)
    return bytes(data)


def run(cases: int, seed: int, keep: Path | None = None, timeout: float = 600.0, batch: int = 400,
        metadata_only: bool = False) -> dict:
    """Fuzz ``cases`` mutated files; returns counts and the failures found."""
    rng = np.random.default_rng(seed)
    found: list[str] = []
    outcomes: dict[str, int] = {}
    done = 0
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        work = Path(d)
        bases = [(p, p.read_bytes()) for p in base_files(work)]
        bases = [(p, raw, page_headers(raw, p)) for p, raw in bases]
        while done < cases:
            paths = []
            for k in range(min(batch, cases - done)):
                path, raw, headers = bases[int(rng.integers(len(bases)))]
                case = work / f"case{done + k}.rcfmt"
                case.write_bytes(mutate(raw, headers, rng, metadata_only))
                paths.append(case)
            proc = subprocess.run([sys.executable, "-c", CHILD, str(MEMORY_LIMIT), str(HERE)],
                                  input="\n".join(map(str, paths)), capture_output=True, text=True, cwd=ROOT, timeout=timeout,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            lines = proc.stdout.splitlines()
            bad = [ln for ln in lines if ln.startswith("BAD")]
            for ln in lines:
                if ln.startswith("outcome"):
                    key = " ".join(ln.split()[1:3]) if not ln.startswith("outcome read") else "read without error"
                    outcomes[key] = outcomes.get(key, 0) + 1
            if proc.returncode != 0 or not lines or lines[-1] != "done":
                last = next((ln.split(" ", 1)[1] for ln in reversed(lines) if ln.startswith("case")), "?")
                bad.append(f"CRASH (exit {proc.returncode}) at {last}: {proc.stderr[-500:]}")
            for line in bad:
                found.append(line)
                if keep is not None:
                    keep.mkdir(parents=True, exist_ok=True)
                    name = line.split()[1] if line.startswith("BAD") else line.split(" at ")[1].split(":")[0]
                    if os.path.exists(name):
                        (keep / Path(name).name).write_bytes(Path(name).read_bytes())
            for p in paths:
                p.unlink()
            done += len(paths)
    return {"cases": done, "seconds": round(time.perf_counter() - started, 1), "failures": found,
            "outcomes": outcomes}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--keep", type=Path, default=None, help="copy failing inputs here")
    ap.add_argument("--metadata-only", action="store_true", help="only forge footers, schemas and page indexes")
    args = ap.parse_args()
    result = run(args.cases, args.seed, args.keep, metadata_only=args.metadata_only)
    for key, count in sorted(result["outcomes"].items(), key=lambda kv: -kv[1]):
        print(f"{count:8d}  {key}")
    for line in result["failures"]:
        print(line)
    print(f"{result['cases']} cases in {result['seconds']} s, {len(result['failures'])} failures (seed {args.seed})")
    sys.exit(1 if result["failures"] else 0)


if __name__ == "__main__":
    main()
