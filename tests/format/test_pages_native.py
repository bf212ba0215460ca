"""The native page pipeline (rcfmt/_native/pages.pyx): CRC-32, codec resolution, the
Python-codec fallback, page runs against an independent header parser, and selected
(non-contiguous) pages decoded in one run; rows gathered from BITPACK pages by the
block executor."""
from __future__ import annotations

import decimal
import struct
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt._native import decoders, pages
from rcfmt.index.page import PageIndex

PAGE_HEADER = struct.Struct("<BBBBIIIIIII")  # as docs/FORMAT.md 4.1 defines it


@pytest.fixture(params=["vpclmul", "clmul", "table"])
def crc_impl(request):
    """Every CRC-32 implementation: carry-less multiply with 512-bit and with 128-bit
    registers (where the CPU has them) and tables."""
    pages.use_clmul(request.param != "table", wide=request.param == "vpclmul")
    if pages.crc32_implementation() != request.param:
        pages.use_clmul(True)
        pytest.skip(f"this CPU has no {request.param.upper()}")
    yield request.param
    pages.use_clmul(True)


@settings(max_examples=S.examples(200), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=5000), start=st.integers(0, 9), seed=st.integers(0, 2**32 - 1))
def test_crc32_is_zlibs(crc_impl, data, start, seed):
    view = np.frombuffer(data, np.uint8)[min(start, len(data)):]  # every alignment
    assert pages.crc32(view) == zlib.crc32(view.tobytes())
    assert pages.crc32(view, seed) == zlib.crc32(view.tobytes(), seed)


def test_crc32_every_length_and_large_buffers(crc_impl):
    rng = np.random.default_rng(1)
    for n in [*range(0, 260), *range(500, 530), *range(1020, 1040), 4096 + 255, 1 << 16, (1 << 20) + 13]:
        buf = rng.integers(0, 256, n, dtype=np.uint8)
        for seed in (0, 1, 0xFFFFFFFF):
            assert pages.crc32(buf, seed) == zlib.crc32(buf.tobytes(), seed), (n, seed)


def test_x86_64_uses_carry_less_multiply():
    import platform

    if platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("x86-64 only")
    flags = open("/proc/cpuinfo").read() if Path("/proc/cpuinfo").exists() else ""
    wide = all(f" {flag}" in flags for flag in ("vpclmulqdq", "avx512f", "avx512vl"))
    if " pclmulqdq" in flags and " sse4_1" in flags:
        assert pages.crc32_implementation() == ("vpclmul" if wide else "clmul")


def test_native_codecs_are_resolved_from_the_installed_wheels():
    # zstandard and lz4 are dependencies; their extension modules export the C entry
    # points, so a plain install decompresses without the GIL
    sources = pages.codec_sources()
    assert sources["zstd"] is not None and sources["lz4"] is not None, sources


@pytest.fixture
def python_codecs():
    pages.use_native_codecs(False)
    yield
    pages.use_native_codecs(True)


@settings(max_examples=S.examples(40))
@given(data=st.data())
def test_python_codec_fallback_reads_the_same(data):
    table = data.draw(S.tables(rows=st.integers(0, 60)), label="table")
    opts = data.draw(S.write_options(table.schema), label="options")
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.rcfmt"
        rcfmt.write_table(table, path, **opts)
        native = rcfmt.read_table(path)
        pages.use_native_codecs(False)
        try:
            fallback = rcfmt.read_table(path)
        finally:
            pages.use_native_codecs(True)
    S.assert_tables_identical(native, table, check_metadata=False)
    S.assert_tables_identical(fallback, table, check_metadata=False)


def test_python_codec_fallback_reports_damage(tmp_path, python_codecs):
    path = tmp_path / "z.rcfmt"
    rcfmt.write_table(pa.table({"s": [f"v{i % 7}" * 30 for i in range(2000)]}), path,
                      compression="zstd", encoding="plain", page_rows=500)
    raw = bytearray(path.read_bytes())
    first = 8  # the first page header follows the file header
    head = list(PAGE_HEADER.unpack_from(raw, first))
    body = first + 32
    raw[body + 5] ^= 0xFF  # damage the compressed body, then make the checksum agree
    head[9] = zlib.crc32(raw[body : body + head[7]])
    head[10] = 0
    packed = PAGE_HEADER.pack(*head)
    raw[first : first + 32] = packed[:28] + zlib.crc32(packed[:28]).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(rcfmt.CorruptFileError, match=r"zstd.*page=0"):
        rcfmt.read_table(path)


