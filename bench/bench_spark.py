"""Spark end to end: rcfmt's Python data source against Spark's own Parquet reader.

TPC-H lineitem (SF1 by default) in two layouts -- ``natural`` (generator order, by
l_orderkey) and ``zorder`` (``datasets.zorder_by_rank`` on l_shipdate, l_partkey) --
is written **by Spark** twice from the same DataFrame (so the same rows in the same
order, the same files per task): as Parquet (zstd, 131,072-row row groups through
``parquet.block.row.count.limit``, page index on: parquet-java's default) and as rcfmt
(``blockRows=131072``, compression "auto"). Then, in one ``local[2]`` session:

* ``trivial`` -- ``count(*)`` of a 1,000-row copy (the fixed cost of a query);
* ``agg1``  -- one-column aggregate: sum(l_quantity);
* ``full``  -- full-scan aggregate reading every column (sums, maxima, a distinct count);
* ``Q1``    -- TPC-H Q1 (shipdate <= 1998-09-02, group by returnflag, linestatus);
* ``Q6``    -- TPC-H Q6 (the Q_c of bench_peers.py);
* ``Q_a``   -- the selective two-column range query of bench_peers.py, all columns;
* ``point`` -- l_orderkey = K (Q_b of bench_peers.py), all columns;
* ``count`` -- ``count(*)``; ``count_q6`` -- ``count(*)`` of Q6's rows (rcfmt: a relation
  with no column, ``.option("columns", "")``, answered from metadata).

How rcfmt is read (what the README's "Spark: fast and correct" section tells a user):
the relation-defining options, ``.option("columns", ...)`` with the columns the query
needs (Python sources get no column pruning from Spark) and ``.option("filter", ...)``
with the query's WHERE clause (files, blocks, pages and rows pruned; Spark re-applies
its own filter on top). The filter-pushdown conf stays at its default (off).

The floor (issue 38): a toy Python data source (``FloorSource``, registered as
``rcfmt_floor``) that yields, for each query, exactly the rows and columns rcfmt's
relation yields (its ``filter`` and ``columns``), as Arrow batches of ``batchRows`` rows
memory-mapped from an Arrow IPC file written beforehand (no decoding, no index), with
the schema rcfmt gives Spark (inferred from the file). Spark runs the same SQL over
it. Its time is what any Python source pays for that query on this Spark: rcfmt's
goal. ``--handoff`` also measures the per-row hand-off cost by column type: the toy
source with one column of 6M rows (one partition) written to Spark's ``noop`` sink,
minus the same for one row.

Every timed run builds the DataFrame and collects the result (planning included).
Rounds are interleaved: each round runs every (layout, query) once per engine (Parquet,
rcfmt, floor) one after another, after one warm-up round; each figure is the best of
--repeat rounds, and the 1-minute load average is printed before each round.
Results are checked: same row counts and checksums for all three. Output: Markdown
tables on stdout and bench/out/spark.json.

    python bench/bench_spark.py                      # SF1, --repeat 3
    python bench/bench_spark.py --scale 0.1 --repeat 1
    python bench/bench_spark.py --queries point,Q_a,Q6,agg1,Q1 --handoff   # issue 38's set
    python bench/bench_spark.py --queries count --repeat 1 --writes 3      # Spark writes, interleaved
    python bench/bench_spark.py --queries point,Q_a,Q6,agg1,count_q6 --breakdown 3 --writes 3 --cold  # issue 58

``--breakdown N`` then runs rcfmt and the floor N more times per query, both with
``statsDir``: every call Spark makes in a Python worker (``schema()``, the planner's
``reader()`` + ``partitions()``, each task's ``read()``) records its wall-clock span and
its process (:mod:`spark_datasource.timeline`), so the query splits into Spark's time
before ``schema()``, ``schema()``, Spark's time to the planner, the planner, the launch of
the first task, the tasks (with the slowest task's time inside the source and the time
Spark took between its batches) and Spark's time after the last task; with the tasks,
the Python processes that served the query (and how many started during it) and the
pickled sizes of rcfmt's reader and partitions. A row "rcfmt - floor" per query says in
which phase the gap is.

``--writes N`` times N rounds of Spark writes of the natural layout: Parquet, the floor
sink (a Python writer that consumes Spark's Arrow batches and keeps nothing: what any
Python sink costs) and rcfmt, with the machine's CPU seconds of each.
``--cold`` times the first query of a new session against the second, per engine and
query, each pair in a fresh process (the JVM, its Python workers and their imports start
cold).
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import sys
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (Timing, busy_warning, fmt_bytes, fmt_seconds, file_size, machine_info,  # noqa: E402
                    machine_line, md_table, scratch_dir, write_json)
import bench_peers  # noqa: E402
import datasets  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BLOCK_ROWS = 131072
LAYOUTS = ("natural", "zorder")
QUERIES = ("trivial", "agg1", "full", "Q1", "Q6", "Q_a", "point", "count", "count_q6")
TINY_ROWS = 1000
ALL_COLUMNS = None  # marker: the query needs every column
COLUMNS = {
    "trivial": ["l_orderkey"],
    "agg1": ["l_quantity"],
    "full": ALL_COLUMNS,
    "Q1": ["l_returnflag", "l_linestatus", "l_quantity", "l_extendedprice", "l_discount", "l_tax", "l_shipdate"],
    "Q6": ["l_shipdate", "l_discount", "l_quantity", "l_extendedprice"],
    "Q_a": ALL_COLUMNS,
    "point": ALL_COLUMNS,
    "count": [],  # count(*): a relation of no column, answered from metadata
    "count_q6": [],  # count(*) of Q6's rows: the same, with Q6's filter as the relation filter
}


def where(q: str, c: "bench_peers.Constants") -> str | None:
    """The query's WHERE clause (also rcfmt's relation filter), None if it has none."""
    if q == "Q1":
        return "l_shipdate <= date'1998-09-02'"
    if q in ("Q6", "count_q6"):
        return (f"l_shipdate >= date'{c.q6_date_lo}' AND l_shipdate < date'{c.q6_date_hi}' "
                f"AND l_discount BETWEEN {c.q6_disc_lo} AND {c.q6_disc_hi} AND l_quantity < {c.q6_qty_lt}")
    if q == "Q_a":
        return (f"l_shipdate >= date'{c.shipdate_lo}' AND l_shipdate < date'{c.shipdate_hi}' "
                f"AND l_partkey BETWEEN {c.partkey_lo} AND {c.partkey_hi}")
    if q == "point":
        return f"l_orderkey = {c.orderkey}"
    return None


def sql(q: str, c: "bench_peers.Constants", view: str, relation_filtered: bool = False) -> str:
    """The query over ``view``; ``relation_filtered``: the view's relation already holds
    only the WHERE clause's rows (rcfmt's filter option, the floor): count queries, whose
    relation has no column to filter on, then leave it out."""
    if q in ("count", "count_q6"):
        w = where(q, c)
        return f"SELECT count(*) AS n FROM {view}" + ("" if w is None or relation_filtered else f" WHERE {w}")
    if q == "trivial":
        return f"SELECT count(*) AS n FROM {view}"
    if q == "agg1":
        return f"SELECT sum(l_quantity) AS q FROM {view}"
    if q == "full":
        return (f"SELECT count(*) AS n, sum(l_quantity) AS q, sum(l_extendedprice) AS p, sum(l_discount) AS d, "
                f"sum(l_tax) AS t, count(DISTINCT l_returnflag, l_linestatus) AS f, max(l_shipdate) AS s, "
                f"max(l_commitdate) AS c, max(l_receiptdate) AS r, max(l_shipinstruct) AS i, "
                f"max(l_shipmode) AS m, max(l_comment) AS cm, sum(l_orderkey) AS o, sum(l_partkey) AS pk, "
                f"sum(l_suppkey) AS sk, sum(l_linenumber) AS ln FROM {view}")
    if q == "Q1":
        return (f"SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, "
                f"sum(l_extendedprice) AS sum_base_price, "
                f"sum(l_extendedprice * (1 - l_discount)) AS sum_disc_price, "
                f"sum(l_extendedprice * (1 - l_discount) * (1 + l_tax)) AS sum_charge, "
                f"avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc, "
                f"count(*) AS count_order FROM {view} WHERE {where(q, c)} "
                f"GROUP BY l_returnflag, l_linestatus ORDER BY l_returnflag, l_linestatus")
    if q == "Q6":
        return f"SELECT sum(l_extendedprice * l_discount) AS revenue FROM {view} WHERE {where(q, c)}"
    if q in ("Q_a", "point"):
        return f"SELECT * FROM {view} WHERE {where(q, c)}"
    raise ValueError(q)


def summary(q: str, rows) -> tuple:
    """A comparable digest of a result (exact decimals)."""
    if q in ("Q_a", "point"):
        return (len(rows), sum(r["l_orderkey"] for r in rows), sum(r["l_extendedprice"] for r in rows))
    return tuple(tuple(Decimal(str(v)) if isinstance(v, float) else v for v in r) for r in rows)


# --------------------------------------------------------------------------- session and data
def session(driver_memory: str):
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rcfmt-bench-spark")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.driver.memory", driver_memory)
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "UTC")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def build(spark, table, scale: float, rebuild: bool) -> dict:
    """Write both layouts with Spark, as Parquet and as rcfmt; return their paths and
    write times."""
    tag = datasets._scale_tag(scale)
    out = {}
    peers = bench_peers.build_layouts(table, scale, ("natural_128k", "zorder_128k"), rebuild=False)
    base = scratch_dir("spark")
    for layout, src in (("natural", peers["natural_128k"]), ("zorder", peers["zorder_128k"])):
        pq_path, rc_path = base / f"lineitem_sf{tag}.{layout}.parquet", base / f"lineitem_sf{tag}.{layout}.rcfmt"
        info = {"parquet": str(pq_path), "rcfmt": str(rc_path)}
        df = spark.read.parquet(str(src))  # the same splits, in order, for both writes
        if rebuild or not (pq_path / "_SUCCESS").exists():
            info["parquet_write_s"] = write_as("parquet", df, pq_path)
        if rebuild or not (rc_path / "_rcfmt").exists():
            info["rcfmt_write_s"] = write_as("rcfmt", df, rc_path)
        tiny_pq, tiny_rc = base / f"tiny_sf{tag}.{layout}.parquet", base / f"tiny_sf{tag}.{layout}.rcfmt"
        if rebuild or not (tiny_rc / "_rcfmt").exists():
            shutil.rmtree(tiny_pq, ignore_errors=True)
            shutil.rmtree(tiny_rc, ignore_errors=True)
            tiny = spark.read.parquet(str(pq_path)).limit(TINY_ROWS).coalesce(1)
            tiny.write.parquet(str(tiny_pq))
            spark.read.parquet(str(tiny_pq)).write.format("rcfmt").mode("overwrite").save(str(tiny_rc))
        info["tiny_parquet"], info["tiny_rcfmt"] = str(tiny_pq), str(tiny_rc)
        info["parquet_bytes"] = file_size(pq_path)
        info["rcfmt_bytes"] = file_size(rc_path)
        print(f"[spark] {layout}: parquet {fmt_bytes(info['parquet_bytes'])}, rcfmt "
              f"{fmt_bytes(info['rcfmt_bytes'])}", file=sys.stderr, flush=True)
        out[layout] = info
    return out


def write_as(fmt: str, df, path: Path) -> float:
    """Write ``df`` to ``path`` (replaced) as zstd Parquet with BLOCK_ROWS-row groups or as
    rcfmt with BLOCK_ROWS-row blocks; return the seconds it took."""
    shutil.rmtree(path, ignore_errors=True)
    t0 = time.perf_counter()
    if fmt == "parquet":
        (df.write.mode("overwrite").option("compression", "zstd")
         .option("parquet.block.row.count.limit", BLOCK_ROWS).parquet(str(path)))
    elif fmt == "floor":
        df.write.format("rcfmt_floor_sink").mode("append").save(str(path))
    else:
        df.write.format("rcfmt").mode("overwrite").option("blockRows", BLOCK_ROWS).save(str(path))
    return time.perf_counter() - t0


def _cpu_seconds() -> float:
    """CPU time (user + system, all cores) the machine has spent since boot (Linux)."""
    with open("/proc/stat") as fh:
        ticks = [int(x) for x in fh.readline().split()[1:]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")  # (less idle and iowait)


WRITERS = ("parquet", "floor", "rcfmt")


def time_writes(spark, scale: float, rounds: int) -> dict:
    """Item 4 of issue 38, item 3 of issue 58: the natural-order DataFrame written as
    Parquet, to the floor sink (a Python writer that takes Spark's Arrow batches and keeps
    nothing: what any Python sink pays) and as rcfmt, in rotating order, ``rounds`` times
    after one warm-up round (the first write of a session also starts Spark's Python
    workers); per writer the seconds and the machine's CPU seconds of each round."""
    df = spark.read.parquet(str(bench_peers.layout_path("natural_128k", scale)))  # (written by build)
    base = scratch_dir("spark") / "writes"
    times: dict = {w: [] for w in WRITERS}
    cpu: dict = {w: [] for w in WRITERS}
    for r in range(rounds + 1):
        for fmt in WRITERS[r % 3:] + WRITERS[:r % 3]:
            gc.collect()
            c0 = _cpu_seconds()
            elapsed = write_as(fmt, df, base / fmt)
            used = _cpu_seconds() - c0
            print(f"[spark] write round {r}: {fmt} {elapsed:.2f} s, {used:.1f} CPU-s (load {load_line()})",
                  file=sys.stderr, flush=True)
            if r:
                times[fmt].append(elapsed)
                cpu[fmt].append(used)
    shutil.rmtree(base, ignore_errors=True)
    return {"seconds": times, "cpu_seconds": cpu}


