"""Schema evolution of datasets: appends that add, leave out or widen columns; files
written under older schemas read (and pruned) under the newer one, against a brute-force
oracle; lossy changes refused; concurrent appends adding different columns."""
from __future__ import annotations

import threading
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rcfmt
import strategies as S
from extension_types import TaggedExtension, register
from rcfmt import col
from rcfmt.dataset.evolution import merge_schemas, widens


# ---------------------------------------------------------------------- the rules
@pytest.mark.parametrize("a, b", [
    (pa.int8(), pa.int64()), (pa.int32(), pa.int64()), (pa.uint8(), pa.uint32()), (pa.uint16(), pa.int32()),
    (pa.float32(), pa.float64()), (pa.decimal128(5, 2), pa.decimal128(20, 2)), (pa.string(), pa.large_string()),
    (pa.large_binary(), pa.binary()), (pa.list_(pa.int32()), pa.list_(pa.int32())),
])
def test_widenings(a, b):
    assert widens(a, b)


@pytest.mark.parametrize("a, b", [
    (pa.int64(), pa.int32()), (pa.int32(), pa.uint64()), (pa.uint32(), pa.int32()), (pa.float64(), pa.float32()),
    (pa.int32(), pa.float64()), (pa.decimal128(5, 2), pa.decimal128(20, 3)), (pa.decimal128(9, 2), pa.decimal128(5, 2)),
    (pa.string(), pa.binary()), (pa.date32(), pa.int32()), (pa.timestamp("ms"), pa.timestamp("us")),
    (pa.list_(pa.int32()), pa.list_(pa.int64())), (pa.struct([("a", pa.int8())]), pa.struct([("b", pa.int8())])),
])
def test_changes_that_lose_or_change_values(a, b):
    assert not widens(a, b)


def test_merge_keeps_order_adds_at_the_end_and_refuses_lossy_changes():
    old = pa.schema([pa.field("a", pa.int32(), False), ("b", pa.string()), ("c", pa.float32())])
    new = pa.schema([("x", pa.int8()), ("c", pa.float64()), pa.field("a", pa.int64(), False), ("b", pa.large_string())])
    merged = merge_schemas(old, new)
    assert merged == pa.schema([pa.field("a", pa.int64(), False), ("b", pa.string()), ("c", pa.float64()),
                                pa.field("x", pa.int8(), True)])
    assert merge_schemas(old, pa.schema([pa.field("a", pa.int32(), False)])) == old  # b, c left out
    with pytest.raises(rcfmt.SchemaError, match="'a' is not nullable"):
        merge_schemas(old, pa.schema([("b", pa.string())]))
    with pytest.raises(rcfmt.SchemaError, match="'c'"):
        merge_schemas(old, pa.schema([pa.field("a", pa.int32(), False), ("c", pa.int64())]))


# ---------------------------------------------------------------------- appends
def test_appends_add_leave_out_and_widen_columns(tmp_path):
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"id": pa.array([1, 2], pa.int32()), "price": pa.array([Decimal("1.50"), None],
                                                                                        pa.decimal128(5, 2)),
                                  "w": pa.array([0.5, 1.5], pa.float32())}), root)
    rcfmt.write_dataset(pa.table({"id": pa.array([3], pa.int64()), "tag": ["new"],
                                  "price": pa.array([Decimal("123456789.25")], pa.decimal128(12, 2))}), root)
    ds = rcfmt.dataset(root)
    assert ds.schema == pa.schema([("id", pa.int64()), ("price", pa.decimal128(12, 2)), ("w", pa.float32()),
                                   ("tag", pa.string())])
    assert ds.read().sort_by("id").to_pylist() == [
        {"id": 1, "price": Decimal("1.50"), "w": 0.5, "tag": None},
        {"id": 2, "price": None, "w": 1.5, "tag": None},
        {"id": 3, "price": Decimal("123456789.25"), "w": None, "tag": "new"}]
    # the index: the older file's statistics of the added column say every value is NULL
    tag = ds.stats_arrays("tag")
    assert sorted(tag.null_count.tolist()) == [0, 2]
    scan = ds.scan(filter=col("tag") == "new")
    assert scan.read()["id"].to_pylist() == [3] and scan.stats.files_pruned == 1
    # filters on widened columns: old files hold int32 ids and decimal(5, 2) prices
    assert ds.read(filter=col("id") >= 2, columns=["id"])["id"].to_pylist() == [2, 3]
    assert ds.read(filter=col("price") > Decimal("100"), columns=["id"])["id"].to_pylist() == [3]
    assert ds.read(filter=(col("id") < 3) & col("tag").is_null(), columns=["id"]).sort_by("id")["id"].to_pylist() == [1, 2]
    # the evolved schema survives optimize, which rewrites the old files in it
    ds.optimize()
    assert rcfmt.dataset(root).read().sort_by("id").equals(ds.read().sort_by("id"))


def test_lossy_appends_are_refused_before_anything_is_written(tmp_path):
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"id": pa.array([1], pa.int64()), "s": ["a"],
                                  "n": pa.array([1], pa.int32())}).cast(
        pa.schema([pa.field("id", pa.int64(), False), ("s", pa.string()), ("n", pa.int32())])), root)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    for bad, match in [(pa.table({"id": pa.array([2]), "s": pa.array([1])}), "'s'"),
                       (pa.table({"id": pa.array([2]), "n": pa.array([1.5])}), "'n'"),
                       (pa.table({"s": ["only"]}), "'id' is not nullable")]:
        with pytest.raises(rcfmt.SchemaError, match=match):
            rcfmt.write_dataset(bad, root)
    assert sorted(p for p in root.rglob("*") if p.is_file()) == files
    assert rcfmt.dataset(root).version == 1