def _reference_pages(buf: bytes, start: int, end: int) -> list[tuple]:
    """Independent walk: (position, rows, nulls) of each page from the header layout."""
    out, pos = [], start
    while pos < end:
        h = PAGE_HEADER.unpack_from(buf, pos)
        assert zlib.crc32(buf[pos : pos + 28]) == h[10]
        out.append((pos, h[4], h[6]))
        pos += 32 + h[7]
    assert pos == end
    return out


@settings(max_examples=S.examples(30))
@given(data=st.data())
def test_page_runs_match_an_independent_walk(data):
    t = data.draw(S.primitive_types, label="type")
    arr = data.draw(S.arrays(t, data.draw(st.integers(0, 300)), nullable=True))
    table = pa.table({"c": arr})
    opts = {"block_rows": 1000, "page_rows": data.draw(st.integers(1, 40)),
            "compression": data.draw(st.sampled_from(["none", "zstd", "lz4"]))}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.rcfmt"
        rcfmt.write_table(table, path, **opts)
        raw = path.read_bytes()
        with rcfmt.open(path) as f:
            if f.num_blocks == 0:
                return
            rec = f.footer.chunks[0][0]
            start = int(rec["offset"]) + int(rec["dictionary_length"])
            end = int(rec["offset"]) + int(rec["length"])
            ref = _reference_pages(raw, start, end)
            run = pages.read_pages(raw, 0, start=start, end=end, max_pages=len(ref), max_rows=len(table),
                                   encoding=int(rec["encoding"]))
            assert run.count == len(ref) and run.rows == len(table) and run.end == end
            assert [tuple(int(x) for x in run.pages[k, :3]) for k in range(run.count)] == ref
            assert run.null_count == arr.null_count
            valid = run.valid()
            expected_valid = np.asarray(arr.is_valid())
            if valid is None:
                assert expected_valid.all()
            else:
                assert (valid == expected_valid).all()
                assert run.validity.nbytes == (len(table) + 7) // 8


def _random_chunk(data, directory: Path, types, n: int, max_page_rows: int) -> Path:
    """A one-column file of ``n`` random values of a type drawn from ``types`` (nulls
    too), in a drawn encoding, page size and codec."""
    t = data.draw(types, label="type")
    arr = data.draw(S.arrays(t, n, nullable=True, sliced=False))
    enc = data.draw(st.sampled_from([None, *S.encodings_for(t)]))
    opts = {"block_rows": 1000, "page_rows": data.draw(st.integers(1, max_page_rows)),
            "compression": data.draw(st.sampled_from(["none", "zstd", "lz4"]))}
    if enc:
        opts["encoding"] = enc
    path = directory / "t.rcfmt"
    rcfmt.write_table(pa.table({"c": arr}), path, **opts)
    return path


@settings(max_examples=S.examples(30))
@given(data=st.data())
def test_selected_pages_decode_like_the_whole_chunk(data):
    """decode_run (a scan's non-contiguous pages, one native run) agrees with decode_all."""
    n = data.draw(st.integers(1, 200))
    with tempfile.TemporaryDirectory() as d:
        path = _random_chunk(data, Path(d), S.primitive_types, n, max_page_rows=25)
        with rcfmt.open(path) as f:
            entries = f.page_index(0, 0)
            picked = sorted(data.draw(st.sets(st.integers(0, len(entries) - 1), min_size=1), label="pages"))
            decoder = f.chunk_decoder(0, 0)
            whole_values, bitmap = decoder.decode_all(n)  # validity as the pipeline's Arrow bitmap
            whole_valid = None if bitmap is None else bitmap.bools()
            if bitmap is not None:  # Arrow's layout: LSB first, unused trailing bits 0, the nulls counted
                assert len(bitmap.bits) == (n + 7) // 8 and bitmap.null_count == n - int(whole_valid.sum()) > 0
                assert np.unpackbits(bitmap.bits, bitorder="little")[n:].sum() == 0
            values, valid = decoder.decode_run(entries["offset"][picked].astype(np.int64) - decoder.base,
                                               np.array(picked), entries["row_count"][picked])
            at = 0
            for p in picked:
                first, rows = int(entries["first_row"][p]), int(entries["row_count"][p])
                want, got = whole_values.slice(first, first + rows), values.slice(at, at + rows)
                if want.offsets is None:
                    assert got.values.tobytes() == want.values.tobytes()
                else:
                    assert [bytes(got.values[a:b]) for a, b in zip(got.offsets[:-1], got.offsets[1:])] \
                        == [bytes(want.values[a:b]) for a, b in zip(want.offsets[:-1], want.offsets[1:])]
                want_valid = np.ones(rows, bool) if whole_valid is None else whole_valid[first : first + rows]
                got_valid = np.ones(rows, bool) if valid is None else valid[at : at + rows]
                assert (got_valid == want_valid).all()
                at += rows


