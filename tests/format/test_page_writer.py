"""The writer's native page assembly (rcfmt._native.page_writer.write_pages) against a
reference built here from the format's definition (header struct, zlib CRC-32, the
Python codecs), and through the read pipeline."""
from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt import codecs
from rcfmt._native import pages
from rcfmt._native.page_writer import Compressor, write_pages
from strategies import examples

HEADER = struct.Struct("<BBBBIIIIIII")


def reference_page(page_type, encoding, rows, valid_rows, body, codec, level):
    """One page as docs/FORMAT.md "Pages" defines it, built without the native writer."""
    nulls = 0 if valid_rows is None else int((~valid_rows).sum())
    raw = (np.packbits(valid_rows, bitorder="little").tobytes() if nulls else b"") + body
    stored = raw if codec == codecs.NONE else codecs.compress(codec, raw, level)
    head = HEADER.pack(page_type, encoding, codec, 1 if nulls else 0, rows, rows, nulls, len(stored), len(raw),
                       zlib.crc32(stored), 0)[:-4]
    return head + zlib.crc32(head).to_bytes(4, "little") + stored, len(raw)


@st.composite
def chunks(draw):
    n = draw(st.integers(0, 5))
    rows = [draw(st.integers(0, 2000)) for _ in range(n)]
    with_nulls = draw(st.booleans())
    total = sum(rows)
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    valid = rng.random(total) < draw(st.sampled_from([0.0, 0.5, 0.95, 1.0])) if with_nulls else None
    bodies = []
    for _ in range(n):
        size = draw(st.integers(0, 3000))
        spread = draw(st.sampled_from([1, 4, 256]))  # compressible .. random
        bodies.append(rng.integers(0, spread, size, dtype=np.uint8).tobytes())
    dictionary = draw(st.booleans()) and n > 0
    return rows, valid, bodies, dictionary


def _arrays(rows, valid, dictionary):
    starts = np.cumsum(rows, dtype=np.int64) - np.asarray(rows, np.int64)
    nulls = np.array([0 if valid is None else int((~valid[s:s + r]).sum()) for s, r in zip(starts, rows)],
                     np.int64)
    types = np.zeros(len(rows), np.uint8)
    if dictionary:  # the first body plays the dictionary page: no nulls
        types[0], nulls[0] = 1, 0
    return types, starts, nulls


@settings(max_examples=examples(150), deadline=None)
@given(chunks(), st.sampled_from([codecs.NONE, codecs.ZSTD]), st.sampled_from([1, 3, 9, -2]))
def test_pages_are_the_formats_bytes(chunk, codec, level):
    rows, valid, bodies, dictionary = chunk
    types, starts, nulls = _arrays(rows, valid, dictionary)
    expect, raw_sizes = b"", []
    for k, body in enumerate(bodies):
        vrows = None if valid is None or not nulls[k] else valid[starts[k]:starts[k] + rows[k]]
        page, raw = reference_page(int(types[k]), 3, rows[k], vrows, body, codec, level)
        expect += page
        raw_sizes.append(raw)
    for compressor in (None, Compressor()):
        out, used, lengths, raw = write_pages(bodies, types, rows, nulls, starts, valid, 3, codec, level, -1.0,
                                              compressor)
        assert used == codec
        assert bytes(out) == expect
        assert list(raw) == raw_sizes and int(lengths.sum()) == len(out)


@settings(max_examples=examples(60), deadline=None)
@given(chunks())
def test_lz4_pages_read_back(chunk):
    rows, valid, bodies, _ = chunk
    types, starts, nulls = _arrays(rows, valid, False)
    out, used, lengths, raw = write_pages(bodies, types, rows, nulls, starts, valid, 0, codecs.LZ4, 0)
    assert used == codecs.LZ4
    if not bodies:
        return
    run = pages.read_pages(bytes(out), 0, end=len(out), max_pages=len(bodies), max_rows=max(sum(rows), 1))
    assert run.count == len(bodies) and run.rows == sum(rows)
    for k, body in enumerate(bodies):
        assert bytes(run.body(k)) == body  # the validity bitmap is split off by the pipeline
    if valid is not None and nulls.any():
        assert np.array_equal(run.valid(), valid)


def test_auto_keeps_the_codec_only_when_it_saves_enough():
    compressible = [bytes(4000)]
    random = [np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8).tobytes()]
    for bodies, kept in ((compressible, True), (random, False)):
        out, used, lengths, raw = write_pages(bodies, [0], [10], [0], [0], None, 0, codecs.ZSTD, 3, 0.10)
        assert used == (codecs.ZSTD if kept else codecs.NONE)
        assert out[2] == used  # the header says so
        if not kept:
            assert bytes(out[32:]) == random[0]
    # the boundary: a saving of exactly min_saving keeps the codec, a hair less does not
    body = bytes(4096)  # (sizes over a power of two: the shares are exact in binary)
    stored = len(codecs.compress(codecs.ZSTD, body, 3))
    exact = 1 - stored / len(body)
    assert write_pages([body], [0], [1], [0], [0], None, 0, codecs.ZSTD, 3, exact)[1] == codecs.ZSTD
    assert write_pages([body], [0], [1], [0], [0], None, 0, codecs.ZSTD, 3, exact + 1e-6)[1] == codecs.NONE


@settings(max_examples=examples(100), deadline=None)
@given(chunks(), st.sampled_from([codecs.NONE, codecs.ZSTD]), st.sampled_from([codecs.NONE, codecs.ZSTD, codecs.LZ4]),
       st.sampled_from([-1.0, 0.0, 0.10, 0.5]))
