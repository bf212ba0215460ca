"""Generate the format-v1 golden file ``golden_v1.rcfmt`` and its expected content
``golden_v1.arrow`` (Arrow IPC file, written independently of rcfmt).

RUN ONCE. The committed golden file must never be regenerated: it is what rcfmt 0.1
wrote for format version 1, and every later rcfmt must read it exactly
(``tests/format/test_golden.py`` pins its SHA-256). A new format version gets a new golden
file (``golden_v2.rcfmt``) next to this one.

    python tests/data/make_golden.py --force    # (re)writes both files

Content: one column of every supported type (the table of ``example_table`` in
``tests/strategies.py``, plus explicit NaN payloads, -0.0, +/-inf, int extremes,
non-BMP text, zero bytes), 3 blocks of 8 rows and a final zero-row block, bloom filters on a few columns. The
writer's options are switched between blocks so that one file holds every codec
and every core encoding:

=====  ===========  =====================================================
block  compression  encodings
=====  ===========  =====================================================
0      zstd         DICTIONARY where possible, else RLE (bool)
1      lz4          RLE where possible, else PLAIN (strings, binary)
2      none         PLAIN everywhere
3      zstd         (zero rows) as block 0
=====  ===========  =====================================================

Switching options mid-file uses the writer's internals (``Writer.options``); the
reader must handle any per-chunk mix, which is what the test checks.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent.parent))
# write with a pristine copy of a released/committed rcfmt, not a working tree:
#   git archive HEAD | tar -x -C /tmp/rcfmt-src && (cd /tmp/rcfmt-src && python setup.py build_ext --inplace)
#   RCFMT_SOURCE=/tmp/rcfmt-src python tests/data/make_golden.py --force
if os.environ.get("RCFMT_SOURCE"):
    sys.path.insert(0, os.environ["RCFMT_SOURCE"])

import rcfmt  # noqa: E402
import strategies as S  # noqa: E402
from rcfmt.encodings import by_name  # noqa: E402
from rcfmt.runtime.records import replace  # noqa: E402

GOLDEN = HERE / "golden_v1.rcfmt"
EXPECTED = HERE / "golden_v1.arrow"
BLOCK_ROWS = 8
BLOOM_COLUMNS = ["i64", "str", "lbin", "ts_us_ny", "dec38"]
METADATA = {"golden": "format v1", "binary": b"\xff\x00\x01"}


def golden_table() -> pa.Table:
    table = S.example_table(3 * BLOCK_ROWS, seed=2024)
    # explicit edge values in the first rows of the float columns (also hit by the seed)
    f64 = [0x7FF8_0000_0000_0001, 0xFFF0_0000_0000_0000, 0x8000_0000_0000_0000, 0x7FF0_0000_0000_0000,
           0xFFF8_0000_0000_DEAD, 0x0000_0000_0000_0001]
    f32 = [0x7FC0_0001, 0xFF80_0000, 0x8000_0000, 0x7F80_0000, 0xFFC0_BEEF, 0x0000_0001]
    cols = dict(zip(table.schema.names, table.columns))
    for name, bits in (("f64", f64), ("f32", f32)):
        arr = cols[name].chunk(0)
        slots = list(S.storage_of(arr))
        slots[: len(bits)] = bits
        cols[name] = S.build_array(arr.type, [int(v) for v in slots], S.validity_of(arr) if arr.null_count else None)
    schema = table.schema.with_metadata(METADATA)
    return pa.Table.from_arrays([cols[n] if isinstance(cols[n], pa.Array) else cols[n].chunk(0)
                                 for n in table.schema.names], schema=schema)


def _plan(schema: pa.Schema, preference: list[str]) -> dict:
    out = {}
    for f in schema:
        names = S.encodings_for(f.type)
        out[f.name] = by_name(next(p for p in preference if p in names))
    return out


def write_golden(path: Path) -> pa.Table:
    table = golden_table()
    plans = [
        ("zstd", ["dictionary", "rle", "plain"]),
        ("lz4", ["rle", "plain"]),
        ("none", ["plain"]),
    ]
    with rcfmt.Writer(path, table.schema, block_rows=BLOCK_ROWS, page_rows=5, stats_truncate=8,
                      bloom_filter_columns=BLOOM_COLUMNS, metadata={"binary": METADATA["binary"]}) as w:
        for b, (compression, preference) in enumerate(plans):
            w.options = replace(w.options, compression=compression,
                                encoding=_plan(table.schema, preference))
            w.write(table.slice(b * BLOCK_ROWS, BLOCK_ROWS))
        w.options = replace(w.options, compression="zstd",
                            encoding=_plan(table.schema, plans[0][1]))
        w.flush_block()  # a zero-row block
    return table


def main(argv: list[str]) -> int:
    if GOLDEN.exists() and "--force" not in argv:
        print(f"{GOLDEN} exists; golden files are never regenerated (pass --force if you really must)")
        return 1
    table = write_golden(GOLDEN)
    with ipc.new_file(EXPECTED, table.schema) as sink:
        sink.write_table(table)
    print(f"wrote {GOLDEN} ({GOLDEN.stat().st_size} bytes) and {EXPECTED} ({EXPECTED.stat().st_size} bytes)"
          f" with rcfmt from {os.path.dirname(rcfmt.__file__)}")
    with rcfmt.open(GOLDEN) as f:
        names = f.schema.names
        print("encodings:", {n: [int(f.footer.chunks[c][b]["encoding"]) for b in range(f.num_blocks)]
                             for c, n in enumerate(names)})
        print("compression:", {n: [int(f.footer.chunks[c][b]["compression"]) for b in range(f.num_blocks)]
                               for c, n in enumerate(names)})
        print("page_count:", {n: [int(f.footer.chunks[c][b]["page_count"]) for b in range(f.num_blocks)]
                              for c, n in enumerate(names)})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
