"""Kill-anywhere crash safety: SIGKILL a write, commit, optimize or vacuum at random points
and check that nothing is lost, duplicated or half visible.

A *kill point* is the N-th Python or C function call the operation makes (counted by a
profile hook in the writing process and in the threads it starts), so points cover
everything from encoding to ``fsync``, ``os.replace`` and ``os.link``; a seed makes the
set of points repeatable (up to the interleaving of the writer's threads). Each point
runs in a process forked from a server that imported rcfmt and never wrote anything,
so a point costs milliseconds, not an interpreter start.

After every kill:

- ``delete`` and ``merge`` (deletion vectors forced into a deletion file) likewise:
  the old or the new rows, and after a vacuum exactly the deletion files the latest
  version names;
- ``write_table``: the target path holds the old file or the new one, complete and
  valid; no other visible file;
- ``first_write`` (into an empty directory) / ``append`` / ``overwrite`` / ``optimize`` /
  ``vacuum`` on a dataset: it opens at its old
  or its new version and holds exactly the old or the new rows (as a multiset: none lost,
  none duplicated); a ``vacuum(retention_seconds=0)`` (no write running) afterwards leaves exactly the data
  files the latest version references, no staging or tmp leftovers, and the same rows.

    python fuzz/kill_anywhere.py --points 200 --seed 1      # every operation, 200 points each

The test suite runs a bounded number of points (tests/test_kill_anywhere.py).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OPERATIONS = ("write_table", "first_write", "append", "overwrite", "optimize", "vacuum", "delete", "merge")

# The server: reads "op root point" lines; forks a child per line that runs the operation
# with a profile hook killing itself at call number `point` (0: never; report the count).
SERVER = textwrap.dedent("""
    import os, signal, sys, threading
    import numpy as np, pyarrow as pa
    import rcfmt
    from rcfmt.dataset.dataset import vacuum
    sys.path.insert(0, sys.argv[1])
    from kill_anywhere import DELETED, merge_source, new_table
    import rcfmt.dataset.deletions
    rcfmt.dataset.deletions.INLINE_MAX = 8  # vectors go to a deletion file: its write is killed too

    def operation(op, root):
        if op == "write_table":
            rcfmt.write_table(new_table(), os.path.join(root, "t.rcfmt"), block_rows=64, page_rows=16)
        elif op in ("append", "overwrite", "first_write"):
            mode = "append" if op == "first_write" else op
            rcfmt.write_dataset(new_table(), root, mode=mode, partition_by=["p"], target_file_rows=80, block_rows=40)
        elif op == "optimize":
            rcfmt.dataset(root).optimize(["x"], target_file_rows=150, block_rows=50)
        elif op == "vacuum":
            vacuum(root, retention_seconds=0, enforce_retention_duration=False)
        elif op == "delete":
            rcfmt.dataset(root).delete(rcfmt.col("x").isin(DELETED))
        elif op == "merge":
            rcfmt.dataset(root).merge(merge_source(), on="x")

    for line in sys.stdin:
        op, root, point = line.split()
        point = int(point)
        pid = os.fork()
        if pid == 0:
            count = 0

            def hook(frame, event, arg):
                global count
                if event == "call" or event == "c_call":
                    count += 1
                    if count == point:
                        os.kill(os.getpid(), signal.SIGKILL)

            threading.setprofile(hook)
            sys.setprofile(hook)
            try:
                operation(op, root)
            except BaseException as exc:
                sys.setprofile(None)
                sys.stdout.write(f"error {type(exc).__name__}: {exc}\\n")
                sys.stdout.flush()
                os._exit(3)
            sys.setprofile(None)
            sys.stdout.write(f"done {count}\\n")
            sys.stdout.flush()
            os._exit(0)
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            sys.stdout.write(f"killed {os.WTERMSIG(status)}\\n")
        sys.stdout.write("end\\n")
        sys.stdout.flush()