@settings(max_examples=S.examples(40))
@given(data=st.data())
def test_values_decoded_in_the_page_call_whatever_the_arena_hint(data):
    """read_pages(values=...) decodes in the same call what decode_values decodes after
    it: with no arena hint, one too small (allocated between the passes), and a generous
    one (one GIL-free section); a page whose values fail is reported in ``run.bad``."""
    types = st.sampled_from([pa.int32(), pa.int64(), pa.float64(), pa.date32(), pa.decimal128(9, 2), pa.string(),
                             pa.bool_()])
    n = data.draw(st.integers(1, 300))
    with tempfile.TemporaryDirectory() as d:
        path = _random_chunk(data, Path(d), types, n, max_page_rows=40)
        with rcfmt.open(path) as f:
            decoder = f.chunk_decoder(0, 0)
            if decoder._mode is None and not decoder.is_dictionary:
                return  # strings/binary: decoded from the run afterwards
            rec = decoder.record
            start = int(rec["offset"]) - decoder.base + int(rec["dictionary_length"])
            end = int(rec["offset"]) - decoder.base + int(rec["length"])
            where = dict(start=start, end=end, max_pages=int(rec["page_count"]), max_rows=n, page_type=0,
                         encoding=int(rec["encoding"]))
            plain = pages.read_pages(decoder.buf, decoder.base, **where)
            if decoder.is_dictionary:
                mode, itemsize, signed, limit, dtype = decoders.MODE_CODES, 4, False, int(rec["dictionary_size"]), np.uint32
            else:
                (mode, itemsize, signed), limit = decoder._mode, 0
                dtype = np.int64 if mode == decoders.MODE_BITPACK_DECIMAL else decoder.ltype.numpy_dtype
            want = np.empty(n, dtype)
            assert pages.decode_values(plain, mode, itemsize, signed, want, limit, decoder.ltype.precision or 0) == -1
            for hint in (0, 16, 1 << 22):
                out = np.empty(n, dtype)
                run = pages.read_pages(decoder.buf, decoder.base, arena_hint=hint,
                                       values=(mode, itemsize, signed, out, limit, decoder.ltype.precision or 0),
                                       **where)
                assert run.bad == -1 and run.rows == n
                assert out.tobytes() == want.tobytes()
                assert (run.validity is None) == (plain.validity is None)
                if run.validity is not None:
                    assert run.validity.tobytes() == plain.validity.tobytes()
            if decoder.is_dictionary and limit > 1:  # codes beyond a smaller dictionary: that page is bad
                codes = want
                first_bad = int(np.searchsorted(plain.pages[:, 3], int(np.argmax(codes >= limit - 1)), "right")) - 1
                if (codes >= limit - 1).any():
                    run = pages.read_pages(decoder.buf, decoder.base, arena_hint=1 << 22,
                                           values=(mode, itemsize, signed, np.empty(n, dtype), limit - 1, 0), **where)
                    assert run.bad == first_bad


_KERNEL_TYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float32", "float64",
                 "date32", "bool", "string", "binary"]