def test_concurrent_appends_adding_different_columns_both_commit(tmp_path):
    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"id": pa.array(range(10))}), root)
    barrier = threading.Barrier(2)
    errors = []

    def append(name: str, first: int):
        try:
            data = pa.table({"id": pa.array(range(first, first + 10)), name: pa.array([name] * 10)})
            barrier.wait()
            rcfmt.write_dataset(data, root)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=append, args=(n, k)) for n, k in (("a", 100), ("b", 200))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    ds = rcfmt.dataset(root)
    assert ds.version == 3 and set(ds.schema.names) == {"id", "a", "b"}
    t = ds.read().sort_by("id")
    assert t["id"].to_pylist() == [*range(10), *range(100, 110), *range(200, 210)]
    assert t["a"].to_pylist() == [None] * 10 + ["a"] * 10 + [None] * 10
    assert t["b"].to_pylist() == [None] * 20 + ["b"] * 10


def test_append_rebased_over_a_concurrent_widening(tmp_path, monkeypatch):
    from .test_commit import _commit_meanwhile

    root = str(tmp_path / "ds")
    rcfmt.write_dataset(pa.table({"x": pa.array([1], pa.int32())}), root)
    _commit_meanwhile(monkeypatch, lambda: rcfmt.write_dataset(pa.table({"x": pa.array([2**40], pa.int64())}), root))
    rcfmt.write_dataset(pa.table({"x": pa.array([3], pa.int32()), "y": ["y"]}), root)
    ds = rcfmt.dataset(root)
    assert ds.schema == pa.schema([("x", pa.int64()), ("y", pa.string())])
    assert sorted(ds.read()["x"].to_pylist()) == [1, 3, 2**40]


# ---------------------------------------------------------------------- pruning soundness
TYPES = [(pa.int8(), pa.int32()), (pa.int32(), pa.int64()), (pa.uint8(), pa.int16()), (pa.float32(), pa.float64()),
         (pa.decimal128(5, 1), pa.decimal128(15, 1)), (pa.string(), pa.string())]


