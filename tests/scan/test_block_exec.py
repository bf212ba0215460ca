"""The native block executor (rcfmt/_native/block.pyx, rcfmt/scan/block_exec.py): every
flat column of a whole block in one call, the same arrays, stats and errors as the
per-column Python page path it replaced."""
from __future__ import annotations

import decimal

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt.errors import CorruptFileError
from rcfmt.index.page import PageIndex
from rcfmt.scan import block_exec

N = 5000


def _table(rng):
    words = np.array(["alpha", "bravo", "charlie", "délta", "écho"])
    nulls = rng.random(N) < 0.1
    dec = [None if m else decimal.Decimal(int(v)).scaleb(-2) for v, m in zip(rng.integers(-10**9, 10**9, N), nulls)]
    big = [decimal.Decimal(int(v)) * 10**20 for v in rng.integers(-10**9, 10**9, N)]
    return pa.table({
        "i64": pa.array(rng.integers(-10**12, 10**12, N), mask=nulls),
        "sorted": np.arange(N, dtype=np.int64) * 3,
        "f64": rng.standard_normal(N).round(2),
        "f32": rng.standard_normal(N).astype(np.float32),
        "i8": rng.integers(-100, 100, N).astype(np.int8),
        "u16": rng.integers(0, 60000, N).astype(np.uint16),
        "b": pa.array(rng.random(N) < 0.3, mask=rng.random(N) < 0.05),
        "s": pa.array(words[rng.integers(0, 5, N)], mask=nulls),
        "u": pa.array([f"value {i} ✓" for i in rng.integers(0, 10**6, N)]),
        "ls": pa.array([f"v{i}" for i in range(N)], pa.large_string()),
        "bin": pa.array([bytes(rng.integers(0, 256, i % 7, dtype=np.uint8)) for i in range(N)]),
        "d": pa.array(dec, pa.decimal128(12, 2)),
        "dbig": pa.array(big, pa.decimal128(38, 0)),
        "day": pa.array(rng.integers(0, 20000, N).astype(np.int32), pa.date32()),
        "ts": pa.array(rng.integers(0, 10**15, N), pa.timestamp("us")),
        "t32": pa.array(rng.integers(0, 86400, N).astype(np.int32), pa.time32("s")),
    })


@pytest.mark.parametrize("compression", ["none", "zstd", "lz4"])
@pytest.mark.parametrize("encoding", [None, "plain"])
def test_round_trip(tmp_path, compression, encoding):
    table = _table(np.random.default_rng(7))
    path = tmp_path / "t.rcfmt"
    options = {} if encoding is None else {"encoding": encoding}
    rcfmt.write_table(table, path, block_rows=1024, page_rows=300, compression=compression, **options)
    f = rcfmt.open(path)
    for threads in (False, True):
        got = f.scan(use_threads=threads).read()
        assert got.equals(table)
        got.validate(full=True)


def test_encodings_forced(tmp_path):
    rng = np.random.default_rng(3)
    table = pa.table({"a": rng.integers(0, 1000, N), "b": rng.integers(-5, 5, N).astype(np.int32),
                      "c": np.repeat(np.arange(N // 100), 100).astype(np.int64),
                      "s": pa.array([f"k{i % 37}" for i in range(N)])})
    for enc in ({"a": "bitpack", "b": "delta", "c": "rle", "s": "delta_length"},
                {"a": "delta", "b": "bitpack", "c": "dictionary", "s": "dictionary"}):
        path = tmp_path / f"{enc['a']}.rcfmt"
        rcfmt.write_table(table, path, block_rows=2000, encoding=enc)
        assert rcfmt.open(path).scan().read().equals(table)


def test_read_dictionary_and_stats(tmp_path):
    table = _table(np.random.default_rng(11))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=2048)
    f = rcfmt.open(path)
    scan = f.scan(columns=["s", "i64", "u"], read_dictionary=["s", "i64"], use_threads=False)
    got = scan.read()
    assert pa.types.is_dictionary(got.schema.field("s").type)
    assert got.column("s").cast(pa.string()).equals(table.column("s"))
    assert got.column("i64").cast(pa.int64()).equals(table.column("i64"))
    assert got.column("u").equals(table.column("u"))
    st = scan.stats
    pages = sum(int(f.footer.chunks[f.column_index(n)][b]["page_count"]) for n in ("s", "i64", "u")
                for b in range(f.num_blocks))
    assert st.pages_read == st.pages_total == pages
    assert st.rows_decoded == 3 * N
    assert st.bytes_read > 0 and st.requests >= f.num_blocks


def test_filter_all_rows_selected_uses_executor(tmp_path):
    table = _table(np.random.default_rng(5))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=1000)
    f = rcfmt.open(path)
    got = f.scan(columns=["sorted", "s", "d"], filter=rcfmt.col("sorted") >= 0).read()
    assert got.equals(table.select(["sorted", "s", "d"]))


