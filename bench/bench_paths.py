"""Seven hot paths, best of 7 each, for A/B runs of two trees with the same native build:
``PYTHONPATH=<tree> python bench/bench_paths.py <label>`` (RESULTS sections 30, 31 and 35). Writes its
data to /tmp/ab47data on the first run."""
import sys, time, os, numpy as np, pyarrow as pa
import rcfmt
d = "/tmp/ab47data"
if not os.path.exists(d + "/f.rcfmt"):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(1)
    n = 4_000_000
    t = pa.table({"k": np.arange(n), "x": rng.random(n), "g": rng.integers(0, 1000, n)})
    rcfmt.write_table(t, d + "/f.rcfmt")
    for i in range(20):
        rcfmt.write_dataset(t.slice(i * 20000, 20000), d + "/ds", mode="append")
def best(fn, r=7):
    out = []
    for _ in range(r):
        t0 = time.perf_counter(); fn(); out.append(time.perf_counter() - t0)
    return min(out)
f = rcfmt.open(d + "/f.rcfmt")
strings = pa.table({"s": pa.array([None if i % 10 == 0 else f"value-{i % 500}" for i in range(1_000_000)])})
out = d + "/w.rcfmt"
import polars as pl
from rcfmt.polars import scan_rcfmt
res = {
 "write 1M strings, 10% NULL, 1 thread": best(lambda: rcfmt.write_table(strings, out, use_threads=False)),
 "scan_rcfmt g == 5": best(lambda: scan_rcfmt(d + "/f.rcfmt").filter(pl.col("g") == 5).select("x").collect()),
 "scan_rcfmt sum(x), every row": best(lambda: scan_rcfmt(d + "/f.rcfmt").select(pl.col("x").sum()).collect()),
 "range scan (proven blocks)": best(lambda: f.read(filter=(rcfmt.col("k") >= 100_000) & (rcfmt.col("k") < 3_000_000), columns=["x"])),
 "take 1000": best(lambda: f.take(np.random.default_rng(2).integers(0, 4_000_000, 1000))),
 "dataset open+count filter": best(lambda: rcfmt.dataset(d + "/ds").count_rows(rcfmt.col("g") == 5)),
 "dataset point lookup": best(lambda: rcfmt.dataset(d + "/ds").read(filter=rcfmt.col("k") == 12345)),
}
print(sys.argv[1], {k: round(v * 1000, 2) for k, v in res.items()})