@settings(max_examples=S.examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_filters_across_evolved_files_match_brute_force(tmp_path_factory, data):
    """Files written before a column was added or widened are pruned and filtered as if
    they held NULLs / the widened values: the rows equal a brute-force filter over the
    whole dataset read without filter."""
    narrow, wide = data.draw(st.sampled_from(TYPES))
    root = tmp_path_factory.mktemp("evo") / "ds"
    n1, n2 = data.draw(st.integers(0, 30)), data.draw(st.integers(1, 30))
    v1 = data.draw(S.arrays(narrow, n1, nullable=True, sliced=False))
    v2 = data.draw(S.arrays(wide, n2, nullable=True, sliced=False))
    extra = data.draw(S.arrays(pa.int64(), n2, nullable=True, sliced=False))
    opts = {"block_rows": data.draw(st.sampled_from([4, 100])), "page_rows": 3}
    rcfmt.write_dataset(pa.table({"k": pa.array(np.arange(n1)), "v": v1}), root, **opts)
    rcfmt.write_dataset(pa.table({"k": pa.array(np.arange(n1, n1 + n2)), "v": v2, "e": extra}), root, **opts)
    ds = rcfmt.dataset(root)
    assert ds.schema.field("v").type == wide
    everything = ds.read()
    values = [x for x in pc.drop_null(everything["v"]).to_pylist() if x == x]
    lit_v = data.draw(st.sampled_from(values)) if values else None
    present_e = [x for x in extra.to_pylist() if x is not None]
    lit_e = data.draw(st.sampled_from(present_e)) if present_e else 0
    op = data.draw(st.sampled_from(["<", "<=", "==", ">", ">=", "!="]))
    pyop = {"<": pc.less, "<=": pc.less_equal, "==": pc.equal, ">": pc.greater, ">=": pc.greater_equal,
            "!=": pc.not_equal}[op]
    exprs = {"<": col("e") < lit_e, "<=": col("e") <= lit_e, "==": col("e") == lit_e, ">": col("e") > lit_e,
             ">=": col("e") >= lit_e, "!=": col("e") != lit_e}
    cases = [(exprs[op], pyop(everything["e"], pa.scalar(lit_e, pa.int64()))),
             (col("e").is_null(), pc.is_null(everything["e"])),
             (col("e").is_valid() | (col("k") < 3), pc.or_kleene(pc.is_valid(everything["e"]),
                                                                   pc.less(everything["k"], 3)))]
    if lit_v is not None:
        v_exprs = {"<": col("v") < lit_v, "<=": col("v") <= lit_v, "==": col("v") == lit_v, ">": col("v") > lit_v,
                   ">=": col("v") >= lit_v, "!=": col("v") != lit_v}
        cases.append((v_exprs[op], pyop(everything["v"], pa.scalar(lit_v, wide))))
        cases.append((v_exprs[op] & col("e").is_null(),
                      pc.and_kleene(pyop(everything["v"], pa.scalar(lit_v, wide)), pc.is_null(everything["e"]))))
    for expr, oracle in cases:
        want = everything.filter(pc.fill_null(oracle, False)).sort_by("k")["k"].to_pylist()
        got = ds.read(filter=expr).sort_by("k")
        assert got["k"].to_pylist() == want, expr
        assert got.schema == ds.schema


# ---------------------------------------------------------------------- Dataset.evolve
def test_evolve_adds_and_drops_columns_without_rewriting(tmp_path):
    root = tmp_path / "ds"
    ds = rcfmt.write_dataset(pa.table({"id": pa.array([1, 2, 3]), "x": [1.0, 2.0, 3.0], "p": ["a", "b", "a"]}),
                             root, partition_by=["p"])
    files = sorted(p.name for p in root.rglob("*.rcfmt") if "_rcfmt" not in p.parts)
    ds2 = ds.evolve(add=[("note", pa.string()), pa.field("n", pa.int32(), nullable=False)], drop=["x"])
    assert ds2.version == 2 and ds2.info["operation"] == "evolve"
    assert ds2.schema == pa.schema([("id", pa.int64()), ("note", pa.string()), ("n", pa.int32()), ("p", pa.string())])
    assert sorted(p.name for p in root.rglob("*.rcfmt") if "_rcfmt" not in p.parts) == files  # nothing rewritten
    assert ds2.read().sort_by("id").to_pylist() == [
        {"id": i, "note": None, "n": None, "p": p} for i, p in [(1, "a"), (2, "b"), (3, "a")]]
    assert ds.read().column_names == ["id", "x", "p"]  # version 1 is unchanged (time travel)
    with pytest.raises(rcfmt.SchemaError, match="unknown column"):
        ds2.read(filter=col("x") > 1)
    # the added column's statistics say NULL for the older files: they are pruned
    rcfmt.write_dataset(pa.table({"id": [4], "note": ["hi"], "n": pa.array([7], pa.int32()), "p": ["a"]}), root)
    ds3 = rcfmt.dataset(root)
    scan = ds3.scan(filter=col("note") == "hi")
    assert scan.read()["id"].to_pylist() == [4] and scan.stats.files_pruned == 2
    # a dropped name cannot come back while its values may remain in files
    with pytest.raises(rcfmt.SchemaError, match="dropped"):
        rcfmt.write_dataset(pa.table({"id": [5], "x": [5.0], "p": ["a"]}), root)
    with pytest.raises(rcfmt.SchemaError, match="dropped"):
        ds3.evolve(add=[("x", pa.int8())])
    for bad, match in [({"drop": ["p"]}, "partition"), ({"drop": ["zz"]}, "not a data column"),
                       ({"add": [("id", pa.int8())]}, "exists")]:
        with pytest.raises(rcfmt.SchemaError, match=match):
            ds3.evolve(**bad)
    # optimize rewrites the files in the current schema: the dropped bytes are gone
    ds3.optimize()
    final = rcfmt.dataset(root)
    for info in final.files:
        with rcfmt.open(info.path) as f:
            assert "x" not in f.schema.names
    assert final.read().sort_by("id").equals(ds3.read().sort_by("id"))


def test_evolve_conflicts_with_a_commit_since_its_version(tmp_path):
    root = tmp_path / "ds"
    ds = rcfmt.write_dataset(pa.table({"id": [1]}), root)
    rcfmt.write_dataset(pa.table({"id": [2]}), root)
    with pytest.raises(rcfmt.CommitConflictError, match="conflicts with version 2"):
        ds.evolve(add=[("y", pa.int8())])
    assert rcfmt.dataset(root).schema.names == ["id"]
    assert rcfmt.dataset(root).evolve(add=[("y", pa.int8())]).schema.names == ["id", "y"]


# ---------------------------------------------------------------------- renames
def _data_files(root):
    return sorted(p.name for p in root.rglob("*.rcfmt") if "_rcfmt" not in p.parts)


def test_evolve_renames_columns_through_stable_ids(tmp_path):
    root = tmp_path / "ds"
    n = 600
    t = pa.table({"id": pa.array(np.arange(n)), "v": pa.array(np.arange(n) % 50, pa.int32()),
                  "st": pa.array([{"u": i % 9, "w": f"s{i}"} for i in range(n)]),
                  "p": pa.array(["a", "b", "c"] * (n // 3))})
    ds = rcfmt.write_dataset(t, root, partition_by=["p"], block_rows=64, page_rows=16)
    assert ds.column_ids is None  # no rename yet: files hold the current names
    files = _data_files(root)
    ds2 = ds.evolve(rename={"v": "value", "st": "payload"})
    assert _data_files(root) == files  # nothing rewritten
    assert ds2.schema.names == ["id", "value", "payload", "p"]
    assert ds2.schema.field("value").type == pa.int32() and ds2.schema.field("payload").type == t["st"].type
    assert ds2.column_ids == {"id": 0, "v": 1, "st": 2, "value": 1, "payload": 2}
    assert ds2.info["renamed_columns_now"] == {"v": "value", "st": "payload"}
    assert sorted(ds2.info["dropped_columns"]) == ["st", "v"]
    # every value reads under its new name, projected alone or with others, filtered or not
    expect = t.rename_columns(["id", "value", "payload", "p"])
    assert ds2.read().sort_by("id").equals(expect.select(ds2.schema.names))
    assert ds2.read(columns=["value"]).column("value").to_pylist() == ds2.read().column("value").to_pylist()
    got = ds2.read(columns=["id", "payload.u"], filter=(col("payload.u") == 3) & (col("value") < 20)).sort_by("id")
    mask = pc.and_(pc.equal(pc.struct_field(t["st"], "u"), 3), pc.less(t["v"], 20))
    assert got["id"].to_pylist() == t.filter(mask)["id"].to_pylist()
    assert got.schema.field("payload").type == pa.struct([("u", pa.int64())])
    # the index statistics were renamed with the columns: files, blocks and pages prune on them
    scan = ds2.scan(columns=["id"], filter=col("value") == 7)
    assert sorted(scan.read()["id"].to_pylist()) == [i for i in range(n) if i % 50 == 7]
    assert scan.stats.blocks_pruned_stats + scan.stats.pages_total - scan.stats.pages_read > 0
    assert ds2.count_rows(col("value") > 100) == 0
    assert ds2.prune(col("value") > 100).sum() == 0 and ds2.prune(col("value") == 3).all()
    assert ds2.stats_arrays("value").max.max() == 49
    with pytest.raises(rcfmt.SchemaError, match="unknown column"):
        ds2.read(filter=col("v") == 1)
    assert ds.read().column_names == ["id", "v", "st", "p"]  # version 1 is unchanged (time travel)
    # files appended after the rename hold the new names; the old names are never reused
    rcfmt.write_dataset(pa.table({"id": [n], "value": pa.array([7], pa.int32()), "payload": t["st"].slice(0, 1),
                                  "p": ["a"]}), root)
    ds3 = rcfmt.dataset(root)
    assert sorted(ds3.read(columns=["id"], filter=col("value") == 7)["id"].to_pylist()) == [
        i for i in range(n) if i % 50 == 7] + [n]
    with pytest.raises(rcfmt.SchemaError, match="dropped from the dataset \\(or renamed\\)"):
        rcfmt.write_dataset(pa.table({"id": [1], "v": pa.array([1], pa.int32()), "p": ["a"]}), root)
    for bad, match in [({"rename": {"value": "v"}}, "was dropped or renamed"), ({"rename": {"value": "id"}}, "exists"),
                       ({"rename": {"p": "q"}}, "partition"), ({"rename": {"zz": "q"}}, "not a data column"),
                       ({"rename": {"value": "q", "id": "q"}}, "exists"), ({"rename": {"value": ""}}, "non-empty"),
                       ({"rename": {"value": "q"}, "drop": ["value"]}, "both drop and rename"),
                       ({"rename": {"value": "q"}, "add": [("q", pa.int8())]}, "exists|'q'"),
                       ({"add": [("v", pa.int8())]}, "dropped or renamed")]:
        with pytest.raises(rcfmt.SchemaError, match=match):
            ds3.evolve(**bad)
    with pytest.raises(rcfmt.InvalidOptionError, match="dict"):
        ds3.evolve(rename=[("value", "q")])
    # a second rename of the same column: files of either earlier name are found
    ds4 = ds3.evolve(rename={"value": "amount"}, add=[("note", pa.string())])
    assert ds4.column_ids["amount"] == 1 and ds4.column_ids["note"] == 3 and ds4.info["next_column_id"] == 4
    assert sorted(ds4.read(columns=["id"], filter=col("amount") == 7)["id"].to_pylist()) == [
        i for i in range(n) if i % 50 == 7] + [n]
    # optimize rewrites every file in the current names; reads are the same
    before = ds4.read().sort_by("id")
    ds4.optimize()
    final = rcfmt.dataset(root)
    for info in final.files:
        with rcfmt.open(info.path) as f:
            assert f.schema.names == ["id", "amount", "payload", "note"]
    assert final.read().sort_by("id").equals(before)


def test_renamed_columns_through_fragments_planned_elsewhere(tmp_path):
    """What the Spark source does: fragments pruned by block statistics and scanned by
    :func:`scan_fragments` with the dataset's column ids."""
    from rcfmt.dataset import prune_blocks, scan_fragments

    root = tmp_path / "ds"
    t = pa.table({"k": pa.array(np.arange(1000)), "v": pa.array(np.arange(1000) // 10)})
    rcfmt.write_dataset(t, root, block_rows=100)
    ds = rcfmt.dataset(root).evolve(rename={"v": "w"})
    expr = col("w").between(20, 29)
    kept, dropped, total = prune_blocks(ds.get_fragments(expr), ds.schema, expr, column_ids=ds.column_ids)
    assert total == 10 and len(kept) == 1 and kept[0].blocks == (2, 3)
    got = scan_fragments(kept, ds.schema, ["k", "w"], expr, column_ids=ds.column_ids).read()
    assert got["k"].to_pylist() == list(range(200, 300)) and got.column_names == ["k", "w"]
    # without the ids the old files do not hold the column: read as NULL, so nothing matches
    assert scan_fragments(kept, ds.schema, ["k"], expr).read().num_rows == 0


@settings(max_examples=S.examples(30), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_filters_across_renamed_files_match_brute_force(tmp_path_factory, data):
    """Files written before one or two renames (and a widening) are pruned and filtered
    as the dataset names them now: rows equal a brute-force filter of everything read."""
    narrow, wide = data.draw(st.sampled_from(TYPES))
    root = tmp_path_factory.mktemp("ren") / "ds"
    n1, n2 = data.draw(st.integers(0, 30)), data.draw(st.integers(1, 30))
    opts = {"block_rows": data.draw(st.sampled_from([4, 100])), "page_rows": 3}
    v1 = data.draw(S.arrays(narrow, n1, nullable=True, sliced=False))
    rcfmt.write_dataset(pa.table({"k": pa.array(np.arange(n1)), "v": v1}), root, **opts)
    names = ["v"]
    for _ in range(data.draw(st.integers(1, 2))):
        names.append(names[-1] + "x")
        rcfmt.dataset(root).evolve(rename={names[-2]: names[-1]})
        if data.draw(st.booleans()):  # files written under each name
            extra = data.draw(S.arrays(narrow, 3, nullable=True, sliced=False))
            rcfmt.write_dataset(pa.table({"k": pa.array(np.arange(100, 103)), names[-1]: extra}), root, **opts)
    name = names[-1]
    v2 = data.draw(S.arrays(wide, n2, nullable=True, sliced=False))
    rcfmt.write_dataset(pa.table({"k": pa.array(np.arange(n1, n1 + n2)), name: v2}), root, **opts)
    ds = rcfmt.dataset(root)
    assert ds.schema.names == ["k", name] and ds.schema.field(name).type == wide
    everything = ds.read()
    assert everything.num_rows == ds.num_rows
    old = [x for x in v1.cast(wide).to_pylist() if x is not None]  # every file's values, found by id
    assert sorted(map(repr, pc.drop_null(everything.filter(pc.less(everything["k"], n1)))[name].to_pylist())) == \
        sorted(map(repr, old))
    values = [x for x in pc.drop_null(everything[name]).to_pylist() if x == x]
    op = data.draw(st.sampled_from(["<", "<=", "==", ">", ">=", "!="]))
    pyop = {"<": pc.less, "<=": pc.less_equal, "==": pc.equal, ">": pc.greater, ">=": pc.greater_equal,
            "!=": pc.not_equal}[op]
    cases = [(col(name).is_null(), pc.is_null(everything[name]))]
    if values:
        lit = data.draw(st.sampled_from(values))
        c = col(name)
        expr = {"<": c < lit, "<=": c <= lit, "==": c == lit, ">": c > lit, ">=": c >= lit, "!=": c != lit}[op]
        oracle = pyop(everything[name], pa.scalar(lit, wide))
        cases += [(expr, oracle), (expr | (col("k") < 2), pc.or_kleene(oracle, pc.less(everything["k"], 2)))]
    for expr, oracle in cases:
        want = sorted(everything.filter(pc.fill_null(oracle, False))["k"].to_pylist())
        got = ds.read(filter=expr)
        assert sorted(got["k"].to_pylist()) == want, expr
        assert got.schema == ds.schema
        assert ds.count_rows(expr) == len(want)


def test_an_append_racing_a_rename_conflicts_and_loses_no_row(tmp_path, monkeypatch):
    from rcfmt.dataset import writer as dswriter

    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"id": [1, 2], "v": [10, 20]}), root)
    real = dswriter.commit_version  # (what write_dataset commits with)
    fired = []

    def commit(*args, **kwargs):  # the rename commits while the append is about to
        if kwargs.get("mode") == "append" and not fired:
            fired.append(1)
            rcfmt.dataset(root).evolve(rename={"v": "w"})
        return real(*args, **kwargs)

    monkeypatch.setattr(dswriter, "commit_version", commit)
    with pytest.raises(rcfmt.CommitConflictError):
        rcfmt.write_dataset(pa.table({"id": [3], "v": [30]}), root)
    assert fired
    monkeypatch.setattr(dswriter, "commit_version", real)
    ds = rcfmt.dataset(root)
    assert ds.schema.names == ["id", "w"] and ds.read().sort_by("id").to_pydict() == {"id": [1, 2], "w": [10, 20]}
    rcfmt.write_dataset(pa.table({"id": [3], "w": [30]}), root)  # the retry under the new name
    assert rcfmt.dataset(root).read().sort_by("id").to_pydict() == {"id": [1, 2, 3], "w": [10, 20, 30]}


@pytest.mark.parametrize("ids, nxt", [([1], 2), ({"id": "0", "v": 1}, 2), ({"id": 0, "v": 5}, 2), ({"id": 0}, 2),
                                      ({"id": 0, "v": 0}, 2), ({"id": 0, "v": 1}, None), ({"id": True, "v": 1}, 2)])
def test_forged_column_ids_are_a_corrupt_index(tmp_path, ids, nxt):
    import json
    import os

    from rcfmt.dataset.index import INDEX_METADATA_KEY
    from rcfmt.dataset.log import latest_version, version_path

    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"id": [1], "v": [2]}), root)
    rcfmt.dataset(root).evolve(rename={"v": "w"})
    rcfmt.dataset(root).evolve(rename={"w": "v2"})
    path = version_path(str(root), latest_version(str(root)))
    with rcfmt.open(path) as f:
        table, metadata = f.read(), dict(f.metadata)
    info = json.loads(metadata[INDEX_METADATA_KEY])
    info["schema"][1]["name"] = "v"  # the data columns are id, v
    info["column_ids"], info["next_column_id"] = ids, nxt
    metadata[INDEX_METADATA_KEY] = json.dumps(info)
    os.remove(path)
    rcfmt.write_table(table, path, metadata=metadata)
    with pytest.raises(rcfmt.CorruptFileError, match="column id|column_ids"):
        rcfmt.dataset(root)


def test_the_clustering_policy_follows_renames_and_ends_with_a_dropped_column(tmp_path):
    """Appends and optimize follow the recorded clustering: after a rename it names the
    new column; after a clustering column is dropped there is no policy left to follow
    (before, both made every later append and optimize raise SchemaError)."""
    root = tmp_path / "ds"
    n = 2000
    t = pa.table({"a": np.arange(n), "b": np.arange(n) % 7, "c": np.arange(n) % 3})
    rcfmt.write_dataset(t, root, cluster_by=["b", "a"])
    ds = rcfmt.dataset(root).evolve(rename={"b": "bb"})
    assert ds.info["clustering"]["columns"] == ["bb", "a"]
    rcfmt.write_dataset(pa.table({"a": [n], "bb": [3], "c": [0]}), root)
    appended = rcfmt.dataset(root)
    assert appended.info["clustering"]["columns"] == ["bb", "a"] and appended.num_rows == n + 1
    optimized = appended.optimize()
    assert optimized.info["clustering"]["columns"] == ["bb", "a"]
    assert sorted(optimized.read(filter=col("bb") == 3)["a"].to_pylist()) == [i for i in range(n) if i % 7 == 3] + [n]
    dropped = optimized.evolve(drop=["bb"])
    assert dropped.info.get("clustering") is None
    rcfmt.write_dataset(pa.table({"a": [n + 1], "c": [1]}), root)
    assert rcfmt.dataset(root).optimize().num_rows == n + 2


# ---------------------------------------------------------------------- NOT over leaves on missing columns
@pytest.fixture(scope="module")
def older_files(tmp_path_factory):
    """A dataset whose first files predate every column but ``k`` (they read as NULLs
    there), then the NULL-laden table of tests/not_leaves.py."""
    import not_leaves

    root = tmp_path_factory.mktemp("missing") / "ds"
    rcfmt.write_dataset(pa.table({"k": pa.array(range(100, 112), pa.int64())}), root, block_rows=4)
    rcfmt.write_dataset(not_leaves.table(), root, block_rows=6, page_rows=3)
    ds = rcfmt.dataset(root)
    return ds, ds.read()


def _not_leaf_cases():
    import not_leaves

    return not_leaves.exprs() + [~leaf & (col("k") >= 3) for leaf in not_leaves.LEAVES["f"]]


@pytest.mark.parametrize("expr", _not_leaf_cases(), ids=repr)
def test_negated_leaves_on_columns_a_file_lacks(older_files, expr):
    """A file without the column holds NULLs there: what is left of the filter for it
    (``residual_of`` with the column NULL) is TRUE exactly where the oracle finds the
    filter TRUE on a NULL row (only is_null, ~is_valid), and the dataset's rows (their
    values) are the oracle's over the whole dataset read without a filter."""
    from oracle_filter import evaluate, filter_table
    from rcfmt.predicate.nnf import columns as expr_columns
    from rcfmt.predicate.residual import FALSE, TRUE, prepare_filter, residual_of

    ds, everything = older_files
    want = filter_table(everything, expr).sort_by("k")
    got = ds.read(filter=expr).sort_by("k")
    assert got.num_rows == want.num_rows
    for name in got.column_names:
        g, w = got.column(name).combine_chunks(), want.column(name).combine_chunks()
        if pa.types.is_floating(g.type):
            g, w = g.view(pa.int64()), w.view(pa.int64())
        assert g.equals(w), name
    missing = [n for n in ds.schema.names if n != "k"]
    nnf = prepare_filter(expr, ds.schema)
    lacking = {name: None for name in expr_columns(nnf) if name != "k"}  # (a list's leaves: its element column)
    residual = residual_of(nnf, lacking, ds.schema)
    truths = []
    for k in (0, 3):  # the NULL row, with k on either side of the (k >= 3) some cases add
        row = pa.table({n: pa.nulls(1, ds.schema.field(n).type) if n in missing else pa.array([k], pa.int64())
                        for n in ds.schema.names})
        truths.append(evaluate(expr, row)[0].as_py() is True)
    if all(truths):
        assert residual is TRUE, expr
    elif not any(truths):
        assert residual is FALSE, expr
    else:  # a filter on k is left
        assert residual is not TRUE and residual is not FALSE and expr_columns(residual) == {"k"}, expr


# ---------------------------------------------------------------------- runs of extension values
@register
class _RunsA(TaggedExtension):
    NAME = "rcfmt.test.evolution_runs_a"


@register
class _RunsB(TaggedExtension):
    NAME = "rcfmt.test.evolution_runs_b"


def _runs(ext, values) -> pa.Array:
    storage = pa.array(values, ext.storage_type)
    return pa.RunEndEncodedArray.from_arrays(pa.array([2, 4], pa.int32()),
                                             pa.ExtensionArray.from_storage(ext, storage))


def test_runs_of_different_extension_values_are_not_one_type(tmp_path):
    """pyarrow 26 takes run_end_encoded<int32, ext A> for equal to run_end_encoded<int32,
    ext B> (its fingerprint leaves the values out): an append must still see a change of
    the values' type, and refuse it before anything is written."""
    a, b = _RunsA(pa.int64()), _RunsB(pa.string())
    ra, rb = pa.run_end_encoded(pa.int32(), a), pa.run_end_encoded(pa.int32(), b)
    assert ra == rb  # (the pyarrow bug this guards against; fails, and says so, once fixed)
    assert not widens(ra, rb) and not widens(rb, ra)
    with pytest.raises(rcfmt.SchemaError, match="'r'"):
        merge_schemas(pa.schema([("r", ra)]), pa.schema([("r", rb)]))
    root = tmp_path / "ds"
    first = pa.table({"r": _runs(a, [7, 8])})
    rcfmt.write_dataset(first, root)
    with pytest.raises(rcfmt.SchemaError, match="'r'"):
        rcfmt.write_dataset(pa.table({"r": _runs(b, ["x", "y"])}), root, mode="append")
    got = rcfmt.dataset(root).read()
    assert got.num_rows == 4 and got.column("r").type.value_type == a
    assert [c.values.storage.to_pylist() for c in got.column("r").chunks] == [[7, 8]]


def test_an_optimize_of_a_version_a_drop_followed_names_itself_in_the_conflict(tmp_path):
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"id": [1, 2], "x": [3, 4]}), root, target_file_rows=1)
    stale = rcfmt.dataset(root)
    rcfmt.dataset(root).evolve(drop=["x"])
    with pytest.raises(rcfmt.CommitConflictError, match=r"rewrite \(optimize or overwrite of partitions\) of .* "
                                                        r"conflicts with version 2, which dropped column\(s\) \['x'\]"):
        stale.optimize(target_file_rows=10)