def _corrupt_body(path, f, name, block=0):
    rec = f.footer.chunks[f.column_index(name)][block]
    at = int(rec["offset"]) + int(rec["dictionary_length"]) + 32 + 3  # inside the first data page's body
    data = bytearray(path.read_bytes())
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("name", ["i64", "s", "u", "f64"])
def test_errors_are_the_reference_decoders(tmp_path, name):
    table = _table(np.random.default_rng(9))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=2500, compression="none")
    _corrupt_body(path, rcfmt.open(path), name)
    f = rcfmt.open(path)
    with pytest.raises(CorruptFileError) as native:
        f.scan(columns=[name], use_threads=False).read()
    # the reference decoder on the same chunk says the same
    col = f.column_index(name)
    with pytest.raises(CorruptFileError) as python:
        decoder = f.chunk_decoder(0, col)
        try:
            decoder.decode_all(int(f.footer.blocks[0]["row_count"]))
        except CorruptFileError as exc:
            raise f.locate_error(exc, 0, col) from None
    assert str(native.value) == str(python.value)
    # without checksums: the damaged values themselves, still the reference decoder's message
    f = rcfmt.open(path, verify_checksums=False)
    try:
        native_text = str(f.scan(columns=[name], use_threads=False).read())
    except CorruptFileError as exc:
        native_text = str(exc)
    try:
        col_data = f.chunk_decoder(0, col).decode_all(int(f.footer.blocks[0]["row_count"]))
        python_text = None
    except CorruptFileError as exc:
        python_text = str(f.locate_error(exc, 0, col))
    if python_text is not None:
        assert native_text == python_text
    else:
        assert col_data is not None


def test_invalid_utf8_is_refused_with_the_python_message(tmp_path):
    raw = pa.array([b"ok", b"fine", b"\xff\xfe bad"] * 100, pa.binary())
    table = pa.table({"s": raw.cast(pa.string(), safe=False)})
    path = tmp_path / "t.rcfmt"
    try:
        rcfmt.write_table(table, path, encoding="plain", compression="none")
    except Exception:
        pytest.skip("the writer refuses ill-formed UTF-8")
    with pytest.raises(CorruptFileError, match="ill-formed UTF-8"):
        rcfmt.open(path).scan().read()


def test_spec_built_once_per_scan(tmp_path, monkeypatch):
    table = _table(np.random.default_rng(1))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=500)
    built = []
    real = block_exec.BlockColumns.__init__

    def counting(self, *a, **k):
        built.append(1)
        real(self, *a, **k)

    monkeypatch.setattr(block_exec.BlockColumns, "__init__", counting)
    rcfmt.open(path).scan(use_threads=False).read()
    assert len(built) == 1