def _floor_sink():
    """A Python sink (``rcfmt_floor_sink``) that consumes the Arrow batches Spark hands it
    and keeps nothing: the cost of any Python data source's write."""
    from pyspark.sql.datasource import DataSource, DataSourceArrowWriter, WriterCommitMessage

    class FloorWriter(DataSourceArrowWriter):
        def write(self, iterator):
            for _ in iterator:
                pass
            return WriterCommitMessage()

        def commit(self, messages):
            pass

    class FloorSink(DataSource):
        @classmethod
        def name(cls):
            return "rcfmt_floor_sink"

        def writer(self, schema, overwrite):
            return FloorWriter()

    return FloorSink


# --------------------------------------------------------------------------- the floor
FLOOR_BATCH_ROWS = 262144  # the rcfmt source's batchRows default
FLOOR_MAX_PARTITIONS = os.cpu_count() or 1  # the rcfmt source's minPartitions default


def _floor_source():
    """The toy source (defined in a function so that cloudpickle ships it by value to
    Spark's Python workers): options ``path`` (an Arrow IPC file), ``partitions`` and
    ``statsDir`` (then it writes the same timeline records as rcfmt's source:
    :mod:`spark_datasource.timeline`)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FloorReader(DataSourceReader):
        def __init__(self, path, partitions, stats_dir=None):
            import time

            self.opened_at = time.time()
            self.path, self.n, self.stats_dir = path, partitions, stats_dir

        def partitions(self):
            out = [InputPartition(i) for i in range(self.n)]
            if self.stats_dir:
                import time
                from spark_datasource.timeline import process_info, write_record

                write_record(self.stats_dir, "plan", {"start": self.opened_at, "end": time.time(),
                                                      "partitions": self.n, **process_info()})
            return out

        def read(self, partition):
            import time

            import pyarrow as pa

            started, t0, inside, outside, rows = time.time(), time.perf_counter(), 0.0, 0.0, 0
            reader = pa.ipc.open_file(pa.memory_map(self.path))
            k = reader.num_record_batches
            for i in range(k * partition.value // self.n, k * (partition.value + 1) // self.n):
                batch = reader.get_batch(i)
                rows += batch.num_rows
                t1 = time.perf_counter()
                inside += t1 - t0
                yield batch
                t0 = time.perf_counter()
                outside += t0 - t1
            if self.stats_dir:
                from spark_datasource.timeline import process_info, write_record

                inside += time.perf_counter() - t0
                write_record(self.stats_dir, "task", {"partition": partition.value, "scan_ms": inside * 1e3,
                                                      "handoff_ms": outside * 1e3, "rows": rows, "start": started,
                                                      "end": time.time(), **process_info()})

    class FloorSource(DataSource):
        @classmethod
        def name(cls):
            return "rcfmt_floor"

        def schema(self):
            import time

            import pyarrow as pa
            from pyspark.sql.pandas.types import from_arrow_schema

            started = time.time()
            out = from_arrow_schema(pa.ipc.open_file(pa.memory_map(self.options["path"])).schema)
            if self.options.get("statsDir"):
                from spark_datasource.timeline import process_info, write_record

                write_record(self.options["statsDir"], "schema", {"start": started, "end": time.time(),
                                                                  **process_info()})
            return out

        def reader(self, schema):
            return FloorReader(self.options["path"], int(self.options.get("partitions", "1")),
                               self.options.get("statsDir"))

    return FloorSource


def write_floor(table, path: Path) -> tuple[int, int]:
    """Write ``table`` as an Arrow IPC file of FLOOR_BATCH_ROWS-row batches (at least
    one, possibly empty); return (rows, partitions the toy source splits it into)."""
    import pyarrow as pa

    tmp = path.with_suffix(".tmp")
    with pa.OSFile(str(tmp), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        batches = table.to_batches(max_chunksize=FLOOR_BATCH_ROWS) or [pa.record_batch(
            [pa.array([], f.type) for f in table.schema], schema=table.schema)]
        for b in batches:
            w.write_batch(b)
    os.replace(tmp, path)
    return table.num_rows, max(1, min(FLOOR_MAX_PARTITIONS, len(batches)))


def relation_table(path: str, q: str, c):
    """What rcfmt's relation yields for query ``q`` (its filter and columns), read with
    rcfmt's Python API and converted to the Arrow schema rcfmt hands Spark."""
    import pyarrow as pa
    from rcfmt.dataset import Dataset
    from rcfmt.schema.nested import bind_schema
    from rcfmt.predicate.sql_filter import parse_filter
    from spark_datasource.options import ReadOptions
    from spark_datasource.types import BatchConverter, spark_arrow_schema, to_spark_schema

    opts = {"path": path}
    if COLUMNS[q] is not ALL_COLUMNS:
        opts["columns"] = ", ".join(COLUMNS[q])
    ro = ReadOptions(opts)
    ds = Dataset.open(path)
    schema = ro.relation_schema(ds.schema)
    target = spark_arrow_schema(to_spark_schema(schema))
    flt = None if where(q, c) is None else parse_filter(where(q, c), bind_schema(ds.schema))
    table = ds.read(schema.names, filter=flt)
    convert = BatchConverter(target)
    return pa.Table.from_batches([convert(b) for b in table.to_batches()], schema=target)


