"""Spark Structured Streaming: rcfmt's sink and source against Spark's own Parquet file
sink and file source (issue 62). Delta's would be the other peer; its Spark jars come
from Maven, which this machine cannot reach, so it is left out (and said so).

One ``local[2]`` session, the same input for every format. The **floor** is what any
Python streaming source or sink costs on this Spark: a toy sink that takes Spark's Arrow
batches and keeps nothing, and a toy source whose offsets are file numbers and which
yields the Arrow IPC files of the same rows (memory-mapped: no decoding, no index).



* **sink** -- a directory of Parquet files (``--files`` files of ``--rows`` rows of an
  order-line-like table: ids, doubles, an int, two low-cardinality strings, a comment, a
  date) streamed with ``maxFilesPerTrigger`` 1 (one micro-batch per file) and
  ``Trigger.AvailableNow`` into an rcfmt dataset (each batch one exactly-once commit) and
  into Spark's Parquet file sink (each batch a ``_spark_metadata`` log entry). Rows per
  second from ``start()`` to termination;
* **source throughput** -- the same rows as an rcfmt dataset (one version per file) and
  as a Parquet directory, streamed with ``availableNow`` (``maxFilesPerTrigger`` 4) into
  Spark's ``noop`` sink;
* **latency** -- a query with the default trigger (as soon as possible) on an rcfmt
  dataset and on a Parquet directory while another thread commits ``--commits``
  versions (rcfmt: an append; Parquet: a file written aside and renamed in), one every
  ``--gap`` seconds; the time from the end of each commit to the start of the
  ``foreachBatch`` call that delivers its rows (median and max).

Rounds are interleaved (rcfmt, Parquet) after a warm-up round; figures are medians of
``--repeat`` rounds; the load average is printed before each round.

    python bench/bench_streaming.py                     # 20 files x 50,000 rows, --repeat 3
    python bench/bench_streaming.py --rows 500000 --files 6
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import busy_warning, machine_info, machine_line, md_table, scratch_dir, write_json  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def make_table(rows: int, first: int, seed: int) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = np.arange(first, first + rows, dtype=np.int64)
    words = np.array(["carefully", "final", "deposits", "haggle", "quickly", "regular", "ideas", "sleep"])
    comment = pa.array([" ".join(w) for w in words[rng.integers(0, len(words), (rows, 4))]])
    return pa.table({
        "id": ids, "key": rng.integers(0, 200_000, rows), "price": rng.random(rows) * 1e5,
        "discount": np.round(rng.random(rows) * 0.1, 2), "qty": rng.integers(1, 51, rows).astype(np.int32),
        "flag": pa.array(np.array(["A", "N", "R"])[rng.integers(0, 3, rows)]),
        "mode": pa.array(np.array(["AIR", "MAIL", "RAIL", "SHIP", "TRUCK"])[rng.integers(0, 5, rows)]),
        "comment": comment,
        "day": pa.array(np.datetime64("1995-01-01") + rng.integers(0, 2000, rows).astype("timedelta64[D]")),
    })


def floor_source():
    """The floor stream source (``rcfmt_floor_stream``): ``path`` holds ``NNNN.arrow``
    files, one per 'version'; offsets are file counts; ``maxFilesPerTrigger`` respected
    (defined in a function: cloudpickle ships it to the workers by value)."""
    from pyspark.sql.datasource import DataSource, DataSourceStreamArrowWriter, DataSourceStreamReader, InputPartition
    from pyspark.sql.datasource import WriterCommitMessage
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxFiles, SupportsTriggerAvailableNow

    class FloorReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
        def __init__(self, path, max_files):
            self.path, self.max_files, self.target = path, max_files, None

        def _count(self):
            import os

            n = len([n for n in os.listdir(self.path) if n.endswith(".arrow")])
            return n if self.target is None else min(n, self.target)

        def prepareForTriggerAvailableNow(self):
            self.target = self._count()

        def initialOffset(self):
            return {"file": 0}

        def getDefaultReadLimit(self):
            return ReadMaxFiles(self.max_files) if self.max_files else ReadAllAvailable()

        def latestOffset(self, start, limit):
            n = self._count()
            if isinstance(limit, ReadMaxFiles):
                n = min(n, start["file"] + limit.max_files)
            return {"file": n}

        def partitions(self, start, end):
            return [InputPartition(i) for i in range(start["file"], end["file"])]

        def read(self, partition):
            import os

            import pyarrow as pa

            reader = pa.ipc.open_file(pa.memory_map(os.path.join(self.path, f"{partition.value:04d}.arrow")))
            for i in range(reader.num_record_batches):
                yield reader.get_batch(i)

        def commit(self, end):
            pass

    class FloorWriter(DataSourceStreamArrowWriter):
        def write(self, iterator):
            for _ in iterator:
                pass
            return WriterCommitMessage()

        def commit(self, messages, batchId):
            pass

        def abort(self, messages, batchId):
            pass

    class FloorStream(DataSource):
        @classmethod
        def name(cls):
            return "rcfmt_floor_stream"

        def schema(self):
            import os

            import pyarrow as pa
            from pyspark.sql.pandas.types import from_arrow_schema

            path = os.path.join(self.options["path"], "0000.arrow")
            return from_arrow_schema(pa.ipc.open_file(pa.memory_map(path)).schema)

        def streamReader(self, schema):
            return FloorReader(self.options["path"], int(self.options.get("maxfilespertrigger", 0)))

        def streamWriter(self, schema, overwrite):
            return FloorWriter()

    return FloorStream


def session():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rcfmt-bench-streaming")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "4g").config("spark.python.worker.reuse", "true").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _batch_ms(query) -> list[float]:
    """Milliseconds of each micro-batch that read rows (Spark's triggerExecution)."""
    return [float(p["durationMs"]["triggerExecution"]) for p in query.recentProgress if p.get("numInputRows")]


def time_sink(spark, fmt: str, source: Path, schema, work: Path) -> tuple[float, list]:
    target, ck = work / f"sink-{fmt}", work / f"ck-sink-{fmt}"
    shutil.rmtree(target, ignore_errors=True)
    shutil.rmtree(ck, ignore_errors=True)
    stream = spark.readStream.format("parquet").schema(schema).option("maxFilesPerTrigger", 1).load(str(source))
    fmt = "rcfmt_floor_stream" if fmt == "floor" else fmt
    return _drain(stream.writeStream.format(fmt).option("path", str(target)), ck)


def time_source(spark, fmt: str, path: Path, schema, work: Path) -> tuple[float, list]:
    ck = work / f"ck-source-{fmt}"
    shutil.rmtree(ck, ignore_errors=True)
    reader = spark.readStream.format("rcfmt_floor_stream" if fmt == "floor" else fmt).option("maxFilesPerTrigger", 4)
    if fmt == "parquet":
        reader = reader.schema(schema)
    return _drain(reader.load(str(path)).writeStream.format("noop"), ck)


def _drain(writer, checkpoint: Path) -> tuple[float, list]:
    """Run ``writer`` with ``Trigger.AvailableNow`` to its end: (seconds from ``start()``,
    the milliseconds of each micro-batch that read rows)."""
    t0 = time.perf_counter()
    q = writer.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    q.awaitTermination()
    elapsed = time.perf_counter() - t0
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))
    return elapsed, _batch_ms(q)