@settings(max_examples=S.examples(400))
@given(data=st.data())
def test_native_kernels_agree_with_the_reference_decoders_on_hostile_bodies(data):
    """Random and mutated page bodies: the native kernel and the encoding's reference
    decoder accept exactly the same bodies and return the same values (so a page the
    kernel refuses is always described by the reference decoder's error)."""
    from rcfmt.encodings import all_encodings
    from rcfmt.errors import CorruptFileError
    from rcfmt.schema.types import LogicalType

    name = data.draw(st.sampled_from(_KERNEL_TYPES + ["decimal128"]), label="type")
    ltype = LogicalType(name, precision=18, scale=2) if name == "decimal128" else LogicalType(name)
    encodings = [e for e in all_encodings() if e.supports(ltype) and e.name != "dictionary"]
    enc = data.draw(st.sampled_from(encodings), label="encoding")
    rows = data.draw(st.integers(0, 40), label="rows")
    if data.draw(st.booleans()):  # a valid body, then a few bytes changed
        arr = data.draw(S.arrays(ltype.to_arrow(), rows, nullable=False, sliced=False))
        from rcfmt.schema.arrow_io import from_arrow

        values, _ = from_arrow(arr, ltype)
        try:
            body = bytearray(enc.encode(values, ltype))
        except ValueError:  # e.g. BITPACK of decimals beyond int64
            return
        for _ in range(data.draw(st.integers(0, 3))):
            if body:
                body[data.draw(st.integers(0, len(body) - 1))] = data.draw(st.integers(0, 255))
        body = bytes(body)
    else:
        body = data.draw(st.binary(max_size=300), label="body")
    try:
        want = enc.decode(body, rows, ltype)
    except CorruptFileError:
        want = None
    try:
        got = S.native_decode(enc, body, rows, ltype)
    except CorruptFileError:
        got = None
    if name == "decimal128" and enc.name == "bitpack" and want is not None:  # the kernel checks the precision
        from rcfmt._native.validate import decimal_invalid_row

        if decimal_invalid_row(np.ascontiguousarray(want.values), 18) >= 0:
            want = None
    assert (want is None) == (got is None), (enc.name, name, rows, want, got)
    if want is not None:
        if want.offsets is None:
            assert np.asarray(want.values).tobytes() == np.asarray(got.values).tobytes()
        else:
            w = [bytes(want.values[a:b]) for a, b in zip(want.offsets[:-1], want.offsets[1:])]
            g = [bytes(got.values[a:b]) for a, b in zip(got.offsets[:-1], got.offsets[1:])]
            assert w == g


def test_decoded_columns_live_in_arrow_memory(tmp_path):
    """Decoded values are Arrow memory (the system pool, see rcfmt.runtime.memory): held while
    the table lives, all returned once it is gone."""
    import gc

    import pyarrow as pa

    import rcfmt

    n = 200_000
    table = pa.table({"i": pa.array(np.arange(n, dtype=np.int64) * 7919 % 100_003),
                      "s": pa.array([f"v{i % 997}" for i in range(n)])})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=50_000)
    pool = pa.default_memory_pool()  # (rcfmt.runtime.memory allocates outputs there)
    gc.collect()
    before = pool.bytes_allocated()
    got = rcfmt.read_table(path)
    assert got.equals(table)
    assert pool.bytes_allocated() - before >= 8 * n  # at least the int64 values
    del got
    gc.collect()
    assert pool.bytes_allocated() == before


@pytest.mark.parametrize("values", [
    pa.array(np.random.default_rng(1).integers(-10**12, 10**12, 30_000)),
    pa.array(np.random.default_rng(2).integers(0, 1000, 30_000).astype(np.int32)),
    pa.array(np.random.default_rng(3).integers(-10**9, 10**9, 30_000)).cast(pa.decimal128(22, 0)),
    pa.array(np.random.default_rng(5).integers(-10**9, 10**9, 30_000).astype(np.int32)).cast(pa.decimal128(12, 2)),
    pa.array([None if i % 7 == 0 else i * 3 for i in range(30_000)], pa.int64()),
])
def test_selected_rows_of_bitpack_pages_decode_like_the_whole_run(tmp_path, values):
    """Rows picked across pages of several 1,024-value blocks (first and last rows of
    blocks and pages, runs, singles, none) are gathered by the block executor -- from
    the whole chunk, and from the pages holding them alone -- as the values the whole
    chunk holds at those rows."""
    from rcfmt.scan import block_exec

    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"c": values}), path, block_rows=30_000, page_rows=7_000, encoding="bitpack",
                      compression="none")
    rng = np.random.default_rng(4)
    buf = np.frombuffer(path.read_bytes(), np.uint8)
    with rcfmt.open(path) as f:
        whole = f.read_column_chunk(0, 0)
        index = PageIndex(f.page_index(0, 0))
        executor = block_exec.BlockColumns(f, [0], set())
        edges = [0, 1023, 1024, 2047, 6999, 7000, 7001, 29_999]
        for wanted in [np.array(edges, np.int64), np.arange(3000, 9000, dtype=np.int64),
                       np.unique(rng.integers(0, 30_000, 50)).astype(np.int64), np.arange(30_000, dtype=np.int64)]:
            expected = whole.take(pa.array(wanted))
            got = executor.run(block_exec.BlockRead(buf, 0, 0, 30_000, True, wanted))[0][0]
            assert got.equals(expected)
            pages = np.unique(np.searchsorted(index.first, wanted, side="right") - 1)
            got = executor.run(block_exec.BlockRead(buf, 0, 0, 30_000, True, wanted, [index.table(pages)]))[0][0]
            assert got.equals(expected)


