"""Skipping on object storage: requests, bytes and time of rcfmt against pyarrow reading
Parquet (with its page index) from the same S3 server, in the same run (issue 13).

An S3 API server (moto, in-process, 127.0.0.1) holds the natural-order lineitem files
of bench_skipping.py (rcfmt, and Parquet written by pyarrow with zstd and a page
index); a counting proxy in front of it (tests/local_s3.py) sees every request both
engines make. Queries: an open (footer), Q_b (point lookup on l_orderkey, all columns),
Q_a (one-week l_shipdate AND ~1% l_partkey, all columns) and Q6 (its predicate, two
columns, summed). Each engine's result is checked against the in-memory reference.

The server answers from memory on this machine, so times show per-request overheads
and bytes moved, not a real network's latency: on S3 each request costs ~10-100 ms,
so the request counts are what to compare.

    python bench/bench_object_storage.py --repeat 3
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.fs as pafs
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(HERE.parent))
sys.path.insert(2, str(HERE.parent / "tests"))
import bench_peers as peers  # noqa: E402
import bench_skipping  # noqa: E402
from common import md_table, print_header, write_json  # noqa: E402
from local_s3 import S3Proxy  # noqa: E402

import rcfmt  # noqa: E402

BUCKET = "bench"


def _pyarrow_query(q: str, fs, key: str, c):
    filt = peers._predicate(q, c, pads.field)
    if q == "Q_c":
        t = pq.read_table(key, filesystem=fs, columns=peers.Q_C_COLUMNS, filters=filt)
        return pc.sum(pc.multiply(t["l_extendedprice"], t["l_discount"]))
    return pq.read_table(key, filesystem=fs, filters=filt)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    import boto3
    from moto.server import ThreadedMotoServer

    print_header("Object storage: requests, bytes and time, lineitem SF1 natural order")
    table, c, ppaths, ref = peers.prepare(1, layouts=("natural_128k",))
    rpaths = bench_skipping.build_rcfmt(ppaths)
    del table
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    os.environ.update(env)
    rows = []
    results = {}
    try:
        client = boto3.client("s3", endpoint_url=f"http://{host}:{port}")
        client.create_bucket(Bucket=BUCKET)
        keys = {"rcfmt": "lineitem.rcfmt", "parquet": "lineitem.parquet"}
        client.upload_file(str(rpaths["natural_128k"]), BUCKET, keys["rcfmt"])
        client.upload_file(str(ppaths["natural_128k"]), BUCKET, keys["parquet"])
        with S3Proxy(f"http://{host}:{port}") as proxy:
            os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
            fs = pafs.S3FileSystem(endpoint_override=proxy.endpoint.removeprefix("http://"), scheme="http",
                                   region="us-east-1", access_key="bench", secret_key="bench")
            uri = f"s3://{BUCKET}/{keys['rcfmt']}"
            pkey = f"{BUCKET}/{keys['parquet']}"

            def run(engine, q):
                if engine == "rcfmt":
                    if q == "open":
                        with rcfmt.open(uri) as f:
                            return f.num_rows
                    return bench_skipping.run_rcfmt(q, uri, c, threads=True)
                if q == "open":
                    return pq.ParquetFile(pkey, filesystem=fs).metadata.num_rows
                return _pyarrow_query(q, fs, pkey, c)

            for q in ("open", "Q_b", "Q_a", "Q_c"):
                cell = {}
                for engine, key in (("rcfmt", keys["rcfmt"]), ("pyarrow", keys["parquet"])):
                    proxy.reset_counts()
                    result = run(engine, q)
                    requests, nbytes = proxy.counts(key)
                    if q == "open":
                        ok = result == 6_001_215
                    else:
                        ok = peers.check_result(peers.summarise_arrow(q, result), ref[q])
                    best = float("inf")
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        run(engine, q)
                        best = min(best, time.perf_counter() - t0)
                    cell[engine] = (requests, nbytes, best, ok)
                r, p = cell["rcfmt"], cell["pyarrow"]
                rows.append([q, r[0], p[0], f"{r[1] / 1e6:.2f} MB", f"{p[1] / 1e6:.2f} MB", f"{r[2] * 1e3:.1f}",
                             f"{p[2] * 1e3:.1f}", f"{p[0] / max(r[0], 1):.1f}x", f"{p[1] / max(r[1], 1):.1f}x",
                             "yes" if r[3] and p[3] else "NO"])
                results[q] = {"rcfmt": cell["rcfmt"], "pyarrow": cell["pyarrow"]}
                print(f"  {q}: rcfmt {r[0]} requests {r[1] / 1e6:.2f} MB {r[2] * 1e3:.1f} ms; "
                      f"pyarrow {p[0]} requests {p[1] / 1e6:.2f} MB {p[2] * 1e3:.1f} ms", flush=True)
    finally:
        server.stop()
    print(md_table(["query", "rcfmt requests", "pyarrow requests", "rcfmt bytes", "pyarrow bytes", "rcfmt ms",
                    "pyarrow ms", "requests pyarrow / rcfmt", "bytes pyarrow / rcfmt", "correct"], rows))
    print("\nRequests and bytes are those of GET/HEAD answers on the data object (counted by a proxy); "
          "rcfmt scans with threads, pyarrow with its defaults.")
    write_json("object_storage", results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
