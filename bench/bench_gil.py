"""The GIL-held share of rcfmt's threaded scans, and what Amdahl's law makes of it on
more cores (issue 59 item 3).

Each case runs in its own process, reading one file of the benchmark matrix
(``bench_matrix.py`` writes them) for ``--seconds`` with ``use_threads=True``, twice:
under ``py-spy record`` (every sample of every thread that is running: worker threads
included, threads waiting for the GIL or a future are idle and not sampled) and under
``py-spy record --gil`` (only the samples of the thread holding the GIL). The samples
counted are the scan's own -- a stack through ``read_table`` or through a pool worker
running rcfmt code, imports left out -- so set-up does not count. The GIL-held share ``s`` is
the second count over the first; with the rest running on any number of cores,
Amdahl's law bounds the speed-up on ``n`` cores by ``1 / (s + (1 - s) / n)``.

Usage::

    python bench/bench_gil.py                   # every case, 5 s of reads each
    python bench/bench_gil.py --cases lineitem_decimal:q6 --seconds 10

The top GIL holders of each case (the innermost rcfmt frame of the GIL-held samples)
are printed under the table: that is where the serial share is spent.
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: (data set, query): the matrix's files; q6 on lineitem only
CASES = ("lineitem_decimal:scan", "lineitem_decimal:q6", "lineitem_decimal:window", "flights:scan",
         "wide:scan", "wide:window", "nested:scan")
TARGET = 0.10  # issue 59: at most 10% of the samples hold the GIL at 2 threads


def _conditions(dataset: str, query: str, path: str) -> list:
    """The matrix's filter conditions of ``query`` on ``dataset`` (its file at ``path``)."""
    import bench_matrix as bm
    import rcfmt

    if query == "scan":
        return []
    if query == "q6":
        return bm.q6_conditions(dataset == "lineitem_decimal")
    needed = {"lineitem_decimal": ["l_shipdate", "l_partkey", "l_orderkey"], "lineitem_double":
              ["l_shipdate", "l_partkey", "l_orderkey"], "nested": ["id"]}.get(dataset, [])
    table = rcfmt.read_table(path, columns=needed or [rcfmt.open(path).schema.names[0]])
    return bm.window_conditions(dataset, table)[0]


def child(dataset: str, query: str, seconds: float) -> None:
    """The case itself, in this process: one warm-up read, then reads for ``seconds``."""
    import time

    import bench_matrix as bm
    import rcfmt

    path = str(bm.data_dir(dataset, 1.0) / "data.rcfmt")
    conds = _conditions(dataset, query, path)
    flt = bm.rcfmt_filter(conds) if conds else None
    columns = ["l_extendedprice", "l_discount"] if query == "q6" else None
    rcfmt.read_table(path, columns=columns, filter=flt, use_threads=True)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        rcfmt.read_table(path, columns=columns, filter=flt, use_threads=True)


def _scan_samples(raw: Path) -> tuple[int, collections.Counter]:
    """Samples of the scan in a py-spy raw file, and the innermost rcfmt frame of each."""
    total, holders = 0, collections.Counter()
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = stack.split(";")
        ours = [f for f in frames if "rcfmt/" in f]
        if not ours or "_find_and_load" in stack or not (any(f.startswith("read_table ") for f in frames)
                                                         or "concurrent/futures/thread.py" in stack):
            continue
        total += int(count)
        holders[ours[-1].split(" (")[0] + " (" + ours[-1].split("rcfmt/")[-1]] += int(count)
    return total, holders


def measure(case: str, seconds: float, rate: int) -> dict:
    dataset, query = case.split(":")
    spy = shutil.which("py-spy")
    if spy is None:
        raise SystemExit("py-spy is not installed (pip install py-spy)")
    env = {k: v for k, v in os.environ.items() if k != "RCFMT_PARALLEL_BLOCK_BYTES"}
    counts = {}
    with tempfile.TemporaryDirectory() as tmp:
        for gil in (False, True):
            raw = Path(tmp) / f"{gil}.txt"
            cmd = [spy, "record", "-r", str(rate), "-f", "raw", "-o", str(raw), *(["--gil"] if gil else []), "--",
                   sys.executable, str(Path(__file__).resolve()), "--child", case, "--seconds", str(seconds)]
            subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            counts[gil] = _scan_samples(raw)
    (running, _), (held, holders) = counts[False], counts[True]
    share = held / running if running else float("nan")
    return {"case": case, "running": running, "held": held, "share": share,
            "amdahl": {n: 1 / (share + (1 - share) / n) for n in (2, 8, 16)}, "holders": holders.most_common(5)}


def render(results: list[dict]) -> str:
    lines = ["| case | samples (running) | samples (GIL held) | GIL-held share | target | Amdahl 2 / 8 / 16 cores |",
             "| :-- | --: | --: | --: | :-- | --: |"]
    for r in results:
        a = r["amdahl"]
        met = "met" if r["share"] <= TARGET else "missed"
        lines.append(f"| {r['case']} | {r['running']:,} | {r['held']:,} | {100 * r['share']:.1f}% | "
                     f"<= {100 * TARGET:.0f}%: {met} | {a[2]:.2f}x / {a[8]:.1f}x / {a[16]:.1f}x |")
    lines.append("")
    for r in results:
        held = max(1, r["held"])
        top = ", ".join(f"{name} {100 * n / held:.0f}%" for name, n in r["holders"])
        lines.append(f"- {r['case']}: GIL held in {top}")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=",".join(CASES), help="comma-separated dataset:query (query: scan, q6, window)")
    ap.add_argument("--seconds", type=float, default=5.0, help="seconds of reads per process (default 5)")
    ap.add_argument("--rate", type=int, default=250, help="py-spy samples per second (default 250)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        child(*args.child.split(":"), args.seconds)
        return 0
    results = []
    for case in args.cases.split(","):
        results.append(measure(case, args.seconds, args.rate))
        print(f"  {case}: {100 * results[-1]['share']:.1f}% of {results[-1]['running']:,} samples", file=sys.stderr)
    print(f"load average {os.getloadavg()[0]:.2f}; {os.cpu_count()} cores; {args.seconds:g} s of reads per case\n")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
