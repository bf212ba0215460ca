"""A scan that runs one block at a time (a one-block file, one block left by pruning, a
stream) splits the block's columns among the cores with ``use_threads``: flat columns in
groups of about equal bytes, each group one GIL-free executor call on the "columns"
pool, and nested fields assembled there beside them. The answer, the scan's counts and
the errors are those of one thread."""
import threading
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rcfmt
from rcfmt import col
from rcfmt.errors import ChecksumError, CorruptFileError
from rcfmt.scan import block_exec, executor, scanner
from rcfmt.runtime.threads import shared_pool
from rcfmt.scan.scheduling import (INFLATE_WEIGHT, PARALLEL_BLOCK_BYTES, UNITS_PER_THREAD, chunk_costs,
                                   column_groups, columns_worth_threads)

N = 6_000


@given(st.lists(st.integers(0, 1 << 22), max_size=40), st.integers(1, 8))
@example([0, 0], 2)  # (empty columns, with the test's PARALLEL_BLOCK_BYTES of 0: a group each all the same)
@example([0, 0, 5, 0], 3)
@settings(max_examples=200, deadline=None)
def test_column_groups_cover_every_column_once_and_balance_bytes(sizes, threads):
    groups = column_groups(sizes, threads)
    n = min(threads, len(sizes))
    # (the yes/no the scan asks before it splits: the same answer, without the groups)
    assert columns_worth_threads(sizes, threads) == (groups is not None)
    if n < 2 or sum(sizes) < PARALLEL_BLOCK_BYTES * n:
        assert groups is None
        return
    # (units of work the threads take in turn: one a thread at least, UNITS_PER_THREAD
    # a thread at most, each worth PARALLEL_BLOCK_BYTES / 2 when there are more than threads)
    assert groups is not None and 2 <= n <= len(groups) <= min(len(sizes), threads * UNITS_PER_THREAD)
    assert len(groups) == n or sum(sizes) // len(groups) >= PARALLEL_BLOCK_BYTES // 2
    assert sorted(i for g in groups for i in g) == list(range(len(sizes)))
    assert all(g == sorted(g) and g for g in groups)
    loads = [sum(sizes[i] for i in g) for g in groups]
    # (largest first onto the lightest unit: no unit exceeds another by more than one column;
    # the heaviest taken first)
    assert max(loads) - min(loads) <= max(sizes)
    assert loads == sorted(loads, reverse=True)


def _table(n: int = N) -> pa.Table:
    rng = np.random.default_rng(7)
    ints = rng.integers(0, 1_000, n)
    return pa.table({
        "i": pa.array(ints, pa.int64()),
        "f": pa.array(np.where(ints % 11 == 0, np.nan, rng.normal(size=n))),
        "s": pa.array([None if i % 13 == 0 else f"s{i % 300:05d}-{'x' * (i % 17)}" for i in ints]),
        "b": pa.array([None if i % 7 == 0 else bool(i & 1) for i in ints]),
        "d": pa.array([None if i % 5 == 0 else Decimal(i * 3) / 100 for i in ints.tolist()], pa.decimal128(9, 2)),
        "cat": pa.array([f"c{i % 4}" for i in ints]),
        "l": pa.array([None if i % 9 == 0 else list(range(i % 4)) for i in ints], pa.list_(pa.int32())),
        "st": pa.array([{"x": int(i), "y": f"y{i % 3}"} for i in ints],
                       pa.struct([("x", pa.int64()), ("y", pa.string())])),
    })


@pytest.fixture(scope="module")
def one_block(tmp_path_factory):
    table = _table()
    path = tmp_path_factory.mktemp("colthreads") / "t.rcfmt"
    rcfmt.write_table(table, path, page_rows=512)  # (one block: N rows are far below the default)
    return table, path


@pytest.fixture
def two_cores(monkeypatch):
    """The scan sees two cores (a one-core runner would never split), and the threads
    each executor call ran on are recorded, and the units of every split (which thread
    runs a unit is the pool's business: a busy pool leaves them all to the scan's)."""
    monkeypatch.setattr(scanner, "cpu_threads", lambda limit=8: 2)
    monkeypatch.setattr(executor, "cpu_threads", lambda limit=8: 2)
    threads = []
    lock = threading.Lock()
    original = block_exec.BlockColumns.run

    def recording(self, *args, **kwargs):
        with lock:
            threads.append((threading.current_thread().name, tuple(self.cols)))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(block_exec.BlockColumns, "run", recording)
    split = executor.BlockExecutor._decode_split

    def splitting(self, groups, *args, **kwargs):
        with lock:
            threads.extend(("split", tuple(g)) for g in groups)
        return split(self, groups, *args, **kwargs)

    monkeypatch.setattr(executor.BlockExecutor, "_decode_split", splitting)
    nested = executor.BlockExecutor._nested_on_pool

    def nested_splitting(self, *args, **kwargs):
        futures = nested(self, *args, **kwargs)
        if futures:
            with lock:
                threads.extend(("split", (position,)) for position in futures)
        return futures

    monkeypatch.setattr(executor.BlockExecutor, "_nested_on_pool", nested_splitting)
    return threads