def test_a_column_whose_name_holds_a_dot_is_itself_through_renames_and_drops(tmp_path):
    """``c.d`` beside ``c`` is a column of its own, not a path under ``c``: renaming ``c``
    kept its statistics under ``q.d`` (every filter on ``c.d`` pruned every file), renaming
    ``x`` to ``c`` made files read ``x.d``, and dropping it left the indexes inherited for
    ``a.b`` (every later write refused)."""
    t = pa.table({"id": [1, 2, 3], "c": [10, 20, 30], "c.d": [5, 16, 27], "x": [0, 0, 1]})
    root = tmp_path / "ds"
    rcfmt.write_dataset(t, root, bitmap_indexes={"c.d": "equality"})
    ds = rcfmt.dataset(root).evolve(rename={"c": "q"})
    assert ds.read(filter=col("c.d") > 15)["id"].to_pylist() == [2, 3]
    assert ds.count_rows(col("c.d") > 15) == 2 and ds.count_rows(col("c.d") == 16) == 1
    root2 = tmp_path / "ds2"
    rcfmt.write_dataset(t.drop_columns(["c"]), root2)
    ds2 = rcfmt.dataset(root2).evolve(rename={"x": "c"})
    assert ds2.read(["c.d", "c"], filter=col("c") == 1).to_pylist() == [{"c.d": 27, "c": 1}]
    ds = ds.evolve(drop=["c.d"])
    ds = rcfmt.write_dataset(pa.table({"id": [4], "q": [40], "x": [1]}), root)  # (it raised: bitmap_indexes 'c.d')
    ds.optimize(target_file_rows=10)
    assert sorted(rcfmt.dataset(root).read()["id"].to_pylist()) == [1, 2, 3, 4]


