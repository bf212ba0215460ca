"""The threaded writer encodes the chunks of several blocks at once and writes blocks in
order: its files are the same bytes as a single-threaded write, a failure while a later
block is encoding leaves no file behind, and at most MAX_BLOCKS_IN_FLIGHT blocks are
held."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest

import rcfmt
from rcfmt.file import writer as writer_mod


def _table(n: int) -> pa.Table:
    rng = np.random.default_rng(7)
    return pa.table({
        "k": np.arange(n, dtype=np.int64),
        "small": rng.integers(0, 9, n).astype(np.int32),
        "f": rng.random(n),
        "s": pa.array([f"name-{i % 777}" for i in range(n)]),
        "d": pa.array(rng.integers(-10**6, 10**6, n), pa.int64()).cast(pa.decimal128(21, 0)),
    })


def test_threaded_write_is_byte_identical_to_serial(tmp_path):
    t = _table(100_000)
    serial, threaded = tmp_path / "serial.rcfmt", tmp_path / "threaded.rcfmt"
    rcfmt.write_table(t, serial, block_rows=9000, use_threads=False)
    rcfmt.write_table(t, threaded, block_rows=9000, use_threads=True)
    # the footer names the writer version only: every byte must agree
    assert serial.read_bytes() == threaded.read_bytes()
    assert rcfmt.read_table(threaded).equals(t)
    with rcfmt.open(threaded) as f:
        assert f.num_blocks == 12


def test_streaming_writer_interleaves_blocks_of_mixed_sizes(tmp_path):
    """Blocks too small for the pool are written only after the encoding ones before them."""
    t = _table(40_000)
    path = tmp_path / "mixed.rcfmt"
    with rcfmt.Writer(path, t.schema, block_rows=10_000) as w:
        w.write(t.slice(0, 25_000))  # two pooled blocks, 5,000 rows pending
        w.flush_block()  # a small block: written inline after the two
        w.write(t.slice(25_000))  # one pooled block, 5,000 pending until close
    with rcfmt.open(path) as f:
        assert [int(b["row_count"]) for b in f.footer.blocks] == [10_000, 10_000, 5_000, 10_000, 5_000]
    assert rcfmt.read_table(path).equals(t)


def test_failure_in_a_later_block_leaves_no_file(tmp_path, monkeypatch):
    real = writer_mod.encode_chunk
    calls = {"n": 0}

    def failing(values, valid, col, options, forced=None, bitmap_request=None, hint=None, bloom=True):
        calls["n"] += 1
        if col.name == "f" and int(values.values[0]) > 0 and len(values) and calls["n"] > 8:
            raise RuntimeError("disk on fire")
        return real(values, valid, col, options, forced, bitmap_request, hint)

    monkeypatch.setattr(writer_mod, "encode_chunk", failing)
    t = _table(60_000).set_column(2, "f", pa.array(np.arange(60_000, dtype=np.float64)))
    path = tmp_path / "out.rcfmt"
    with pytest.raises(RuntimeError, match="disk on fire"):
        rcfmt.write_table(t, path, block_rows=10_000, use_threads=True)
    assert os.listdir(tmp_path) == []


def test_blocks_in_flight_are_bounded(tmp_path, monkeypatch):
    seen = []
    real = writer_mod.Writer._write_oldest

    def spy(self):
        seen.append(len(self._in_flight))
        return real(self)

    monkeypatch.setattr(writer_mod.Writer, "_write_oldest", spy)
    rcfmt.write_table(_table(90_000), tmp_path / "x.rcfmt", block_rows=9000, use_threads=True)
    assert seen and max(seen) == writer_mod.MAX_BLOCKS_IN_FLIGHT + 1


def _encodings(path, column: str) -> list[int]:
    with rcfmt.open(path) as f:
        i = f.schema.names.index(column)
        return [int(r["encoding"]) for r in f.footer.chunks[i]]


def test_sampled_decisions_are_reused_only_while_the_data_looks_alike(tmp_path, monkeypatch):
    """Later blocks of a column take the encoding sampled a few blocks back, unless its
    raw size drifted or it cannot hold the block: where the data changes character the
    choice follows it, as if every block were sampled; files stay as small."""
    rng = np.random.default_rng(11)
    rows, blocks = 5000, 24
    parts = []
    for b in range(blocks):
        if b < 8:
            parts.append(rng.integers(0, 5, rows))  # few values: a dictionary
        elif b < 16:
            parts.append(rng.integers(-(1 << 62), 1 << 62, rows))  # wide random: plain or bit-packed
        else:
            parts.append(np.sort(rng.integers(0, 1 << 40, rows)))  # sorted: delta
    t = pa.table({"x": np.concatenate(parts), "s": pa.array([f"v{i % 13}" for i in range(rows * blocks)])})
    hinted, sampled = tmp_path / "hinted.rcfmt", tmp_path / "sampled.rcfmt"
    rcfmt.write_table(t, hinted, block_rows=rows)
    monkeypatch.setattr(writer_mod, "RESAMPLE_BLOCKS", 0)  # never reuse: sample every chunk
    rcfmt.write_table(t, sampled, block_rows=rows)
    assert _encodings(hinted, "x") == _encodings(sampled, "x")
    assert len(set(_encodings(sampled, "x"))) == 3
    assert hinted.stat().st_size <= sampled.stat().st_size * 1.01
    assert rcfmt.read_table(hinted).equals(t)


def test_compressed_pages_are_cut_at_compressed_page_size(tmp_path):
    """A chunk stored compressed is cut into pages of at most ``compressed_page_size``
    uncompressed bytes (default 48 KiB), one stored raw keeps ``page_size``; the rows
    read back either way, and a bad value is refused before anything is written."""
    import numpy as np
    import pyarrow as pa
    import pytest

    import rcfmt

    n = 8192
    words = np.array(["alpha", "beta", "gamma", "delta", "epsilon", "zeta"])
    text = pa.array([" ".join(words[(np.arange(i, i + 7) * 7919) % 6]) for i in range(n)])  # ~40 bytes a row
    table = pa.table({"s": text})
    pages = {}
    for name, options in (("default", {}), ("wide", {"compressed_page_size": 1 << 20}),
                          ("raw", {"compression": "none"})):
        path = tmp_path / f"{name}.rcfmt"
        rcfmt.write_table(table, path, encoding={"s": "delta_length"}, **options)
        with rcfmt.open(path) as f:
            rec = f.footer.chunks[0][0]
            entries = f.page_index(0, 0)
            pages[name] = len(entries)
            if name != "raw":
                assert rec["compression"] != 0  # (zstd kept: the text compresses)
                per_page = int(rec["uncompressed_size"]) / len(entries)
                assert per_page <= (48 << 10) * 1.05 or name == "wide"
            assert f.read().equals(table)
    assert pages["default"] > pages["wide"] and pages["default"] > pages["raw"]
    with pytest.raises(rcfmt.InvalidOptionError, match="compressed_page_size"):
        rcfmt.write_table(table, tmp_path / "bad.rcfmt", compressed_page_size=10)
    assert not (tmp_path / "bad.rcfmt").exists()


@pytest.mark.parametrize("use_threads", [True, False])
@pytest.mark.parametrize("failing_write", [2, 5])
def test_a_writer_whose_block_write_failed_publishes_nothing(tmp_path, use_threads, failing_write):
    """A sink write failing part way through a block (a full disk) leaves the file's
    state broken: the writer aborts, ``close()`` then raises naming the failure (user
    code calls it in ``finally``) and nothing is moved to the target, not even a file
    of the right size with other rows."""
    from rcfmt.storage.local import LocalSink

    class FailsOnce(LocalSink):
        calls = 0

        def write(self, data):
            FailsOnce.calls += 1
            if FailsOnce.calls == failing_write:
                raise OSError(28, "No space left on device")
            super().write(data)

    t = _table(60_000)
    path = tmp_path / "out.rcfmt"
    w = rcfmt.Writer(FailsOnce(str(path)), t.schema, block_rows=10_000, use_threads=use_threads)
    with pytest.raises(OSError, match="No space left"):
        w.write(t)
    for call in (w.close, lambda: w.write(t), w.flush_block):
        with pytest.raises(rcfmt.RcfmtError, match="failed while writing a block .*nothing was written"):
            call()
    assert os.listdir(tmp_path) == []


def test_a_writer_refused_by_its_options_leaves_no_temporary_file(tmp_path):
    t = pa.table({"l": pa.array([[1, 2], [3]]), "i": [1, 2]})
    with pytest.raises(rcfmt.InvalidOptionError, match="hold list elements"):
        rcfmt.write_table(t, tmp_path / "x.rcfmt", bitmap_indexes={"l.item": "equality"})
    assert os.listdir(tmp_path) == []


def test_threads_sharing_a_writer_take_turns(tmp_path):
    """Writes from several threads into one Writer land whole, each once (unguarded,
    blocks were written twice or lost, and the footer contradicted the blocks)."""
    import threading

    path, rows, calls, threads = tmp_path / "shared.rcfmt", 37, 60, 4
    errors = []
    with rcfmt.Writer(path, pa.schema([("t", pa.int64()), ("i", pa.int64())]), block_rows=1000) as w:
        def work(t):
            try:
                for c in range(calls):
                    w.write(pa.table({"t": np.full(rows, t), "i": np.arange(c * rows, (c + 1) * rows)}))
                    if c % 17 == 0:
                        w.flush_block()
            except Exception as e:  # (reported below)
                errors.append(e)

        workers = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
        for x in workers:
            x.start()
        for x in workers:
            x.join()
    assert errors == []
    got = rcfmt.read_table(path)
    assert got.num_rows == threads * calls * rows
    for t in range(threads):  # each thread's rows once, in the order it wrote them
        mine = got.filter(np.asarray(got["t"]) == t)["i"].to_numpy()
        assert np.array_equal(mine, np.arange(calls * rows))


def test_an_abort_from_another_thread_stops_the_writer(tmp_path):
    """abort() from another thread: no file appears, and the writing thread's next call
    raises (with the lock, it waited for the write and then let close() commit)."""
    import threading

    path = tmp_path / "aborted.rcfmt"
    w = rcfmt.Writer(path, pa.schema([("i", pa.int64())]), block_rows=10)
    w.write(pa.table({"i": np.arange(25)}))
    aborter = threading.Thread(target=w.abort)
    aborter.start()
    aborter.join()
    with pytest.raises(rcfmt.RcfmtError, match="was aborted"):
        w.write(pa.table({"i": np.arange(5)}))
    with pytest.raises(rcfmt.RcfmtError, match="was aborted: nothing was written"):
        w.close()
    assert not path.exists() and os.listdir(tmp_path) == []
    with rcfmt.Writer(path, pa.schema([("i", pa.int64())])) as w2:  # (aborted inside a with: no error)
        w2.write(pa.table({"i": [1]}))
        w2.abort()
    assert not path.exists()
    w3 = rcfmt.Writer(path, pa.schema([("i", pa.int64())]))
    w3.write(pa.table({"i": [1]}))
    w3.close()
    w3.abort()  # (after the commit: changes nothing)
    assert rcfmt.read_table(path)["i"].to_pylist() == [1]