def prepare_floors(paths: dict, layouts, queries, c, scale: float, rebuild: bool) -> dict:
    """Per (layout, query): the toy source's IPC file and its partition count."""
    import pyarrow as pa

    base = scratch_dir("spark") / "floor"
    base.mkdir(exist_ok=True)
    tag = datasets._scale_tag(scale)
    out = {}
    for layout in layouts:
        for q in queries:
            src = paths[layout]["tiny_rcfmt"] if q == "trivial" else paths[layout]["rcfmt"]
            f = base / f"sf{tag}.{layout}.{q}.arrow"
            if rebuild or not f.exists():
                rows, parts = write_floor(relation_table(src, q, c), f)
            else:
                n = pa.ipc.open_file(pa.memory_map(str(f)))
                rows = sum(n.get_batch(i).num_rows for i in range(n.num_record_batches))
                parts = max(1, min(FLOOR_MAX_PARTITIONS, n.num_record_batches))
            out[(layout, q)] = {"path": str(f), "rows": rows, "partitions": parts}
            print(f"[spark] floor {layout} {q}: {rows:,} rows, {parts} partition(s)", file=sys.stderr, flush=True)
    return out


#: the hand-off columns: (type, source column in lineitem, cast to)
HANDOFF = (("int64", "l_orderkey", None), ("double", "l_extendedprice", "float64"),
           ("date", "l_shipdate", None), ("string (l_comment, 27 B avg)", "l_comment", None),
           ("string (l_shipmode, 4-7 B)", "l_shipmode", None), ("decimal(15,2)", "l_extendedprice", None))


