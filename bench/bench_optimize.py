"""Clustered datasets: files, blocks, pages and rows skipped per layout, after OPTIMIZE.

```
python bench/bench_optimize.py [--scale 1] [--repeat 3] [--datasets lineitem,flights]
                               [--layouts natural,sort,zorder_direct,zorder_rank,hilbert_rank]
                               [--spark] [--file-rows 500000] [--out optimize]
```

Where ``bench_clustering.py`` looks at one file, this looks at a dataset of many files,
the way tables are stored: each data set is written once with ``rcfmt.write_dataset``
in its natural order (``--file-rows`` rows per file), then, per layout, copied and
rewritten by ``Dataset.optimize(cols, curve=..., mapping=...)`` (lineitem's 6M rows
exceed the in-memory limit, so this runs the range split through spill files).
``--spark`` adds layouts written by Spark's distributed clustering
(``spark_datasource.write_clustered``: sample, key per row, range-repartition, sort
within partitions) from the natural dataset, to compare with Python's optimize.

Queries and clustering columns are those of ``bench_clustering.py``. Per query and
layout: files skipped (pruned by the dataset's stats index), blocks skipped (of all
blocks of the dataset: blocks of pruned files count as skipped), pages skipped (of all
pages of the dataset, as in bench_clustering), rows skipped (rows outside the row ranges
left after file, block and page pruning) and the time of ``ds.scan(filter=q).read()``
(best of ``--repeat`` warm runs, one thread). Row counts are checked against pyarrow.
"""
from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.append(str(Path(__file__).resolve().parent.parent))
from bench_clustering import DATASETS, LAYOUTS, Query, file_pages, pct  # noqa: E402
from common import busy_warning, finish, fmt_bytes, fmt_seconds, machine_info, machine_line, md_table, measure, scratch_dir  # noqa: E402

import rcfmt  # noqa: E402
from rcfmt.scan.scanner import FileScan  # noqa: E402

SPARK_LAYOUTS = {"spark_zorder_rank": ("zorder", "rank"), "spark_hilbert_rank": ("hilbert", "rank")}


# --------------------------------------------------------------------------- building
def build_natural(table, path: Path, file_rows: int, block_rows: int, page_rows: int) -> float:
    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    rcfmt.write_dataset(table, path, target_file_rows=file_rows, block_rows=block_rows, page_rows=page_rows,
                        cluster_by=[])
    return time.perf_counter() - t0


def build_optimized(natural: Path, path: Path, by, layout: str, file_rows: int, block_rows: int,
                    page_rows: int) -> float:
    """Copy the natural dataset and optimize the copy; returns the optimize time."""
    shutil.rmtree(path, ignore_errors=True)
    shutil.copytree(natural, path)
    curve, mapping = LAYOUTS[layout]
    t0 = time.perf_counter()
    rcfmt.dataset(path).optimize(by, curve=curve, mapping=mapping, target_file_rows=file_rows,
                                 block_rows=block_rows, page_rows=page_rows)
    elapsed = time.perf_counter() - t0
    rcfmt.dataset(path).vacuum(retention_seconds=0, enforce_retention_duration=False)
    return elapsed


