"""What every object store that commits datasets must show, run by the S3 and GCS
suites on their own servers: ``names()`` lists the objects under the dataset's root."""
from __future__ import annotations

import pyarrow as pa
import pytest

import rcfmt

__all__ = ["check_a_failed_write_leaves_nothing", "check_a_lost_race_rebases_and_an_overwrite_conflicts",
           "check_appends_from_threads_lose_no_row"]


def _sorted(t: pa.Table) -> pa.Table:
    return t.sort_by([("id", "ascending")]).select(sorted(t.column_names))


def check_a_failed_write_leaves_nothing(uri: str, table: pa.Table, names) -> None:
    """A write whose source fails midway deletes the data objects it uploaded and
    commits no version."""
    rcfmt.write_dataset(table, uri)
    before = names()

    def batches():
        yield table.slice(0, 3000)
        raise RuntimeError("source failed")

    with pytest.raises(RuntimeError, match="source failed"):
        rcfmt.write_dataset(batches(), uri, target_file_rows=1000)
    assert names() == before and rcfmt.dataset(uri).version == 1


def check_a_lost_race_rebases_and_an_overwrite_conflicts(uri: str, table: pa.Table, names, monkeypatch) -> None:
    """Two appends built on version 1: the one that loses the conditional create of
    version 2 on the server re-reads and commits version 3 with both writers' rows; an
    overwrite that lost its base raises CommitConflictError and leaves no data object."""
    from rcfmt.dataset import log
    from rcfmt.dataset.writer import begin_write, commit

    rcfmt.write_dataset(table.slice(0, 100), uri)
    real_latest, real_publish = log.latest_version, log.publish_remote_version
    calls = {"n": 0, "inside": False}
    publishes = []

    def stale_at_commit(root):
        calls["n"] += 1
        if calls["n"] == 2 and not calls["inside"]:  # this writer's first commit attempt
            calls["inside"] = True
            rcfmt.write_dataset(table.slice(100, 100), uri)  # another writer commits version 2 ...
            calls["inside"] = False
            return 1  # ... which this one has not seen: it tries version 2 too
        return real_latest(root)

    def recording(root, version, data):
        publishes.append((version, real_publish(root, version, data)))
        return publishes[-1][1]

    monkeypatch.setattr(log, "latest_version", stale_at_commit)
    monkeypatch.setattr(log, "publish_remote_version", recording)
    ds = rcfmt.write_dataset(table.slice(200, 100), uri)
    monkeypatch.setattr(log, "latest_version", real_latest)
    assert (2, False) in publishes and publishes[-1] == (3, True)  # refused by the server, then rebased
    assert ds.version == 3 and ds.info["parent_version"] == 2
    assert _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(table.slice(0, 300)))
    before = names()
    plan = begin_write(uri, table.schema, mode="overwrite")
    rcfmt.write_dataset(table.slice(0, 5), uri)  # version 4 meanwhile
    with pytest.raises(rcfmt.CommitConflictError):
        commit(uri, [], mode="overwrite", read_version=plan.read_version, data_schema=plan.data_schema,
               partitioning=plan.partitioning, txn_id="x")
    assert len(names()) == len(before) + 2  # version 4 and its file; nothing of the loser


def check_appends_from_threads_lose_no_row(uri: str, table: pa.Table, pieces: int, threads: int) -> None:
    """Appends of ``pieces`` slices of 1000 rows from ``threads`` threads at once: every
    version is a complete snapshot and no row is lost (each lost create rebased and
    retried)."""
    from concurrent.futures import ThreadPoolExecutor

    slices = [table.slice(i * 1000, 1000) for i in range(pieces)]
    with ThreadPoolExecutor(threads) as pool:
        versions = list(pool.map(lambda piece: rcfmt.write_dataset(piece, uri).version, slices))
    assert sorted(versions) == list(range(1, pieces + 1))
    assert _sorted(rcfmt.dataset(uri).to_table()).equals(_sorted(table.slice(0, pieces * 1000)))