def latency(spark, fmt: str, work: Path, commits: int, gap: float, rows: int) -> list[float]:
    """Seconds from each commit's end to the start of the micro-batch that delivers it."""
    import rcfmt

    path, ck = work / f"live-{fmt}", work / f"ck-live-{fmt}"
    shutil.rmtree(path, ignore_errors=True)
    shutil.rmtree(ck, ignore_errors=True)
    first = make_table(rows, 0, 0).append_column("v", pa.array(np.zeros(rows, np.int64)))
    if fmt == "rcfmt":
        rcfmt.write_dataset(first, str(path))
    elif fmt == "floor":
        path.mkdir(parents=True)
        _write_arrow(first, path / "0000.arrow")
    else:
        path.mkdir(parents=True)
        pq.write_table(first, path / "part-0.parquet")
    committed, delivered = {}, {}

    def keep(frame, _):
        now = time.time()
        for r in frame.select("v").distinct().collect():
            delivered.setdefault(r.v, now)

    reader = spark.readStream.format("rcfmt_floor_stream" if fmt == "floor" else fmt)
    if fmt == "parquet":
        reader = reader.schema(spark.read.parquet(str(path)).schema)
    q = reader.load(str(path)).writeStream.option("checkpointLocation", str(ck)).foreachBatch(keep).start()
    try:
        deadline = time.time() + 120
        while 0 not in delivered and time.time() < deadline:
            time.sleep(0.01)
        for v in range(1, commits + 1):
            time.sleep(gap)
            t = make_table(rows, v * rows, v).append_column("v", pa.array(np.full(rows, v, np.int64)))
            if fmt == "rcfmt":
                rcfmt.write_dataset(t, str(path), mode="append")
            elif fmt == "floor":
                _write_arrow(t, work / f"tmp-{v}.arrow")
                os.rename(work / f"tmp-{v}.arrow", path / f"{v:04d}.arrow")
            else:
                tmp = work / f"tmp-{v}.parquet"
                pq.write_table(t, tmp)
                os.rename(tmp, path / f"part-{v}.parquet")
            committed[v] = time.time()
        deadline = time.time() + 60
        while len(delivered) <= commits and time.time() < deadline:
            time.sleep(0.01)
    finally:
        q.stop()
    return [delivered[v] - committed[v] for v in committed if v in delivered]