def _same(got: pa.Table, want: pa.Table) -> bool:
    """Table equality that takes NaN for NaN (Table.equals does not)."""
    def plain(t):
        if "f" not in t.column_names:
            return t
        f = t["f"]
        return t.set_column(t.schema.get_field_index("f"), "f", pc.if_else(pc.is_nan(f), float("inf"), f))
    return plain(got).equals(plain(want))


def _columns_pool(threads) -> set:
    """The units of the splits recorded (the columns of each; a nested field's output
    position)."""
    return {cols for name, cols in threads if name == "split"}


@pytest.mark.parametrize("columns", [None, ["i", "f", "s", "b", "d", "cat"], ["l", "st", "i"], ["l", "st"]])
def test_one_block_scan_splits_its_columns_and_answers_as_one_thread(one_block, two_cores, columns):
    table, path = one_block
    with rcfmt.open(path) as f:
        assert f.num_blocks == 1
        one = f.scan(columns, use_threads=False)
        want = one.read()
        many = f.scan(columns, use_threads=True)
        got = many.read()
    assert _same(got, table.select(columns or table.column_names))
    assert _same(got, want)
    assert len(_columns_pool(two_cores)) > 1, "the block's columns were not split"
    for name in ("pages_read", "pages_total", "rows_decoded", "rows_selected", "bytes_read", "requests"):
        assert getattr(many.stats, name) == getattr(one.stats, name), name


