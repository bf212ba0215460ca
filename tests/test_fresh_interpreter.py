"""First calls in a fresh interpreter, as a user's script or a Spark worker makes them.

Inside pytest every lazily initialised registry is already warm, so these tests start
new interpreters (subprocesses) whose first act is a multi-threaded read. They guard
the encoding-registry race: a second thread saw a half-filled registry and reported a
known encoding as unknown (``UnsupportedError: unknown encoding id 2``).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt

ROOT = Path(__file__).resolve().parents[1]
RUNS = 12


def _table(rows: int = 12_000) -> pa.Table:
    """Columns that take every encoding the selector picks on real data."""
    rng = np.random.default_rng(7)
    month = (np.arange(rows) // 1000 % 12 + 1).astype(np.int16)          # runs: RLE
    day = rng.integers(1, 29, rows).astype(np.int16)                       # narrow: BITPACK
    dep = np.cumsum(rng.integers(0, 3, rows)).astype(np.int64)             # sorted: DELTA
    price = np.round(rng.uniform(0, 1000, rows), 2)                        # decimals: ALP
    carrier = np.array(["UA", "AA", "B6", "DL", "EV"])[rng.integers(0, 5, rows)]  # DICTIONARY
    tail = [f"N{rng.integers(0, 10**6)}XY" for _ in range(rows)]          # PLAIN / DELTA_LENGTH
    # a daily schedule of 300 flights: arrival times (BYTE_SPLIT) and delays as doubles (ALP_SPLIT)
    schedule = np.sort(np.clip(rng.normal(14 * 60, 240, 300), 300, 1430)).astype(np.int64)
    duration = rng.choice([65, 80, 140, 185, 310], 300)
    slot = np.arange(rows) % 300
    late = np.round(rng.gamma(1.2, 18, rows) - 10).astype(np.int64)
    very = rng.random(rows) < 0.01
    late[very] = rng.integers(200, 1300, very.sum())
    minute = (schedule[slot] + duration[slot] + late) % 1440
    return pa.table({"month": month, "day": day, "dep": dep, "price": price,
                     "carrier": carrier, "tail": tail, "arr": ((minute // 60) * 100 + minute % 60).astype(np.int16),
                     "late": late.astype(np.float64)})


CHILD = textwrap.dedent("""
    import sys, threading
    import rcfmt
    path = sys.argv[1]
    barrier = threading.Barrier(6)
    errors, rows = [], []
    def read():
        try:
            barrier.wait()
            rows.append(rcfmt.read_table(path).num_rows)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    threads = [threading.Thread(target=read) for _ in range(6)]
    for t in threads: t.start()
    for t in threads: t.join()
    if errors:
        print(errors[0]); sys.exit(1)
    print(sorted(set(rows)))
