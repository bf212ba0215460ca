"""Every array the reader returns is valid Arrow (``validate(full=True)``), or the read
raises an rcfmt error -- even for forged page bodies whose checksums were recomputed.

Forging: write a file with one encoding forced per column and no compression, then
overwrite random bytes inside page bodies (data and dictionary pages) and recompute
the body and header CRC-32s, so the damage reaches the decoders instead of stopping
at a checksum."""
from __future__ import annotations

import struct
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from rcfmt import col

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fuzz"))
import fuzz_pages  # noqa: E402 - the page walk shared with the fuzzer

PAGE_HEADER = struct.Struct("<BBBBIIIIIII")  # docs/FORMAT.md 4.1


def _page_bodies(path) -> list[tuple[int, int]]:
    """(header position, stored body length) of every page of every chunk."""
    raw = Path(path).read_bytes()
    return [(pos, PAGE_HEADER.unpack_from(raw, pos)[7]) for pos in fuzz_pages.page_headers(raw, path)]


def forge(raw: bytes, bodies: list[tuple[int, int]], rng: np.random.Generator, edits: int) -> bytes:
    """``raw`` with ``edits`` bytes of page bodies replaced, checksums made to agree."""
    data = bytearray(raw)
    bodies = [b for b in bodies if b[1] > 0]
    touched = set()
    for _ in range(edits if bodies else 0):
        pos, length = bodies[int(rng.integers(len(bodies)))]
        at = pos + 32 + int(rng.integers(length))
        data[at] = int(rng.choice([0x00, 0xFF, 0x80, 0xC3, 0xED, 0xF4, int(rng.integers(256))]))
        touched.add((pos, length))
    for pos, length in touched:
        head = list(PAGE_HEADER.unpack_from(data, pos))
        head[9] = zlib.crc32(data[pos + 32 : pos + 32 + length])
        packed = PAGE_HEADER.pack(*head[:10], 0)
        data[pos : pos + 32] = packed[:28] + zlib.crc32(packed[:28]).to_bytes(4, "little")
    return bytes(data)


def forge_footer(path, old: bytes, new: bytes) -> None:
    """Replace ``old`` by ``new`` (same length) in the footer and fix its checksum."""
    assert len(old) == len(new)
    raw = Path(path).read_bytes()
    start = len(raw) - 16 - int.from_bytes(raw[-16:-8], "little")
    footer = raw[start : len(raw) - 16]
    assert footer.count(old) == 1, footer[:300]
    footer = footer.replace(old, new)
    tail = raw[-16:-8] + zlib.crc32(footer).to_bytes(4, "little") + raw[-4:]
    Path(path).write_bytes(raw[:start] + footer + tail)


def _read_every_way(path):
    """Tables from every read path: whole file, block by block, a filtered scan, and
    a scan returning dictionary arrays."""
    yield rcfmt.read_table(path)
    with rcfmt.open(path) as f:
        for b in range(f.num_blocks):
            yield f.read_block(b)
        names = f.schema.names
        yield f.scan(filter=col(names[0]).is_valid()).read()
        yield f.scan(read_dictionary=names).read()


def _types():
    return st.sampled_from([pa.string(), pa.large_string(), pa.binary(), pa.decimal128(9, 2), pa.decimal128(20, 3),
                            pa.decimal128(38, 0), pa.int32(), pa.int64(), pa.float64(), pa.bool_(), pa.date32()])


@settings(max_examples=S.examples(60))
@given(data=st.data())
def test_forged_bodies_give_valid_arrow_or_rcfmt_errors(data):
    t = data.draw(_types(), label="type")
    arr = data.draw(S.arrays(t, data.draw(st.integers(1, 120)), nullable=True, sliced=False), label="values")
    enc = data.draw(st.sampled_from([None, *S.encodings_for(t)]), label="encoding")
    opts = {"block_rows": data.draw(st.integers(5, 80)), "page_rows": data.draw(st.integers(1, 20)),
            "compression": "none"}
    if enc:
        opts["encoding"] = enc
    seed = data.draw(st.integers(0, 2**32 - 1), label="seed")
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "t.rcfmt"
        rcfmt.write_table(pa.table({"c": arr}), path, **opts)
        raw, bodies = path.read_bytes(), _page_bodies(path)
        for _ in range(4):
            path.write_bytes(forge(raw, bodies, rng, int(rng.integers(1, 4))))
            try:
                for table in _read_every_way(path):
                    for column in table.columns:
                        column.validate(full=True)
            except rcfmt.RcfmtError:
                pass