def test_an_open_file_keeps_its_column_specs_for_the_next_scans(tmp_path, monkeypatch):
    """Scans of the same columns of one open file (a loader's takes, repeated lookups)
    build the executor's spec once; another list of columns, read_dictionary or another
    open of the file builds its own; the file keeps at most KEPT_PROGRAMS of them; every
    answer is the one of a fresh spec."""
    from rcfmt.scan import programs

    table = _table(np.random.default_rng(2))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=500)
    built = []
    real = block_exec.BlockColumns.__init__

    def counting(self, file, cols, *a, **k):
        built.append(tuple(cols))
        real(self, file, cols, *a, **k)

    monkeypatch.setattr(block_exec.BlockColumns, "__init__", counting)
    names = table.column_names
    with rcfmt.open(path) as f:
        for _ in range(3):
            assert f.take([5, 3, 900], use_threads=False).equals(table.take([5, 3, 900]))
        assert len(built) == 1
        assert f.read(names[:2], use_threads=False).equals(table.select(names[:2]))
        assert len(built) == 2
        dictionary = f.read(names[:2], use_threads=False, read_dictionary=[names[1]])
        assert len(built) == 3 and pa.types.is_dictionary(dictionary.schema.field(1).type)
        monkeypatch.setattr(programs, "KEPT_PROGRAMS", 4)
        for i in range(6):  # (more lists than kept: the file starts afresh, answers stay right)
            cols = [names[i % len(names)], names[(i + 1) % len(names)]]
            assert f.read(cols, use_threads=False).equals(table.select(cols))
        assert len(f.program_cache) <= 4
    with rcfmt.open(path) as g:
        g.take([1], use_threads=False)
    assert built[-1] == built[0]  # (a new open builds its own)


def test_an_open_file_keeps_what_a_projection_returns_for_the_next_scans(tmp_path, monkeypatch):
    """The output schema of a list of columns is worked out once per open file and
    asked names: the next takes of the same columns reuse it; with_row_position,
    read_dictionary and another list each get their own, and every answer is right."""
    from rcfmt.scan import query as query_mod

    table = _table(np.random.default_rng(3))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=500)
    built = []
    real = query_mod.ScanQuery._output_schema

    def counting(self, *a, **k):
        built.append(1)
        return real(self, *a, **k)

    monkeypatch.setattr(query_mod.ScanQuery, "_output_schema", counting)
    names = table.column_names
    with rcfmt.open(path) as f:
        for cols in (None, None, names[:2], names[:2], (names[0], names[1])):
            want = table if cols is None else table.select(list(cols))
            assert f.take([7, 2], columns=cols, use_threads=False).equals(want.take([7, 2]))
        assert len(built) == 2
        positions = f.read(names[:2], use_threads=False, with_row_position=True)
        assert positions.column_names == [*names[:2], "_row_position"] and len(built) == 3
        dictionary = f.read(names[:2], use_threads=False, read_dictionary=[names[1]])
        assert pa.types.is_dictionary(dictionary.schema.field(1).type) and len(built) == 4
        assert f.read(names[:2], use_threads=False).schema == table.select(names[:2]).schema
        assert len(built) == 4
        with pytest.raises(rcfmt.RcfmtError):
            f.read(["no such column"])
        with pytest.raises(rcfmt.RcfmtError):
            f.read(["no such column"])  # (a refused list is refused again, not kept)


def test_a_column_kept_alone_keeps_only_its_own_memory(tmp_path):
    """Each column decodes into its own arena: once the table is dropped, one column
    kept from it holds its own bytes, not the whole block's (8 columns here)."""
    import gc

    n = 1 << 18
    table = pa.table({f"c{i}": pa.array(np.arange(n, dtype=np.int64) * i) for i in range(8)})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=n)
    pool = pa.default_memory_pool()  # (rcfmt.runtime.memory allocates outputs there)
    gc.collect()
    before = pool.bytes_allocated()
    read = rcfmt.read_table(path, use_threads=False)
    assert read.equals(table)
    one = read.column("c3")
    del read
    gc.collect()
    kept = pool.bytes_allocated() - before
    assert one.nbytes <= kept <= one.nbytes + (64 << 10), (kept, one.nbytes)
    assert one.equals(table.column("c3"))