def _bitpack_cases():
    rng = np.random.default_rng(9)
    n = 5000
    yield "int8 full width", pa.array(rng.integers(-128, 128, n).astype(np.int8))
    yield "uint16", pa.array(rng.integers(0, 2**16, n).astype(np.uint16))
    yield "int32 w=3", pa.array(rng.integers(100, 108, n).astype(np.int32))
    yield "uint32 full width", pa.array(rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32))
    yield "int64 full width", pa.array(rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64))
    yield "uint64 w=61", pa.array(rng.integers(0, 2**61, n, dtype=np.uint64) + np.uint64(2**62))
    yield "int64 w=0", pa.array(np.full(n, -7, np.int64))
    yield "date32", pa.array(rng.integers(0, 20000, n).astype(np.int32), pa.date32())
    yield "timestamp", pa.array(rng.integers(0, 2**40, n), pa.timestamp("us", "UTC"))
    yield "decimal in its range", pa.array(rng.integers(-10**6, 10**6, n).astype(np.int32)).cast(pa.decimal128(12, 2))
    # values up to the precision's limit (9999) at 10 bits from 9000: the page's range does not prove
    # them within it
    yield "decimal near its limit", pa.array([decimal.Decimal(int(v)) for v in rng.integers(9000, 10000, n)],
                                             pa.decimal128(4, 0))
    yield "with nulls", pa.array([None if i % 5 == 0 else int(v) for i, v in enumerate(rng.integers(0, 99, n))],
                                 pa.int16())


@pytest.mark.parametrize("case", list(_bitpack_cases()), ids=lambda c: c[0])
def test_few_rows_of_a_bitpack_page_are_read_where_they_are_packed(tmp_path, case):
    """Fewer than one row in eight of a BITPACK page wanted: each is read from its lane,
    row, word and bit (a value straddling two words included), every width from 0 to
    the type's, signed and unsigned, dates, timestamps, decimals (their low words; a
    page whose range does not prove its values within their precision is decoded whole
    and checked): the values a whole decode gives at those rows."""
    from rcfmt.scan import block_exec

    _, values = case
    n = len(values)
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"c": values}), path, block_rows=n, page_rows=2048, encoding="bitpack",
                      compression="none")
    rng = np.random.default_rng(4)
    buf = np.frombuffer(path.read_bytes(), np.uint8)
    with rcfmt.open(path) as f:
        assert f.footer.chunks[0][0]["encoding"] == 3  # BITPACK
        whole = f.read_column_chunk(0, 0)
        executor = block_exec.BlockColumns(f, [0], set())
        lane_edges = [0, 1, 15, 16, 17, 63, 64, 1023, 1024, 1025, 2047, 2048, 4095, 4096, n - 1]
        for wanted in [np.array(lane_edges, np.int64), np.unique(rng.integers(0, n, 40)).astype(np.int64),
                       np.arange(0, n, 97, dtype=np.int64), np.array([n - 1], np.int64)]:
            got = executor.run(block_exec.BlockRead(buf, 0, 0, n, True, wanted))[0][0]
            assert got.equals(whole.take(pa.array(wanted))), wanted[:5]