def spark_session():
    import os

    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    root = str(Path(__file__).resolve().parent.parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    spark = (SparkSession.builder.master("local[2]").appName("rcfmt-bench-optimize")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "6g")
             .config("spark.sql.shuffle.partitions", "8").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def build_spark(spark, natural: Path, path: Path, by, layout: str, file_rows: int, block_rows: int,
                page_rows: int) -> float:
    import spark_datasource

    shutil.rmtree(path, ignore_errors=True)
    curve, mapping = SPARK_LAYOUTS[layout]
    t0 = time.perf_counter()
    df = spark.read.format("rcfmt").load(str(natural))
    spark_datasource.write_clustered(df, str(path), by, curve=curve, mapping=mapping, mode="overwrite",
                                     options={"targetFileRows": file_rows, "blockRows": block_rows,
                                              "pageRows": page_rows})
    return time.perf_counter() - t0


# --------------------------------------------------------------------------- measuring
def dataset_shape(ds) -> dict:
    blocks = pages = 0
    for f in ds.files:
        with rcfmt.open(f.path) as rf:
            blocks += rf.num_blocks
            pages += file_pages(rf)
    return {"files": ds.num_files, "blocks": blocks, "pages": pages, "rows": ds.num_rows,
            "bytes": sum(f.size for f in ds.files)}


def candidate_rows(ds, expr) -> int:
    """Rows inside the row ranges left after file, block and page pruning."""
    total = 0
    for frag in ds.get_fragments(expr):
        with rcfmt.open(frag.path) as f:
            plan = FileScan(f, None, expr, use_threads=False)
            total += sum(plan.row_ranges(b, {}).row_count for b in plan.blocks)
    return total


def run_query(ds, shape: dict, q: Query, repeat: int) -> dict:
    expr = q.rcfmt_expr()

    def once():
        scan = ds.scan(filter=expr, use_threads=False)
        return scan.read().num_rows, scan.stats

    timing, (rows, st) = measure(once, repeat=repeat)
    blocks_read = st.blocks_total - st.blocks_pruned_stats - st.blocks_pruned_bloom - st.blocks_pruned_pages
    return {
        "rows": rows, "files_skipped": st.files_pruned / st.files_total,
        "blocks_skipped": 1 - blocks_read / shape["blocks"], "pages_skipped": 1 - st.pages_read / shape["pages"],
        "rows_skipped": 1 - candidate_rows(ds, expr) / shape["rows"], "bytes_read": st.bytes_read,
        "time": timing.to_dict(),
    }


# --------------------------------------------------------------------------- report
def report(name: str, res: dict, layouts: list[str]) -> str:
    lines = [f"### {name}: {res['rows']:,} rows, clustered by ({', '.join(res['by'])}), "
             f"target_file_rows={res['file_rows']}, block_rows={res['block_rows']}, page_rows={res['page_rows']}", ""]
    lines += [md_table(["layout", "build", "files", "blocks", "pages", "size"],
                       [[lay, fmt_seconds(b["build_s"]), b["files"], b["blocks"], b["pages"], fmt_bytes(b["bytes"])]
                        for lay, b in res["layouts"].items()]), ""]
    lines += ["build: natural = write_dataset; others = Dataset.optimize of a copy of natural "
              "(spark_*: spark_datasource.write_clustered from the natural dataset, incl. the Spark read).", ""]
    lines += ["Files / blocks / pages / rows skipped:", ""]
    rows = []
    for q in res["queries"]:
        rows.append([q["name"], *[_cell(q["layouts"][lay]) for lay in layouts]])
    rows.append(["mean", *[_cell({k: np.mean([q["layouts"][lay][k] for q in res["queries"]])
                                  for k in ("files_skipped", "blocks_skipped", "pages_skipped", "rows_skipped")})
                           for lay in layouts]])
    lines += [md_table(["query", *layouts], rows), ""]
    lines += ["Query time (best of the timed runs, one thread):", ""]
    rows = [[q["name"], *[fmt_seconds(q["layouts"][lay]["time"]["best"]) for lay in layouts]] for q in res["queries"]]
    rows.append(["total", *[fmt_seconds(sum(q["layouts"][lay]["time"]["best"] for q in res["queries"]))
                            for lay in layouts]])
    lines += [md_table(["query", *layouts], rows), ""]
    return "\n".join(lines)


def _cell(m: dict) -> str:
    return " / ".join(pct(m[k]) for k in ("files_skipped", "blocks_skipped", "pages_skipped", "rows_skipped"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--datasets", default="lineitem,flights")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--spark", action="store_true", help="add layouts clustered by Spark")
    ap.add_argument("--file-rows", type=int, default=500_000, help="target_file_rows (flights: a tenth)")
    ap.add_argument("--out", default="optimize")
    args = ap.parse_args(argv)
    warning = busy_warning()
    if warning:
        print(warning, file=sys.stderr)
    info = machine_info()
    print(f"rcfmt {rcfmt.__version__}; {machine_line(info)}; load average {info['loadavg']}\n", flush=True)
    layouts = [x for x in args.layouts.split(",") if x]
    spark = spark_session() if args.spark else None
    if spark is not None:
        layouts += list(SPARK_LAYOUTS)
    out_dir = scratch_dir("optimize")
    results, failures = {"load_before": info["loadavg"]}, []
    for name in [d for d in args.datasets.split(",") if d]:
        loader, by, make_queries, block_rows, page_rows = DATASETS[name]
        table = loader(args.scale)
        file_rows = args.file_rows if name == "lineitem" else max(1, args.file_rows // 10)
        queries = make_queries(table)
        expected = {q.name: q.pyarrow_count(table) for q in queries}
        res = {"rows": table.num_rows, "by": by, "file_rows": file_rows, "block_rows": block_rows,
               "page_rows": page_rows, "layouts": {}, "queries": []}
        natural = out_dir / f"{name}_natural"
        build = {"natural": build_natural(table, natural, file_rows, block_rows, page_rows)}
        del table
        handles = {}
        for lay in layouts:
            path = out_dir / f"{name}_{lay}"
            print(f"[{name}] building {lay} ...", file=sys.stderr, flush=True)
            if lay in SPARK_LAYOUTS:
                build[lay] = build_spark(spark, natural, path, by, lay, file_rows, block_rows, page_rows)
            elif lay != "natural":
                build[lay] = build_optimized(natural, path, by, lay, file_rows, block_rows, page_rows)
            ds = rcfmt.dataset(natural if lay == "natural" else path)
            handles[lay] = ds
            res["layouts"][lay] = {"build_s": build[lay], **dataset_shape(ds)}
        for q in queries:
            entry = {"name": q.name, "kind": q.kind, "predicate": q.describe(), "expected": expected[q.name],
                     "layouts": {}}
            for lay in layouts:
                m = run_query(handles[lay], res["layouts"][lay], q, args.repeat)
                if m["rows"] != expected[q.name]:
                    failures.append(f"{name} {q.name} {lay}: {m['rows']} rows, expected {expected[q.name]}")
                entry["layouts"][lay] = m
                print(f"[{name}] {q.name} {lay}: {_cell(m)} {fmt_seconds(m['time']['best'])}",
                      file=sys.stderr, flush=True)
            res["queries"].append(entry)
        results[name] = res
        print(report(name, res, layouts), flush=True)
    if spark is not None:
        spark.stop()
    return finish(args.out, results, args, failures)


if __name__ == "__main__":
    sys.exit(main())