def handoff(spark, scale: float, repeat: int) -> list[dict]:
    """Per column type: the toy source with that one column (all lineitem rows, one
    partition) into Spark's noop sink, minus the same with one row; ns per row."""
    import pyarrow as pa
    from spark_datasource.types import spark_arrow_schema, to_spark_schema

    base = scratch_dir("spark") / "floor"
    base.mkdir(exist_ok=True)
    tag = datasets._scale_tag(scale)
    src = datasets.tpch_lineitem(scale)
    files = []
    for k, (label, col, cast) in enumerate(HANDOFF):
        arr = src.column(col).combine_chunks()
        if cast:
            arr = arr.cast(cast)
        table = pa.table({"x": arr})
        target = spark_arrow_schema(to_spark_schema(table.schema))
        table = table.cast(target)
        full, one = base / f"handoff_sf{tag}.{k}.arrow", base / f"handoff_one.{k}.arrow"
        write_floor(table, full)
        write_floor(table.slice(0, 1), one)
        files.append((label, str(full), str(one), table.num_rows))
    del src
    t = {}

    def noop(path):
        spark.read.format("rcfmt_floor").option("path", path).option("partitions", "1").load() \
            .write.format("noop").mode("overwrite").save()

    for r in range(repeat + 1):  # rounds interleaved, the first a warm-up
        print(f"[spark] hand-off round {r}: load {load_line()}", file=sys.stderr, flush=True)
        for label, full, one, rows in files:
            for key, path in ((label, full), (label + "/1", one)):
                gc.collect()
                t0 = time.perf_counter()
                noop(path)
                if r:
                    t.setdefault(key, []).append(time.perf_counter() - t0)
    out = []
    for label, full, one, rows in files:
        best, best1 = min(t[label]), min(t[label + "/1"])
        out.append({"type": label, "rows": rows, "best_s": best, "one_row_s": best1,
                    "ns_per_row": (best - best1) / rows * 1e9, "times": t[label], "one_row_times": t[label + "/1"]})
    return out