def _executor_over(tmp_path, seed: int, encoding):
    """``(table, path, open file, BlockColumns of every column)`` of a one-block file of
    ``_table(seed)`` in 400-row pages (``encoding``: forced, or None)."""
    table = _table(np.random.default_rng(seed))
    path = tmp_path / "t.rcfmt"
    options = {} if encoding is None else {"encoding": encoding}
    rcfmt.write_table(table, path, block_rows=N, page_rows=400, **options)
    f = rcfmt.open(path)
    return table, path, f, block_exec.BlockColumns(f, list(range(len(table.column_names))), set())


@pytest.mark.parametrize("encoding", [None, "plain"])
def test_selected_rows_are_gathered_natively(tmp_path, encoding):
    """Partial blocks: the executor decodes the pages holding a selected row and
    gathers those rows (values, validity, strings, dictionary codes or values, bools,
    BITPACK and PLAIN decimals): the same as the whole block's ``take``."""
    table, path, f, executor = _executor_over(tmp_path, 13, encoding)
    buf = path.read_bytes()
    rng = np.random.default_rng(1)
    runs = [np.arange(0, 400), np.arange(399, 801), np.arange(400, N), np.array([399, 400, 799, 800])]
    for k in (0, 1, 7, 400, 2500, N - 1, N, *runs):  # (runs: rows at and across page boundaries)
        selected = (np.sort(rng.choice(N, k, replace=False)) if isinstance(k, int) else k).astype(np.int64)
        got, _pages, _rows = executor.run(block_exec.BlockRead(buf, 0, 0, N, True, selected))
        for name, array in zip(table.column_names, got):
            if isinstance(array, tuple):  # (annotated types: wrapped by the scan, checked below)
                assert name == "t32"
                continue
            array.validate(full=True)
            assert array.equals(table.column(name).combine_chunks().take(selected)), (name, k)
    with pytest.raises(ValueError, match="sorted"):
        executor.run(block_exec.BlockRead(buf, 0, 0, N, True, np.array([3, 2], np.int64)))
    with pytest.raises(ValueError, match="sorted"):
        executor.run(block_exec.BlockRead(buf, 0, 0, N, True, np.array([N], np.int64)))


def test_dense_selections_take_the_executor(tmp_path, monkeypatch):
    """A filter selecting at least as many rows as a column has pages gathers them from
    the whole chunks, read at once; fewer are gathered from the pages the page index
    names (only their bytes read). Both are native, and give the filter's rows."""
    table = _table(np.random.default_rng(17))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=N, page_rows=500)
    f = rcfmt.open(path)
    calls = []
    original = block_exec.BlockColumns.run

    def run(self, read, *args, **kwargs):
        calls.append((None if read.selected is None else len(read.selected), read.pages is not None))
        return original(self, read, *args, **kwargs)

    monkeypatch.setattr(block_exec.BlockColumns, "run", run)
    few = int(np.sort(table.column("u16").to_numpy())[3]) + 1  # four rows or a few more, fewer than ten
    for limit in (3000, few):
        calls.clear()
        got = f.scan(["u", "d", "s", "b", "t32"], filter=rcfmt.col("u16") < limit, use_page_index=False,
                     use_threads=False).read()
        mask = pa.compute.less(table.column("u16"), limit)
        assert got.equals(table.filter(mask).select(["u", "d", "s", "b", "t32"]))
        assert 4 <= got.num_rows
        assert (got.num_rows, got.num_rows < 10) in calls  # 10 pages per column


def _page_tables(f, cols, selected, base=0):
    """Per column the page table of the pages holding a ``selected`` row (block 0)."""
    out = []
    for col in cols:
        index = PageIndex(f.page_index(0, col))
        ids = np.unique(np.searchsorted(index.first, selected, side="right") - 1)
        e = index.entries
        out.append(np.array([e["offset"][ids].astype(np.int64) - base, index.counts[ids], e["length"][ids],
                             index.first[ids]], np.int64))
    return out