def test_selected_bitpack_rows_refuse_forged_pages_and_decimals_past_their_precision(tmp_path):
    """A scan selecting rows of a BITPACK page (the block executor gathers them) checks
    the whole page: a decimal past its precision anywhere in it raises CorruptFileError
    whatever row is selected, and a forged width (checksums recomputed) is a
    CorruptFileError located at the column."""
    import zlib

    from file.test_valid_arrow import PAGE_HEADER, _page_bodies, forge_footer

    n, bad_row, precision = 3000, 2500, 9
    raw = [i % 1000 for i in range(n)]
    raw[bad_row] = 10**precision  # one digit too wide
    wide = pa.decimal128(38, 0)
    buf = b"".join(v.to_bytes(16, "little", signed=True) for v in raw)
    table = pa.table({"k": pa.array(np.arange(n)), "x": pa.Array.from_buffers(wide, n, [None, pa.py_buffer(buf)])})
    path = tmp_path / "d.rcfmt"
    rcfmt.write_table(table, path, encoding={"x": "bitpack"}, compression="none", page_rows=n, bitmap_indexes=None)
    forge_footer(path, b'"precision":38', f'"precision":{precision:2d}'.encode())
    with rcfmt.open(path) as f:
        for k in (5, bad_row):
            with pytest.raises(rcfmt.CorruptFileError, match="precision"):
                f.scan(columns=["x"], filter=rcfmt.col("k") == k).read()

    # a forged width byte in x's page, both checksums made to agree
    rcfmt.write_table(table.set_column(1, "x", pa.array(np.arange(n) * 3)), path, encoding={"x": "bitpack"},
                      compression="none", page_rows=n, bitmap_indexes=None)
    data = bytearray(path.read_bytes())
    pos, length = _page_bodies(path)[-1]  # the last chunk's page: x
    data[pos + 32] = 0xFF
    head = list(PAGE_HEADER.unpack_from(data, pos))
    head[9] = zlib.crc32(data[pos + 32 : pos + 32 + length])
    packed = PAGE_HEADER.pack(*head[:10], 0)
    data[pos : pos + 32] = packed[:28] + zlib.crc32(packed[:28]).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with rcfmt.open(path) as f:
        with pytest.raises(rcfmt.CorruptFileError, match="column='x'"):
            f.scan(columns=["x"], filter=rcfmt.col("k") == 7).read()


def test_a_threads_zstd_context_outlives_a_failed_page_and_its_thread(tmp_path):
    """Each thread keeps one zstd context between calls: a page that fails to
    decompress (checksums agree, the frame is garbage) raises CorruptFileError, and the
    same threads then read good files exactly, on the main thread, on fresh threads and
    on a scan's pool."""
    import threading
    import zlib

    from rcfmt.errors import CorruptFileError

    rng = np.random.default_rng(3)
    table = pa.table({"x": pa.array(rng.integers(0, 1000, 20_000)), "s": pa.array([f"v{i % 97}" for i in range(20_000)])})
    good = tmp_path / "good.rcfmt"
    rcfmt.write_table(table, good, compression="zstd", block_rows=5000, page_rows=1000, encoding={"x": "plain"})
    raw = good.read_bytes()
    with rcfmt.open(good) as f:
        offset = int(f.page_index(1, 0)["offset"][0])
    head = list(PAGE_HEADER.unpack_from(raw, offset))
    length = head[7]
    body = bytes(rng.integers(0, 256, length, dtype=np.uint8))
    head[9] = zlib.crc32(body)
    packed = PAGE_HEADER.pack(*head[:10], 0)
    bad = tmp_path / "bad.rcfmt"
    bad.write_bytes(raw[:offset] + packed[:28] + zlib.crc32(packed[:28]).to_bytes(4, "little") + body
                    + raw[offset + 32 + length:])
    failures = []

    def rounds():
        try:
            for _ in range(3):
                assert rcfmt.read_table(good, use_threads=False).equals(table)
                with pytest.raises(CorruptFileError, match="(?i)decompress|zstd"):
                    rcfmt.read_table(bad, use_threads=False)
                assert rcfmt.read_table(good, use_threads=True).equals(table)
        except BaseException as exc:  # (reported on the main thread)
            failures.append(exc)

    rounds()
    threads = [threading.Thread(target=rounds) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
