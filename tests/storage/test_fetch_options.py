"""rcfmt.FetchOptions: how reads of remote files trade requests for bytes (what they
change on a real S3 server: tests/storage/test_object_storage.py)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import rcfmt
from rcfmt.errors import InvalidOptionError
from rcfmt.storage import FetchOptions, check_fetch

MIB = 1 << 20


def test_defaults_and_presets():
    d = FetchOptions()
    assert (d.coalesce_gap, d.tail_bytes, d.max_request_bytes) == (MIB, None, 32 * MIB)
    lean = FetchOptions.fewest_bytes()
    assert (lean.coalesce_gap, lean.tail_bytes) == (0, 64 * 1024)
    assert check_fetch(None) == d and check_fetch(lean) is lean
    # the default gap is one round trip's worth of transfer: 10 ms at 100 MiB/s
    assert FetchOptions.from_network(10, 100) == d
    assert FetchOptions.from_network(80, 12.5).coalesce_gap == MIB
    assert FetchOptions.from_network(0, 100).coalesce_gap == 0


def test_tail_length():
    d = FetchOptions()
    assert d.tail_length(1000) == 1000 and d.tail_length(MIB) == MIB  # read whole up to 1 MiB
    assert d.tail_length(MIB + 1) == 64 * 1024  # then 1/128 of the file, 64 KiB to 1 MiB
    assert d.tail_length(64 * MIB) == 512 * 1024 and d.tail_length(10 << 30) == MIB
    assert FetchOptions(tail_bytes=4096).tail_length(100) == 100
    assert FetchOptions(tail_bytes=4096).tail_length(10 << 30) == 4096


@pytest.mark.parametrize("kwargs", [{"coalesce_gap": -1}, {"coalesce_gap": 1.5}, {"coalesce_gap": True},
                                    {"tail_bytes": 15}, {"tail_bytes": "64k"}, {"max_request_bytes": -5}])
def test_bad_values_are_refused(kwargs):
    with pytest.raises(InvalidOptionError, match=next(iter(kwargs))):
        FetchOptions(**kwargs)


@pytest.mark.parametrize("args", [(-1, 100), (10, -1), ("10", 100), (float("nan"), 100), (float("inf"), 1)])
def test_bad_network_figures_are_refused(args):
    with pytest.raises(InvalidOptionError):
        FetchOptions.from_network(*args)


def test_reads_refuse_what_is_not_fetch_options(tmp_path):
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": [1, 2, 3]}), path)
    for bad in ("fewest_bytes", {"coalesce_gap": 0}, 0):
        with pytest.raises(InvalidOptionError, match="fetch must be a rcfmt.FetchOptions"):
            rcfmt.read_table(path, fetch=bad)
        with pytest.raises(InvalidOptionError, match="fetch must be"):
            rcfmt.dataset(path).read(fetch=bad)


def test_local_reads_take_them_and_remote_reads_follow_them(tmp_path):
    """A local file is read as always; the same file through a ``pyarrow.fs``
    filesystem (a remote read: one request per read) follows the options, and every
    setting returns the same rows."""
    n = 50_000
    table = pa.table({"k": np.arange(n), "v": np.random.default_rng(3).random(n), "w": np.arange(n) * 2.0})
    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=8192, page_rows=1024, compression="none")
    expr = (rcfmt.col("k") >= 30_000) & (rcfmt.col("k") < 30_010)
    want = table.slice(30_000, 10)
    assert rcfmt.read_table(path, filter=expr, fetch=FetchOptions.fewest_bytes()).equals(want)
    local_fs = pafs.LocalFileSystem()
    seen = {}
    for name, fetch in (("default", None), ("lean", FetchOptions.fewest_bytes()),
                        ("odd", FetchOptions(coalesce_gap=100, tail_bytes=16, max_request_bytes=1))):
        with rcfmt.open(str(path), filesystem=local_fs, fetch=fetch) as f:
            assert f.remote and f.fetch == check_fetch(fetch)
            scan = f.scan(filter=expr)
            assert scan.read().equals(want)
            seen[name] = (f.requests, f.bytes_read)
            assert f.read().equals(table)
    assert seen["lean"][1] < seen["default"][1] and seen["lean"][0] > seen["default"][0]
    assert seen["odd"][0] > seen["lean"][0]  # a 16-byte tail: the footer's rest is one more read


def test_spark_options_choose_fetch_options():
    pytest.importorskip("pyspark")
    from spark_datasource.options import ReadOptions

    assert ReadOptions({"path": "/tmp/x"}).fetch == FetchOptions()
    assert ReadOptions({"path": "/tmp/x", "fetch": "fewestBytes"}).fetch == FetchOptions.fewest_bytes()
    got = ReadOptions({"path": "/tmp/x", "FETCH": "fewestbytes", "fetchTailBytes": "4096",
                       "fetchcoalescebytes": "100", "fetchMaxRequestBytes": "0"}).fetch
    assert got == FetchOptions(coalesce_gap=100, tail_bytes=4096, max_request_bytes=0)
    for bad, match in (({"fetch": "fast"}, "fewestRequests or fewestBytes"), ({"fetchTailBytes": "8"}, ">= 16"),
                       ({"fetchCoalesceBytes": "-1"}, ">= 0"), ({"fetchCoalesceBytes": "1M"}, "integer")):
        with pytest.raises(InvalidOptionError, match=match):
            ReadOptions({"path": "/tmp/x", **bad})
