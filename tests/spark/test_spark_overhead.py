"""What a Spark query costs rcfmt above any Python source, counted (not timed): tasks and
Python processes against a floor source that yields the same rows from an Arrow file,
and the modules the query's path imports (issue 58). Both sources write their timeline
records (:mod:`spark_datasource.timeline`) under ``statsDir``."""
from __future__ import annotations

import os
import sys

import pyarrow as pa
import pytest

pytest.importorskip("pyspark")

import rcfmt  # noqa: E402
from spark_sample import stats_records  # noqa: E402

ROWS = 40_000
BLOCK_ROWS = 4096

#: modules no read path of the Spark source needs (pandas is pyspark's own: its workers
#: import it, so it is told apart by comparing with the floor source)
NEVER = {"polars", "duckdb", "hypothesis", "boto3", "botocore", "azure", "google", "fsspec", "s3fs", "pytest",
         "pyroaring", "lance", "vortex", "deltalake", "matplotlib", "zstandard", "lz4"}
#: third-party modules a task of the rcfmt source may import beyond the floor source's
#: (rcfmt itself and the footer's JSON parser; numpy and pyarrow the floor has already)
TASK_MAY_ADD = {"rcfmt", "orjson"}


def _floor_source():
    """The floor: a toy source yielding an Arrow IPC file's batches, one task per
    ``partitions``, writing the same timeline records as rcfmt's source (defined in a
    function: cloudpickle ships it to the workers by value)."""
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    class FloorReader(DataSourceReader):
        def __init__(self, path, n, stats_dir):
            import time

            self.opened_at = time.time()
            self.path, self.n, self.stats_dir = path, n, stats_dir

        def partitions(self):
            import time

            from spark_datasource.timeline import process_info, write_record

            write_record(self.stats_dir, "plan", {"start": self.opened_at, "end": time.time(), "partitions": self.n,
                                                  **process_info()})
            return [InputPartition(i) for i in range(self.n)]

        def read(self, partition):
            import time

            import pyarrow as pa

            from spark_datasource.timeline import process_info, write_record

            started = time.time()
            reader = pa.ipc.open_file(pa.memory_map(self.path))
            k = reader.num_record_batches
            for i in range(k * partition.value // self.n, k * (partition.value + 1) // self.n):
                yield reader.get_batch(i)
            write_record(self.stats_dir, "task", {"start": started, "end": time.time(), **process_info()})

    class FloorSource(DataSource):
        @classmethod
        def name(cls):
            return "rcfmt_test_floor"

        def schema(self):
            import time

            import pyarrow as pa
            from pyspark.sql.pandas.types import from_arrow_schema

            from spark_datasource.timeline import process_info, write_record

            started = time.time()
            out = from_arrow_schema(pa.ipc.open_file(pa.memory_map(self.options["path"])).schema)
            write_record(self.options["statsDir"], "schema", {"start": started, "end": time.time(), **process_info()})
            return out

        def reader(self, schema):
            return FloorReader(self.options["path"], int(self.options["partitions"]), self.options["statsDir"])

    return FloorSource


@pytest.fixture(scope="module")
def lookup(spark, tmp_path_factory):
    """A sorted-key dataset of 3 files, and the floor's Arrow file of one key's rows."""
    base = tmp_path_factory.mktemp("overhead")
    table = pa.table({"k": pa.array(range(ROWS), pa.int64()), "v": pa.array([i % 97 for i in range(ROWS)], pa.int64()),
                      "s": pa.array([f"row-{i}" for i in range(ROWS)])})
    path = str(base / "ds")
    rcfmt.write_dataset(table, path, target_file_rows=ROWS // 3 + 1, block_rows=BLOCK_ROWS)
    floor = str(base / "lookup.arrow")
    with pa.OSFile(floor, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table.slice(12_345, 1))
    spark.dataSource.register(_floor_source())
    return path, floor


def _records(stats_dir):
    return {kind: stats_records(stats_dir, kind) for kind in ("schema", "plan", "task")}


def _run_both(spark, lookup, tmp_path, runs=2):
    """The lookup through rcfmt (relation filter) and through the floor, ``runs`` times
    each (the last counts: workers warm); their timeline records."""
    path, floor = lookup
    out = {}
    for r in range(runs):
        for engine in ("floor", "rcfmt"):
            d = str(tmp_path / f"{engine}-{r}")
            if engine == "rcfmt":
                df = (spark.read.format("rcfmt").option("filter", "k = 12345").option("statsDir", d).load(path))
            else:
                df = (spark.read.format("rcfmt_test_floor").option("path", floor).option("partitions", "1")
                      .option("statsDir", d).load())
            rows = df.collect()
            assert [(x["k"], x["v"], x["s"]) for x in rows] == [(12345, 12345 % 97, "row-12345")]
            out[engine] = _records(d)
    return out


def test_a_lookup_runs_no_more_tasks_or_processes_than_the_floor(spark, lookup, tmp_path):
    """One block answers the lookup: planning gives one task (as the floor's one
    partition), and the query's calls run in no more Python processes than the floor's."""
    got = _run_both(spark, lookup, tmp_path)
    rc, fl = got["rcfmt"], got["floor"]
    (plan,) = rc["plan"]
    assert plan["partitions"] == len(rc["task"]) == 1 == len(fl["task"])
    assert rc["task"][0]["stats"]["blocks_total"] == 1  # the one block planning kept
    rc_pids = {r["pid"] for k in rc.values() for r in k}
    fl_pids = {r["pid"] for k in fl.values() for r in k}
    assert len(rc_pids) <= len(fl_pids)
    assert len(rc["schema"]) == 1 and len(rc["plan"]) == 1


def test_the_pickled_reader_and_partitions_stay_small(spark, lookup, tmp_path):
    """What Spark ships to every task: the reader (schema, options, the parsed filter)
    and one partition (fragments): no index, no footer, no dataset object."""
    rc = _run_both(spark, lookup, tmp_path, runs=1)["rcfmt"]
    (plan,) = rc["plan"]
    assert plan["reader_bytes"] < 8_000
    assert max(plan["partition_bytes"]) < 2_000


def test_the_spark_path_imports_nothing_the_query_does_not_use(spark, lookup, tmp_path):
    """A task of the rcfmt source imports no third-party module the floor source's task
    lacks beyond rcfmt and its footer parser, and no call of the query (schema, planner,
    task) imports a DataFrame library, a cloud SDK for a local path, the Python codec
    modules (the page pipeline calls their C libraries) or a test tool."""
    got = _run_both(spark, lookup, tmp_path)
    rc, fl = got["rcfmt"], got["floor"]
    floor_task = set(fl["task"][0]["modules"])
    for record in rc["task"] + rc["plan"] + rc["schema"]:
        loaded = set(record["modules"])
        assert not loaded & NEVER, (record["kind"], sorted(loaded & NEVER))
    extra = {m for m in set(rc["task"][0]["modules"]) - floor_task - TASK_MAY_ADD
             if m not in sys.stdlib_module_names and not m.startswith("_cython_")}
    assert not extra, sorted(extra)


def test_a_count_with_the_relation_filter_is_counted_by_planning(spark, lookup, tmp_path):
    """count(*) of the relation's rows: planning counts them (from metadata and a count
    scan of the filter column); one task yields the rows and opens no file."""
    path, _ = lookup
    d = str(tmp_path / "count")
    df = spark.read.format("rcfmt").option("filter", "k >= 1000 AND k < 30000").option("columns", "") \
        .option("statsDir", d).load(path)
    assert df.count() == 29_000
    (plan,) = stats_records(d, "plan")
    assert plan["count"]["rows"] == 29_000 and plan["partitions"] == 1
    assert 0 < plan["count"]["stats"]["rows_decoded"] <= 2 * BLOCK_ROWS  # only the two boundary blocks
    (task,) = stats_records(d, "task")
    assert task["rows"] == 29_000 and task["stats"]["blocks_total"] == 0


def test_timeline_records_hold_the_process_and_wall_clock(spark, lookup, tmp_path):
    """Every record says which process ran the call, when it started and the call's wall
    clock span; the spans are in the order Spark runs them."""
    rc = _run_both(spark, lookup, tmp_path, runs=1)["rcfmt"]
    (schema,), (plan,), (task,) = rc["schema"], rc["plan"], rc["task"]
    for r in (schema, plan, task):
        assert r["start"] <= r["end"] and isinstance(r["pid"], int) and isinstance(r["first_call"], bool)
        if os.path.exists("/proc/self/stat"):
            assert r["process_start"] <= r["start"]
    assert schema["end"] <= plan["start"] <= plan["end"] <= task["start"]
