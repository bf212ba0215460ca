"""Polars users' path: ``rcfmt.polars.scan_rcfmt`` against Polars' own Parquet reader and
against rcfmt's direct API, on the same TPC-H lineitem queries (issue 41's targets).

Layouts and queries are those of ``bench_peers.py`` (Parquet: zstd, page index, 128k-row
row groups; rcfmt: the same rows with rcfmt's default writer options, 128k-row blocks):

* ``Q_c`` (TPC-H Q6: the predicate, then ``sum(l_extendedprice * l_discount)``) on the
  natural and the Z-ordered layout;
* ``Q_a`` (a one-week l_shipdate window and ~1% of l_partkey) on the Z-ordered layout;
* ``Q_b`` (point lookup on l_orderkey, all columns) on the natural layout.

Engines, each in its own process (Polars reads POLARS_MAX_THREADS at import), rounds
interleaved, default threads everywhere:

* ``polars_parquet``: ``pl.scan_parquet(path).filter(...)...collect()``;
* ``polars_rcfmt``: ``scan_rcfmt(path).filter(...)...collect()`` -- the same expressions;
* ``rcfmt``: ``rcfmt.open(path).scan(columns, filter).read()`` (+ ``pyarrow.compute``
  for Q6's sum).

Every result is checked against the in-memory reference. Reported: the median over
rounds of each engine's best of ``--repeat``, and the ratios the issue names.

    python bench/bench_polars.py                   # SF1, 3 rounds, best of 3
    python bench/bench_polars.py --scale 0.1 --rounds 1
    python bench/bench_polars.py --categorical     # Q_g instead: strings as Categorical
    python bench/bench_polars.py --floor           # where the plugin's time goes, in one process

``--floor`` times, in one process (best of ``--repeat``, default threads), each query
four ways: rcfmt's direct API; ``scan_rcfmt``; the rcfmt scan of the columns Polars asks
the source for (its projection and the predicate's columns), handed to Polars as one
frame by ``pl.from_arrow`` -- what the plugin does, without Polars around it; and
Polars' own machinery alone -- an IO source (``register_io_source``) that yields the
query's rows already in a Polars frame, so the collect costs Polars' planning, its
streaming engine's hand-offs and the query's own work after the scan (Q6's decimal
sum), and no reading. ``scan_rcfmt`` can be no faster than the last two added.

``--categorical`` runs ``Q_g`` (``group_by(l_shipmode, l_returnflag).agg(sum(l_quantity),
len())`` over every row, natural layout) with ``pl.scan_parquet``, ``scan_rcfmt`` and
``scan_rcfmt(categorical=["l_shipmode", "l_returnflag"])``, each checked against
``pl.scan_parquet``'s answer.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_peers as peers  # noqa: E402
import bench_skipping as skipping  # noqa: E402
from common import busy_warning, machine_line, measure, md_table, write_json  # noqa: E402

CELLS = [("Q_c", "natural_128k"), ("Q_c", "zorder_128k"), ("Q_a", "zorder_128k"), ("Q_b", "natural_128k")]
ENGINES = ("polars_parquet", "polars_rcfmt", "rcfmt")


_GROUPED = ["l_shipmode", "l_returnflag"]


def _polars_query(lf, q: str, c: peers.Constants):
    import polars as pl

    if q == "Q_g":
        return (lf.group_by(_GROUPED).agg(pl.col("l_quantity").sum(), pl.len())
                .with_columns(pl.col(_GROUPED).cast(pl.String)).sort(_GROUPED).collect())
    if q == "Q_a":
        return lf.filter((pl.col("l_shipdate") >= c.d("shipdate_lo")) & (pl.col("l_shipdate") < c.d("shipdate_hi"))
                         & pl.col("l_partkey").is_between(c.partkey_lo, c.partkey_hi)).collect()
    if q == "Q_b":
        return lf.filter(pl.col("l_orderkey") == c.orderkey).collect()
    return lf.filter((pl.col("l_shipdate") >= c.d("q6_date_lo")) & (pl.col("l_shipdate") < c.d("q6_date_hi"))
                     & (pl.col("l_discount") >= Decimal(c.q6_disc_lo))
                     & (pl.col("l_discount") <= Decimal(c.q6_disc_hi))
                     & (pl.col("l_quantity") < Decimal(c.q6_qty_lt))).select(
        (pl.col("l_extendedprice").cast(pl.Decimal(38, 4)) * pl.col("l_discount")).sum().alias("revenue")).collect()


def _run(engine: str, q: str, path: Path, c: peers.Constants):
    if engine == "rcfmt":
        return skipping.run_rcfmt(q, path, c, True)
    import polars as pl

    if engine == "polars_parquet":
        return _polars_query(pl.scan_parquet(path), q, c)
    from rcfmt.polars import scan_rcfmt

    return _polars_query(scan_rcfmt(path, categorical=_GROUPED if engine == "polars_rcfmt_cat" else False), q, c)


def _summary(engine: str, q: str, result):
    if q == "Q_g":  # the grouped rows themselves
        return [[str(v) for v in row] for row in result.rows()]
    summary = peers.summarise_arrow(q, result) if engine == "rcfmt" else peers.summarise_polars(q, result)
    return asdict(summary)


def _worker() -> int:
    spec = json.loads(sys.stdin.read())
    c = peers.Constants(**spec["constants"])
    out = []
    for task in spec["tasks"]:
        timing, result = measure(lambda: _run(spec["engine"], task["query"], Path(task["path"]), c),
                                 repeat=spec["repeat"])
        out.append({"best": min(timing.times), "summary": _summary(spec["engine"], task["query"], result)})
    json.dump(out, sys.stdout)
    return 0


def _in_child(engine: str, tasks: list[dict], c: peers.Constants, repeat: int) -> list[dict]:
    payload = json.dumps({"engine": engine, "tasks": tasks, "constants": asdict(c), "repeat": repeat})
    proc = subprocess.run([sys.executable, __file__, "--worker"], input=payload, capture_output=True, text=True,
                          env=dict(os.environ))
    if proc.returncode != 0:
        raise RuntimeError(f"{engine} worker failed:\n{proc.stderr}")
    return json.loads(proc.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--categorical", action="store_true", help="run Q_g: string columns as Categorical")
    ap.add_argument("--floor", action="store_true", help="where scan_rcfmt's time goes, in one process")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return _worker()
    if args.categorical:
        return _categorical(args)
    if args.floor:
        return _floor(args)
    print(machine_line())
    if (warn := busy_warning()) is not None:
        print(warn)
    _, c, paths, ref = peers.prepare(args.scale, layouts=("natural_128k", "zorder_128k"))
    rpaths = skipping.build_rcfmt(paths)
    times: dict[tuple, list[float]] = {}
    failures = []
    for r in range(args.rounds):
        for engine in (ENGINES if r % 2 == 0 else ENGINES[::-1]):
            tasks = [{"query": q, "path": str((rpaths if engine != "polars_parquet" else paths)[layout])}
                     for q, layout in CELLS]
            for (q, layout), res in zip(CELLS, _in_child(engine, tasks, c, args.repeat)):
                if not peers.check_result(res["summary"], ref[q]):
                    failures.append(f"{engine} {q} {layout}: {res['summary']} != {asdict(ref[q])}")
                times.setdefault((engine, q, layout), []).append(res["best"])
        print(f"round {r + 1}/{args.rounds} done (load {os.getloadavg()[0]:.2f})", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    rows = []
    for q, layout in CELLS:
        pq_, pr, rc = (med[(e, q, layout)] for e in ENGINES)
        rows.append([f"{q} {layout}", f"{pq_ * 1e3:.1f}", f"{pr * 1e3:.1f}", f"{rc * 1e3:.1f}",
                     f"{pq_ / pr:.2f}x", f"{pr / rc:.2f}x"])
    print(md_table(["query", "pl.scan_parquet ms", "scan_rcfmt ms", "rcfmt direct ms",
                    "scan_rcfmt vs scan_parquet (speedup)", "scan_rcfmt / direct (overhead)"], rows))
    print(f"load after: {os.getloadavg()[0]:.2f}")
    write_json("polars", {"median_s": {" ".join(k): v for k, v in med.items()}, "failures": failures}, args)
    for f in failures:
        print("WRONG RESULT:", f)
    return 1 if failures else 0


def _floor(args) -> int:
    """The ``--floor`` table (see the module docstring)."""
    import polars as pl
    from polars.io.plugins import register_io_source

    import rcfmt
    from rcfmt.polars import polars_schema, scan_rcfmt, translate

    print(machine_line())
    if (warn := busy_warning()) is not None:
        print(warn)
    _, c, paths, ref = peers.prepare(args.scale, layouts=("natural_128k", "zorder_128k"))
    rpaths = skipping.build_rcfmt(paths)
    rows, failures = [], []
    for q, layout in CELLS:
        path = rpaths[layout]
        with rcfmt.open(path) as f:
            schema = f.schema
        asked = {}  # what Polars hands the source: its projection and predicate

        def spy(with_columns, predicate, n_rows, batch_size):
            asked.update(columns=with_columns, predicate=predicate)
            yield pl.DataFrame(schema=polars_schema(schema)).select(with_columns or schema.names)

        _polars_query(register_io_source(spy, schema=polars_schema(schema)), q, c)
        columns, expr = asked["columns"] or schema.names, translate(asked["predicate"], schema).expr

        def handed_over():
            with rcfmt.open(path) as f:
                return pl.from_arrow(f.scan(columns, expr).read(), rechunk=False)

        frame = handed_over()

        def ready(with_columns, predicate, n_rows, batch_size):
            yield frame

        timings = {}
        for name, fn in (("direct", lambda: skipping.run_rcfmt(q, path, c, True)),
                         ("scan_rcfmt", lambda: _polars_query(scan_rcfmt(path), q, c)),
                         ("scan + from_arrow", handed_over),
                         ("Polars alone", lambda: _polars_query(
                             register_io_source(ready, schema=polars_schema(schema)), q, c))):
            timing, result = measure(fn, repeat=max(args.repeat, 15))
            timings[name] = timing.best * 1e3
            if name in ("direct", "scan_rcfmt") and not peers.check_result(_summary(
                    "rcfmt" if name == "direct" else "polars_rcfmt", q, result), ref[q]):
                failures.append(f"{name} {q} {layout}")
        floor = timings["scan + from_arrow"] + timings["Polars alone"]
        rows.append([f"{q} {layout}", f"{len(columns)}", *(f"{timings[k]:.2f}" for k in timings), f"{floor:.2f}",
                     f"{timings['scan_rcfmt'] / timings['direct']:.2f}x",
                     f"{timings['scan_rcfmt'] / floor:.2f}x"])
    print(md_table(["query", "columns asked", "direct ms", "scan_rcfmt ms", "scan + from_arrow ms",
                    "Polars alone ms", "sum of the two ms", "scan_rcfmt / direct", "scan_rcfmt / sum"], rows))
    print(f"load after: {os.getloadavg()[0]:.2f}")
    for f in failures:
        print("WRONG RESULT:", f)
    return 1 if failures else 0


def _categorical(args) -> int:
    print(machine_line())
    if (warn := busy_warning()) is not None:
        print(warn)
    _, c, paths, _ = peers.prepare(args.scale, layouts=("natural_128k",))
    rpaths = skipping.build_rcfmt(paths)
    engines = ("polars_parquet", "polars_rcfmt", "polars_rcfmt_cat")
    times: dict[str, list[float]] = {}
    answers = {}
    for r in range(args.rounds):
        for engine in (engines if r % 2 == 0 else engines[::-1]):
            path = (paths if engine == "polars_parquet" else rpaths)["natural_128k"]
            res, = _in_child(engine, [{"query": "Q_g", "path": str(path)}], c, args.repeat)
            times.setdefault(engine, []).append(res["best"])
            answers[engine] = res["summary"]
        print(f"round {r + 1}/{args.rounds} done (load {os.getloadavg()[0]:.2f})", flush=True)
    med = {e: statistics.median(v) for e, v in times.items()}
    print(md_table(["Q_g natural_128k", "ms", "vs pl.scan_parquet (speedup)"],
                   [[e, f"{med[e] * 1e3:.1f}", f"{med['polars_parquet'] / med[e]:.2f}x"] for e in engines]))
    print(f"load after: {os.getloadavg()[0]:.2f}")
    wrong = [e for e in engines if answers[e] != answers["polars_parquet"]]
    for e in wrong:
        print("WRONG RESULT:", e, answers[e][:3], "!=", answers["polars_parquet"][:3])
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
