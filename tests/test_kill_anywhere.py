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
    result = kill_anywhere.run(points=30, seed=20261124)
    assert not result["failures"], "\n".join(result["failures"][:10])
    for op, counts in result["counts"].items():
        assert counts["points"] == 30
        assert counts["killed"] >= 25, (op, counts)  # the points fall inside the operation


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
