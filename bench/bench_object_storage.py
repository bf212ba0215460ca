"""Skipping on object storage: requests, bytes and time of rcfmt against pyarrow reading
Parquet (with its page index) from the same S3 server, in the same run (issue 13).

An S3 API server (moto, in-process, 127.0.0.1) holds the lineitem SF1 files of
bench_skipping.py in natural order and Z-ordered on (l_shipdate, l_partkey) (rcfmt, and
Parquet written by pyarrow with zstd and a page index); a counting proxy in front of it
(tests/local_s3.py) sees every request both engines make. Queries: an open (footer),
all (every row and column, no filter; natural file only), Q_p (point lookup on the
Z-order keys: one part shipped on one day, all columns; Z-order file only), Q_b (point lookup on l_orderkey, all columns), Q_a (one-week l_shipdate AND
~1% l_partkey, all columns) and Q6 (its predicate, two columns, summed). Each engine's
result is checked against the in-memory reference. rcfmt runs twice: with its default
fetch options (fewest requests: ranges up to 1 MiB apart read together, a tail of 1/128
of the file) and with ``FetchOptions.fewest_bytes()`` (only the ranges it decodes, a
64 KiB tail).

Times are given twice: as the server answers from memory on this machine (per-request
overheads and bytes moved), and with 5 ms added to every request by the proxy (a
nearby object store; S3 itself answers in ~10-100 ms).

    python bench/bench_object_storage.py --repeat 3
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import pyarrow as pa
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


LATENCY = 0.005  # seconds added to every request in the "+5 ms" timings


def _point_constants(table, c):
    """``(l_partkey, l_shipdate)`` of the row at 61% of the table (so it exists)."""
    row = table.slice(int(0.61 * table.num_rows), 1)
    return row.column("l_partkey")[0].as_py(), row.column("l_shipdate")[0].as_py()


def _rcfmt_point(uri: str, point, fetch=None):
    pk, day = point
    return rcfmt.read_table(uri, filter=(rcfmt.col("l_partkey") == pk) & (rcfmt.col("l_shipdate") == day),
                            fetch=fetch)


#: the engines measured: rcfmt with each fetch policy, pyarrow
ENGINES = {"rcfmt": None, "rcfmt_lean": "fewest_bytes", "pyarrow": None}


def _pyarrow_query(q: str, fs, key: str, c, point):
    if q == "Q_p":
        pk, day = point
        filt = (pads.field("l_partkey") == pa.scalar(pk, pa.int64())) & (
            pads.field("l_shipdate") == pa.scalar(day, pa.date32()))
    else:
        filt = peers._predicate(q, c, pads.field)
    if q == "Q_c":
        t = pq.read_table(key, filesystem=fs, columns=peers.Q_C_COLUMNS, filters=filt)
        return pc.sum(pc.multiply(t["l_extendedprice"], t["l_discount"]))
    return pq.read_table(key, filesystem=fs, filters=filt)


#: the queries of each layout
MATRIX = {"natural_128k": ("open", "all", "Q_b", "Q_a", "Q_c"), "zorder_128k": ("open", "Q_p", "Q_b", "Q_a", "Q_c")}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--layouts", default=",".join(MATRIX))
    args = ap.parse_args(argv)
    import boto3
    from moto.server import ThreadedMotoServer

    layouts = [lay for lay in args.layouts.split(",") if lay]
    print_header("Object storage: requests, bytes and time, lineitem SF1")
    table, c, ppaths, ref = peers.prepare(1, layouts=tuple(layouts))
    point = _point_constants(table, c)
    ref["Q_p"] = peers.summarise_arrow("Q_p", table.filter(pc.and_(
        pc.equal(table["l_partkey"], point[0]), pc.equal(table["l_shipdate"], pa.scalar(point[1], pa.date32())))))
    rpaths = bench_skipping.build_rcfmt(ppaths)
    del table
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true"}
    os.environ.update(env)
    rows, lean_rows = [], []
    results = {"point": [point[0], str(point[1])]}
    try:
        client = boto3.client("s3", endpoint_url=f"http://{host}:{port}")
        client.create_bucket(Bucket=BUCKET)
        with S3Proxy(f"http://{host}:{port}") as proxy:
            os.environ["AWS_ENDPOINT_URL"] = proxy.endpoint
            fs = pafs.S3FileSystem(endpoint_override=proxy.endpoint.removeprefix("http://"), scheme="http",
                                   region="us-east-1", access_key="bench", secret_key="bench")
            for lay in layouts:
                keys = {"rcfmt": f"lineitem_{lay}.rcfmt", "pyarrow": f"lineitem_{lay}.parquet"}
                client.upload_file(str(rpaths[lay]), BUCKET, keys["rcfmt"])
                client.upload_file(str(ppaths[lay]), BUCKET, keys["pyarrow"])
                uri = f"s3://{BUCKET}/{keys['rcfmt']}"
                pkey = f"{BUCKET}/{keys['pyarrow']}"

                def run(engine, q):
                    if engine.startswith("rcfmt"):
                        fetch = rcfmt.FetchOptions.fewest_bytes() if ENGINES[engine] else None
                        if q == "open":
                            with rcfmt.open(uri, fetch=fetch) as f:
                                return f.num_rows
                        if q == "all":
                            return rcfmt.read_table(uri, fetch=fetch).num_rows
                        if q == "Q_p":
                            return _rcfmt_point(uri, point, fetch)
                        return bench_skipping.run_rcfmt(q, uri, c, threads=True, fetch=fetch)
                    if q == "open":
                        return pq.ParquetFile(pkey, filesystem=fs).metadata.num_rows
                    if q == "all":
                        return pq.read_table(pkey, filesystem=fs).num_rows
                    return _pyarrow_query(q, fs, pkey, c, point)

                def best_of(engine, q):
                    best = float("inf")
                    for _ in range(args.repeat):
                        t0 = time.perf_counter()
                        run(engine, q)
                        best = min(best, time.perf_counter() - t0)
                    return best

                for q in MATRIX[lay]:
                    cell = {}
                    for engine in ENGINES:
                        proxy.fault = None
                        proxy.reset_counts()
                        result = run(engine, q)
                        requests, nbytes = proxy.counts(keys[engine.split("_")[0]])
                        if q in ("open", "all"):
                            ok = result == 6_001_215
                        else:
                            ok = peers.check_result(peers.summarise_arrow(q, result), ref[q])
                        fast = best_of(engine, q)
                        proxy.fault = lambda number, method, path: ("stall", LATENCY)
                        slow = best_of(engine, q)
                        proxy.fault = None
                        cell[engine] = {"requests": requests, "bytes": nbytes, "seconds": fast,
                                        "seconds_5ms": slow, "correct": ok}
                    r, p, lean = cell["rcfmt"], cell["pyarrow"], cell["rcfmt_lean"]
                    rows.append([lay, q, r["requests"], p["requests"], f"{r['bytes'] / 1e6:.2f} MB",
                                 f"{p['bytes'] / 1e6:.2f} MB", f"{r['seconds'] * 1e3:.1f}",
                                 f"{p['seconds'] * 1e3:.1f}", f"{r['seconds_5ms'] * 1e3:.1f}",
                                 f"{p['seconds_5ms'] * 1e3:.1f}", f"{p['bytes'] / max(r['bytes'], 1):.1f}x",
                                 "yes" if all(e["correct"] for e in cell.values()) else "NO"])
                    lean_rows.append([lay, q, lean["requests"], f"{lean['bytes'] / 1e6:.2f} MB",
                                      f"{lean['seconds'] * 1e3:.1f}", f"{lean['seconds_5ms'] * 1e3:.1f}",
                                      f"{p['bytes'] / max(lean['bytes'], 1):.1f}x"])
                    results[f"{lay}/{q}"] = cell
                    print(f"  {lay} {q}: " + "; ".join(
                        f"{e} {cell[e]['requests']} requests {cell[e]['bytes'] / 1e6:.2f} MB "
                        f"{cell[e]['seconds'] * 1e3:.1f} / {cell[e]['seconds_5ms'] * 1e3:.1f} ms" for e in cell),
                        flush=True)
    finally:
        server.stop()
    print(md_table(["layout", "query", "rcfmt requests", "pyarrow requests", "rcfmt bytes", "pyarrow bytes",
                    "rcfmt ms", "pyarrow ms", "rcfmt ms +5 ms/req", "pyarrow ms +5 ms/req", "bytes pyarrow / rcfmt",
                    "correct"], rows))
    print("\nrcfmt with FetchOptions.fewest_bytes():\n")
    print(md_table(["layout", "query", "requests", "bytes", "ms", "ms +5 ms/req", "bytes pyarrow / rcfmt"],
                   lean_rows))
    print("\nRequests and bytes are those of GET/HEAD answers on the data object (counted by a proxy); "
          "rcfmt scans with threads, pyarrow with its defaults. '+5 ms/req': every request answered 5 ms later.")
    write_json("object_storage", results, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