def test_a_dictionary_page_is_compressed_and_judged_on_its_own(chunk, codec, dictionary_codec, min_saving):
    """With ``dictionary_codec`` the dictionary page takes that codec when it saves
    ``min_saving`` of its own bytes, and the data pages are laid out exactly as they
    would be without it (their codec judged on theirs alone): the same bytes as two
    separate calls."""
    rows, valid, bodies, dictionary = chunk
    types, starts, nulls = _arrays(rows, valid, dictionary)
    out, used, lengths, raw = write_pages(bodies, types, rows, nulls, starts, valid, 3, codec, 3, min_saving,
                                          None, dictionary_codec)
    if not dictionary:  # nothing to set apart: the argument changes nothing
        assert bytes(out) == bytes(write_pages(bodies, types, rows, nulls, starts, valid, 3, codec, 3,
                                               min_saving)[0])
        return
    head = write_pages(bodies[:1], types[:1], rows[:1], nulls[:1], starts[:1], valid, 3, dictionary_codec, 3,
                       min_saving)
    tail = write_pages(bodies[1:], types[1:], rows[1:], nulls[1:], starts[1:], valid, 3, codec, 3, min_saving)
    assert bytes(out) == bytes(head[0]) + bytes(tail[0])
    assert used == tail[1] and out[2] == head[1]
    assert list(lengths) == [*head[2], *tail[2]] and list(raw) == [*head[3], *tail[3]]


def test_a_dictionary_page_with_nulls_and_only_its_own_codec():
    """A caller may hand a first (dictionary) page with nulls and compress only it: its
    validity is compressed from the scratch buffer like any page's."""
    valid = np.array([True, False, True, True])
    bodies = [bytes(300), b"xy"]
    out, used, lengths, raw = write_pages(bodies, [1, 0], [3, 1], [1, 0], [0, 3], valid, 3, codecs.NONE, 3, 0.1,
                                          None, codecs.ZSTD)
    head = write_pages(bodies[:1], [1], [3], [1], [0], valid, 3, codecs.ZSTD, 3, 0.1)
    tail = write_pages(bodies[1:], [0], [1], [0], [3], valid, 3, codecs.NONE, 3, 0.1)
    assert bytes(out) == bytes(head[0]) + bytes(tail[0]) and out[2] == codecs.ZSTD and used == codecs.NONE


def test_strings_dictionary_compressed_while_codes_are_not(tmp_path):
    """Default writer ("auto"): a string column of many similar distinct values whose
    codes are dense (not worth zstd) stores its dictionary page compressed and its data
    pages raw, and reads back; with compression="none" nothing is compressed."""
    import pyarrow as pa

    import rcfmt

    rng = np.random.default_rng(1)
    names = np.array([f"N{i:05d}AA" for i in range(1500)])
    table = pa.table({"tail": names[rng.integers(0, len(names), 100_000)]})
    for compression, dictionary_codec in (("auto", codecs.ZSTD), ("none", codecs.NONE)):
        path = tmp_path / f"{compression}.rcfmt"
        rcfmt.write_table(table, path, compression=compression)
        with rcfmt.open(path) as f:
            rec = f.footer.chunks[0][0]
            assert int(rec["encoding"]) == 1 and int(rec["compression"]) == codecs.NONE
            start, dict_len = int(rec["offset"]), int(rec["dictionary_length"])
        data = path.read_bytes()
        assert data[start + 2] == dictionary_codec  # the dictionary page's header
        assert data[start + dict_len + 2] == codecs.NONE  # the first data page's
        assert rcfmt.read_table(path).equals(table)


@pytest.mark.parametrize("codec", [codecs.ZSTD, codecs.LZ4])
def test_python_codec_fallback_writes_the_same_format(codec):
    rng = np.random.default_rng(1)
    bodies = [rng.integers(0, 8, 5000, dtype=np.uint8).tobytes(), b"", bytes(100)]
    valid = rng.random(300) < 0.7
    args = (bodies, [0, 0, 0], [100, 100, 100], [int((~valid[i:i + 100]).sum()) for i in (0, 100, 200)],
            [0, 100, 200], valid, 0, codec, 3)
    native = write_pages(*args)
    pages.use_native_codecs(False)
    try:
        fallback = write_pages(*args)
    finally:
        pages.use_native_codecs(True)
    if codec == codecs.ZSTD:
        assert bytes(fallback[0]) == bytes(native[0])
    for out in (native[0], fallback[0]):
        run = pages.read_pages(bytes(out), 0, end=len(out), max_pages=3, max_rows=300)
        assert [bytes(run.body(k)) for k in range(3)] == bodies
        assert np.array_equal(run.valid(), valid)


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="one type"):
        write_pages([b"x"], [0, 0], [1], [0], [0], None, 0, 0, 0)
    with pytest.raises(ValueError, match="nulls"):
        write_pages([b"x"], [0], [1], [2], [0], np.zeros(1, bool), 0, 0, 0)
    with pytest.raises(ValueError, match="outside the validity"):
        write_pages([b"x"], [0], [8], [1], [0], np.zeros(4, bool), 0, 0, 0)
    with pytest.raises(ValueError, match="outside the validity"):
        write_pages([b"x"], [0], [8], [1], [0], None, 0, 0, 0)
    with pytest.raises(ValueError, match="codec"):
        write_pages([b"x"], [0], [1], [0], [0], None, 0, 7, 0)