def load_line() -> str:
    la = os.getloadavg()
    return f"{la[0]:.2f} {la[1]:.2f} {la[2]:.2f}"


def run(spark, fmt: str, path: str, q: str, c, floor: dict | None = None, stats_dir: str | None = None):
    if fmt == "parquet":
        spark.read.parquet(path).createOrReplaceTempView("t_parquet")
        return spark.sql(sql(q, c, "t_parquet")).collect()
    if fmt == "floor":
        reader = spark.read.format("rcfmt_floor").option("path", floor["path"]).option("partitions", floor["partitions"])
        if stats_dir is not None:
            reader = reader.option("statsDir", stats_dir)
        reader.load().createOrReplaceTempView("t_floor")
        return spark.sql(sql(q, c, "t_floor", True)).collect()
    reader = spark.read.format("rcfmt")
    if stats_dir is not None:
        reader = reader.option("statsDir", stats_dir)
    if COLUMNS[q] is not ALL_COLUMNS:
        reader = reader.option("columns", ", ".join(COLUMNS[q]))
    if where(q, c) is not None:
        reader = reader.option("filter", where(q, c))
    reader.load(path).createOrReplaceTempView("t_rcfmt")
    return spark.sql(sql(q, c, "t_rcfmt", True)).collect()


ENGINES = ("parquet", "rcfmt", "floor")


PHASES = (("before_schema", "to schema()"), ("schema", "schema()"), ("to_planner", "to planner"),
          ("planner", "planner"), ("to_tasks", "to 1st task"), ("tasks", "tasks (wall)"),
          ("after_tasks", "after tasks"))