@pytest.mark.parametrize("value", [b"\xff", b"\xc3", b"a\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80\xaf"])
@pytest.mark.parametrize("encoding", ["plain", "delta_length", "dictionary"])
def test_ill_formed_utf8_is_refused_at_its_page(tmp_path, value, encoding):
    good = [b"alpha", b"beta", b"gamma", b"delta"] * 5
    path = tmp_path / "s.rcfmt"
    # one value ill-formed, then the binary column declared a string column
    bad = good[:]
    bad[9] = value
    rcfmt.write_table(pa.table({"s": pa.array(bad, pa.binary())}), path, encoding=encoding, compression="none",
                      page_rows=4)
    forge_footer(path, b'"binary"', b'"string"')
    with pytest.raises(rcfmt.CorruptFileError, match="UTF-8") as info:
        rcfmt.read_table(path)
    where = str(info.value)
    assert "column='s'" in where and ("page=2" in where or "page=dictionary" in where), where
    # binary columns are not validated: the same bytes read as binary are returned
    path2 = tmp_path / "b.rcfmt"
    rcfmt.write_table(pa.table({"s": pa.array(bad, pa.binary())}), path2, encoding=encoding, compression="none")
    assert rcfmt.read_table(path2).column("s").to_pylist() == bad


@pytest.mark.parametrize("encoding", ["plain", "bitpack", "dictionary", "rle"])
@pytest.mark.parametrize("precision", [5, 18, 19, 38])
def test_decimals_beyond_precision_are_refused(tmp_path, encoding, precision, monkeypatch):
    import decimal

    from rcfmt.file.writer import Writer

    wide = pa.decimal128(38, 0)
    limit = 10**precision - 1
    values = [1, -2, limit, -limit, 7, 7, 7, 7]
    path = tmp_path / "d.rcfmt"
    ok = pa.table({"x": pa.array([decimal.Decimal(v) for v in values], wide).cast(pa.decimal128(precision, 0))})
    rcfmt.write_table(ok, path, encoding=encoding, compression="none", page_rows=4)
    assert rcfmt.read_table(path).column("x").to_pylist() == ok.column("x").to_pylist()
    # one value a digit too wide (fits int64 for precision <= 18, so BITPACK still applies)
    too_wide = values[:]
    too_wide[5] = limit + 1 if precision < 38 else -(limit + 1)
    if precision == 38 and encoding == "bitpack":
        pytest.skip("BITPACK holds decimals only while they fit in int64")
    buf = b"".join(v.to_bytes(16, "little", signed=True) for v in too_wide)  # 10**38 has no Decimal form
    raw_table = pa.table({"x": pa.Array.from_buffers(wide, len(too_wide), [None, pa.py_buffer(buf)])})
    monkeypatch.setattr(Writer, "_check_values", False)  # (the writer refuses 10**38 at precision 38 itself)
    rcfmt.write_table(raw_table, path, encoding=encoding, compression="none", page_rows=4)
    forge_footer(path, b'"precision":38', f'"precision":{precision:2d}'.encode())
    with pytest.raises(rcfmt.CorruptFileError, match="precision") as info:
        rcfmt.read_table(path)
    assert "column='x'" in str(info.value)


_UTF8_PIECES = st.sampled_from([b"a", b"\x7f", "é".encode(), "€".encode(), "😀".encode(), b"\x80", b"\xc0\xaf",
                                b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe0\x80\x80", b"\xff", b"x" * 70])


@settings(max_examples=S.examples(300))
@given(values=st.lists(st.lists(_UTF8_PIECES, max_size=6).map(b"".join), max_size=12),
       prefix=st.binary(max_size=3), large=st.booleans())
def test_utf8_check_agrees_with_python_value_by_value(values, prefix, large):
    from rcfmt._native.validate import utf8_invalid_row

    def ok(v):
        try:
            v.decode("utf-8")
            return True
        except UnicodeDecodeError:
            return False

    data = np.frombuffer(prefix + b"".join(values), np.uint8)  # offsets[0] may be > 0
    offsets = np.cumsum([len(prefix)] + [len(v) for v in values]).astype(np.int64 if large else np.int32)
    expected = next((i for i, v in enumerate(values) if not ok(v)), -1)
    assert utf8_invalid_row(data, offsets) == expected


@settings(max_examples=S.examples(200))
@given(values=st.lists(st.integers(-(2**127), 2**127 - 1), max_size=20), precision=st.integers(1, 38))
def test_decimal_check_agrees_with_python(values, precision):
    from rcfmt._native.validate import decimal_invalid_row

    buf = np.frombuffer(b"".join(v.to_bytes(16, "little", signed=True) for v in values), dtype="V16")
    expected = next((i for i, v in enumerate(values) if abs(v) > 10**precision - 1), -1)
    assert decimal_invalid_row(buf, precision) == expected
