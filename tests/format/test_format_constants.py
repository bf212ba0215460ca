"""The format's numbers are defined once for the native modules (rcfmt/_native/format.pxd)
and once for Python (rcfmt.format.layout, rcfmt.codecs, the encodings' wire ids): the
two agree, so a reader and a writer on either side read the same bytes the same way."""
from __future__ import annotations

from rcfmt import codecs, encodings
from rcfmt._native import pages
from rcfmt.format import layout

NATIVE = pages.format_constants()


def test_page_header_types_flags_and_limits_agree():
    assert NATIVE["PAGE_HEADER_SIZE"] == layout.PAGE_HEADER_SIZE == layout.PAGE_HEADER.size
    assert (NATIVE["PAGE_DATA"], NATIVE["PAGE_DICTIONARY"]) == (layout.PAGE_DATA, layout.PAGE_DICTIONARY)
    assert NATIVE["FLAG_VALIDITY"] == layout.PAGE_FLAG_VALIDITY
    assert (NATIVE["MAX_PAGE_ROWS"], NATIVE["MAX_PAGE_BYTES"]) == (layout.MAX_PAGE_ROWS, layout.MAX_PAGE_BYTES)
    assert NATIVE["BLOCK_RECORD_SIZE"] == layout.BLOCK_RECORD.itemsize


def test_codec_and_encoding_ids_agree():
    assert {NATIVE[f"CODEC_{n.upper()}"]: n for n in ("none", "zstd", "lz4")} == codecs.CODEC_NAMES
    assert pages.CODEC_NAMES == codecs.CODEC_NAMES
    native = {k.removeprefix("ENC_").lower(): v for k, v in NATIVE.items() if k.startswith("ENC_")}
    assert len(native) == 9
    for name, wire_id in native.items():
        assert encodings.by_id(wire_id).name == name