def _write_arrow(table: pa.Table, path) -> None:
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table, max_chunksize=65536)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=50_000, help="rows per input file (micro-batch)")
    ap.add_argument("--files", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--commits", type=int, default=20)
    ap.add_argument("--gap", type=float, default=0.5)
    args = ap.parse_args()
    import rcfmt

    work = scratch_dir("streaming")
    source = work / "input"
    dataset, arrow = work / "dataset", work / "arrow"
    if not source.exists() or len(list(source.glob("*.parquet"))) != args.files or \
            pq.read_metadata(next(source.glob("*.parquet"))).num_rows != args.rows:
        for d in (source, dataset, arrow):
            shutil.rmtree(d, ignore_errors=True)
        source.mkdir(parents=True)
        arrow.mkdir(parents=True)
        for k in range(args.files):
            t = make_table(args.rows, k * args.rows, k)
            pq.write_table(t, source / f"part-{k:04d}.parquet")
            rcfmt.write_dataset(t, str(dataset), mode="append")
            _write_arrow(t, arrow / f"{k:04d}.arrow")
    paths = {"rcfmt": dataset, "parquet": source, "floor": arrow}
    total = args.rows * args.files
    spark = session()
    spark.dataSource.register(floor_source())
    schema = spark.read.parquet(str(source)).schema
    formats = ("rcfmt", "floor", "parquet")
    sink = {f: [] for f in formats}
    read = {f: [] for f in formats}
    steady = {(what, f): [] for what in ("sink", "source") for f in formats}  # ms per batch after the first
    for rnd in range(args.repeat + 1):
        print(f"round {rnd} ({'warm-up' if rnd == 0 else 'timed'}): {busy_warning(0.0) or 'load ok'}", flush=True)
        for fmt in formats:
            s, s_batches = time_sink(spark, fmt, source, schema, work)
            r, r_batches = time_source(spark, fmt, paths[fmt], schema, work)
            if rnd:
                sink[fmt].append(s)
                read[fmt].append(r)
                steady["sink", fmt] += s_batches[1:]
                steady["source", fmt] += r_batches[1:]
            print(f"  {fmt}: sink {s:.2f} s, source {r:.2f} s", flush=True)
    written = rcfmt.dataset(str(work / "sink-rcfmt"))
    assert written.num_rows == total and written.version == args.files, (written.num_rows, written.version)
    lat = {fmt: latency(spark, fmt, work, args.commits, args.gap, 1000) for fmt in formats}
    spark.stop()

    med = {k: {f: statistics.median(v[f]) for f in v} for k, v in (("sink", sink), ("source", read))}
    rows = []
    for what in ("sink", "source"):
        r, p, f = med[what]["rcfmt"], med[what]["parquet"], med[what]["floor"]
        rows.append([what, f"{total / r:,.0f}", f"{total / f:,.0f}", f"{total / p:,.0f}", f"{r:.2f} s",
                     f"{f:.2f} s", f"{p:.2f} s", f"{p / r:.2f}x", f"{f / r:.2f}x"])
    print(f"\n{machine_line()}\n{args.files} micro-batches of {args.rows:,} rows ({total:,} rows)\n")
    print(md_table(["stream", "rcfmt rows/s", "floor rows/s", "Parquet rows/s", "rcfmt", "floor", "Parquet",
                    "rcfmt speed / Parquet's", "rcfmt speed / floor's"], rows))
    srows = []
    for what, per in (("sink", args.rows), ("source", args.rows * 4)):
        m = {f: statistics.median(steady[what, f]) if steady[what, f] else float("nan") for f in formats}
        srows.append([what, f"{per:,}", *(f"{m[f]:.0f} ms" for f in formats), f"{m['parquet'] / m['rcfmt']:.2f}x",
                      f"{m['floor'] / m['rcfmt']:.2f}x"])
    print("\nsteady state: median time of a micro-batch after the first (Spark's triggerExecution)\n")
    print(md_table(["stream", "rows per batch", "rcfmt", "floor", "Parquet", "Parquet / rcfmt", "floor / rcfmt"],
                   srows))
    lrows = [[fmt, f"{statistics.median(v) * 1e3:.0f} ms" if v else "-", f"{max(v) * 1e3:.0f} ms" if v else "-",
              f"{len(v)}/{args.commits}"] for fmt, v in lat.items()]
    print(f"\nlatency from commit to delivery (default trigger, {args.commits} commits of 1,000 rows, "
          f"one per {args.gap} s)\n")
    print(md_table(["source", "median", "max", "delivered"], lrows))
    write_json("streaming", {"machine": machine_info(), "sink": sink, "source": read, "latency": lat,
                             "steady_ms": {f"{w}/{f}": v for (w, f), v in steady.items()},
                             "rows": args.rows, "files": args.files}, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
