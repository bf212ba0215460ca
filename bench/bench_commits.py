"""Commits as a dataset ages (issue 40): append 1,000-row, 8-column batches, one commit
each, up to ``--versions`` versions, on local disk and on the local S3 server (moto, with
the counting proxy of tests/local_s3.py in front of it).

Reported per store, at version 100 and at the last version:

- the median time of the ``--window`` appends ending there (``rcfmt.write_dataset(batch,
  path)``, one commit each, the whole call);
- the median time of a warm reopen (``rcfmt.dataset(path)``, ``--reopen`` times);
- the time each append spent building and writing the new index version (the part that
  grows with the number of indexed files) and the index version's size;
- on S3, the requests per append and per reopen (counted by the proxy), by method.

Targets: append at the last version within 1.3x of the one at version 100, reopen within
1.5x, S3 requests per append not growing with the version count.

Since incremental versions (issue 63, docs/DATASET.md §4.2) it also reports, locally,
what each append writes to ``_rcfmt/``: its own version file (a change, or a
checkpoint), and the runs it merged; the largest change and the amortized bytes per
append of runs and checkpoints; ``_rcfmt/``'s size at the end against the last
checkpoint; and a cold open (this process's caches of versions, runs and footers
cleared) at each mark.

    python bench/bench_commits.py --versions 10000 --stores local
    python bench/bench_commits.py --versions 2000 --stores s3
"""
from __future__ import annotations

import argparse
import collections
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
sys.path.insert(2, str(HERE.parent / "tests"))

import rcfmt  # noqa: E402
from rcfmt.dataset import changelog, log  # noqa: E402
from rcfmt.dataset import commits as dataset_commits  # noqa: E402
from rcfmt.dataset import snapshot as dataset_snapshot  # noqa: E402
from rcfmt.file.footer_cache import FOOTERS  # noqa: E402
from common import md_table, print_header  # noqa: E402

BUCKET = "commits"


def batch(i: int, rows: int = 1000) -> pa.Table:
    rng = np.random.default_rng(i)
    return pa.table({
        "id": pa.array(np.arange(i * rows, (i + 1) * rows, dtype=np.int64)),
        "a": pa.array(rng.integers(0, 1000, rows, dtype=np.int32)),
        "b": pa.array(rng.integers(-(2**40), 2**40, rows, dtype=np.int64)),
        "x": pa.array(rng.random(rows)),
        "y": pa.array(rng.random(rows).astype(np.float32)),
        "s": pa.array([f"k{v:05d}" for v in rng.integers(0, 20000, rows)]),
        "flag": pa.array(rng.random(rows) < 0.5),
        "ts": pa.array(rng.integers(1_600_000_000_000_000, 1_700_000_000_000_000, rows), pa.timestamp("us")),
    })


class IndexTimer:
    """Time spent writing index versions (the complete index each commit rewrites)."""

    def __init__(self):
        self.seconds = 0.0
        self._saved = {}

    def __enter__(self):
        for name in ("write_index_file", "index_bytes"):
            original = getattr(dataset_commits, name)
            self._saved[name] = original

            def timed(*a, _original=original, **k):
                t0 = time.perf_counter()
                try:
                    return _original(*a, **k)
                finally:
                    self.seconds += time.perf_counter() - t0
            setattr(dataset_commits, name, timed)
        return self

    def __exit__(self, *exc):
        for name, original in self._saved.items():
            setattr(dataset_commits, name, original)


def loadavg() -> str:
    try:
        return " ".join(f"{v:.2f}" for v in os.getloadavg())
    except OSError:
        return "n/a"


def cold_open(root: str) -> float:
    """Seconds to open ``root`` with this process's caches of versions, runs and footers
    cleared (what another process pays, less its imports)."""
    dataset_snapshot._COMMITTED.clear()
    dataset_snapshot._RUNS.clear()
    dataset_snapshot._CHAINS.clear()
    FOOTERS.clear()
    t0 = time.perf_counter()
    d = rcfmt.dataset(root)
    d.count_rows(rcfmt.col("id") < 1000)  # (loads a statistics column of the checkpoint too)
    return time.perf_counter() - t0