""")


def test_threaded_first_read_in_fresh_interpreters(tmp_path):
    table = _table()
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path, block_rows=4096, page_rows=1024)
    with rcfmt.open(path) as f:  # every encoding the selector picks on real data is in the file
        used = {int(e) for i in range(len(f.footer.columns)) for e in f.footer.chunks[i]["encoding"]}
    assert used == set(range(9)) - {0}, used  # (all but PLAIN)
    failures = []
    for _ in range(RUNS):
        proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
        if proc.returncode != 0 or proc.stdout.strip() != f"[{table.num_rows}]":
            failures.append((proc.stdout + proc.stderr).strip()[-500:])
    assert not failures, f"{len(failures)} of {RUNS} fresh interpreters failed; first: {failures[0]}"


def test_threads_sharing_one_open_file_get_one_threads_result(tmp_path):
    table = _table()
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path, block_rows=4096, page_rows=1024)
    from concurrent.futures import ThreadPoolExecutor
    with rcfmt.open(path) as f:
        expected = f.read(use_threads=False)
        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(lambda i: f.read_block(i % f.num_blocks), range(24)))
        for i, got in enumerate(results):
            b = i % f.num_blocks
            assert got.equals(expected.slice(b * 4096, 4096)), f"block {b} differs under threads"


@pytest.mark.parametrize("name", ["plain", "rle", "bitpack", "delta", "dictionary", "byte_split", "alp_split"])
def test_encoding_lookup_by_name_in_fresh_interpreter(name):
    code = f"from rcfmt.encodings import by_name, by_id; e = by_name({name!r}); assert by_id(e.id) is e; print(e.id)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_first_filtered_read_does_not_import_pandas(tmp_path):
    """pyarrow's conversions of Python sequences (pa.array, pa.scalar, to_numpy) import
    pandas on first use, ~0.2 s that a user's first query would pay: the read path
    builds its Arrow literals and masks from buffers instead."""
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(_table(), path, block_rows=4096, page_rows=1024,
                      bitmap_indexes={"carrier": "equality", "day": "bitsliced"})
    code = textwrap.dedent(f"""
        import sys, decimal
        import rcfmt
        from rcfmt import col
        f = (col("month") >= 3) & (col("price") < 500.5) & col("carrier").isin(["UA", "AA"]) \\
            & col("tail").startswith("N1") & ~col("day").is_null() & (col("dep") != 7)
        n = rcfmt.read_table({str(path)!r}, filter=f).num_rows
        with rcfmt.open({str(path)!r}) as file:  # these columns are indexed: counts ask the indexes
            m = file.scan([], filter=(col("carrier") == "UA") & (col("day") < 9)).count()
            used = bool(file.bitmap_columns)
        print(n, m, used, "pandas" in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows, counted, used, imported = proc.stdout.split()
    assert int(rows) > 0 and imported == "False", proc.stdout
    table = _table()
    truth = sum(1 for c, d in zip(table["carrier"].to_pylist(), table["day"].to_pylist()) if c == "UA" and d < 9)
    assert int(counted) == truth and used == "True", proc.stdout


def test_first_dataset_read_and_spark_planning_do_not_import_pandas(tmp_path):
    """The same for a dataset (its stats index is read into numpy from Arrow buffers) and
    for the Spark source's schema, planning and read calls, each made first in a fresh
    interpreter as Spark's planner and executor workers make them (they do not import
    pandas themselves: 0.25-0.3 s saved in each new worker)."""
    root = tmp_path / "ds"
    rcfmt.write_dataset(_table(), root, block_rows=4096)
    code = textwrap.dedent(f"""
        import pickle, sys
        import rcfmt
        ds = rcfmt.dataset({str(root)!r})
        n = ds.to_table(filter=(rcfmt.col("month") >= 3) & (rcfmt.col("carrier") == "UA")).num_rows
        first = "pandas" in sys.modules
        spark = False
        try:
            import pyspark.sql.datasource  # noqa: F401
        except ImportError:
            pass
        else:
            from spark_datasource.source import RcfmtDataSource
            source = RcfmtDataSource({{"path": {str(root)!r}, "filter": "month >= 3", "columns": "month, tail"}})
            reader = source.reader(source.schema())
            parts = pickle.loads(pickle.dumps(reader.partitions()))
            reader = pickle.loads(pickle.dumps(reader))
            spark = sum(b.num_rows for p in parts for b in reader.read(p)) > 0
        print(n, first, spark, "pandas" in sys.modules)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows, first, spark, imported = proc.stdout.split()
    assert int(rows) > 0 and first == "False" and imported == "False", proc.stdout


NESTED_CHILD = textwrap.dedent("""
    import sys, threading
    import rcfmt
    from rcfmt import col, list_contains
    path = sys.argv[1]
    reads = [lambda: rcfmt.read_table(path),
             lambda: rcfmt.read_table(path, filter=col("payload.user.id") >= 30),
             lambda: rcfmt.read_table(path, filter=list_contains(col("tags"), "t2")),
             lambda: rcfmt.read_table(path, columns=["payload.user.name", "deep"], filter=col("id") > 20),
             lambda: rcfmt.read_table(path, filter=~list_contains(col("tags"), "t1") & (col("id") < 30)),
             lambda: rcfmt.open(path).read_block(1)]
    barrier = threading.Barrier(len(reads))
    out, errors = [None] * len(reads), []
    def run(k):
        try:
            barrier.wait()
            t = reads[k]()
            t.validate(full=True)
            out[k] = t.num_rows
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    threads = [threading.Thread(target=run, args=(k,)) for k in range(len(reads))]
    for t in threads: t.start()
    for t in threads: t.join()
    if errors:
        print(errors[0]); sys.exit(1)
    print(*out, "pandas" in sys.modules)
""")


def test_threaded_first_nested_reads_in_fresh_interpreters():
    """A new process whose first act is six threads reading nested fields at once (the
    tree parsed from the footer, the bind schema with lists, list_contains, reads at a
    selection): every result is what this process reads, valid Arrow, without pandas."""
    from rcfmt import col, list_contains

    golden = ROOT / "tests" / "data" / "golden_nested.rcfmt"
    want = [rcfmt.read_table(golden).num_rows,
            rcfmt.read_table(golden, filter=col("payload.user.id") >= 30).num_rows,
            rcfmt.read_table(golden, filter=list_contains(col("tags"), "t2")).num_rows,
            rcfmt.read_table(golden, columns=["payload.user.name", "deep"], filter=col("id") > 20).num_rows,
            rcfmt.read_table(golden, filter=~list_contains(col("tags"), "t1") & (col("id") < 30)).num_rows,
            rcfmt.open(golden).read_block(1).num_rows]
    for _ in range(4):
        proc = subprocess.run([sys.executable, "-c", NESTED_CHILD, str(golden)], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-2000:]
        assert proc.stdout.split() == [*map(str, want), "False"]


INDEXED_CHILD = textwrap.dedent("""
    import sys, threading
    import rcfmt
    from rcfmt import col
    f = rcfmt.open(sys.argv[1])  # one open file shared by every thread: its index directory is loaded lazily
    filters = [(col("carrier") == "UA") & (col("day") < 9), col("carrier").isin(["AA", "DL"]),
               ~(col("carrier") == "EV") & (col("day") >= 20), col("day") == 3]
    barrier = threading.Barrier(8)
    out, errors = {}, []
    def run(k):
        try:
            barrier.wait()
            scan = f.scan([], filter=filters[k % 4])
            out[k] = (scan.count(), scan.stats.rows_selected_index)
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads: t.start()
    for t in threads: t.join()
    if errors:
        print(errors[0]); sys.exit(1)
    print(" ".join(f"{out[k][0]},{out[k][1]}" for k in range(8)))
""")


def test_threaded_first_indexed_counts_share_one_file():
    """Threads' first indexed counts on one open file in a fresh interpreter: the lazily
    loaded bitmap-index directory and the parsed keys are shared, and every count is
    right and answered from the indexes."""
    import pyarrow.compute as pc

    table = _table()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f.rcfmt"
        rcfmt.write_table(table, path, block_rows=4096, page_rows=1024,
                          bitmap_indexes={"carrier": "equality", "day": "bitsliced"})
        exprs = [pc.and_(pc.equal(table["carrier"], "UA"), pc.less(table["day"], 9)),
                 pc.is_in(table["carrier"], pa.array(["AA", "DL"])),
                 pc.and_(pc.not_equal(table["carrier"], "EV"), pc.greater_equal(table["day"], 20)),
                 pc.equal(table["day"], 3)]
        truth = [int(pc.sum(e.cast(pa.int64())).as_py()) for e in exprs]
        for _ in range(4):
            proc = subprocess.run([sys.executable, "-c", INDEXED_CHILD, str(path)], capture_output=True, text=True,
                                  cwd=ROOT, timeout=120)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            pairs = [tuple(map(int, p.split(","))) for p in proc.stdout.split()]
            assert pairs == [(truth[k % 4], truth[k % 4]) for k in range(8)], proc.stdout


WRITER_CHILD = textwrap.dedent("""
    import sys, threading
    import numpy as np, pyarrow as pa
    import rcfmt
    out = sys.argv[1]
    rng = np.random.default_rng(3)
    n = 40_000
    table = pa.table({"x": rng.integers(0, 100, n),
                      "y": pa.array(np.where(rng.random(n) < 0.2, None, rng.random(n)).tolist()),
                      "s": np.array(["a", "bb", "ccc"])[rng.integers(0, 3, n)]})
    barrier = threading.Barrier(4)
    errors = []
    def write(k):
        try:
            barrier.wait()
            rcfmt.write_table(table, f"{out}/w{k}.rcfmt", block_rows=16_384,
                              compression="lz4" if k % 2 else "zstd")  # threads on: the pool
        except Exception as exc:
            errors.append(f"{type(exc).__name__}: {exc}")
    threads = [threading.Thread(target=write, args=(k,)) for k in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    if errors:
        print(errors[0]); sys.exit(1)
    print("ok")
""")


def test_threaded_first_writes_in_fresh_interpreters(tmp_path):
    """A fresh interpreter whose first act is four threads writing at once, each on the
    writer's pool: the page writer's per-thread zstd contexts and the compression entry
    points are set up by these first calls. Every file reads back whole, and the zstd
    files are byte for byte a warm 1-thread write of the same table."""
    for run in range(4):
        out = tmp_path / f"run{run}"
        out.mkdir()
        proc = subprocess.run([sys.executable, "-c", WRITER_CHILD, str(out)], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
        assert proc.returncode == 0 and proc.stdout.strip() == "ok", (proc.stdout + proc.stderr)[-800:]
        rng = np.random.default_rng(3)  # the child's table
        n = 40_000
        expected = pa.table({"x": rng.integers(0, 100, n),
                             "y": pa.array(np.where(rng.random(n) < 0.2, None, rng.random(n)).tolist()),
                             "s": np.array(["a", "bb", "ccc"])[rng.integers(0, 3, n)]})
        assert expected.column("y").null_count > 0
        reference = tmp_path / f"ref{run}.rcfmt"
        rcfmt.write_table(expected, reference, block_rows=16_384, compression="zstd", use_threads=False)
        for k in range(4):
            assert rcfmt.read_table(out / f"w{k}.rcfmt").equals(expected)
        for k in (0, 2):
            assert (out / f"w{k}.rcfmt").read_bytes() == reference.read_bytes()


PUSHED_CHILD = textwrap.dedent("""
    import json, sys
    import rcfmt
    from rcfmt import col
    q = (col("x") >= 10) & (col("x") < 60) & col("s").isin(["a", "ccc"]) & (col("y") > 0.25)
    projected = rcfmt.read_table(sys.argv[1], filter=q)  # threads on: the default
    masks_only = rcfmt.read_table(sys.argv[1], columns=["y"], filter=q)
    print(json.dumps([projected.num_rows, projected.column("x").to_pylist()[:5],
                      masks_only.column("y").to_pylist() == projected.column("y").to_pylist()]))
""")


def test_first_filtered_scan_evaluates_in_the_decode_pass_in_a_fresh_interpreter(tmp_path):
    """A fresh interpreter whose first act is a threaded scan with a conjunction the page
    pipeline evaluates while it decodes (the range and dictionary kernels it calls from
    another native module, set up at import; masks shared per block, filter columns
    kept or not): the rows Arrow selects."""
    import json

    import pyarrow.compute as pc

    rng = np.random.default_rng(11)
    n = 60_000
    table = pa.table({"x": pa.array(rng.integers(0, 100, n).astype(np.int32)),
                      "s": pa.array(np.array(["a", "bb", "ccc"])[rng.integers(0, 3, n)]),
                      "y": pa.array(np.where(rng.random(n) < 0.2, None, rng.random(n)).tolist(), pa.float64())})
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path, block_rows=8_192, page_rows=1_000, encoding={"s": "dictionary"})
    mask = pc.and_kleene(pc.and_kleene(pc.greater_equal(table["x"], 10), pc.less(table["x"], 60)),
                         pc.and_kleene(pc.is_in(table["s"], pa.array(["a", "ccc"])), pc.greater(table["y"], 0.25)))
    want = table.filter(pc.fill_null(mask, False))
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", PUSHED_CHILD, str(path)], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr[-800:]
        rows, first, same = json.loads(proc.stdout)
        assert rows == want.num_rows > 0 and first == want.column("x").to_pylist()[:5] and same


SETS_CHILD = textwrap.dedent("""
    import json, sys, threading
    import rcfmt
    from rcfmt import col
    q = col("x").isin(list(range(0, 100, 3))) & (col("z") != 7) & col("y").is_valid() & ~col("w").isin([1, 2])
    results = [None] * 4
    def run(k):  # four threads at once: each creates its zstd context at its first page
        results[k] = rcfmt.read_table(sys.argv[1], columns=["z"], filter=q, use_threads=False)
    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    pooled = rcfmt.read_table(sys.argv[1], columns=["z"], filter=q)  # a scan's pool
    print(json.dumps([r.column("z").to_pylist() for r in results] + [pooled.column("z").to_pylist()]))
""")


def test_first_set_filters_on_zstd_pages_in_threads_of_a_fresh_interpreter(tmp_path):
    """A fresh interpreter whose first acts are four threads scanning at once, then a
    pooled scan, with set, != and validity leaves on columns without a dictionary (the
    membership kernel, bit tables, each thread's zstd context made at its first page):
    every thread gets the rows Arrow selects."""
    import json

    import pyarrow.compute as pc

    rng = np.random.default_rng(12)
    n = 50_000
    table = pa.table({"x": pa.array(rng.integers(0, 100, n)), "z": pa.array(rng.integers(0, 20, n).astype(np.int32)),
                      "y": pa.array(np.where(rng.random(n) < 0.2, None, rng.random(n)).tolist(), pa.float64()),
                      "w": pa.array(rng.integers(0, 5, n).astype(np.int16))})
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path, block_rows=8_192, page_rows=1_000, compression="zstd",
                      encoding={"x": "plain", "z": "bitpack", "w": "plain"})
    mask = pc.and_kleene(pc.and_kleene(pc.is_in(table["x"], pa.array(list(range(0, 100, 3)))),
                                       pc.not_equal(table["z"], 7)),
                         pc.and_kleene(pc.is_valid(table["y"]), pc.invert(pc.is_in(table["w"], pa.array([1, 2])))))
    want = table.filter(pc.fill_null(mask, False)).column("z").to_pylist()
    assert 0 < len(want) < n
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", SETS_CHILD, str(path)], capture_output=True, text=True,
                              cwd=ROOT, timeout=120)
        assert proc.returncode == 0, proc.stderr[-800:]
        assert all(got == want for got in json.loads(proc.stdout))


STREAM_CHILD = textwrap.dedent("""
    import sys
    import pyarrow as pa
    import rcfmt
    path, out_all, out_filtered = sys.argv[1:4]
    with rcfmt.open(path) as f:  # the first act: a threaded stream (blocks decoded ahead on the pool)
        batches = list(f.scan().iter_batches(batch_size=3000))
    with rcfmt.open(path) as f:
        filtered = pa.RecordBatchReader.from_stream(f.scan(filter=rcfmt.col("day") < 10)).read_all()
    for out, table in ((out_all, pa.Table.from_batches(batches)), (out_filtered, filtered)):
        with pa.OSFile(out, "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
            w.write_table(table)
""")


def test_first_threaded_streams_in_fresh_interpreters(tmp_path):
    """The first read of a fresh interpreter is a stream: ``iter_batches`` and the Arrow
    C stream decode blocks ahead on the thread pool (whole blocks through the native
    block executor); every row arrives once, in order, as a warm process reads it."""
    table = _table(20_000)
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path, block_rows=2048, page_rows=512)
    expected = table.filter(pc.less(table.column("day"), 10))
    for run in range(4):
        outs = [tmp_path / f"all{run}.arrow", tmp_path / f"filtered{run}.arrow"]
        proc = subprocess.run([sys.executable, "-c", STREAM_CHILD, str(path), *map(str, outs)],
                              capture_output=True, text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-800:]
        got_all, got_filtered = (pa.ipc.open_file(str(o)).read_all() for o in outs)
        assert got_all.equals(table) and got_filtered.equals(expected), run


LOOKUP_CHILD = textwrap.dedent("""
    import json, sys, threading
    import rcfmt
    path = sys.argv[1]
    keys = json.loads(sys.argv[2])
    barrier = threading.Barrier(len(keys))
    out, errors = {}, []
    with rcfmt.open(path) as f:  # one open file: its footer's tables are built by whichever thread comes first
        def look(key):
            try:
                barrier.wait()
                got = f.scan(filter=rcfmt.col("tail") == key).read()
                out[key] = got.column("dep").to_pylist()
            except Exception as exc:
                errors.append(f"{type(exc).__name__}: {exc}")
        threads = [threading.Thread(target=look, args=(k,)) for k in keys]
        for t in threads: t.start()
        for t in threads: t.join()
    if errors:
        print(errors[0]); sys.exit(1)
    print(json.dumps(out))
""")


def test_first_lookups_sharing_one_file_in_threads_of_a_fresh_interpreter(tmp_path):
    """A fresh interpreter's first acts: six threads looking up string keys in one open
    file at once (string page bounds tested natively, page tables gathered natively,
    the executor's chunk table built lazily on the shared footer, pooled blocks): each
    thread gets the rows Arrow selects."""
    import json

    table = _table()
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path, block_rows=4096, page_rows=512, dictionary=False, bloom_filter_columns=None)
    tails = table.column("tail").to_pylist()
    keys = sorted({tails[i] for i in (0, 5000, 11_999, 4096, 8191)} | {"N-absent"})
    deps = table.column("dep").to_pylist()
    want = {k: [d for t, d in zip(tails, deps) if t == k] for k in keys}
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", LOOKUP_CHILD, str(path), json.dumps(keys)], capture_output=True,
                              text=True, cwd=ROOT, timeout=120)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-800:]
        assert json.loads(proc.stdout) == want


_DEFAULT_RULE_CHILD = r"""
import sys, threading
import rcfmt
from rcfmt.scan import scheduling
assert scheduling.PARALLEL_BLOCK_BYTES == 384 << 10, scheduling.PARALLEL_BLOCK_BYTES
small, large, ds = sys.argv[1:4]
out, errors = [], []
def read():
    try:
        out.append((rcfmt.read_table(small).num_rows, rcfmt.read_table(large, filter=rcfmt.col("b") < 50).num_rows,
                    rcfmt.dataset(ds).scan().read().num_rows))
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=read) for _ in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors or sorted(set(out)))
"""


def test_first_threaded_reads_under_the_default_thread_rule(tmp_path):
    """Without the suites' RCFMT_PARALLEL_BLOCK_BYTES=0: a fresh interpreter's first
    reads, from four threads at once, of a small-block file (on the calling thread), a
    large-block file (on the pool) and a small-block dataset (its files one after
    another) give every row."""
    n = 300_000
    rng = np.random.default_rng(3)
    table = pa.table({"a": np.arange(n), "f": rng.standard_normal(n), "b": rng.integers(0, 100, n).astype(np.int8)})
    small, large, ds = tmp_path / "small.rcfmt", tmp_path / "large.rcfmt", tmp_path / "ds"
    rcfmt.write_table(table, small, block_rows=4096)
    rcfmt.write_table(table, large, block_rows=131_072)
    rcfmt.write_dataset(table, ds, block_rows=4096, target_file_rows=100_000)
    expected = f"[({n}, {int((table['b'].to_numpy() < 50).sum())}, {n})]"
    env = {k: v for k, v in os.environ.items() if k != "RCFMT_PARALLEL_BLOCK_BYTES"}
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", _DEFAULT_RULE_CHILD, str(small), str(large), str(ds)],
                              capture_output=True, text=True, cwd=ROOT, timeout=120, env=env)
        assert proc.returncode == 0 and proc.stdout.strip() == expected, (proc.stdout + proc.stderr)[-800:]


_FUSED_CHILD = r"""
import json, sys, threading
import rcfmt
from rcfmt import col
q = (col("x") >= 10) & (col("x") < 60) & (col("s") != "bb") & col("y").is_valid()
out, errors = [], []
with rcfmt.open(sys.argv[1]) as f:
    def scan(k):  # four threads at once on one open file, each a pooled scan
        try:
            s = f.scan(["z", "x", "w"] if k % 2 else ["x", "s"], filter=q)
            t = s.read()
            fused = [v for v in s._planner.programs._fused.values()]
            out.append((k % 2, t.num_rows, sum(t.column("x").to_pylist()),
                        bool(fused and fused[0][0] is not None and any(fused[0][1]))))
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=scan, args=(k,)) for k in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
print(json.dumps(errors or sorted(set(out))))
"""


def test_first_scans_decoding_the_projection_in_the_filters_call_in_a_fresh_interpreter(tmp_path):
    """A fresh interpreter's first acts: four threads scanning one open file at once on
    the pool, with a filter the executor decides wholly -- its rows picked natively, the
    filter columns compacted, and (when the projection has columns of its own, of few
    bytes) the projection decoded in the filter's call, that scan's fused filter built on
    first use by racing workers: the rows Arrow selects."""
    import json

    rng = np.random.default_rng(21)
    n = 120_000
    table = pa.table({"x": rng.integers(0, 100, n).astype(np.int32),
                      "s": np.array(["a", "bb", "ccc"])[rng.integers(0, 3, n)],
                      "y": pa.array(np.where(rng.random(n) < 0.2, None, rng.random(n)).tolist(), pa.float64()),
                      "z": rng.integers(0, 10, n).astype(np.int8), "w": rng.random(n) < 0.5})
    path = tmp_path / "f.rcfmt"
    rcfmt.write_table(table, path, block_rows=16_384, page_rows=2_000)
    mask = pc.and_kleene(pc.and_kleene(pc.greater_equal(table["x"], 10), pc.less(table["x"], 60)),
                         pc.and_kleene(pc.not_equal(table["s"], "bb"), pc.is_valid(table["y"])))
    want = table.filter(pc.fill_null(mask, False))
    x = int(pc.sum(want["x"]).as_py())
    env = {**os.environ, "RCFMT_PARALLEL_BLOCK_BYTES": "0"}  # (small blocks: on the pool all the same)
    for _ in range(3):
        proc = subprocess.run([sys.executable, "-c", _FUSED_CHILD, str(path)], capture_output=True, text=True,
                              cwd=ROOT, timeout=120, env=env)
        assert proc.returncode == 0, proc.stderr[-800:]
        assert json.loads(proc.stdout) == [[0, want.num_rows, x, False], [1, want.num_rows, x, True]], proc.stdout


_ONE_BLOCK_CHILD = r"""
import hashlib, json, os, sys, threading
import rcfmt
out, errors = [], []
def read(k):
    try:  # (default options: threads on, the default thread rule)
        t = rcfmt.read_table(sys.argv[1], columns=None if k % 2 else ["a", "l", "st"])
        out.append((k % 2, t.num_rows, hashlib.sha256(repr(t.to_pydict()).encode()).hexdigest()))
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=read, args=(k,)) for k in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
pool = any(t.name.startswith("rcfmt-columns") for t in threading.enumerate())
print(json.dumps(errors or [sorted(set(out)), pool or (os.cpu_count() or 1) < 2]))
"""


def test_first_reads_of_a_one_block_file_split_its_columns_in_a_fresh_interpreter(tmp_path):
    """A fresh interpreter's first reads, from four threads at once, of a one-block file
    (flat columns, a list and a struct, megabytes of them): its columns decoded and its
    nested fields assembled on the "columns" pool, made on first use by racing readers;
    the rows those of one thread in this process."""
    import hashlib
    import json

    rng = np.random.default_rng(36)
    n = 200_000
    table = pa.table({"a": np.arange(n), "f": rng.standard_normal(n), "s": [f"v{i % 977}" for i in range(n)],
                      "l": pa.array([list(range(i % 4)) for i in range(n)], pa.list_(pa.int32())),
                      "st": pa.array([{"x": i, "y": f"y{i % 5}"} for i in range(n)],
                                     pa.struct([("x", pa.int64()), ("y", pa.string())]))})
    path = tmp_path / "one.rcfmt"
    rcfmt.write_table(table, path)
    with rcfmt.open(path) as f:
        assert f.num_blocks == 1
    digest = {k: hashlib.sha256(repr(rcfmt.read_table(path, columns=None if k else ["a", "l", "st"],
                                                      use_threads=False).to_pydict()).encode()).hexdigest()
              for k in (0, 1)}
    env = {k: v for k, v in os.environ.items() if k != "RCFMT_PARALLEL_BLOCK_BYTES"}
    proc = subprocess.run([sys.executable, "-c", _ONE_BLOCK_CHILD, str(path)], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-800:]
    got, pooled = json.loads(proc.stdout)
    assert got == [[0, n, digest[0]], [1, n, digest[1]]]
    assert pooled, "no rcfmt-columns thread on a machine of several cores"


_IN_LIST_CHILD = textwrap.dedent("""
    import json, sys, threading
    import rcfmt
    from rcfmt import col
    root, keys = sys.argv[1], json.loads(sys.argv[2])
    flt = col("k").isin(keys)  # (one list: its bound leaf is kept and shared)
    ds = rcfmt.dataset(root)
    barrier = threading.Barrier(4)
    out, errors = {}, []
    def read(i):
        try:
            barrier.wait()
            t = ds.read(["k", "j"], flt if i % 2 else col("j").isin(keys), with_row_position=True)
            out[i] = sorted(zip(t["k"].to_pylist(), t["j"].to_pylist(), t["_row_position"].to_pylist()))
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=read, args=(i,)) for i in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    print(json.dumps([errors, [out.get(i) for i in range(4)]]))
""")


def test_first_dataset_reads_binding_one_large_in_list_in_threads_of_a_fresh_interpreter(tmp_path):
    """A merge's key scan as a fresh interpreter's first act, from four threads at once:
    a large integer IN-list (one list) bound to an int64 and an int32 column of every
    file of a dataset (files scanned on the pool), its leaf made once per column and
    shared by racing binders. Each thread's rows are the oracle's."""
    import json

    n = 40_000
    table = pa.table({"k": pa.array(np.arange(n) * 3, pa.int64()), "j": pa.array(np.arange(n) % 5000, pa.int32())})
    root = tmp_path / "ds"
    rcfmt.write_dataset(table, str(root), target_file_rows=5_000, progress=False)
    keys = sorted({int(v) for v in np.random.default_rng(37).integers(-10, 3 * n, 400)} | {2**40})
    proc = subprocess.run([sys.executable, "-c", _IN_LIST_CHILD, str(root), json.dumps(keys)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-800:]
    errors, got = json.loads(proc.stdout)
    assert errors == []
    for i, rows in enumerate(got):
        column = "k" if i % 2 else "j"
        mask = pc.is_in(table[column], pa.array([v for v in keys if column == "k" or v < 2**31], table[column].type))
        positions = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        want = sorted(zip(table["k"].to_numpy()[positions].tolist(), table["j"].to_numpy()[positions].tolist(),
                          positions.tolist()))
        assert [tuple(r) for r in rows] == want, column


_TAKE_CHILD = r"""
import hashlib, json, os, sys, threading
import rcfmt
positions = json.loads(sys.argv[2])
out, errors = [], []
def take(k):
    try:  # (default options: threads on, the default thread rule; the file opened by each thread)
        with rcfmt.open(sys.argv[1]) as f:
            t = f.take(positions[k % 2])
        out.append((k % 2, t.num_rows, hashlib.sha256(repr(t.to_pydict()).encode()).hexdigest()))
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=take, args=(k,)) for k in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
pool = any(t.name.startswith("rcfmt-columns") for t in threading.enumerate())
print(json.dumps(errors or [sorted(set(out)), pool or (os.cpu_count() or 1) < 2]))
"""


def test_first_takes_of_a_one_block_file_split_their_pages_in_a_fresh_interpreter(tmp_path):
    """A fresh interpreter's first takes, from four threads at once, of scattered rows of
    a one-block file: the pages holding them (megabytes once decompressed, and rows
    times columns enough for a split to pay: TAKE_THREADED_CELLS) decoded in column
    groups on the "columns" pool, made on first use by racing readers; the rows, in the
    order asked, those pyarrow takes."""
    import hashlib
    import json

    rng = np.random.default_rng(39)
    n = 200_000
    table = pa.table({"a": np.arange(n), "f": rng.standard_normal(n), "s": [f"v{i % 977}" for i in range(n)],
                      **{f"g{i}": rng.standard_normal(n) for i in range(9)}})
    path = tmp_path / "one.rcfmt"
    rcfmt.write_table(table, path)
    # (few rows, unsorted, repeated: the pages holding them read, not whole chunks)
    positions = [rng.choice(n, 12, replace=False).tolist(), rng.integers(0, n, 15).tolist()]
    want = [[k, len(p), hashlib.sha256(repr(table.take(p).to_pydict()).encode()).hexdigest()]
            for k, p in enumerate(positions)]
    env = {k: v for k, v in os.environ.items() if k != "RCFMT_PARALLEL_BLOCK_BYTES"}
    proc = subprocess.run([sys.executable, "-c", _TAKE_CHILD, str(path), json.dumps(positions)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-800:]
    got, pooled = json.loads(proc.stdout)
    assert got == want
    assert pooled, "no rcfmt-columns thread on a machine of several cores"


_DATASET_TAKE_CHILD = textwrap.dedent("""
    import json, sys, threading
    import rcfmt
    from rcfmt.file import page_index_cache
    root, positions = sys.argv[1], json.loads(sys.argv[2])
    barrier = threading.Barrier(4)
    out, errors = {}, []
    def take(i):
        try:  # (each thread its own Dataset: every file opened anew, its page indexes shared)
            ds = rcfmt.dataset(root)
            barrier.wait()
            for _ in range(3):
                t = ds.take(positions[i % 2], use_threads=i < 2)
            out[i] = t.to_pydict()
        except Exception as exc:
            errors.append(repr(exc))
    threads = [threading.Thread(target=take, args=(i,)) for i in range(4)]
    for t in threads: t.start()
    for t in threads: t.join()
    shared = [len(c.entries) for c in page_index_cache.SHARED._caches.values()]
    print(json.dumps([errors, [out.get(i) for i in range(4)], shared]))