@pytest.mark.parametrize("encoding", [None, "plain"])
def test_rows_are_gathered_from_the_pages_the_page_index_names(tmp_path, encoding):
    """Lookups and narrow windows: the executor reads only the pages it is given (the
    rest of the buffer is garbage here) and gathers the selected rows from them, the
    same as the whole block's ``take``, for every flat type and layout."""
    table, path, f, executor = _executor_over(tmp_path, 23, encoding)
    cols = list(range(len(table.column_names)))
    data = np.frombuffer(path.read_bytes(), np.uint8)
    rng = np.random.default_rng(3)
    for selected in (np.array([0]), np.array([N - 1]), np.array([399, 400]), np.arange(1000, 1040),
                     np.sort(rng.choice(N, 9, replace=False))):
        selected = selected.astype(np.int64)
        pages = _page_tables(f, cols, selected)
        buf = np.full(len(data), 0xA5, np.uint8)  # only the listed pages and dictionaries are real
        for col, table_ in zip(cols, pages):
            for pos, length in zip(table_[0], table_[2]):
                buf[pos: pos + length] = data[pos: pos + length]
            rec = f.footer.chunks[col][0]
            lo = int(rec["offset"])
            buf[lo: lo + int(rec["dictionary_length"])] = data[lo: lo + int(rec["dictionary_length"])]
        got, pages_read, rows_read = executor.run(block_exec.BlockRead(buf, 0, 0, N, True, selected, pages))
        assert pages_read == sum(t.shape[1] for t in pages)
        assert rows_read == sum(int(t[1].sum()) for t in pages)
        for name, array in zip(table.column_names, got):
            if isinstance(array, tuple):  # (annotated types: wrapped by the scan)
                continue
            array.validate(full=True)
            assert array.equals(table.column(name).combine_chunks().take(selected)), (name, selected)


def test_page_tables_that_disagree_are_refused(tmp_path):
    """A page table naming bytes outside its chunk, a page whose header says other rows
    or another length, or missing a selected row: the column is refused (its status),
    never read out of bounds. Pages that disagree with their table are a CorruptFileError
    located at the column and block (the reference decoder's message); a table missing a
    wanted row is the caller's error, an RcfmtError naming the executor's status."""
    table = _table(np.random.default_rng(29))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=N, page_rows=400)
    f = rcfmt.open(path)
    cols = [0, 1]
    executor = block_exec.BlockColumns(f, cols, set())
    buf = np.frombuffer(path.read_bytes(), np.uint8)
    selected = np.array([10, 900], np.int64)
    good = _page_tables(f, cols, selected)
    got, _, _ = executor.run(block_exec.BlockRead(buf, 0, 0, N, True, selected, good))
    assert all(isinstance(g, pa.Array) for g in got)

    def forged(change):
        table_ = good[0].copy()
        change(table_)
        return executor.run(block_exec.BlockRead(buf, 0, 0, N, True, selected, [table_, good[1]]))[0]

    def other_chunk(t):
        t[0, 0] = good[1][0, 0]  # column 1's page

    def past_the_buffer(t):
        t[0, 0] = len(buf) - 4

    def rows(t):
        t[1, 0] += 1

    def length(t):
        t[2, 0] -= 1

    def missing(t):
        t[3, 1] = 2000  # the second page claims rows past 900

    for change in (other_chunk, past_the_buffer, rows, length):
        with pytest.raises(CorruptFileError) as info:
            forged(change)
        assert (info.value.column, info.value.block) == (table.column_names[0], 0), change.__name__
    with pytest.raises(rcfmt.RcfmtError, match="a wanted row lies in none of the pages listed.*bug in rcfmt") as info:
        forged(missing)
    assert not isinstance(info.value, CorruptFileError) and repr(table.column_names[0]) in str(info.value)
    with pytest.raises(ValueError, match="one entry per column"):
        executor.run(block_exec.BlockRead(buf, 0, 0, N, True, selected, [good[0]]))
    with pytest.raises(ValueError, match="selected"):
        executor.run(block_exec.BlockRead(buf, 0, 0, N, True, None, good))
    with pytest.raises(ValueError, match="4, n"):
        executor.run(block_exec.BlockRead(buf, 0, 0, N, True, selected, [good[0][:3].copy(), good[1]]))


