"""Every decompression is bounded by the page header's uncompressed size (docs/FORMAT.md),
in the Python codecs too (the fallback the page pipeline takes when the libraries' C
entry points are not found): a frame that expands beyond that size is refused after at
most that many bytes (+ slack) were produced, whatever size the header says (0
included) and whatever the frame itself declares.

Memory is measured with tracemalloc: python-zstandard and lz4 return their output as
Python bytes, which tracemalloc sees, so an unbounded decompression shows as a peak of
the frame's whole expansion."""
from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import lz4.block
import numpy as np
import pyarrow as pa
import pytest
import zstandard

import rcfmt
from rcfmt import codecs
from rcfmt._native import pages

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "data"))
import make_bad  # noqa: E402

EXPANDED = 32 << 20  # what each bomb decompresses to
BOUND = 4 << 20  # peak traced memory allowed while refusing one (the bombs expand 8x beyond it)


def _zstd_bomb(content_size: bool) -> bytes:
    return zstandard.ZstdCompressor(level=19, write_content_size=content_size).compress(b"\0" * EXPANDED)


def _lz4_bomb() -> bytes:
    return lz4.block.compress(b"\0" * EXPANDED, store_size=False)


def _peak_while(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


@pytest.mark.parametrize("size", [0, 1, 100, 1 << 20])
@pytest.mark.parametrize("codec, bomb", [
    pytest.param(codecs.ZSTD, _zstd_bomb(False), id="zstd"),
    pytest.param(codecs.ZSTD, _zstd_bomb(True), id="zstd-declaring-its-size"),
    pytest.param(codecs.LZ4, _lz4_bomb(), id="lz4"),
])
def test_a_frame_expanding_beyond_the_header_size_is_refused_within_the_bound(codec, bomb, size):
    assert len(bomb) < 200_000  # small on disk, 32 MiB decompressed

    def attempt():
        with pytest.raises(rcfmt.CorruptFileError):
            codecs.decompress(codec, bomb, size)

    assert _peak_while(attempt) < BOUND


@pytest.mark.parametrize("codec", [codecs.ZSTD, codecs.LZ4])
@pytest.mark.parametrize("size", [0, 1, 5000])
def test_frames_of_exactly_the_header_size_still_decompress(codec, size):
    raw = bytes(range(256)) * (size // 256) + b"x" * (size % 256)
    assert codecs.decompress(codec, codecs.compress(codec, raw), size) == raw
    if codec == codecs.ZSTD:  # a frame that declares its (right) size too
        framed = zstandard.ZstdCompressor(write_content_size=True).compress(raw)
        assert codecs.decompress(codec, framed, size) == raw


def test_a_zstd_frame_declaring_another_size_is_refused_before_decompressing():
    framed = zstandard.ZstdCompressor(write_content_size=True).compress(b"a" * 1000)
    with pytest.raises(rcfmt.CorruptFileError, match="declares 1000 bytes, header says 999"):
        codecs.decompress(codecs.ZSTD, framed, 999)


@pytest.fixture
def python_codecs():
    pages.use_native_codecs(False)
    yield
    pages.use_native_codecs(True)


@pytest.mark.parametrize("codec_name, bomb", [
    ("zstd", _zstd_bomb(False)), ("zstd", _zstd_bomb(True)), ("lz4", _lz4_bomb()),
], ids=["zstd", "zstd-declaring-its-size", "lz4"])
@pytest.mark.parametrize("claimed", [0, 16, 16000])
def test_a_forged_page_is_refused_within_the_bound_on_the_fallback_path(tmp_path, python_codecs, codec_name,
                                                                        bomb, claimed):
    """A page whose body (checksums recomputed) is a small frame expanding to 32 MiB,
    read with the native codecs off: CorruptFileError located at the page, and the
    read never holds more than a few MiB."""
    path = tmp_path / "bomb.rcfmt"
    rng = np.random.default_rng(0)  # incompressible: the page body is larger than the bomb
    rcfmt.write_table(pa.table({"x": rng.integers(0, 2**62, 20_000)}), path, compression=codec_name,
                      encoding="plain", page_rows=20_000, page_size=1 << 20, compressed_page_size=1 << 20)
    data = path.read_bytes()
    offset = make_bad.pages_of(data, path, "x", 0)[0]
    header = make_bad.read_header(data, offset)
    assert header["compression"] == codecs.codec_id(codec_name) and header["uncompressed_size"] == 160_000
    assert len(bomb) <= header["compressed_size"]
    body = bomb + b"\0" * (header["compressed_size"] - len(bomb))  # same page length; trailing bytes ignored
    path.write_bytes(make_bad.patch_page(data, offset, body, uncompressed_size=claimed))

    def attempt():
        with pytest.raises(rcfmt.CorruptFileError, match=codec_name) as info:
            rcfmt.read_table(path)
        assert info.value.column == "x" and info.value.page == 0

    assert _peak_while(attempt) < BOUND