@pytest.mark.parametrize("positions", [[3, 2_900, 5_999], list(range(0, N, 700)), [0, 1, 2, 511, 512, 4_095]])
def test_a_take_of_few_rows_splits_its_pages_among_the_cores(one_block, two_cores, positions, monkeypatch):
    """A take reads the pages holding its rows only; their columns are decoded in groups
    on the cores too (each group with its own columns' page tables), and the rows, the
    order and every count are those of one thread."""
    monkeypatch.setattr(executor, "TAKE_THREADED_CELLS", 1)  # (by default so few rows stay on one thread)
    table, path = one_block
    flat = ["i", "f", "s", "b", "d", "cat"]
    with rcfmt.open(path) as f:
        one = f.scan(flat, use_threads=False, _rows=np.array(sorted(positions)))
        want = one.read()
        many = f.scan(flat, use_threads=True, _rows=np.array(sorted(positions)))
        got = many.read()
        assert _same(f.take(positions[::-1], columns=flat), table.select(flat).take(positions[::-1]))
    assert _same(got, table.select(flat).take(sorted(positions))) and _same(got, want)
    pooled = _columns_pool(two_cores)
    assert pooled and all(set(cols) < set(range(len(table.columns))) for cols in pooled), two_cores
    for name in ("pages_read", "pages_total", "rows_decoded", "rows_selected", "bytes_read"):
        assert getattr(many.stats, name) == getattr(one.stats, name), name
    assert one.stats.pages_read < len(flat) * -(-N // 512)  # (pages, not whole chunks)


def test_a_take_of_too_few_rows_a_column_stays_on_one_thread(one_block, two_cores):
    """A row or two a column is mostly fixed costs: fewer wanted (row, column) pairs than
    TAKE_THREADED_CELLS are decoded on the caller's thread, however large their pages,
    with the answer of one thread."""
    table, path = one_block
    flat = ["i", "f", "s", "b", "d", "cat"]
    positions = [3, 2_900, 5_999]
    assert len(positions) * len(flat) < executor.TAKE_THREADED_CELLS
    with rcfmt.open(path) as f:
        assert _same(f.take(positions, columns=flat), table.select(flat).take(positions))
    assert two_cores and not _columns_pool(two_cores)


@pytest.mark.parametrize("flt", [
    col("i") < 40,  # scattered rows: whole chunks, dense
    (col("f") > 0.5) & (col("s") != "s00007-"),
    ~(col("d") >= 100),  # NULLs: unknown, not kept
    col("i").isin([1, 2, 500]) | (col("b") == True),  # noqa: E712
])
def test_filtered_one_block_scan_splits_the_projection(one_block, two_cores, flt):
    table, path = one_block
    with rcfmt.open(path) as f:
        want = f.read(filter=flt, use_threads=False)
        got = f.read(filter=flt, use_threads=True, read_dictionary=["cat"])
    assert got.num_rows == want.num_rows > 0
    assert got.column("cat").type == pa.dictionary(pa.int32(), pa.string())
    assert _same(got.set_column(got.schema.get_field_index("cat"), "cat", got["cat"].cast(pa.string())), want)


def test_expected_rows_against_pyarrow(one_block, two_cores):
    table, path = one_block
    got = rcfmt.read_table(path, filter=(col("i") < 40) & (col("s").is_valid()), use_threads=True)
    mask = pc.and_kleene(pc.less(table["i"], 40), pc.is_valid(table["s"]))
    assert _same(got, table.filter(mask))
    assert _columns_pool(two_cores)


def test_stream_and_one_block_left_by_pruning_split_too(tmp_path, two_cores):
    table = pa.concat_tables([_table(), _table()])
    path = tmp_path / "two.rcfmt"
    rcfmt.write_table(table, path, block_rows=N, page_rows=512)
    with rcfmt.open(path) as f:
        assert f.num_blocks == 2
        scan = f.scan(filter=col("i") >= 0, blocks=(1, 2), use_threads=True)
        got = scan.read()
        assert _same(got, table.slice(N))
        streamed = pa.Table.from_batches(list(f.scan(use_threads=True, blocks=(0, 1)).iter_batches(1_000)))
    assert _same(streamed, table.slice(0, N))
    assert _columns_pool(two_cores)


def test_small_blocks_stay_on_one_thread(tmp_path, two_cores, monkeypatch):
    monkeypatch.setattr("rcfmt.scan.scheduling.PARALLEL_BLOCK_BYTES", 1 << 30)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(_table(500), path)
    assert rcfmt.read_table(path, use_threads=True).num_rows == 500
    assert not _columns_pool(two_cores)
    assert not [name for name, _ in two_cores if name.startswith("rcfmt-")]


def _corrupt_chunk(path, column: str):
    with rcfmt.open(path) as f:
        c = f.column_index(column)
        chunk = f.footer.chunks[c][0]
        at = int(chunk["offset"]) + int(chunk["length"]) // 2
    with open(path, "r+b") as out:
        out.seek(at)
        byte = out.read(1)
        out.seek(at)
        out.write(bytes([byte[0] ^ 0x5A]))


@pytest.mark.parametrize("column", ["i", "s", "d"])
def test_a_corrupt_column_on_the_pool_raises_the_located_error_of_one_thread(tmp_path, two_cores, column):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(_table().select(["i", "f", "s", "b", "d"]), path, page_rows=512)
    _corrupt_chunk(path, column)
    with pytest.raises(CorruptFileError) as one:
        rcfmt.read_table(path, use_threads=False)
    with pytest.raises(CorruptFileError) as many:
        rcfmt.read_table(path, use_threads=True)
    assert type(many.value) is type(one.value)
    assert isinstance(many.value, ChecksumError)
    assert str(many.value) == str(one.value)
    assert _columns_pool(two_cores)


def test_two_corrupt_columns_on_the_pool_raise_the_error_one_thread_raises(tmp_path, two_cores, monkeypatch):
    """Units run side by side, so the unit that fails first in time need not hold the
    first column: a failed split decodes the block again on one thread, whose error (the
    first column's) is raised."""
    monkeypatch.setattr("rcfmt.scan.scheduling.PARALLEL_BLOCK_BYTES", 0)  # (a unit per column)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(_table().select(["i", "f", "s", "b", "d"]), path, page_rows=512)
    _corrupt_chunk(path, "s")
    _corrupt_chunk(path, "d")
    with pytest.raises(CorruptFileError) as one:
        rcfmt.read_table(path, use_threads=False)
    assert "'s'" in str(one.value)
    for _ in range(5):
        with pytest.raises(CorruptFileError) as many:
            rcfmt.read_table(path, use_threads=True)
        assert type(many.value) is type(one.value) and str(many.value) == str(one.value)
    assert len(_columns_pool(two_cores)) > 2  # (units of the split ran)


def test_a_busy_pool_leaves_the_units_and_the_read_to_the_scan_s_thread(one_block, two_cores, monkeypatch):
    """Units and the second half of a large read wait for no worker: while every worker
    of the "columns" pool is busy elsewhere, the scan's own thread decodes every unit and
    reads both halves (a pool task queued behind other work was waited for before)."""
    import threading as th

    import rcfmt.storage.fetch as fetch

    monkeypatch.setattr("rcfmt.file.reader.SPLIT_READ_BYTES", 1)
    table, path = one_block
    pool = shared_pool("columns")
    release = th.Event()
    blockers = [pool.submit(release.wait, 60) for _ in range(pool._max_workers)]
    result = {}
    try:
        worker = th.Thread(target=lambda: result.update(got=rcfmt.read_table(path, use_threads=True)))
        worker.start()
        worker.join(30)
        assert not worker.is_alive(), "the scan waited for the busy pool"
    finally:
        release.set()
        for b in blockers:
            b.result()
    assert _same(result["got"], table)
    assert fetch.SPLIT_READ_BYTES > 1  # (the module's own constant is untouched)


def test_chunk_costs_weigh_what_decoding_makes(tmp_path):
    """A chunk's cost is its decoded bytes (exact for fixed widths; strings from a
    dictionary by the min's and max's mean length) plus INFLATE_WEIGHT per byte inflated:
    a dictionary of long strings weighs its gathered values, not its codes."""
    n = 20_000
    table = pa.table({"i": pa.array(np.arange(n), pa.int64()),
                      "b": pa.array(np.arange(n) % 3 == 0),
                      "cat": pa.array([f"category-name-{i % 5}" for i in range(n)]),
                      "s": pa.array([f"s{i}" for i in range(n)])})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=8_192, encoding={"cat": "dictionary", "s": "delta_length"})
    with rcfmt.open(path) as f:
        footer = f.footer
        costs = chunk_costs(footer)
        assert costs.shape == (3, 4) and chunk_costs(footer) is costs  # (once per footer)
        rows = footer.blocks["row_count"]
        for b in range(3):
            rec = {name: footer.chunks[f.column_index(name)][b] for name in table.column_names}
            inflated = {name: INFLATE_WEIGHT * int(r["uncompressed_size"]) * (int(r["compression"]) != 0)
                        for name, r in rec.items()}
            assert costs[b, 0] == rows[b] * 8 + inflated["i"]
            assert costs[b, 1] == rows[b] // 8 + inflated["b"]
            mean = (int(rec["cat"]["min_len"]) + int(rec["cat"]["max_len"])) // 2
            assert mean == len("category-name-0")
            assert costs[b, 2] == rows[b] * (4 + mean) + inflated["cat"]
            assert costs[b, 3] == int(rec["s"]["uncompressed_size"]) + 4 * rows[b] + inflated["s"]
            assert costs[b, 2] > 4 * int(rec["cat"]["uncompressed_size"])