def test_a_refused_chunk_is_never_decoded_another_way(tmp_path):
    """A chunk the executor refuses though it is sound (here: its encoding struck from
    the spec) is rcfmt's fault, not the file's: an RcfmtError (not a CorruptFileError)
    naming the column, the block and the executor's status; the reference decoder,
    which accepts the chunk, hands back no data."""
    table = _table(np.random.default_rng(31))
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=N)
    f = rcfmt.open(path)
    executor = block_exec.BlockColumns(f, [0], set())
    buf = np.frombuffer(path.read_bytes(), np.uint8)
    assert isinstance(executor.run(block_exec.BlockRead(buf, 0, 0, N, True))[0][0], pa.Array)
    executor.spec[0, block_exec._abi.S_ENCODINGS] = 0
    with pytest.raises(rcfmt.RcfmtError, match="refused a chunk the reference decoder reads .an encoding or filter "
                                               "it has no kernel for.; this is a bug") as info:
        executor.run(block_exec.BlockRead(buf, 0, 0, N, True))
    assert not isinstance(info.value, CorruptFileError)
    assert f"column {table.column_names[0]!r}, block 0" in str(info.value)


def _rows_where(table: pa.Table, keep) -> list:
    return [row for row in table.to_pylist() if keep(row)]


def test_every_stored_column_is_decoded_by_the_executor(tmp_path, monkeypatch):
    """Flat columns, the stored columns of structs and of lists, lists in a filter alone
    and beside flat conjuncts: a scan of a sound file never builds the reference
    decoder (there is no per-column decode path), and its rows are those a plain Python
    filter over the table keeps."""
    n = 3000
    rng = np.random.default_rng(37)
    ks = rng.permutation(n)
    table = pa.table({
        "k": pa.array(ks),
        "s": pa.array([None if i % 13 == 0 else f"v{i % 7}" for i in range(n)]),
        "tags": pa.array([None if i % 11 == 0 else [int(k) % 5, int(k) % 3] for i, k in enumerate(ks)],
                         pa.list_(pa.int64())),
        "p": pa.StructArray.from_arrays([pa.array(ks * 2.0), pa.array([str(i) for i in range(n)])], names=["x", "y"]),
    })
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=1000, page_rows=200)

    def refuse(*args, **kwargs):
        raise AssertionError("the reference decoder was built for a sound file")

    monkeypatch.setattr(rcfmt.RcfmtFile, "chunk_decoder", refuse)
    col, has = rcfmt.col, rcfmt.list_contains
    cases = [
        (None, lambda r: True),
        (col("k") < 1500, lambda r: r["k"] < 1500),
        (col("k") == 77, lambda r: r["k"] == 77),
        (has(col("tags"), 3), lambda r: r["tags"] is not None and 3 in r["tags"]),
        (has(col("tags"), 3) & (col("k") >= 2500), lambda r: r["tags"] is not None and 3 in r["tags"] and r["k"] >= 2500),
        (has(col("tags"), 4) | (col("s") == "v2"),
         lambda r: (r["tags"] is not None and 4 in r["tags"]) or r["s"] == "v2"),
        (col("p.x") == 40.0, lambda r: r["p"]["x"] == 40.0),
    ]
    for use_threads in (False, True):
        for expr, keep in cases:
            got = rcfmt.read_table(path, filter=expr, use_threads=use_threads)
            assert got.to_pylist() == _rows_where(table, keep), (expr, use_threads)
    got = rcfmt.read_table(path, columns=["tags", "p"], filter=col("k") == 5)
    assert got.to_pylist() == [{"tags": r["tags"], "p": r["p"]} for r in _rows_where(table, lambda r: r["k"] == 5)]