class MetaBytes:
    """What each local append wrote to ``_rcfmt/``: its version file (a change or a
    checkpoint) and the runs it merged."""

    def __init__(self, root: str):
        self.root = root
        self.runs_seen: set = set()
        self.changes: list[int] = []  # bytes of each changes version
        self.checkpoints: list[tuple[int, int]] = []  # (version, bytes) of each checkpoint
        self.runs: list[int] = []  # bytes of each merged run
        self.changes_max = (0, 0)

    def after(self, version: int) -> None:
        path = log.version_path(self.root, version)
        size = os.path.getsize(path)
        with rcfmt.open(path) as f:
            layout = changelog.layout_of(__import__("json").loads(f.metadata["rcfmt.dataset"]))
        if layout == changelog.CHANGES:
            self.changes.append(size)
            self.changes_max = max(self.changes_max, (size, version))
        else:
            self.checkpoints.append((version, size))
        d = os.path.join(self.root, log.META_DIR, changelog.RUNS_DIR)
        if os.path.isdir(d):
            for e in os.scandir(d):
                if e.name not in self.runs_seen:
                    self.runs_seen.add(e.name)
                    self.runs.append(e.stat().st_size)

    def summary(self, versions: int) -> dict:
        total = 0
        for dirpath, _, files in os.walk(os.path.join(self.root, log.META_DIR)):
            total += sum(os.path.getsize(os.path.join(dirpath, f)) for f in files)
        last_ckpt = self.checkpoints[-1][1] if self.checkpoints else 0
        return {"versions": versions, "changes_count": len(self.changes), "changes_max": self.changes_max,
                "changes_median": statistics.median(self.changes) if self.changes else 0,
                "changes_total": sum(self.changes), "runs_count": len(self.runs), "runs_total": sum(self.runs),
                "checkpoints": len(self.checkpoints), "checkpoints_total": sum(s for _, s in self.checkpoints),
                "checkpoint_versions": [v for v, _ in self.checkpoints], "last_checkpoint": last_ckpt,
                "meta_total": total}


def run_store(name: str, root: str, versions: int, window: int, reopen: int, proxy=None) -> dict:
    marks = sorted({min(100, versions), min(1000, versions), versions})
    meta = MetaBytes(root) if proxy is None else None
    appends: list[float] = []
    index_s: list[float] = []
    requests: list[collections.Counter] = []
    out = {"marks": {}}
    timer = IndexTimer()
    started = time.perf_counter()
    with timer:
        for i in range(versions):
            data = batch(i)
            before = timer.seconds
            if proxy is not None:
                proxy.reset_counts()
            t0 = time.perf_counter()
            ds = rcfmt.write_dataset(data, root, mode="append")
            appends.append(time.perf_counter() - t0)
            index_s.append(timer.seconds - before)
            if proxy is not None:
                requests.append(collections.Counter(r[0] for r in proxy.requests))
            assert ds.version == i + 1, (ds.version, i + 1)
            v = i + 1
            if meta is not None:
                meta.after(v)
            if v % 250 == 0:
                print(f"  {name}: version {v}, {time.perf_counter() - started:.0f} s, load average {loadavg()}",
                      flush=True)
            if proxy is None and v == marks[0] and marks[-1] > marks[0]:
                shutil.copytree(root, root + "-at-v%d" % v)  # for the interleaved comparison below
            if v in marks:
                lo = max(0, v - window)
                rcfmt.dataset(root)  # warm
                times = []
                reopen_requests = None
                for _ in range(reopen):
                    if proxy is not None:
                        proxy.reset_counts()
                    t0 = time.perf_counter()
                    d = rcfmt.dataset(root)
                    times.append(time.perf_counter() - t0)
                    if proxy is not None:
                        reopen_requests = collections.Counter(r[0] for r in proxy.requests)
                    assert d.version == v
                colds = [cold_open(root) for _ in range(5)]
                rcfmt.dataset(root)  # (warm again)
                mark = {
                    "cold_open_median_s": statistics.median(colds),
                    "append_median_s": statistics.median(appends[lo:v]),
                    "index_write_median_s": statistics.median(index_s[lo:v]),
                    "reopen_median_s": statistics.median(times),
                    "index_bytes": d.snapshot.index_size or (os.path.getsize(d.snapshot.index_path)
                                                          if not proxy else None),
                    "files": d.num_files,
                }
                if proxy is not None:
                    per = [sum(c.values()) for c in requests[lo:v]]
                    mark["append_requests_median"] = statistics.median(per)
                    mark["append_requests_max"] = max(per)
                    mark["append_requests_by_method"] = dict(sum(requests[lo:v], collections.Counter()))
                    mark["reopen_requests"] = dict(reopen_requests)
                out["marks"][v] = mark
    if meta is not None:
        out["meta"] = meta.summary(versions)
    if proxy is None and marks[-1] > marks[0]:
        out["interleaved"] = interleaved(root + "-at-v%d" % marks[0], root, window, reopen)
    return out


def interleaved(early: str, late: str, window: int, reopen: int) -> dict:
    """Appends and warm reopens of the copy made at the first mark and of the dataset at
    the last, alternating one by one, so that both see the same load on a shared machine."""
    times = {early: [], late: []}
    opens = {early: [], late: []}
    base = {early: rcfmt.dataset(early).version, late: rcfmt.dataset(late).version}
    for k in range(window):
        for root in (early, late) if k % 2 == 0 else (late, early):
            t0 = time.perf_counter()
            ds = rcfmt.write_dataset(batch(100_000 + k), root, mode="append")
            times[root].append(time.perf_counter() - t0)
            assert ds.version == base[root] + k + 1
    for k in range(reopen):
        for root in (early, late) if k % 2 == 0 else (late, early):
            t0 = time.perf_counter()
            rcfmt.dataset(root)
            opens[root].append(time.perf_counter() - t0)
    return {"versions": [base[early], base[late]],
            "append_median_s": [statistics.median(times[early]), statistics.median(times[late])],
            "reopen_median_s": [statistics.median(opens[early]), statistics.median(opens[late])]}