@pytest.mark.parametrize("blocks, split", [(2, True), (3, True), (4, False), (8, False)])
def test_few_threaded_blocks_split_their_columns_and_many_do_not(tmp_path, two_cores, blocks, split):
    """Blocks on the pool split their columns too when fewer than COLUMN_SPLIT_BLOCKS per
    core (two cores here): a last block alone would otherwise leave a core idle."""
    rows = 1_500
    table = pa.concat_tables([_table(rows)] * blocks)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=rows, page_rows=512)
    with rcfmt.open(path) as f:
        assert f.num_blocks == blocks
        got = f.read(use_threads=True)
        want = f.read(use_threads=False)
    assert _same(got, table) and _same(want, table)
    assert [n for n, _ in two_cores if n.startswith("rcfmt-scan")], "the blocks were not on the pool"
    assert bool(_columns_pool(two_cores)) is split


def test_a_corrupt_nested_field_on_the_pool_raises_the_error_of_one_thread(tmp_path, two_cores):
    """A nested field assembled on the pool beside the flat columns: its damaged chunk
    raises the located error one thread raises, after every field's work is done."""
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(_table().select(["i", "l", "st"]), path, page_rows=512)
    _corrupt_chunk(path, "l.item")  # (the list's elements)
    with pytest.raises(CorruptFileError) as one:
        rcfmt.read_table(path, use_threads=False)
    with pytest.raises(CorruptFileError) as many:
        rcfmt.read_table(path, use_threads=True)
    assert type(many.value) is type(one.value) and str(many.value) == str(one.value)
    assert _columns_pool(two_cores)