""")


def test_first_dataset_takes_sharing_their_files_page_indexes_in_threads_of_a_fresh_interpreter(tmp_path):
    """A fresh interpreter's first dataset takes, from four threads at once (two with the
    files on the pool, two on one thread), each of its own Dataset: every open of a file
    shares the page indexes the others read and checked (made on first use by racing
    opens); each thread's rows are those pyarrow takes, in the order asked."""
    import json

    n = 12_000
    rng = np.random.default_rng(40)
    table = pa.table({"k": pa.array(np.arange(n), pa.int64()), "x": pa.array(rng.standard_normal(n)),
                      "s": pa.array([f"s{i % 313}" for i in range(n)])})
    root = str(tmp_path / "ds")
    for i in range(4):
        rcfmt.write_dataset(table.slice(3000 * i, 3000), root, mode="append" if i else "overwrite", block_rows=1000)
    positions = [rng.choice(n, 40, replace=False).tolist(), rng.integers(0, n, 9).tolist()]
    proc = subprocess.run([sys.executable, "-c", _DATASET_TAKE_CHILD, root, json.dumps(positions)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr[-800:]
    errors, got, shared = json.loads(proc.stdout)
    assert errors == []
    for i, rows in enumerate(got):
        assert rows == table.take(positions[i % 2]).to_pydict(), i
    assert len(shared) == 4 and any(shared), shared  # (one cache a file for its 24 opens; whole chunks need none)


_SPLIT_READ_CHILD = r"""
import json, sys, threading
import pyarrow as pa
import rcfmt
import rcfmt.file.reader as reader
split = []
def counted(starts, ends, total, _halves=reader.halves):  # (counts the reads cut in two halves)
    split.append(int(total))
    return _halves(starts, ends, total)
reader.halves = counted
path, out = sys.argv[1], sys.argv[2]
errors = []
barrier = threading.Barrier(4)
def read(k):
    try:  # (default options: threads on, the default thread rule)
        barrier.wait()
        t = rcfmt.read_table(path, columns=None if k % 2 else ["r", "s"])
        with pa.OSFile(f"{out}.{k}", "wb") as sink, pa.ipc.new_file(sink, t.schema) as w:
            w.write_table(t)
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=read, args=(k,)) for k in range(4)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps([errors, max(split, default=0)]))
"""


def test_first_reads_of_a_large_one_block_file_split_their_read_in_a_fresh_interpreter(tmp_path):
    """A fresh interpreter's first reads, from four threads at once, of a one-block file
    whose read is SPLIT_READ_BYTES or more: the read copied in two halves side by side
    (the second on the "columns" pool, made on first use by racing readers, or on the
    reading thread when the pool is busy) and the block's columns decoded in units the
    threads pull; each thread's table equals the one a 1-thread read makes here."""
    import json

    from rcfmt.storage.fetch import SPLIT_READ_BYTES

    rng = np.random.default_rng(41)
    n = 400_000  # (random doubles and integers: no encoding shrinks them)
    table = pa.table({"f": rng.standard_normal(n), "r": rng.integers(-2**62, 2**62, n),
                      "s": pa.array([f"s{i % 1013}-{i % 7}" for i in range(n)]),
                      "g": rng.standard_normal(n).astype(np.float32)})
    path = tmp_path / "big.rcfmt"
    rcfmt.write_table(table, path)
    with rcfmt.open(path) as f:
        assert f.num_blocks == 1
    assert path.stat().st_size >= SPLIT_READ_BYTES  # (else the split is not exercised)
    want = {k: rcfmt.read_table(path, columns=None if k else ["r", "s"], use_threads=False) for k in (0, 1)}
    assert want[1].equals(table)
    env = {k: v for k, v in os.environ.items() if k != "RCFMT_PARALLEL_BLOCK_BYTES"}
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-c", _SPLIT_READ_CHILD, str(path), str(out)], capture_output=True,
                          text=True, cwd=ROOT, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr[-800:]
    errors, largest_split = json.loads(proc.stdout)
    assert errors == []
    if (os.cpu_count() or 1) >= 2:
        assert largest_split >= SPLIT_READ_BYTES  # (a read was cut in halves)
    for k in range(4):
        with pa.OSFile(f"{out}.{k}", "rb") as source:
            got = pa.ipc.open_file(source).read_all()
        assert got.equals(want[k % 2]), k
