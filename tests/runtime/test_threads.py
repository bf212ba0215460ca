"""rcfmt's thread pools: work submitted once the interpreter is exiting (from an
``atexit`` handler) runs on the calling thread instead of failing."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rcfmt.runtime.threads import InlinePool, thread_pool

ROOT = Path(__file__).resolve().parents[2]

AT_EXIT = textwrap.dedent("""
    import atexit, os, sys
    import numpy as np, pyarrow as pa, pyarrow.compute as pc, rcfmt
    where, warm = sys.argv[1], sys.argv[2] == "warm"
    n = 300_000
    t = pa.table({"k": np.arange(n), "x": np.random.default_rng(1).random(n)})
    if warm:  # pools made before the exit, too (cold: the files were written by the test)
        rcfmt.write_table(t, f"{where}/a.rcfmt", block_rows=65536)
        rcfmt.write_dataset(t, f"{where}/ds", mode="overwrite")
        rcfmt.read_table(f"{where}/a.rcfmt", filter=rcfmt.col("x") < 0.5)
        rcfmt.dataset(f"{where}/ds").delete(rcfmt.col("k") < 5)
        rcfmt.write_table(t, f"{where}/blocks.rcfmt", block_rows=20_000)
        held = iter(rcfmt.open(f"{where}/blocks.rcfmt").scan(filter=rcfmt.col("x") < 0.5).iter_batches())
        first = next(held).num_rows  # (the rest read at exit, on the pool the scan holds)

    def at_exit():
        try:
            want = pc.sum(pc.less(t["x"], 0.5)).as_py()
            if warm:
                assert first + sum(b.num_rows for b in held) == want
            assert rcfmt.read_table(f"{where}/a.rcfmt", filter=rcfmt.col("x") < 0.5).num_rows == want
            rcfmt.write_table(t, f"{where}/b.rcfmt", block_rows=65536, bloom_filter_columns=["k"])
            assert rcfmt.read_table(f"{where}/b.rcfmt").equals(t)
            with rcfmt.open(f"{where}/b.rcfmt") as f:
                assert f.take([1, 5, n - 1]).column("k").to_pylist() == [1, 5, n - 1]
            if not warm:  # (warm: 5 rows were deleted)
                assert rcfmt.dataset(f"{where}/ds").count_rows(rcfmt.col("x") < 0.5) == want
            else:  # (cold, pyarrow's first pa.array of a list imports pandas, which cannot start at exit)
                rcfmt.write_dataset(t, f"{where}/ds")
                rcfmt.dataset(f"{where}/ds").delete(rcfmt.col("k") < 10)
                left = rcfmt.dataset(f"{where}/ds").count_rows()
                assert left == 2 * n - 20, left
            print("ok", flush=True)
        except BaseException as e:
            print("FAIL", type(e).__name__, e, flush=True)
            os._exit(1)

    atexit.register(at_exit)
""")


@pytest.mark.parametrize("pools", ["cold", "warm"])
def test_reads_and_writes_in_an_atexit_handler(tmp_path, pools):
    if pools == "cold":
        import numpy as np
        import pyarrow as pa

        import rcfmt

        n = 300_000
        t = pa.table({"k": np.arange(n), "x": np.random.default_rng(1).random(n)})
        rcfmt.write_table(t, tmp_path / "a.rcfmt", block_rows=65536)
        rcfmt.write_dataset(t, str(tmp_path / "ds"))
    proc = subprocess.run([sys.executable, "-c", AT_EXIT, str(tmp_path), pools], capture_output=True, text=True,
                          cwd=ROOT, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def test_the_inline_pool_runs_work_and_keeps_its_errors():
    pool = InlinePool()
    assert pool.submit(pow, 2, 10).result() == 1024
    assert list(pool.map(pow, [2, 3], [2, 2])) == [4, 9]
    with pytest.raises(ZeroDivisionError):
        pool.submit(lambda: 1 / 0).result()
    with pool:
        pass


def test_a_pool_shut_down_still_refuses_work():
    pool = thread_pool(2, "test")
    assert pool.submit(pow, 2, 10).result() == 1024
    pool.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pool.submit(pow, 2, 10)


def test_a_child_forked_after_remote_reads_gets_its_own_fetch_pool():
    """The pool of remote ranged reads (``rcfmt.storage.fetch.fetch_pool``) is not the
    parent's in a forked child: its threads did not survive the fork, and its idle count
    made the child's first remote read of no more ranges than it had idle workers wait
    forever."""
    import multiprocessing
    import time

    from rcfmt.storage.fetch import fetch_pool

    pool = fetch_pool()
    assert list(pool.map(abs, [-1, -2, -3])) == [1, 2, 3]
    end = time.monotonic() + 10
    while pool._idle_semaphore._value == 0 and time.monotonic() < end:  # (its workers go idle)
        time.sleep(0.01)
    with multiprocessing.get_context("fork").Pool(1) as children:
        assert children.apply_async(_fetch_pool_works).get(timeout=60) == 1


def _fetch_pool_works() -> int:
    from rcfmt.storage.fetch import fetch_pool

    return fetch_pool().submit(abs, -1).result(timeout=20)  # (fewer items than idle workers: none started)