def timeline(records: list[dict], t0: float, t1: float) -> dict:
    """The phases of one query (ms) from its statsDir records (:mod:`spark_datasource.timeline`)
    and the driver's wall clock at its start ``t0`` and end ``t1``: Spark's time before
    ``schema()`` runs, ``schema()`` itself, Spark's time until the planner runs, the planner
    (``reader()`` + ``partitions()``), the launch of the first task, the tasks (first start
    to last end), and Spark's time after the last task; with the slowest task's time inside
    the source's generator, the time Spark took between its batches (hand-off), the tasks,
    the Python processes that ran the query's calls and how many of them started during it."""
    by = {}
    for r in records:
        by.setdefault(r["kind"], []).append(r)
    schema, plans, tasks = by.get("schema", []), by.get("plan", []), by.get("task", [])
    s0 = min((r["start"] for r in schema), default=t0)
    s1 = max((r["end"] for r in schema), default=s0)
    p0 = min((r["start"] for r in plans), default=s1)
    p1 = max((r["end"] for r in plans), default=p0)
    k0 = min((r["start"] for r in tasks), default=p1)
    k1 = max((r["end"] for r in tasks), default=k0)
    ms = lambda a, b: (b - a) * 1e3  # noqa: E731
    pids = {r["pid"] for r in records}
    started = {r["pid"] for r in records if r.get("process_start") and r["process_start"] >= t0}
    return {"total": ms(t0, t1), "before_schema": ms(t0, s0), "schema": ms(s0, s1), "to_planner": ms(s1, p0),
            "planner": ms(p0, p1), "to_tasks": ms(p1, k0), "tasks": ms(k0, k1), "after_tasks": ms(k1, t1),
            "slowest_inside": max((r.get("scan_ms", r.get("count_ms", 0.0)) for r in tasks), default=0.0),
            "handoff": max((r.get("handoff_ms", 0.0) for r in tasks), default=0.0), "n_tasks": len(tasks),
            "processes": len(pids), "started": len(started),
            "reader_bytes": max((r.get("reader_bytes", 0) for r in plans), default=0),
            "partition_bytes": max((max(r.get("partition_bytes") or [0]) for r in plans), default=0)}


def breakdown(spark, paths: dict, floors: dict, cases, c, repeat: int) -> list[dict]:
    """Where the time of rcfmt and of the floor goes, per (layout, query): ``repeat`` runs
    of each with ``statsDir``, interleaved; per engine the phases (:func:`timeline`) of
    its run of least wall time."""
    import json
    import tempfile

    out = []
    for layout, q in cases:
        if q == "trivial":
            continue
        best = {}
        for _ in range(repeat):
            for fmt in ("floor", "rcfmt"):
                stats_dir = tempfile.mkdtemp(prefix="rcfmt-breakdown-")
                gc.collect()
                t0, p0 = time.time(), time.perf_counter()
                run(spark, fmt, None if fmt == "floor" else paths[layout][fmt], q, c, floors[(layout, q)], stats_dir)
                wall, t1 = time.perf_counter() - p0, time.time()
                if fmt not in best or wall < best[fmt][0]:
                    records = []
                    for name in sorted(os.listdir(stats_dir)):
                        with open(os.path.join(stats_dir, name)) as fh:
                            records.append(json.load(fh))
                    best[fmt] = (wall, timeline(records, t0, t1))
                shutil.rmtree(stats_dir, ignore_errors=True)
        for fmt in ("floor", "rcfmt"):
            out.append({"layout": layout, "query": q, "engine": fmt, **best[fmt][1]})
        out.append({"layout": layout, "query": q, "engine": "rcfmt - floor",
                    **{k: out[-1][k] - out[-2][k] for k in out[-1] if k not in ("layout", "query", "engine")}})
    return out


def breakdown_table(split: list[dict]) -> str:
    return md_table(["layout", "query", "engine", "total", *[label for _, label in PHASES], "slowest task inside",
                     "its hand-off", "tasks", "processes (new)", "reader / partition pickled"],
                    [[b["layout"], b["query"], b["engine"], f"{b['total']:.0f}",
                      *[f"{b[k]:.0f}" for k, _ in PHASES], f"{b['slowest_inside']:.0f}", f"{b['handoff']:.0f}",
                      f"{b['n_tasks']:+d}" if b["engine"].endswith("floor") and "-" in b["engine"] else b["n_tasks"],
                      f"{b['processes']} ({b['started']})",
                      f"{b['reader_bytes']:,} / {b['partition_bytes']:,} B" if b["engine"] == "rcfmt" else ""]
                     for b in split])