def test_evolve_refuses_what_would_lose_rows_or_names(tmp_path):
    """Dropping every data column would leave files of no column, which hold no row
    (optimize, update and merge lost every row after it); a name that repeats a struct
    leaf's path, a malformed field and a plain directory are refused by name."""
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"a": [1, 2], "p": [1, 2], "s": [{"d": 1}, {"d": 2}]}), root, partition_by=["p"])
    ds = rcfmt.dataset(root)
    with pytest.raises(rcfmt.SchemaError, match="cannot drop every data column"):
        ds.evolve(drop=["a", "s"])
    for bad in ({"add": [pa.field("s.d", pa.int64())]}, {"rename": {"a": "s.d"}}):
        with pytest.raises(rcfmt.SchemaError, match="both a top-level column and the path of a struct.s field"):
            ds.evolve(**bad)
    for bad in ([(5, pa.int64())], ["x"], [("x", "int64")]):
        with pytest.raises(rcfmt.SchemaError, match="pyarrow fields or"):
            ds.evolve(add=bad)
    assert rcfmt.dataset(root).version == ds.version
    plain = tmp_path / "plain"
    plain.mkdir()
    rcfmt.write_table(pa.table({"a": [1]}), plain / "f.rcfmt")
    with pytest.raises(rcfmt.UnsupportedError, match="needs a dataset with an index"):
        rcfmt.dataset(plain).evolve(drop=["a"])
    assert ds.evolve(add=pa.field("b", pa.int8())).schema.names == ["a", "s", "b", "p"]


