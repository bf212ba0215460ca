"""Nested fields (FORMAT.md §3a) read back exactly from a file written once.

``tests/data/golden_nested.rcfmt`` was written by ``tests/data/make_golden_nested.py``
(session 9); its expected content is ``golden_nested.arrow``. NEVER REGENERATE THEM: if
this test fails, the reader (or the layout of stored columns and the ``nested`` tree)
changed incompatibly -- fix that, not the file.
"""
from __future__ import annotations

import json
from pathlib import Path


import rcfmt
import strategies as S
from rcfmt import col, list_contains

DATA = Path(__file__).resolve().parents[1] / "data"
GOLDEN = DATA / "golden_nested.rcfmt"
EXPECTED = DATA / "golden_nested.arrow"
GOLDEN_SHA256 = "abfa1574ae8fd9e2e2722d3517ef65c7dfe3924b5d1290a454a2c24ea906641a"
EXPECTED_SHA256 = "af201b711471c09161e700ce7a2a8bdc5541c7fc8a10f7a35ca331cf1a8abe16"


def _expected():
    return S.ipc_table(EXPECTED)


def test_files_are_the_ones_written_once():
    S.assert_written_once((GOLDEN, GOLDEN_SHA256), (EXPECTED, EXPECTED_SHA256))


def test_reads_back_exactly():
    want = _expected()
    got = rcfmt.read_table(GOLDEN)
    got.validate(full=True)
    assert got.schema.remove_metadata() == want.schema
    assert got.equals(want.cast(got.schema))
    with rcfmt.open(GOLDEN) as f:
        for b in range(f.num_blocks):
            first, rows = int(f.footer.blocks[b]["first_row"]), int(f.footer.blocks[b]["row_count"])
            assert f.read_block(b).equals(got.slice(first, rows))


def test_stored_columns_and_tree_are_pinned():
    with rcfmt.open(GOLDEN) as f:
        assert f.physical_schema.names == [
            "id", "payload", "payload.user", "payload.user.id", "payload.user.name", "payload.amount", "tags",
            "tags.item", "big", "big.item", "pair", "pair.item", "attrs", "attrs.key", "attrs.value", "deep",
            "deep.item", "deep.item.item", "deep.item.item.a", "deep.item.item.a.item"]
        assert [str(t) for t in f.physical_schema.types] == [
            "int32", "bool", "bool", "int64", "string", "decimal128(9, 2)", "int32", "string", "int64", "double",
            "bool", "int16", "int32", "string", "int64", "int32", "int32", "bool", "int32", "int64"]
        assert f.num_blocks == 3
    raw = GOLDEN.read_bytes()
    footer = raw[-16 - int.from_bytes(raw[-16:-8], "little"):-16]
    doc = json.loads(footer[4:4 + int.from_bytes(footer[:4], "little")])
    assert doc["required_features"] == ["nested"] and doc["format_version"] == 1

    def shape(node):
        return [node["kind"], node["column"], *[shape(c) for c in node.get("children", [])]]

    assert [shape(n) for n in doc["nested"]] == [
        ["leaf", 0], ["struct", 1, ["struct", 2, ["leaf", 3], ["leaf", 4]], ["leaf", 5]], ["list", 6, ["leaf", 7]],
        ["large_list", 8, ["leaf", 9]], ["fixed_size_list", 10, ["leaf", 11]], ["map", 12, ["leaf", 13], ["leaf", 14]],
        ["list", 15, ["list", 16, ["struct", 17, ["list", 18, ["leaf", 19]]]]]]


def test_filters_and_projections_on_the_golden_file():
    want = _expected().to_pylist()
    got = rcfmt.read_table(GOLDEN, filter=col("payload.user.id") >= 30, columns=["id"])["id"].to_pylist()
    assert got == [r["id"] for r in want
                   if r["payload"] and r["payload"]["user"] and (r["payload"]["user"]["id"] or -1) >= 30]
    got = rcfmt.read_table(GOLDEN, filter=list_contains(col("tags"), "t2"), columns=["id"])["id"].to_pylist()
    assert got == [r["id"] for r in want if r["tags"] and "t2" in r["tags"]]
    sub = rcfmt.read_table(GOLDEN, columns=["payload.user.name"])["payload"].to_pylist()
    assert sub == [None if r["payload"] is None else
                   {"user": None if r["payload"]["user"] is None else {"name": r["payload"]["user"]["name"]}}
                   for r in want]