def cold_start(args, cases, floors: dict, paths: dict, c) -> list[dict]:
    """The first query of a new Spark session (a new process: the JVM, its Python workers
    and their imports all start cold) against a warm one, for rcfmt and the floor: per
    engine and query, fresh ``python bench_spark.py --cold-one ...`` processes (two per
    engine, alternating) time their first and then their second run of the query."""
    import json
    import subprocess

    # (as a user runs it: Python writes and reuses its bytecode caches)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out = []
    for layout, q in cases:
        best: dict = {}
        for _ in range(2):  # the engines alternate; the least first-query time of two processes each
            for fmt in ("floor", "rcfmt"):
                proc = subprocess.run([sys.executable, __file__, "--cold-one", f"{fmt}:{layout}:{q}", "--scale",
                                       str(args.scale), "--driver-memory", args.driver_memory],
                                      capture_output=True, text=True, check=True, env=env)
                first, warm = json.loads(proc.stdout.strip().splitlines()[-1])
                if fmt not in best or first < best[fmt][0]:
                    best[fmt] = (first, warm)
        for fmt in ("floor", "rcfmt"):
            first, warm = best[fmt]
            out.append({"layout": layout, "query": q, "engine": fmt, "first_ms": first * 1e3, "warm_ms": warm * 1e3})
    return out


