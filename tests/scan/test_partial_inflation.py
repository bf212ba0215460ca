"""Strings' zstd pages inflated only as far as the wanted rows need (issue 56).

With ``zstd_block_size``, the writer ends a zstd block every that many bytes of a
string page's body (one ordinary frame); a take or a filter's few rows inflate each
such page only up to the block holding the last wanted string. Checked here: the
frames' blocks (parsed by the zstd format itself, RFC 8878), the same rows as
``pyarrow.Table.take`` and ``pyarrow.compute`` on files written with and without the
blocks (the default: one block a page, inflated whole), PLAIN and DELTA_LENGTH, with
NULLs (a page with a validity bitmap is inflated whole), 1 and 2 threads, the Python
codecs; that a corrupt block past the wanted rows is not even reached while a full
read refuses it, that one before them is refused, and that the option is checked."""
from __future__ import annotations

import struct

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import rcfmt
from rcfmt import codecs
from rcfmt._native import pages as native_pages
from rcfmt.errors import CorruptFileError, InvalidOptionError

ROWS = 30_000
BLOCK = 16_384


def _table(nulls: bool) -> pa.Table:
    """A compressible string column (words, 0-200 bytes a row: pages of about 48 KiB)
    and a row number."""
    rng = np.random.default_rng(7)
    words = np.array(["carefully", "final", "deposits", "sleep", "quickly", "ironic", "packages", "among", "the",
                      "furiously", "regular", "accounts", "x"])
    lengths = rng.integers(0, 30, ROWS)
    text = [" ".join(rng.choice(words, n)) for n in lengths]
    mask = rng.random(ROWS) < 0.1 if nulls else None
    return pa.table({"s": pa.array(text, pa.string(), mask=mask), "i": pa.array(np.arange(ROWS, dtype=np.int64))})


def _write(tmp_path, table, encoding: str, blocks: bool) -> str:
    path = str(tmp_path / f"{encoding}_{blocks}.rcfmt")
    rcfmt.write_table(table, path, compression="zstd", encoding={"s": encoding, "i": "plain"}, progress=False,
                      **({"zstd_block_size": BLOCK} if blocks else {}))
    return path


def _pages(path: str, column: int = 0):
    """``(first row, rows, header offset, codec, stored size, uncompressed size)`` of
    every data page of ``column``, from the page index and the page headers."""
    data = open(path, "rb").read()
    with rcfmt.open(path) as f:
        out, first = [], 0
        for b in range(f.num_blocks):
            for e in f.page_index(b, column):
                at = int(e["offset"])  # (in the file)
                stored, raw = struct.unpack_from("<II", data, at + 16)
                out.append((first + int(e["first_row"]), int(e["row_count"]), at, data[at + 2], stored, raw))
            first += int(f.footer.blocks[b]["row_count"])
    return data, out


def _blocks(frame: bytes) -> list[tuple[int, int, int]]:
    """``(header offset, type, size)`` of every block of a zstd frame (RFC 8878 3.1.1)."""
    assert struct.unpack_from("<I", frame, 0)[0] == 0xFD2FB528
    fhd = frame[4]
    single, dict_flag, fcs_flag = (fhd >> 5) & 1, fhd & 3, fhd >> 6
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag] + ((1 if single else 0), 2, 4, 8)[fcs_flag]
    out = []
    while True:
        word = int.from_bytes(frame[pos:pos + 3], "little")
        last, kind, size = word & 1, (word >> 1) & 3, word >> 3
        out.append((pos, kind, size))
        pos += 3 + (1 if kind == 1 else size)
        if last:
            break
    assert pos + (4 if (fhd >> 2) & 1 else 0) == len(frame)
    return out


