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

from .floor_source import LOOKUP_BLOCK_ROWS as BLOCK_ROWS  # noqa: E402
from .floor_source import LOOKUP_KEY, floor_source, make_lookup, records, run_lookup  # noqa: E402
from spark_sample import stats_records  # noqa: E402

#: modules no read path of the Spark source needs (pandas is pyspark's own: its workers
#: import it, so it is told apart by comparing with the floor source)
NEVER = {"polars", "duckdb", "hypothesis", "boto3", "botocore", "azure", "google", "fsspec", "s3fs", "pytest",
         "pyroaring", "lance", "vortex", "deltalake", "matplotlib", "zstandard", "lz4",
         # (the relation filter `k = ...` is parsed by rcfmt itself: sqlglot's import is 0.15 s)
         "sqlglot"}
#: third-party modules a task of the rcfmt source may import beyond the floor source's
#: (rcfmt itself and the footer's JSON parser; numpy and pyarrow the floor has already)
TASK_MAY_ADD = {"rcfmt", "orjson"}


@pytest.fixture(scope="module")
def lookup(spark, tmp_path_factory):
    """A sorted-key dataset of 3 files, and the floor's Arrow file of one key's rows."""
    spark.dataSource.register(floor_source())
    return make_lookup(str(tmp_path_factory.mktemp("overhead")))


WANT = [(LOOKUP_KEY, LOOKUP_KEY % 97, f"row-{LOOKUP_KEY}")]


def _run_both(spark, lookup, tmp_path, runs=2):
    """The lookup through rcfmt (relation filter) and through the floor, ``runs`` times
    each (the last counts: workers warm); their timeline records."""
    path, floor = lookup
    out = {}
    for r in range(runs):
        for engine in ("floor", "rcfmt"):
            d = str(tmp_path / f"{engine}-{r}")
            assert run_lookup(spark, engine, path, floor, d) == WANT
            out[engine] = records(d)
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


def test_a_lookup_on_a_bloom_filtered_key_is_one_task_on_its_block(spark, tmp_path):
    """Keys interleaved across blocks (every block's statistics span the whole range, so
    footers prune nothing): planning asks the bloom filters of the blocks the statistics
    keep and plans one task on the one block holding the key."""
    import numpy as np

    import rcfmt

    blocks, rows = 12, 4096
    keys = np.arange(blocks * rows).reshape(rows, blocks).T.ravel()
    path = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"k": keys, "v": keys % 1000}), path, block_rows=rows,
                        bloom_filter_columns=["k"])
    d = str(tmp_path / "stats")
    got = spark.read.format("rcfmt").option("filter", "k = 30001").option("statsDir", d).load(path).collect()
    assert [(r["k"], r["v"]) for r in got] == [(30001, 1)]
    (plan,) = stats_records(d, "plan")
    (task,) = stats_records(d, "task")
    assert plan["partitions"] == 1 and plan["blocks_pruned_planning"] == blocks - 1
    assert task["stats"]["blocks_total"] == 1 and task["rows"] == 1


def test_the_pickled_reader_and_partitions_stay_small(spark, lookup, tmp_path):
    """What Spark ships to every task: the reader (schema, options, the parsed filter)
    and one partition (fragments): no index, no footer, no dataset object."""
    rc = _run_both(spark, lookup, tmp_path, runs=1)["rcfmt"]
    (plan,) = rc["plan"]
    assert plan["reader_bytes"] < 8_000
    assert max(plan["partition_bytes"]) < 2_000


def test_the_spark_path_imports_nothing_the_query_does_not_use(tmp_path):
    """In a new Spark session (a fresh interpreter: workers that ran nothing before), a
    lookup's task imports no third-party module the floor source's task lacks beyond
    rcfmt and its footer parser, and no call of the query (schema, planner, task) imports
    a DataFrame library, a cloud SDK for a local path, the Python codec modules (the page
    pipeline calls their C libraries) or a test tool."""
    import json
    import subprocess

    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "floor_source.py")
    done = subprocess.run([sys.executable, probe, str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    rc, fl = got["rcfmt"], got["floor"]
    assert [tuple(r) for r in rc["rows"]] == [tuple(r) for r in fl["rows"]] == WANT
    for record in rc["records"]["task"] + rc["records"]["plan"] + rc["records"]["schema"]:
        loaded = set(record["modules"])
        assert not loaded & NEVER, (record["kind"], sorted(loaded & NEVER))
    floor_task = set(fl["records"]["task"][0]["modules"])
    extra = {m for m in set(rc["records"]["task"][0]["modules"]) - floor_task - TASK_MAY_ADD
             if m not in sys.stdlib_module_names and not m.startswith("_cython")}
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