def cold_one(spec: str, args) -> None:
    """``--cold-one fmt:layout:query``: in this new process, a session, then the query
    twice; prints ``[first, second]`` seconds (the session's start is not counted)."""
    import json

    fmt, layout, q = spec.split(":")
    table = datasets.tpch_lineitem(args.scale)
    c = bench_peers.choose_constants(table)
    del table
    spark = session(args.driver_memory)
    spark.dataSource.register(_floor_source())
    tag = datasets._scale_tag(args.scale)
    base = scratch_dir("spark")
    path = str(base / f"lineitem_sf{tag}.{layout}.rcfmt")
    floor = None
    if fmt == "floor":
        import pyarrow as pa

        f = base / "floor" / f"sf{tag}.{layout}.{q}.arrow"
        n = pa.ipc.open_file(pa.memory_map(str(f))).num_record_batches
        floor = {"path": str(f), "partitions": max(1, min(FLOOR_MAX_PARTITIONS, n))}
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        run(spark, fmt, path, q, c, floor)
        times.append(time.perf_counter() - t0)
    spark.stop()
    print(json.dumps(times))


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scale", type=float, default=1.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--layouts", default=",".join(LAYOUTS))
    ap.add_argument("--queries", default=",".join(QUERIES))
    ap.add_argument("--rebuild", action="store_true", help="rewrite the Spark-written files and the floor files")
    ap.add_argument("--handoff", action="store_true", help="also measure the per-row hand-off cost by column type")
    ap.add_argument("--writes", type=int, default=0, metavar="N",
                    help="also time N interleaved Spark writes of the natural layout, Parquet and rcfmt")
    ap.add_argument("--breakdown", type=int, default=0, metavar="N",
                    help="also run rcfmt N more times per query with statsDir: where its time goes "
                         "(planner, slowest task, the rest) against the floor's")
    ap.add_argument("--cold", action="store_true",
                    help="also time the first query of a new session against a warm one (a process per run)")
    ap.add_argument("--cold-one", help=argparse.SUPPRESS)
    ap.add_argument("--driver-memory", default="6g")
    ap.add_argument("--out", default="spark")
    args = ap.parse_args(argv)
    if args.cold_one:
        cold_one(args.cold_one, args)
        return 0
    warn = busy_warning()
    if warn:
        print(warn, file=sys.stderr)
    load_start = load_line()
    table = datasets.tpch_lineitem(args.scale)
    c = bench_peers.choose_constants(table)
    del table
    spark = session(args.driver_memory)
    spark.dataSource.register(_floor_source())
    spark.dataSource.register(_floor_sink())
    import pyspark

    layouts = [x for x in args.layouts.split(",") if x]
    queries = [x for x in args.queries.split(",") if x]
    paths = build(spark, datasets.tpch_lineitem(args.scale), args.scale, args.rebuild)
    floors = prepare_floors(paths, layouts, queries, c, args.scale, args.rebuild)
    cases = [(layout, q) for layout in layouts for q in queries]
    times: dict = {}
    summaries: dict = {}
    loads = []
    for r in range(args.repeat + 1):  # round 0 warms up
        loads.append(load_line())
        print(f"[spark] round {r}{' (warm-up)' if r == 0 else ''}: load {loads[-1]}", file=sys.stderr, flush=True)
        for layout, q in cases:
            p = paths[layout]
            for fmt in ENGINES:
                path = None if fmt == "floor" else p[f"tiny_{fmt}"] if q == "trivial" else p[fmt]
                gc.collect()
                gc.disable()
                try:
                    t0 = time.perf_counter()
                    res = run(spark, fmt, path, q, c, floors[(layout, q)])
                    elapsed = time.perf_counter() - t0
                finally:
                    gc.enable()
                summaries[(layout, q, fmt)] = summary(q, res)
                if r:
                    times.setdefault((layout, q, fmt), []).append(elapsed)
    split = breakdown(spark, paths, floors, cases, c, args.breakdown) if args.breakdown else []
    hand = handoff(spark, args.scale, args.repeat) if args.handoff else []
    writes = time_writes(spark, args.scale, args.writes) if args.writes else {}
    loads.append(load_line())
    spark.stop()
    cold = cold_start(args, [x for x in cases if x[1] != "trivial"], floors, paths, c) if args.cold else []
    results, rows, ok = [], [], True
    for layout, q in cases:
        tp, tr, tf = (Timing(times[(layout, q, f)]) for f in ENGINES)
        same = summaries[(layout, q, "parquet")] == summaries[(layout, q, "rcfmt")] == summaries[(layout, q, "floor")]
        ok &= same
        fl = floors[(layout, q)]
        results.append({"layout": layout, "query": q, "parquet": tp.to_dict(), "rcfmt": tr.to_dict(),
                        "floor": tf.to_dict(), "rcfmt_over_parquet": tr.best / tp.best,
                        "rcfmt_over_floor": tr.best / tf.best, "floor_over_parquet": tf.best / tp.best,
                        "relation_rows": fl["rows"], "floor_partitions": fl["partitions"], "same_result": same})
        rows.append([layout, q, f"{fl['rows']:,}", fmt_seconds(tp.best), fmt_seconds(tf.best), fmt_seconds(tr.best),
                     f"{tr.best / tf.best:.2f}x", f"{tr.best / tp.best:.2f}x", f"{tf.best / tp.best:.2f}x",
                     "ok" if same else "MISMATCH"])
    print(machine_line())
    print(f"pyspark {pyspark.__version__}, local[2], scale {args.scale}, best of {args.repeat} interleaved rounds "
          f"after a warm-up; load average (1/5/15 min) at start {load_start}, per round {' | '.join(loads)}")
    print()
    print(md_table(["layout", "query", "rows to Spark", "Spark Parquet", "floor (toy source)", "rcfmt",
                    "rcfmt / floor", "rcfmt / Parquet", "floor / Parquet", "result"], rows))
    print()
    if split:
        print(breakdown_table(split))
        print()
    if cold:
        floor_first = {(x["layout"], x["query"]): x["first_ms"] for x in cold if x["engine"] == "floor"}
        print(md_table(["layout", "query", "engine", "first query of a session", "second", "first / second",
                        "first - the floor's first"],
                       [[x["layout"], x["query"], x["engine"], f"{x['first_ms']:.0f} ms", f"{x['warm_ms']:.0f} ms",
                         f"{x['first_ms'] / x['warm_ms']:.2f}x",
                         f"{x['first_ms'] - floor_first[(x['layout'], x['query'])]:+.0f} ms"] for x in cold]))
        print()
    if hand:
        print(md_table(["column type", "rows", "one column into noop", "same, 1 row", "hand-off ns/row"],
                       [[h["type"], f"{h['rows']:,}", fmt_seconds(h["best_s"]), fmt_seconds(h["one_row_s"]),
                         f"{h['ns_per_row']:.0f}"] for h in hand]))
        print()
    print(md_table(["layout", "Parquet size", "rcfmt size", "Parquet write", "rcfmt write"],
                   [[lay, fmt_bytes(paths[lay]["parquet_bytes"]), fmt_bytes(paths[lay]["rcfmt_bytes"]),
                     fmt_seconds(paths[lay].get("parquet_write_s")), fmt_seconds(paths[lay].get("rcfmt_write_s"))]
                    for lay in layouts]))
    if writes:
        t = {w: Timing(writes["seconds"][w]) for w in WRITERS}
        cpu = {w: sorted(writes["cpu_seconds"][w])[len(writes["cpu_seconds"][w]) // 2] for w in WRITERS}
        print(md_table(["Spark write, natural", "Parquet", "floor (Python sink)", "rcfmt", "rcfmt / Parquet",
                        "floor / Parquet", "rcfmt / floor"],
                       [[k, *[fmt_seconds(getattr(t[w], k)) for w in WRITERS],
                         f"{getattr(t['rcfmt'], k) / getattr(t['parquet'], k):.2f}x",
                         f"{getattr(t['floor'], k) / getattr(t['parquet'], k):.2f}x",
                         f"{getattr(t['rcfmt'], k) / getattr(t['floor'], k):.2f}x"] for k in ("best", "median")]
                       + [["CPU-s (median)", *[f"{cpu[w]:.1f}" for w in WRITERS],
                           f"{cpu['rcfmt'] / cpu['parquet']:.2f}x", f"{cpu['floor'] / cpu['parquet']:.2f}x",
                           f"{cpu['rcfmt'] / cpu['floor']:.2f}x"]]))
        print()
    write_json(args.out, {"writes": writes, "machine": machine_info(), "pyspark": pyspark.__version__, "scale": args.scale,
                          "files": paths, "floors": {f"{k[0]}/{k[1]}": v for k, v in floors.items()},
                          "loads": loads, "results": results, "handoff": hand, "breakdown": split, "cold": cold}, args)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