@pytest.mark.parametrize("encoding", ["plain", "delta_length"])
def test_large_string_pages_end_a_zstd_block_every_block_bytes(tmp_path, encoding):
    table = _table(nulls=False)
    data, pages = _pages(_write(tmp_path, table, encoding, True))
    large = [p for p in pages if p[5] > BLOCK]
    assert large and all(p[3] == codecs.ZSTD for p in pages)
    for _, _, at, _, stored, raw in pages:
        frame = data[at + 32:at + 32 + stored]
        assert len(_blocks(frame)) == max(1, -(-raw // BLOCK))
        assert len(codecs.decompress(codecs.ZSTD, frame, raw)) == raw  # an ordinary frame
    # the default: one block a page
    data, old = _pages(_write(tmp_path, table, encoding, False))
    assert all(len(_blocks(data[at + 32:at + 32 + stored])) == 1 for _, _, at, _, stored, raw in old)


@pytest.mark.parametrize("encoding", ["plain", "delta_length"])
@pytest.mark.parametrize("blocks", [True, False])
@pytest.mark.parametrize("nulls", [False, True])
def test_takes_and_filters_return_the_rows_pyarrow_does(tmp_path, encoding, blocks, nulls):
    table = _table(nulls)
    path = _write(tmp_path, table, encoding, blocks)
    rng = np.random.default_rng(3)
    _, pages = _pages(path)
    edges = sorted({r for first, rows, *_ in pages for r in (first, first + rows - 1)})
    picks = [np.sort(rng.choice(ROWS, k, replace=False)) for k in (1, 7, 300)]
    picks += [rng.integers(0, ROWS, 200), np.array(edges), np.array([ROWS - 1, 0, ROWS - 1])]
    with rcfmt.open(path) as f:
        for positions in picks:
            for threads in (True, False):
                assert f.take(positions, use_threads=threads).equals(table.take(positions))
        numbers = np.arange(ROWS)
        for wanted in (rng.choice(ROWS, 40, replace=False), np.arange(17_000, 17_003), np.arange(0, ROWS, 3)):
            expr = rcfmt.col("i").isin(wanted.tolist()) | rcfmt.col("s").startswith("furiously final")
            want = table.filter(pc.or_kleene(pc.is_in(table["i"], pa.array(wanted)),
                                             pc.starts_with(table["s"], "furiously final")))
            assert len(want) < ROWS and np.isin(numbers, wanted).sum() <= len(want)
            assert f.read(filter=expr).equals(want)


def test_the_python_codecs_read_the_blocks_alike(tmp_path):
    table = _table(nulls=False)
    path = _write(tmp_path, table, "delta_length", True)
    positions = np.sort(np.random.default_rng(5).choice(ROWS, 50, replace=False))
    native_pages.use_native_codecs(False)
    try:
        with rcfmt.open(path) as f:
            assert f.take(positions).equals(table.take(positions))
            assert f.read().equals(table)
    finally:
        native_pages.use_native_codecs(True)


def _forge_block(path: str, page, which: int) -> None:
    """Make block ``which`` of ``page``'s frame one of the reserved type (3) in place."""
    data = bytearray(open(path, "rb").read())
    at, stored = page[2], page[4]
    header = _blocks(bytes(data[at + 32:at + 32 + stored]))[which][0]
    data[at + 32 + header] |= 0b110
    open(path, "wb").write(bytes(data))


@pytest.mark.parametrize("encoding", ["plain", "delta_length"])
def test_a_corrupt_block_past_the_wanted_rows_is_not_inflated(tmp_path, encoding):
    table = _table(nulls=False)
    path = _write(tmp_path, table, encoding, True)
    _, pages = _pages(path)
    page = next(p for p in pages if p[5] > 2 * BLOCK)
    _forge_block(path, page, -1)
    first = page[0]
    with rcfmt.open(path, verify_checksums=False) as f:
        # the page's first rows lie in its first block: the forged last block is never reached
        assert f.take([first, first + 1]).equals(table.take([first, first + 1]))
        with pytest.raises(CorruptFileError, match="zstd"):
            f.take([first + page[1] - 1])  # its last row needs every block
        with pytest.raises(CorruptFileError, match="zstd"):
            f.read()


def test_a_corrupt_block_before_the_wanted_rows_is_refused(tmp_path):
    table = _table(nulls=False)
    path = _write(tmp_path, table, "delta_length", True)
    _, pages = _pages(path)
    page = next(p for p in pages if p[5] > 2 * BLOCK)
    _forge_block(path, page, 0)
    with rcfmt.open(path, verify_checksums=False) as f:
        for threads in (True, False):
            with pytest.raises(CorruptFileError, match="zstd"):
                f.take([page[0] + 1], use_threads=threads)
    with rcfmt.open(path) as f:  # (with checksums on, the page's checksum refuses it first)
        with pytest.raises(CorruptFileError, match="checksum"):
            f.take([page[0] + 1])


def test_a_frame_declaring_a_huge_window_is_inflated_whole(tmp_path):
    """A streaming inflation allocates the window a frame declares: a forged 1 GiB window
    (legal, and harmless to a one-shot inflation) sends the page the whole way."""
    table = _table(nulls=False)
    path = _write(tmp_path, table, "delta_length", True)
    _, pages = _pages(path)
    page = next(p for p in pages if p[5] > 2 * BLOCK)
    data = bytearray(open(path, "rb").read())
    frame = page[2] + 32
    assert not data[frame + 4] & 0x20  # (a window descriptor follows the frame header descriptor)
    data[frame + 5] = 20 << 3  # 2 ** (10 + 20) bytes
    open(path, "wb").write(bytes(data))
    with rcfmt.open(path, verify_checksums=False) as f:
        assert f.take([page[0], page[0] + 1]).equals(table.take([page[0], page[0] + 1]))


@pytest.mark.parametrize("bad", [0, 1023, 128 * 1024 + 1, 2.5, True, "16k"])
def test_zstd_block_size_is_checked(tmp_path, bad):
    with pytest.raises(InvalidOptionError, match="zstd_block_size"):
        rcfmt.write_table(pa.table({"s": ["a"]}), str(tmp_path / "x.rcfmt"), zstd_block_size=bad)
    assert not list(tmp_path.iterdir())


def test_spark_writes_take_it_as_zstdBlockSize(tmp_path):
    from spark_datasource.options import WriteOptions

    options = WriteOptions({"path": str(tmp_path / "d"), "zstdBlockSize": str(BLOCK)})
    assert options.writer_options == {"zstd_block_size": BLOCK}


def test_a_window_beyond_zstds_streaming_limit_is_inflated_whole(tmp_path):
    """A page of 80 MiB may declare a window of up to twice its size, but zstd's
    streaming inflation refuses windows beyond 128 MiB (a one-shot one reads them): such
    a page is inflated whole, not refused as 'a bug in rcfmt'."""
    table = pa.table({"s": pa.array(["a", "bc", "d", "x" * (80 << 20)], pa.string())})
    path = str(tmp_path / "big.rcfmt")
    rcfmt.write_table(table, path, compression="zstd", encoding={"s": "plain"}, page_size=1 << 30,
                      compressed_page_size=1 << 30, zstd_block_size=128 * 1024, progress=False)
    _, pages = _pages(path)
    assert len(pages) == 1 and pages[0][1] == 4
    data = bytearray(open(path, "rb").read())
    frame = pages[0][2] + 32
    assert not data[frame + 4] & 0x20 and 2 * pages[0][5] > 2 ** 27 + 2 ** 24
    data[frame + 5] = (17 << 3) | 1  # a window of 2 ** 27 + 2 ** 24 bytes
    open(path, "wb").write(bytes(data))
    with rcfmt.open(path, verify_checksums=False) as f:
        assert f.take([1, 0]).equals(table.take([1, 0]))


def _frames(data: bytes, parts: int) -> bytes:
    """``data`` as ``parts`` zstd frames back to back, each of 1 KiB blocks (a 64 KiB
    window: small enough for a page to be inflated part of the way)."""
    import zstandard

    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=16)
    out, step = b"", -(-len(data) // parts)
    for start in range(0, len(data), step):
        c = zstandard.ZstdCompressor(compression_params=params).compressobj()
        part = data[start:start + step]
        out += b"".join(c.compress(part[i:i + 1024]) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
                        for i in range(0, len(part), 1024)) + c.flush()
    return out


@pytest.mark.parametrize("encoding", ["plain", "delta_length"])
def test_a_body_of_several_frames_is_read_as_the_reference_decoder_reads_it(tmp_path, monkeypatch, encoding):
    """zstd frames back to back inflate (one-shot) to their contents one after the
    other: a take needing bytes past the first frame inflates the page whole instead of
    refusing it as 'a bug in rcfmt'."""
    table = _table(nulls=False)
    original = codecs.compress
    monkeypatch.setattr(codecs, "compress", lambda codec, data, level=None: (
        _frames(bytes(data), 3) if codec == codecs.ZSTD and len(data) > BLOCK else original(codec, data, level)))
    native_pages.use_native_codecs(False)  # (the writer's Python codec: the patched one)
    try:
        path = _write(tmp_path, table, encoding, False)
    finally:
        native_pages.use_native_codecs(True)
    monkeypatch.undo()
    data, pages = _pages(path)
    page = next(p for p in pages if p[5] > 2 * BLOCK)
    frame = data[page[2] + 32:page[2] + 32 + page[4]]
    assert frame[4] == 0 and not frame[6] & 1  # (a first frame of several blocks, its window declared)
    assert frame.count(struct.pack("<I", 0xFD2FB528)) >= 3
    with rcfmt.open(path) as f:
        assert f.read().equals(table)
        rows = list(range(page[0], page[0] + page[1] * 3 // 4))  # (the prefixes a take inflates alone)
        for positions in [[r] for r in rows[::25]] + [rows]:
            for threads in (True, False):
                assert f.take(positions, use_threads=threads).equals(table.take(positions))


def test_spark_refuses_a_zstdBlockSize_below_a_kib_when_parsing_its_options(tmp_path):
    from spark_datasource.options import WriteOptions

    with pytest.raises(InvalidOptionError, match="zstdBlockSize"):
        WriteOptions({"path": str(tmp_path / "d"), "zstdBlockSize": "512"})


def test_first_partial_inflations_from_many_threads_in_a_fresh_interpreter(tmp_path):
    """A user's first takes and filtered reads of a file written with zstd blocks, four
    threads at once with threads on, in a new process: each thread's zstd context is made
    at its first lazy page, streaming and one-shot inflations share it."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import threading
        import numpy as np, pyarrow as pa, rcfmt
        n = 60_000
        words = ["carefully", "final", "deposits", "sleep", "quickly", "ironic", "x"]
        rng = np.random.default_rng(1)
        t = pa.table({{"s": [" ".join(rng.choice(words, k)) for k in rng.integers(0, 30, n)],
                      "i": np.arange(n)}})
        path = {str(tmp_path / 'b.rcfmt')!r}
        rcfmt.write_table(t, path, compression="zstd", encoding={{"s": "delta_length"}}, zstd_block_size=8192,
                          block_rows=20_000)
        f = rcfmt.open(path)
        errors = []
        def work(seed):
            try:
                idx = np.sort(np.random.default_rng(seed).choice(n, 300, replace=False))
                assert f.take(idx).equals(t.take(idx))
                assert f.read(filter=rcfmt.col("i").isin(idx.tolist())).equals(t.take(idx))
                assert f.read().equals(t)
            except BaseException as exc:
                errors.append(repr(exc))
        threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
        [th.start() for th in threads]
        [th.join() for th in threads]
        assert not errors, errors
        print("ok")
    """)
    env = {k: v for k, v in __import__("os").environ.items() if k != "RCFMT_PARALLEL_BLOCK_BYTES"}  # (defaults)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