def test_batches_of_a_widened_column_s_filter_are_never_empty(tmp_path):
    """An older file's rows are filtered after decoding where a column was widened: a
    batch left with no row is not yielded (it was, as a 0-row batch)."""
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"a": pa.array([None, 0, 3], pa.int32())}), root, block_rows=1)
    ds = rcfmt.write_dataset(pa.table({"a": pa.array([5], pa.int64())}), root, block_rows=1)
    for flt, rows in ((rcfmt.col("a").is_null(), 1), (rcfmt.col("a") == 0, 1), (rcfmt.col("a") > 100, 0)):
        sizes = [b.num_rows for b in ds.iter_batches(10, filter=flt)]
        assert sizes == [1] * rows and [b.num_rows for b in ds.scan(filter=flt).iter_batches(10)] == sizes
        assert ds.read(filter=flt).num_rows == rows and ds.read(filter=flt).schema == ds.schema


def test_list_contains_beside_a_leaf_on_a_widened_column(tmp_path):
    """A filter with a leaf on a column widened since a file was written is applied
    after that file's scan; a ``list_contains`` leaf in it needs the list read, not its
    element column (before: SchemaError "unknown column 'll.item'" on read, count_rows,
    delete and update)."""
    root = str(tmp_path / "d")
    rcfmt.write_dataset(pa.table({"id": pa.array([1, 2, 4], pa.int64()), "w": pa.array([1, 2, 50], pa.int8()),
                                  "ll": pa.array([["p"], ["q"], ["p", None]], pa.list_(pa.string())),
                                  "s": pa.array([{"l": [1]}, {"l": [2]}, None],
                                                pa.struct([("l", pa.list_(pa.int32()))]))}), root)
    ds = rcfmt.write_dataset(pa.table({"id": pa.array([3], pa.int64()), "w": pa.array([300], pa.int16()),
                                       "ll": pa.array([["p"]], pa.list_(pa.string())),
                                       "s": pa.array([{"l": [1, 2]}], pa.struct([("l", pa.list_(pa.int32()))]))}),
                             root)
    cases = [(rcfmt.list_contains(rcfmt.col("ll"), "p") & (rcfmt.col("w") < 10), [1]),
             (rcfmt.list_contains(rcfmt.col("ll"), "p") | (rcfmt.col("w") > 100), [1, 3, 4]),
             (~rcfmt.list_contains(rcfmt.col("ll"), "p") & (rcfmt.col("w") < 1000), [2]),
             (rcfmt.list_contains(rcfmt.col("s.l"), 2) & (rcfmt.col("w") >= 2), [2, 3])]
    for flt, ids in cases:
        assert sorted(ds.read(["id"], filter=flt)["id"].to_pylist()) == ids, flt
        assert ds.count_rows(flt) == len(ids)
    ds = ds.update(rcfmt.list_contains(rcfmt.col("ll"), "p") & (rcfmt.col("w") < 10), {"w": 7})
    assert ds.read(["id"], filter=rcfmt.col("w") == 7)["id"].to_pylist() == [1]
    ds = ds.delete(rcfmt.list_contains(rcfmt.col("ll"), "p") & (rcfmt.col("w") > 100))
    assert sorted(ds.read()["id"].to_pylist()) == [1, 2, 4]