def fmt_ms(s: float) -> str:
    return f"{s * 1e3:.2f} ms"


def report(name: str, res: dict) -> list[str]:
    marks = sorted(res["marks"])
    first, last = res["marks"][marks[0]], res["marks"][marks[-1]]
    rows = []
    for v in marks:
        m = res["marks"][v]
        row = [name, v, m["files"], fmt_ms(m["append_median_s"]), fmt_ms(m["index_write_median_s"]),
               fmt_ms(m["reopen_median_s"]), fmt_ms(m["cold_open_median_s"]), m["index_bytes"]]
        if "append_requests_median" in m:
            row += [f"{m['append_requests_median']:g} (max {m['append_requests_max']})",
                    sum(m["reopen_requests"].values())]
        else:
            row += ["", ""]
        rows.append(row)
    a = last["append_median_s"] / first["append_median_s"]
    r = last["reopen_median_s"] / first["reopen_median_s"]
    c = last["cold_open_median_s"] / first["cold_open_median_s"]
    rows.append([name, f"ratio {marks[-1]}/{marks[0]}", "", f"{a:.2f}x", "", f"{r:.2f}x", f"{c:.2f}x", "", "",
                 ""])
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--versions", type=int, default=2000)
    ap.add_argument("--window", type=int, default=21, help="appends per median")
    ap.add_argument("--reopen", type=int, default=31, help="warm reopens per median")
    ap.add_argument("--stores", default="local,s3")
    args = ap.parse_args(argv)
    print_header("Commits as a dataset ages (issue 40)")
    print(f"load average at start: {loadavg()}", flush=True)
    stores = [s for s in args.stores.split(",") if s]
    results = {}
    for store in stores:
        if store == "local":
            with tempfile.TemporaryDirectory(prefix="rcfmt-commits-") as d:
                results["local"] = run_store("local", os.path.join(d, "ds"), args.versions, args.window, args.reopen)
        elif store == "s3":
            from local_s3 import S3Proxy, s3_server

            with s3_server(BUCKET) as (endpoint, _env), S3Proxy(endpoint) as proxy:
                saved = os.environ["AWS_ENDPOINT_URL"]
                os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
                try:
                    results["s3"] = run_store("s3", f"s3://{BUCKET}/ds", args.versions, args.window, args.reopen,
                                              proxy)
                finally:
                    os.environ["AWS_ENDPOINT_URL"] = saved
        else:
            raise SystemExit(f"unknown store {store!r}")
        print(f"{store} done; load average {loadavg()}", flush=True)
    rows = []
    for store, res in results.items():
        rows += report(store, res)
    print()
    print(md_table(["store", "version", "files", "median append", "of which index write", "warm reopen",
                    "cold open", "version file bytes", "requests / append", "requests / reopen"], rows))
    for store, res in results.items():
        m = res.get("meta")
        if m:
            n = m["versions"]
            print(f"\n{store}, what appends wrote to _rcfmt/ over {n} versions: {m['changes_count']} changes "
                  f"versions (median {m['changes_median']:.0f} B, largest {m['changes_max'][0]} B at version "
                  f"{m['changes_max'][1]}); {m['runs_count']} merged runs, {m['runs_total']} B "
                  f"({m['runs_total'] / n:.0f} B per append); {m['checkpoints']} checkpoints, "
                  f"{m['checkpoints_total']} B ({m['checkpoints_total'] / n:.0f} B per append), at versions "
                  f"{m['checkpoint_versions']}; _rcfmt/ {m['meta_total']} B = "
                  f"{(m['meta_total'] - m['changes_total']) / max(1, m['last_checkpoint']):.2f}x the last checkpoint "
                  f"({m['last_checkpoint']} B) + the changes' own {m['changes_total']} B")
    for store, res in results.items():
        if "interleaved" in res:
            il = res["interleaved"]
            (a0, a1), (r0, r1) = il["append_median_s"], il["reopen_median_s"]
            print(f"\n{store}, interleaved (appends and reopens alternating between the copy made at version "
                  f"{il['versions'][0]} and the dataset at version {il['versions'][1]}, {args.window} appends and "
                  f"{args.reopen} reopens each): median append {fmt_ms(a0)} vs {fmt_ms(a1)} ({a1 / a0:.2f}x), "
                  f"warm reopen {fmt_ms(r0)} vs {fmt_ms(r1)} ({r1 / r0:.2f}x)")
    for store, res in results.items():
        for v, m in sorted(res["marks"].items()):
            extra = ""
            if "append_requests_by_method" in m:
                n = args.window
                by = {k: round(c / n, 2) for k, c in sorted(m["append_requests_by_method"].items())}
                extra = f"; requests per append by method {by}; reopen {m['reopen_requests']}"
            print(f"- {store} v{v}: index version {m['index_bytes']} bytes{extra}")
    print(f"\nload average at end: {loadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
