"""The block executor's cache of large buffers (``tmp_alloc`` in ``rcfmt/_native/column.pyx``):
blocks of decompressed pages and strings' data reused across columns, blocks, threads and
scans must never mix one scan's values into another's, and a process forked while another
thread holds the cache's lock (Spark's workers are forked) must still decode."""
from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa

import rcfmt
from rcfmt import col

ROOT = Path(__file__).resolve().parents[2]


def _table(seed: int, n: int = 300_000) -> pa.Table:
    rng = np.random.default_rng(seed)
    words = np.array([f"w{seed}-{i:06d}-" + "x" * (i % 23) for i in range(4000)])
    return pa.table({"s": pa.array(rng.choice(words, n)), "k": np.arange(n, dtype=np.int64) * (seed + 1),
                     "f": rng.standard_normal(n)})


def test_threads_reading_different_files_at_once_get_their_own_values(tmp_path):
    """Four threads scan four files (each column's buffers above the cache's 1 MiB) over
    and over, whole and filtered: every result equals its own file's rows."""
    tables = [_table(seed) for seed in range(4)]
    paths = []
    for i, t in enumerate(tables):
        paths.append(tmp_path / f"t{i}.rcfmt")
        rcfmt.write_table(t, paths[-1], compression="zstd", block_rows=150_000)
    errors = []

    def work(i):
        try:
            for r in range(6):
                got = rcfmt.read_table(paths[i], use_threads=bool(r % 2))
                if not got.equals(tables[i]):
                    errors.append((i, r, "whole"))
                word = tables[i].column("s")[r * 7].as_py()
                sub = rcfmt.read_table(paths[i], columns=["k"], filter=col("s").isin([word]))
                want = tables[i].filter(pa.compute.equal(tables[i].column("s"), word)).select(["k"])
                if not sub.equals(want):
                    errors.append((i, r, "filtered"))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append((i, repr(exc)))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


_FORK_CHILD = r"""
import os, sys, threading, time
import pyarrow as pa
import rcfmt
path = sys.argv[1]
want = rcfmt.read_table(path)
stop = False
def spin():
    while not stop:
        rcfmt.read_table(path, use_threads=False)
threads = [threading.Thread(target=spin) for _ in range(2)]
for t in threads:
    t.start()
bad = 0
for _ in range(20):
    pid = os.fork()
    if pid == 0:
        ok = rcfmt.read_table(path, use_threads=False).equals(want)
        os._exit(0 if ok else 3)
    deadline = time.time() + 60
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            bad += os.waitstatus_to_exitcode(status) != 0
            break
        if time.time() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            bad += 1000
            break
        time.sleep(0.005)
stop = True
for t in threads:
    t.join()
print(bad)
"""


def test_a_child_forked_while_threads_decode_decodes(tmp_path):
    """Twenty forks taken while two threads decode strings (the cache's lock taken and
    released all the time): every child reads the file right, none hangs."""
    path = tmp_path / "s.rcfmt"
    rcfmt.write_table(_table(7), path, compression="zstd")
    proc = subprocess.run([sys.executable, "-c", _FORK_CHILD, str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout.strip() == "0"
