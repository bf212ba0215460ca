"""A floor source for the Spark overhead tests: a toy Python data source that yields an
Arrow IPC file's batches -- what any Python source costs Spark -- writing the same
timeline records as rcfmt's source (:mod:`spark_datasource.timeline`) under its
``statsDir``; and a probe run in a fresh interpreter (``python floor_source.py DIR``):
a new local Spark session runs one lookup through the floor, then through rcfmt, and
prints their records as JSON (what a first query's workers import)."""
from __future__ import annotations

import json
import os
import sys

import pyarrow as pa

LOOKUP_ROWS = 40_000
LOOKUP_BLOCK_ROWS = 4096
LOOKUP_KEY = 12_345


def floor_source():
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


def make_lookup(base: str) -> tuple[str, str]:
    """A sorted-key rcfmt dataset of 3 files under ``base`` and the floor's Arrow file of
    the rows of ``k = LOOKUP_KEY``: (dataset path, Arrow file path)."""
    import rcfmt

    table = pa.table({"k": pa.array(range(LOOKUP_ROWS), pa.int64()),
                      "v": pa.array([i % 97 for i in range(LOOKUP_ROWS)], pa.int64()),
                      "s": pa.array([f"row-{i}" for i in range(LOOKUP_ROWS)])})
    path = os.path.join(base, "ds")
    rcfmt.write_dataset(table, path, target_file_rows=LOOKUP_ROWS // 3 + 1, block_rows=LOOKUP_BLOCK_ROWS)
    floor = os.path.join(base, "lookup.arrow")
    with pa.OSFile(floor, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table.slice(LOOKUP_KEY, 1))
    return path, floor


def records(stats_dir: str) -> dict:
    """The timeline records under ``stats_dir``, by kind."""
    out: dict = {"schema": [], "plan": [], "task": []}
    for name in sorted(os.listdir(stats_dir)):
        with open(os.path.join(stats_dir, name)) as fh:
            r = json.load(fh)
        out[r["kind"]].append(r)
    return out


def run_lookup(spark, engine: str, path: str, floor: str, stats_dir: str) -> list:
    """The lookup through ``engine`` ("rcfmt": the relation filter option; "floor": its
    one-row file, one partition), with ``statsDir``; the rows."""
    if engine == "rcfmt":
        df = spark.read.format("rcfmt").option("filter", f"k = {LOOKUP_KEY}").option("statsDir", stats_dir).load(path)
    else:
        df = (spark.read.format("rcfmt_test_floor").option("path", floor).option("partitions", "1")
              .option("statsDir", stats_dir).load())
    return [(x["k"], x["v"], x["s"]) for x in df.collect()]


def main(base: str) -> None:
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [os.environ.get("PYTHONPATH")])])
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rcfmt-overhead-probe")
             .config("spark.ui.enabled", "false").config("spark.driver.memory", "1g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.dataSource.register(floor_source())
        path, floor = make_lookup(base)
        out = {}
        for engine in ("floor", "rcfmt"):  # (the floor first: a worker it leaves for rcfmt holds its modules)
            d = os.path.join(base, f"stats-{engine}")
            out[engine] = {"rows": run_lookup(spark, engine, path, floor, d), "records": records(d)}
    finally:
        spark.stop()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