""")


def old_table():
    import pyarrow as pa

    n = 300
    return pa.table({"x": np.arange(n, dtype=np.int64), "s": [f"old{i % 17}" for i in range(n)],
                     "p": [f"a{i % 3}" for i in range(n)]})


def new_table():
    import pyarrow as pa

    n = 200
    return pa.table({"x": np.arange(1000, 1000 + n, dtype=np.int64), "s": [f"new{i % 11}" for i in range(n)],
                     "p": [f"a{i % 4}" for i in range(n)]})


#: the rows ``delete`` deletes (scattered: every partition's files get a vector)
DELETED = list(range(0, 300, 3))


def merge_source():
    """What ``merge`` upserts: 40 rows matching old ones (x < 80, even), 20 new ones."""
    import pyarrow as pa

    x = list(range(0, 80, 2)) + list(range(5000, 5020))
    return pa.table({"x": pa.array(x, pa.int64()), "s": [f"merged{i % 7}" for i in range(len(x))],
                     "p": [f"a{i % 3}" for i in range(len(x))]})


def _rows(table) -> list:
    """The rows as a sorted list of tuples (a multiset)."""
    if table.num_rows == 0:
        return []
    cols = [table.column(n).to_pylist() for n in ("x", "s", "p")]
    return sorted(zip(*cols))


def make_template(op: str, work: Path) -> tuple[Path, list, list]:
    """The state an operation starts from, and the rows before and after it."""
    import pyarrow as pa

    import rcfmt

    root = work / f"template-{op}"
    root.mkdir()
    old, new = old_table(), new_table()
    if op == "write_table":
        rcfmt.write_table(old, root / "t.rcfmt", block_rows=64)
        return root, _rows(old), _rows(new)
    if op == "first_write":  # an empty directory: the first commit creates the dataset
        return root, [], _rows(new)
    rcfmt.write_dataset(old, root, partition_by=["p"], target_file_rows=80, block_rows=40)
    if op == "append":
        return root, _rows(old), _rows(pa.concat_tables([old, new]))
    if op == "overwrite":
        return root, _rows(old), _rows(new)
    if op == "optimize":
        return root, _rows(old), _rows(old)
    if op == "delete":
        kept = old.filter(pa.array([x not in set(DELETED) for x in old.column("x").to_pylist()]))
        return root, _rows(old), _rows(kept)
    if op == "merge":
        src = merge_source()
        hit = set(src.column("x").to_pylist())
        kept = old.filter(pa.array([x not in hit for x in old.column("x").to_pylist()]))
        return root, _rows(old), _rows(pa.concat_tables([kept, src]))
    # vacuum: versions to drop, files no version references, staging leftovers
    rcfmt.write_dataset(new, root, mode="append")
    rcfmt.write_dataset(old, root, mode="overwrite", partition_by=["p"], target_file_rows=80)
    leftover = root / "_rcfmt" / "_staging" / "crashed-writer"
    leftover.mkdir(parents=True)
    rcfmt.write_table(new, leftover / "part-x.rcfmt")
    past = time.time() - 10
    for p in root.rglob("*"):
        os.utime(p, (past, past))
    return root, _rows(old), _rows(old)


def check(op: str, root: Path, before: list, after: list) -> str | None:
    """What is wrong with the state a killed operation left (None: nothing)."""
    import rcfmt
    from rcfmt.dataset.dataset import vacuum
    from rcfmt.dataset.log import staging_root, tmp_dir

    try:
        if op == "write_table":
            visible = sorted(p.name for p in root.iterdir() if not p.name.startswith("."))
            if visible != ["t.rcfmt"]:
                return f"visible files {visible}"
            rows = _rows(rcfmt.read_table(root / "t.rcfmt"))
            return None if rows in (before, after) else "file holds neither the old nor the new rows"
        ds = rcfmt.dataset(root)
        rows = _rows(ds.to_table())
        if rows not in (before, after):
            return f"dataset at version {ds.version} holds {len(rows)} rows: neither old ({len(before)}) " \
                   f"nor new ({len(after)})"
        vacuum(root, retention_seconds=0, enforce_retention_duration=False)
        ds = rcfmt.dataset(root)
        if _rows(ds.to_table()) != rows:
            return "vacuum changed the rows"
        referenced = {os.path.normpath(os.path.join(str(root), f.path)) for f in ds.files}
        on_disk = {os.path.normpath(str(p)) for p in root.rglob("*.rcfmt")
                   if "_rcfmt" not in p.relative_to(root).parts and not p.name.startswith((".", "_"))}
        if on_disk != referenced:
            return f"after vacuum: {len(on_disk - referenced)} unreferenced, {len(referenced - on_disk)} missing"
        for area in (staging_root(str(root)), tmp_dir(str(root))):
            if os.path.isdir(area) and os.listdir(area):
                return f"after vacuum {area} still holds {os.listdir(area)}"
        named = {v.path.rsplit("/", 1)[-1] for v in ds._snap.vectors() if v is not None and v.path is not None}
        deletions = root / "_rcfmt" / "deletions"
        kept = set(os.listdir(deletions)) if deletions.is_dir() else set()
        if kept != named:
            return f"after vacuum the deletion files are {sorted(kept)}, the version names {sorted(named)}"
    except rcfmt.RcfmtError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


class Server:
    """The fork server (a child process that imported rcfmt and never writes)."""

    def __init__(self):
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER, str(Path(__file__).parent)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=ROOT, env=env)

    def run(self, op: str, root: Path, point: int) -> list[str]:
        self.proc.stdin.write(f"{op} {root} {point}\n")
        self.proc.stdin.flush()
        lines = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("kill-anywhere server died")
            if line.strip() == "end":
                return lines
            lines.append(line.strip())

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def run(operations=OPERATIONS, points: int = 200, seed: int = 0) -> dict:
    """Kill each operation at ``points`` random points; returns counts and failures."""
    rng = np.random.default_rng(seed)
    failures, counts = [], {}
    started = time.perf_counter()
    server = Server()
    try:
        with tempfile.TemporaryDirectory() as d:
            work = Path(d)
            for op in operations:
                template, before, after = make_template(op, work)
                trial = work / f"calibrate-{op}"
                shutil.copytree(template, trial)
                out = server.run(op, trial, 0)
                if not out or not out[0].startswith("done"):
                    raise RuntimeError(f"{op} fails without a kill: {out}")
                calls = int(out[0].split()[1])
                problem = check(op, trial, after, after)  # a whole run: the new state
                if problem:
                    failures.append(f"{op} without a kill: {problem}")
                shutil.rmtree(trial)
                killed = finished = 0
                for k, point in enumerate(sorted(rng.integers(1, calls + 1, size=points))):
                    trial = work / f"{op}-{k}"
                    shutil.copytree(template, trial)
                    out = server.run(op, trial, int(point))
                    if out and out[0].startswith("error"):
                        failures.append(f"{op} at call {point}: raised {out[0]}")
                    killed += any(line.startswith("killed") for line in out)
                    finished += any(line.startswith("done") for line in out)
                    problem = check(op, trial, before, after)
                    if problem:
                        failures.append(f"{op} killed at call {point} of {calls}: {problem}")
                    shutil.rmtree(trial, ignore_errors=True)
                counts[op] = {"calls": calls, "points": points, "killed": killed, "finished": finished}
    finally:
        server.close()
    return {"counts": counts, "failures": failures, "seconds": round(time.perf_counter() - started, 1)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--points", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ops", default=",".join(OPERATIONS))
    args = ap.parse_args()
    result = run(args.ops.split(","), args.points, args.seed)
    for op, c in result["counts"].items():
        print(f"{op:12s} {c['points']} points over {c['calls']} calls: {c['killed']} killed, {c['finished']} finished")
    for line in result["failures"]:
        print("FAIL", line)
    print(f"{sum(c['points'] for c in result['counts'].values())} kill points in {result['seconds']} s, "
          f"{len(result['failures'])} failures (seed {args.seed})")
    sys.exit(1 if result["failures"] else 0)


if __name__ == "__main__":
    main()
