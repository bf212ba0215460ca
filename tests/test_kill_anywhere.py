"""Kill-anywhere crash safety (fuzz/kill_anywhere.py): writes, appends, overwrites,
optimize and vacuum SIGKILLed at random points leave the old or the new state, never a
mix, a loss or a duplicate; run long campaigns with ``--points N``."""
from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fuzz"))

import kill_anywhere  # noqa: E402


def test_killed_operations_leave_the_old_or_the_new_state():
    """Every operation killed at 10 random calls (a fixed seed) leaves the old or the new
    state; nearly all points fall inside the operation (a point past the calls a run
    makes, which varies with the interleaving of the writer's threads, finishes instead
    of being killed). Longer campaigns: ``python fuzz/kill_anywhere.py --points N``."""
    points = 10
    result = kill_anywhere.run(points=points, seed=20261124)
    assert not result["failures"], "\n".join(result["failures"][:10])
    assert sorted(result["counts"]) == sorted(kill_anywhere.OPERATIONS)
    for op, counts in result["counts"].items():
        assert counts["points"] == points
        assert counts["killed"] >= 8, (op, counts)  # the points fall inside the operation


def test_the_checker_sees_a_half_written_file_and_lost_rows(tmp_path):
    """The invariants the campaign relies on can fail."""
    root, before, after = kill_anywhere.make_template("write_table", tmp_path)
    data = (root / "t.rcfmt").read_bytes()
    (root / "t.rcfmt").write_bytes(data[: len(data) // 2])
    assert "CorruptFileError" in kill_anywhere.check("write_table", root, before, after)
    (root / "t.rcfmt").write_bytes(data)
    (root / "t.rcfmt.partial").write_bytes(b"")
    assert "visible files" in kill_anywhere.check("write_table", root, before, after)

    root, before, after = kill_anywhere.make_template("append", tmp_path)
    import rcfmt

    rcfmt.write_dataset(pa.table({"x": [1], "s": ["dup"], "p": ["a0"]}), root, mode="append")
    assert "neither old" in kill_anywhere.check("append", root, before, after)


def test_the_checker_sees_a_partial_delete_and_a_stray_deletion_file(tmp_path):
    """A delete that landed for some rows only, and a deletion file no version names
    left after a vacuum, are both failures."""
    import rcfmt

    root, before, after = kill_anywhere.make_template("delete", tmp_path)
    rcfmt.dataset(root).delete(rcfmt.col("x").isin(kill_anywhere.DELETED[:10]))
    assert "neither old" in kill_anywhere.check("delete", root, before, after)
    root, before, after = kill_anywhere.make_template("merge", tmp_path)
    (root / "_rcfmt" / "deletions").mkdir(parents=True)
    (root / "_rcfmt" / "deletions" / "dv-stray.rcdv").write_bytes(b"RCDV")
    import os
    import time

    past = time.time() + 10  # (not older than a retention of 0 seconds: vacuum keeps it)
    os.utime(root / "_rcfmt" / "deletions" / "dv-stray.rcdv", (past, past))
    assert "deletion files" in kill_anywhere.check("merge", root, before, before)
