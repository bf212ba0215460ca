"""When does ``FetchOptions.fewest_bytes()`` pay in time? rcfmt's reads against a
simulated object store, default fetch options against fewest_bytes, on the Z-ordered
lineitem SF1 file of bench_object_storage.py.

Every read of the (local) file waits a request latency plus its bytes at a per-request
bandwidth, and reads overlap freely (as S3 requests do; rcfmt keeps up to
``rcfmt.storage.fetch.FETCH_CONCURRENCY`` in flight); an open is one request, its tail (as
on S3, whose suffix-range GET also names the size). The requests and
bytes are those the S3 benchmark counts on a real S3 API server (bench/RESULTS.md §6):
what this adds is time under latencies and bandwidths moto cannot show (it serves one
ranged GET of a 140 MB object in ~90 ms, one at a time). A model, not a store: no
throttling, no per-connection ramp-up, no server-side variance.

    python bench/bench_fetch_policy.py --repeat 3
"""
from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
import bench_object_storage as objects  # noqa: E402
import bench_peers as peers  # noqa: E402
import bench_skipping  # noqa: E402
from common import md_table, print_header, write_json  # noqa: E402

import rcfmt  # noqa: E402
import rcfmt.file.reader as reader  # noqa: E402
from rcfmt.storage.local import LocalFile  # noqa: E402

#: (latency ms, MB/s per request) of the simulated stores
STORES = ((10, 100), (30, 100), (100, 100), (30, 25))
SCHEME = "simstore://"


class _Counter:
    def __init__(self):
        self.lock = threading.Lock()
        self.requests = self.nbytes = 0

    def add(self, nbytes: int) -> None:
        with self.lock:
            self.requests += 1
            self.nbytes += nbytes


class _SimulatedObject(LocalFile):
    """A local file read as an object store would serve it (see the module docstring)."""

    remote = True
    identity = ("simulated",)
    latency = 0.0
    bandwidth = 1e8
    counter = _Counter()

    def read_at(self, offset: int, length: int) -> bytes:
        self.counter.add(length)
        time.sleep(self.latency + length / self.bandwidth)  # (releases the GIL, as a request's wait does)
        return super().read_at(offset, length)

    def read_into(self, offset: int, out: memoryview) -> int:
        data = self.read_at(offset, len(out))
        out[: len(data)] = data
        return len(data)


def _open_simulated(real):
    def open_input(where, filesystem=None, size=None, tail=1 << 20):
        path = str(where)
        if not path.startswith(SCHEME):
            return real(where, filesystem, size, tail)
        return path, _SimulatedObject(path[len(SCHEME):])  # (the reader's tail read is the open's request)

    return open_input


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    print_header("Fetch policies against a simulated object store, lineitem SF1 Z-ordered")
    table, c, ppaths, _ = peers.prepare(1, layouts=("zorder_128k",))
    point = objects._point_constants(table, c)
    del table
    uri = SCHEME + str(bench_skipping.build_rcfmt(ppaths)["zorder_128k"])
    reader.open_input = _open_simulated(reader.open_input)
    policies = {"default": None, "fewest_bytes": rcfmt.FetchOptions.fewest_bytes()}

    def query(q: str, fetch):
        if q == "Q_p":
            return objects._rcfmt_point(uri, point, fetch)
        return bench_skipping.run_rcfmt(q, uri, c, threads=True, fetch=fetch)

    rows, results = [], {}
    for latency_ms, mb_s in STORES:
        _SimulatedObject.latency, _SimulatedObject.bandwidth = latency_ms / 1000, mb_s * 1e6
        for q in ("Q_p", "Q_a", "Q_c"):
            cell = {}
            for name, fetch in policies.items():
                query(q, fetch)  # warm (not a cached footer: single files are not cached)
                best = float("inf")
                for _ in range(args.repeat):
                    _SimulatedObject.counter = _Counter()
                    t0 = time.perf_counter()
                    query(q, fetch)
                    best = min(best, time.perf_counter() - t0)
                cell[name] = {"seconds": best, "requests": _SimulatedObject.counter.requests,
                              "bytes": _SimulatedObject.counter.nbytes}
            d, lean = cell["default"], cell["fewest_bytes"]
            rows.append([f"{latency_ms} ms, {mb_s} MB/s", q, d["requests"], f"{d['bytes'] / 1e6:.2f} MB",
                         f"{d['seconds'] * 1e3:.0f}", lean["requests"], f"{lean['bytes'] / 1e6:.2f} MB",
                         f"{lean['seconds'] * 1e3:.0f}", f"{lean['seconds'] / d['seconds']:.2f}"])
            results[f"{latency_ms}ms/{mb_s}MBs/{q}"] = cell
            print(f"  {rows[-1]}", flush=True)
    print(md_table(["store (latency, per-request bandwidth)", "query", "default requests", "default bytes",
                    "default ms", "fewest_bytes requests", "fewest_bytes bytes", "fewest_bytes ms",
                    "time fewest_bytes / default"], rows))
    write_json("fetch_policy", results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