_CHILD_NOT_NULL = pa.struct([pa.field("a", pa.int32(), nullable=False), pa.field("b", pa.string())])
_CHILD_NULLABLE = pa.struct([pa.field("a", pa.int32()), pa.field("b", pa.string())])


def test_an_append_with_a_null_child_relaxes_the_childs_nullability(tmp_path):
    """A struct column whose child is NOT NULL in the dataset takes an append whose
    child holds NULLs: the child becomes nullable (nested columns evolve in
    nullability), every row reads back."""
    root = str(tmp_path / "d")
    rcfmt.write_dataset(pa.table({"st": pa.array([{"a": 1, "b": "x"}], _CHILD_NOT_NULL)}), root)
    ds = rcfmt.write_dataset(pa.table({"st": pa.array([{"a": None, "b": "z"}], _CHILD_NULLABLE)}), root)
    assert ds.schema.field("st").type == _CHILD_NULLABLE
    assert rcfmt.dataset(root).read().to_pylist() == [{"st": {"a": 1, "b": "x"}}, {"st": {"a": None, "b": "z"}}]


@pytest.mark.parametrize("other", ["append", "evolve"])
def test_a_rebase_over_a_not_null_child_keeps_the_nulls_readable(tmp_path, monkeypatch, other):
    """Writer A appends a new struct column whose child holds NULLs; before it commits,
    another writer adds the same column with that child NOT NULL (an append, or
    evolve(add=...)). A rebases: the version it commits recorded the child NOT NULL,
    and every read of it failed with a raw ArrowInvalid."""
    import rcfmt.dataset.writer as writer_module

    root = str(tmp_path / "d")
    rcfmt.write_dataset(pa.table({"id": pa.array([0], pa.int64())}), root)
    real = writer_module.commit_version

    def meanwhile(*args, **kwargs):
        monkeypatch.setattr(writer_module, "commit_version", real)
        if other == "append":
            rcfmt.write_dataset(pa.table({"id": pa.array([1], pa.int64()),
                                          "st": pa.array([{"a": 1, "b": "x"}], _CHILD_NOT_NULL)}), root)
        else:
            rcfmt.dataset(root).evolve(add=[pa.field("st", _CHILD_NOT_NULL)])
        return real(*args, **kwargs)

    monkeypatch.setattr(writer_module, "commit_version", meanwhile)
    rcfmt.write_dataset(pa.table({"id": pa.array([2], pa.int64()),
                                  "st": pa.array([{"a": None, "b": "z"}], _CHILD_NULLABLE)}), root)
    ds = rcfmt.dataset(root)
    assert ds.version == 3 and ds.schema.field("st").type == _CHILD_NULLABLE
    rows = {r["id"]: r["st"] for r in ds.read().to_pylist()}
    assert rows[2] == {"a": None, "b": "z"} and rows[0] is None
    assert rows.get(1, {"a": 1, "b": "x"}) == {"a": 1, "b": "x"}


@register
class _Point(TaggedExtension):
    NAME = "rcfmt.test.evolution_point"


def test_an_extension_whose_storage_differs_in_nullability_is_refused_by_name(tmp_path):
    """An extension column whose struct storage has a NOT NULL child, appended with its
    nullable form: a SchemaError naming the column (the append was accepted and the
    write failed with a raw ArrowTypeError); nothing is committed."""
    not_null = pa.struct([pa.field("a", pa.int32(), nullable=False)])
    nullable = pa.struct([pa.field("a", pa.int32())])
    root = str(tmp_path / "d")
    rcfmt.write_dataset(pa.table({"c": pa.ExtensionArray.from_storage(
        _Point(not_null), pa.array([{"a": 1}], not_null))}), root)
    with pytest.raises(rcfmt.SchemaError, match="column 'c': extension types .* cannot be relaxed"):
        rcfmt.write_dataset(pa.table({"c": pa.ExtensionArray.from_storage(
            _Point(nullable), pa.array([{"a": None}], nullable))}), root)
    assert rcfmt.dataset(root).version == 1
