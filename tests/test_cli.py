"""The ``rcfmt`` command: inspect (incl. the recorded clustering) and convert."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import rcfmt
from rcfmt.cli import main
from rcfmt.layout import METADATA_KEY


def _table(n=2000):
    rng = np.random.default_rng(1)
    return pa.table({"a": rng.integers(0, 100, n), "b": pa.array([f"s{i % 7}" for i in range(n)])})


def test_inspect_shows_layout_and_clustering(tmp_path, capsys):
    path = tmp_path / "c.rcfmt"
    rcfmt.write_table(_table(), path, cluster_by=["a", "b"], curve="hilbert", block_rows=500)
    assert main(["inspect", str(path)]) == 0
    out = capsys.readouterr().out
    assert "rows:    2,000 in 4 blocks" in out
    assert f"metadata keys: {METADATA_KEY}" in out
    assert "clustering: hilbert[rank](a, b)" in out
    assert out.count("\na ") == 1 and "\nb " in out  # one line per column


def test_inspect_plain_file_has_no_clustering_line(tmp_path, capsys):
    path = tmp_path / "p.rcfmt"
    rcfmt.write_table(_table(), path)
    assert main(["inspect", str(path)]) == 0
    assert "clustering" not in capsys.readouterr().out


def test_inspect_errors_are_reported_not_raised(tmp_path, capsys):
    bad = tmp_path / "bad.rcfmt"
    bad.write_bytes(b"not an rcfmt file at all")
    assert main(["inspect", str(bad)]) == 1
    assert capsys.readouterr().err.startswith("rcfmt: error:")
    assert main(["inspect", str(tmp_path / "missing.rcfmt")]) == 1


def test_convert_parquet(tmp_path, capsys):
    t = _table()
    pq.write_table(t, tmp_path / "in.parquet")
    assert main(["convert", str(tmp_path / "in.parquet"), str(tmp_path / "out.rcfmt"), "--block-rows", "700"]) == 0
    assert "in 3 blocks" in capsys.readouterr().out
    assert rcfmt.read_table(tmp_path / "out.rcfmt").equals(t)


def test_inspect_dataset_shows_layout_clustering_and_history(tmp_path, capsys):
    t = _table().append_column("p", pa.array(["x", "y"] * 1000))
    ds = rcfmt.write_dataset(t, tmp_path / "ds", partition_by=["p"], target_file_rows=400)
    ds.optimize(["a"], curve="sort", target_file_rows=600)
    assert main(["inspect", str(tmp_path / "ds")]) == 0
    out = capsys.readouterr().out
    assert "version: 2" in out and "rows:    2,000" in out and "partitioned by: p" in out
    assert "clustering: sort[rank](a), scope partition" in out
    assert "append" in out and "optimize" in out and "  a: int64" in out


def test_inspect_plain_directory(tmp_path, capsys):
    rcfmt.write_table(_table(), tmp_path / "one.rcfmt")
    assert main(["inspect", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "version: none" in out and "files:   1" in out