def test_a_block_program_is_checked_when_made_and_each_call_against_it(tmp_path):
    """run_block's modes live in a BlockProgram, built and checked once per scan: a
    combination the executor cannot run is refused when the program is made, and a call
    whose chunks or mask do not fit the program is refused before anything is decoded."""
    from rcfmt._native import abi, block, filters

    table = pa.table({"a": np.arange(100, dtype=np.int64), "b": np.arange(100, dtype=np.int64) % 7})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path)
    f = rcfmt.open(path)
    columns = block_exec.BlockColumns(f, [0, 1], ())
    spec = columns.spec
    keep = filters.Filter(("nulls", False))  # (is_valid: every row of these columns)
    with pytest.raises(ValueError, match="S_COLS"):
        block.BlockProgram(np.zeros((2, abi.S_COLS + 1), np.int64))
    with pytest.raises(ValueError, match="one entry per column"):
        block.BlockProgram(spec, [keep])
    with pytest.raises(TypeError, match="Filter objects"):
        block.BlockProgram(spec, [keep, "b > 3"])
    with pytest.raises(ValueError, match="compact needs filters"):
        block.BlockProgram(spec, None, False, [1, 0])
    with pytest.raises(ValueError, match="then needs compact"):
        block.BlockProgram(spec, [keep, None], True, None, 1)
    with pytest.raises(ValueError, match="take no part"):
        block.BlockProgram(spec, [keep, keep], True, [1, 0], 1)
    program = block.BlockProgram(spec, [keep, None], True)
    buf = np.fromfile(path, np.uint8)
    chunks = columns.chunks[0]
    with pytest.raises(ValueError, match="C_COLS"):
        block.run_block(program, buf, 0, chunks[:1], 100, True, np.empty(100, np.uint8))
    with pytest.raises(ValueError, match="mask of one byte per row"):
        block.run_block(program, buf, 0, chunks, 100, True, None)
    with pytest.raises(ValueError, match="mask of one byte per row"):
        block.run_block(program, buf, 0, chunks, 100, True, np.empty(99, np.uint8))
    mask = np.zeros(100, np.uint8)
    arenas, results, _, _ = block.run_block(program, buf, 0, chunks, 100, True, mask)
    assert results[:, abi.R_STATUS].tolist() == [abi.ST_OK, abi.ST_OK] and mask.all()
    # (a compacting program returns the rows it picked: here every one)
    compacting = block.BlockProgram(spec, [keep, None], True, [1, 1])
    *_, (rows, starts, ends) = block.run_block(compacting, buf, 0, chunks, 100, True, None)
    assert rows.tolist() == list(range(100)) and starts.tolist() == [0] and ends.tolist() == [100]


@pytest.mark.parametrize("length", [0, 1, 2, 5, 8, 9, 16, 17, 19, 32, 33, (0, 16), (3, 17), (10, 32), (1, 33)])
@pytest.mark.parametrize("arrow_type", [pa.string(), pa.large_string(), pa.binary()], ids=str)
def test_dictionary_entries_of_one_length_gather_as_any(tmp_path, length, arrow_type):
    """A dictionary whose entries all have one length (copied without a pass over the
    lengths, offsets by row number), or lengths in a range (``(shortest, longest)``:
    copied as two 16-byte moves up to 32 bytes), reads back as pyarrow wrote it: whole,
    filtered, taken, with NULLs whose codes point anywhere."""
    rng = np.random.default_rng(np.sum(length))
    lo, hi = length if isinstance(length, tuple) else (length, length)
    entries = [bytes(rng.integers(97, 123, n, dtype=np.uint8)) for n in [lo, hi, *rng.integers(lo, hi + 1, 5)]]
    picks = rng.integers(0, len(entries), 20_000)
    values = [entries[k] if arrow_type == pa.binary() else entries[k].decode() for k in picks]
    table = pa.table({"s": pa.array(values, arrow_type, mask=rng.random(20_000) < 0.2),
                      "k": np.arange(20_000, dtype=np.int64)})
    path = tmp_path / "same.rcfmt"
    rcfmt.write_table(table, path, encoding={"s": "dictionary"})
    with rcfmt.open(path) as f:
        assert int(f.footer.chunks[0][0]["encoding"]) == 1
        for threads in (True, False):
            assert f.read(use_threads=threads).equals(table)
        rows = table.filter(pa.array(np.arange(20_000) < 700))
        assert f.read(filter=rcfmt.col("k") < 700).equals(rows)
        positions = rng.integers(0, 20_000, 300)
        assert f.take(positions).equals(table.take(positions))
