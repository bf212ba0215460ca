"""The ``rcfmt`` command: inspect (incl. the recorded clustering) and convert."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
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


# ------------------------------------------------------------------ every command, as a user runs it
import json  # noqa: E402
import os  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402

import pytest  # noqa: E402


def _run(*args, ok=True):
    proc = subprocess.run([sys.executable, "-m", "rcfmt.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ))
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def _json(*args):
    return json.loads(_run(*args, "--json").stdout)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A flights-like file (dates, decimals, strings, floats with NaN, nulls), a dataset of
    it partitioned by carrier, and a copy of the file with one page's byte flipped."""
    import datetime as dt
    import decimal

    root = tmp_path_factory.mktemp("cli")
    rng = np.random.default_rng(13)
    n = 6000
    dep = rng.normal(10, 30, n)
    dep[::97] = np.nan
    table = pa.table({
        "id": np.arange(n),
        "carrier": pa.array([["UA", "AA", "DL", "B6"][i % 4] for i in range(n)]),
        "day": pa.array([dt.date(2013, 1, 1) + dt.timedelta(days=int(i // 20)) for i in range(n)]),
        "fare": pa.array([decimal.Decimal(int(v)).scaleb(-2) for v in rng.integers(5000, 90000, n)],
                         pa.decimal128(9, 2)),
        "dep_delay": dep,
        "tailnum": pa.array([None if i % 11 == 0 else f"N{i % 500:03d}" for i in range(n)]),
    })
    path = root / "flights.rcfmt"
    rcfmt.write_table(table, path, block_rows=2000, page_rows=500, bloom_filter_columns=["tailnum"])
    ds = root / "ds"
    rcfmt.write_dataset(table, ds, partition_by=["carrier"], target_file_rows=1000)
    corrupt = root / "corrupt.rcfmt"
    raw = bytearray(path.read_bytes())
    with rcfmt.open(path) as f:
        page = f.page_index(1, 4)[2]  # block 1, dep_delay, page 2
    raw[int(page["offset"]) + int(page["length"]) - 3] ^= 0xFF
    corrupt.write_bytes(bytes(raw))
    return path, ds, corrupt, table


def test_schema_meta_pages_index_json_match_the_library(files):
    path, ds, _, table = files
    with rcfmt.open(path) as f:
        schema = _json("schema", path)
        assert schema["kind"] == "file" and [c["name"] for c in schema["columns"]] == table.schema.names
        assert [c["type"] for c in schema["columns"]] == [str(t) for t in table.schema.types]
        meta = _json("meta", path)
        assert (meta["num_rows"], meta["num_blocks"], meta["size"]) == (f.num_rows, f.num_blocks, f.size)
        chunk = meta["blocks"][1]["chunks"][3]  # fare in block 1
        stats = f.block_stats("fare")
        assert chunk["column"] == "fare" and chunk["pages"] == int(f.footer.chunks[3][1]["page_count"])
        assert chunk["min"] == str(decimal_of(stats.min[1])) and chunk["max"] == str(decimal_of(stats.max[1]))
        assert meta["columns"][4]["nan_count"] == int(np.isnan(table["dep_delay"].to_numpy()).sum())
        pages = _json("pages", path, "--column", "day", "--block", "2")
        entries = f.page_index(2, 2)
        assert [p["first_row"] for p in pages] == entries["first_row"].tolist()
        assert [p["stored_bytes"] for p in pages] == entries["length"].tolist()
        assert all(p["uncompressed_bytes"] >= 8 * p["num_rows"] // 32 for p in pages)  # dates: >= 8 bits a day
        raw = path.read_bytes()
        import struct

        assert [p["uncompressed_bytes"] for p in pages] == [struct.unpack_from("<I", raw, p["offset"] + 20)[0]
                                                            for p in pages]
        assert pages[0]["min"] == table["day"][4000].as_py().isoformat()
        assert pages[-1]["max"] == table["day"][5999].as_py().isoformat()
        assert all(p["null_count"] == 0 for p in pages)
        index = _json("index", path, "--column", "tailnum")
        assert [c["block"] for c in index["chunks"]] == [0, 1, 2]
        assert index["chunks"][0]["offset"] == int(f.footer.chunks[5][0]["page_index_offset"])
    ds_schema = _json("schema", ds)
    assert ds_schema["kind"] == "dataset" and ds_schema["partition_by"] == ["carrier"]
    assert _json("inspect", path) == meta
    summary = _json("inspect", ds)
    dataset = rcfmt.dataset(ds)
    assert (summary["version"], summary["num_files"], summary["num_rows"]) == (1, dataset.num_files, 6000)
    assert summary["partition_by"] == ["carrier"] and summary["history"][0]["operation"] == "append"


def _same(a: pa.Table, b: pa.Table) -> bool:
    """Equal tables, NaN equal to NaN (Table.equals says NaN != NaN)."""
    if a.schema != b.schema:
        return False
    for name in a.schema.names:
        x, y = a[name].combine_chunks(), b[name].combine_chunks()
        if pa.types.is_floating(x.type):
            if not np.array_equal(x.to_numpy(zero_copy_only=False), y.to_numpy(zero_copy_only=False), equal_nan=True):
                return False
        elif not x.equals(y):
            return False
    return True


def decimal_of(unscaled):
    import decimal

    return decimal.Decimal(int(unscaled)).scaleb(-2)


def test_dictionary_and_bloom(files):
    path, _, _, table = files
    (block0,) = _json("dictionary", path, "--column", "carrier", "--block", "0")
    assert sorted(block0["dictionary"]) == ["AA", "B6", "DL", "UA"]
    present = table["tailnum"][4000].as_py()  # in block 2
    out = _json("bloom", path, "--column", "tailnum", "--value", present)
    assert out["blocks"][2]["might_contain"] and all(b["has_filter"] for b in out["blocks"])
    absent = _json("bloom", path, "--column", "tailnum", "--value", "ZZZ-not-a-plane")
    assert sum(b["might_contain"] for b in absent["blocks"]) <= 1  # 1% false positives at most, per block
    bad = _run("bloom", path, "--column", "id", "--value", "seven", ok=False)
    assert bad.returncode == 1 and "rcfmt: error:" in bad.stderr and "int64" in bad.stderr


def test_bloom_names_columns_by_their_paths_past_nested_ones(tmp_path):
    """``rcfmt bloom --column`` takes a flat column after struct and list columns (the
    stored columns' numbering is not the schema's) and a struct's leaf by its dotted
    path; a list or a struct itself is a clear error, not a traceback."""
    path = tmp_path / "nested.rcfmt"
    values = [f"v{i}" for i in range(200)]
    rcfmt.write_table(pa.table({"s": [{"a": i, "b": v} for i, v in enumerate(values)], "l": [[1, 2]] * 200,
                                "k": values}), path, bloom_filter_columns=["k", "s.b"], block_rows=100)
    for column in ("k", "s.b"):
        out = _json("bloom", path, "--column", column, "--value", "v150")
        assert [b["might_contain"] for b in out["blocks"]][1] and all(b["has_filter"] for b in out["blocks"])
        absent = _json("bloom", path, "--column", column, "--value", "v150x")
        assert sum(b["might_contain"] for b in absent["blocks"]) <= 1
    for column in ("l", "s", "nope"):
        proc = _run("bloom", path, "--column", column, "--value", "1", ok=False)
        assert proc.returncode == 1 and "rcfmt: error:" in proc.stderr and "Traceback" not in proc.stderr, column


def test_maintenance_commands_and_counts_refuse_what_cannot_be_meant(files, tmp_path):
    """history, vacuum and optimize on a path that does not exist or is a file, a
    negative ``-n`` or ``--block``: a clear error and a non-zero exit, not an empty
    history, "removed 0 files" or Python's negative indexing."""
    path = files[0]
    for command in ("history", "vacuum", "optimize"):
        for target, words in ((tmp_path / "nope", "no such dataset directory"), (path, "is a file, not a dataset")):
            proc = _run(command, target, ok=False)
            assert proc.returncode == 1 and words in proc.stderr, (command, proc.stderr)
    for args in (("head", path, "-n", "-1"), ("pages", path, "--block", "-1"), ("dictionary", path, "--column",
                                                                                "carrier", "--block", "-2")):
        proc = _run(*args, ok=False)
        assert proc.returncode == 2 and "expected a number 0 or more" in proc.stderr, args


def test_head_and_cat_with_filters_and_columns(files):
    path, ds, _, table = files
    rows = _json("head", path, "-n", "5", "--columns", "id,carrier,day", "--filter",
                 "carrier = 'DL' AND day >= DATE '2013-03-01'")
    want = table.filter(pc.and_(pc.equal(table["carrier"], "DL"),
                                pc.greater_equal(table["day"], pa.scalar(__import__("datetime").date(2013, 3, 1)))))
    assert [r["id"] for r in rows] == want["id"].to_pylist()[:5] and set(rows[0]) == {"id", "carrier", "day"}
    assert rows[0]["day"] >= "2013-03-01"
    text = _run("head", path, "-n", "2").stdout
    assert text.splitlines()[0].split() == table.schema.names and len(text.splitlines()) == 4
    csv_out = _run("cat", ds, "--columns", "id,carrier", "--filter", "id < 10").stdout.splitlines()
    assert csv_out[0] == '"id","carrier"' and sorted(int(line.split(",")[0]) for line in csv_out[1:]) == list(range(10))
    lines = _run("cat", path, "--format", "json", "--filter", "fare > 899").stdout.splitlines()
    assert len(lines) == int(pc.sum(pc.greater(table["fare"], pa.scalar(__import__("decimal").Decimal("899"),
                                                                          pa.decimal128(9, 2)))).as_py())
    bad = _run("head", path, "--filter", "nosuch > 1", ok=False)
    assert bad.returncode == 1 and "nosuch" in bad.stderr


def test_head_prints_rows_by_position_and_row_positions(files):
    path, ds, _, table = files
    n = table.num_rows
    rows = _json("head", path, "--rows", f"5,17,{n - 1},3-4", "--columns", "id,carrier")
    want = table.take([5, 17, n - 1, 3, 4])
    assert [r["id"] for r in rows] == want["id"].to_pylist() and set(rows[0]) == {"id", "carrier"}
    text = _run("head", path, "--rows", "2,1").stdout.splitlines()
    assert len(text) == 4 and text[0].split() == table.schema.names
    full = rcfmt.dataset(ds).read()
    assert [r["id"] for r in _json("head", ds, "--rows", "7,0", "--columns", "id")] == full.take([7, 0])["id"].to_pylist()
    hits = _json("head", path, "-n", "3", "--columns", "id", "--filter", "carrier = 'DL'", "--row-position")
    positions = [r["_row_position"] for r in hits]
    assert [r["id"] for r in hits] == table.take(positions)["id"].to_pylist()
    assert pc.all(pc.equal(table.take(positions)["carrier"], "DL")).as_py()
    csv_out = _run("cat", path, "--columns", "id", "--filter", "id < 3", "--row-position").stdout.splitlines()
    assert csv_out[0] == '"id","_row_position"' and len(csv_out) == 4
    for bad, words in ((str(n), "out of range"), ("-1", "out of range"), ("x", "--rows takes"),
                       ("1-99999999999999999999", f"row position {n} "), (f"{n - 2}-{n + 5}", f"row position {n} "),
                       (f"{n + 3}-{n + 9}", f"row position {n + 3} "), ("5-3", "ends before it starts")):
        proc = _run("head", path, "--rows", bad, ok=False)
        assert proc.returncode == 1 and words in proc.stderr, proc.stderr
    proc = _run("head", path, "--rows", "1", "--filter", "id > 3", ok=False)
    assert proc.returncode == 1 and "cannot be combined" in proc.stderr


def test_aware_timestamps_are_shown_as_pyarrow_converts_them(tmp_path):
    """``head`` and ``meta`` show time-zone-aware timestamps (UTC, a fixed offset, an IANA
    zone, NULLs, every unit but ns) as pyarrow's own conversion does, without the pandas
    pyarrow imports for it."""
    from rcfmt.cli.reports import json_value, rows_report

    micros = np.array([0, 1_700_000_123_456_789 // 1000, -86_400_000_000 * 400, 1_234_567_890_123_456], np.int64)
    columns = {}
    for zone in ("UTC", "+05:30", "America/New_York", "Europe/Paris"):
        for unit, per in (("s", 10**6), ("ms", 10**3), ("us", 1)):
            columns[f"{zone}/{unit}"] = pa.array(list(micros // per) + [None], pa.int64()).view(
                pa.timestamp(unit, zone))
    table = pa.table(columns)
    want = [{k: json_value(v) for k, v in row.items()} for row in table.to_pylist()]  # (pyarrow, with pandas)
    assert rows_report(table) == want
    path = tmp_path / "tz.rcfmt"
    rcfmt.write_table(table, path)
    assert _json("head", path) == want
    meta = {c["name"]: c for c in _json("meta", path)["columns"]}
    for name, column in columns.items():
        assert meta[name]["min"] == json_value(column.drop_null().to_pylist()[2]), name
    code = ("import sys, io, contextlib; from rcfmt.cli import main\n"
            "for cmd in ('head', 'meta', 'inspect'):\n"
            "    with contextlib.redirect_stdout(io.StringIO()): main([cmd, sys.argv[1]])\n"
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "False", out.stderr


def test_check_finds_and_locates_corruption(files):
    path, ds, corrupt, _ = files
    assert _json("check", path)["ok"] is True
    assert _json("check", ds)["ok"] is True
    proc = _run("check", corrupt, ok=False)
    assert proc.returncode == 1 and "corrupt:" in proc.stderr
    assert "dep_delay" in proc.stderr and "block=1" in proc.stderr and "page=2" in proc.stderr
    out = json.loads(_run("check", corrupt, "--json", ok=False).stdout)
    assert out["ok"] is False and "dep_delay" in out["error"]


def test_convert_round_trips_through_every_format(files, tmp_path):
    path, _, _, table = files
    for name in ("t.parquet", "t.arrow", "t.csv"):
        _run("convert", path, tmp_path / name)
        _run("convert", tmp_path / name, tmp_path / (name + ".rcfmt"))
        back = rcfmt.read_table(tmp_path / (name + ".rcfmt"))
        assert back.num_rows == table.num_rows and back["id"].to_pylist() == table["id"].to_pylist()
        if name != "t.csv":  # CSV infers its own types
            assert _same(back, table)
    _run("convert", tmp_path / "t.parquet", tmp_path / "clustered.rcfmt", "--cluster-by", "day,carrier",
         "--block-rows", "1500", "--compression", "lz4")
    with rcfmt.open(tmp_path / "clustered.rcfmt") as f:
        assert f.num_blocks == 4 and "rcfmt.clustering" in f.metadata
    _run("convert", tmp_path / "t.parquet", tmp_path / "dsout", "--partition-by", "carrier")
    assert rcfmt.dataset(tmp_path / "dsout").partition_by == ["carrier"]
    bad = _run("convert", path, tmp_path / "x.txt", ok=False)
    assert bad.returncode == 1 and "unknown format" in bad.stderr and not (tmp_path / "x.txt").exists()


def test_history_optimize_vacuum(files, tmp_path):
    _, ds_src, _, table = files
    ds = tmp_path / "ds"
    rcfmt.write_dataset(table.slice(0, 3000), ds)
    rcfmt.write_dataset(table.slice(3000), ds)
    hist = _json("history", ds)
    assert [h["version"] for h in hist] == [1, 2] and hist[1]["operation"] == "append"
    out = _json("optimize", ds, "--cluster-by", "day,id", "--target-file-rows", "2500")
    assert out["version_before"] == 2 and out["version"] == 3 and out["files"] == 3
    assert _same(rcfmt.dataset(ds).to_table().sort_by("id"), table)
    dry = _json("vacuum", ds, "--retention-hours", "0", "--dry-run")
    assert dry["dry_run"] and len(dry["files"]) >= 2
    done = _json("vacuum", ds, "--retention-hours", "0", "--no-enforce-retention-duration")
    assert sorted(done["files"]) == sorted(dry["files"]) and rcfmt.dataset(ds).to_table().num_rows == table.num_rows
    missing = _run("history", tmp_path / "nothing", ok=False)
    assert missing.returncode == 1 and missing.stderr.startswith("rcfmt: error:")
    for bad in ("0", "-3"):  # (0 was taken for "the default")
        out = _run("optimize", ds, "--target-file-rows", bad, "--force", ok=False)
        assert out.returncode == 1 and "target_file_rows must be a positive integer" in out.stderr
    for bad in ("-1", "nan", "inf"):
        out = _run("vacuum", ds, "--retention-hours", bad, ok=False)
        assert out.returncode == 2 and "expected a number of hours, 0 or more" in out.stderr
    assert [h["version"] for h in _json("history", ds)] == [3]


def test_plot_draws_block_and_page_boxes(files, tmp_path):
    pytest.importorskip("matplotlib")
    path, ds, _, _ = files
    out = _run("plot", path, "--column", "id", "-o", tmp_path / "id.png").stdout
    assert (tmp_path / "id.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "3 blocks of id: each spans 33% of the range" in out  # sorted: the blocks split the range
    out = _run("plot", path, "--column", "day", "--column", "carrier", "-o", tmp_path / "two.png").stdout
    assert "3 block boxes over (day, carrier)" in out and (tmp_path / "two.png").stat().st_size > 1000
    out = _run("plot", ds, "--column", "fare", "-o", tmp_path / "ds.png").stdout
    assert "files of fare" in out and (tmp_path / "ds.png").exists()
    bad = _run("plot", path, "--column", "a", "--column", "b", "--column", "c", ok=False)
    assert bad.returncode == 1 and "one or two" in bad.stderr


def test_plot_without_matplotlib_says_what_to_install(files, tmp_path):
    path = files[0]
    code = ("import sys; sys.modules['matplotlib'] = None\n"
            "from rcfmt.cli import main\n"
            f"sys.exit(main(['plot', {str(path)!r}, '--column', 'id', '-o', {str(tmp_path / 'x.png')!r}]))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "pip install 'rcfmt[plot]'" in proc.stderr and not (tmp_path / "x.png").exists()


def test_cat_into_a_pipe_that_closes_early(tmp_path):
    """`rcfmt cat big | head -2`: head has its rows, rcfmt ends quietly (no traceback,
    no broken-pipe error)."""
    path = tmp_path / "big.rcfmt"
    rcfmt.write_table(pa.table({"a": np.arange(1_000_000)}), path)
    cmd = f"'{sys.executable}' -m rcfmt.cli cat '{path}' | head -2; exit ${{PIPESTATUS[0]}}"
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout == '"a"\n0\n' and proc.stderr == ""


def test_a_command_parsed_alone_takes_the_options_it_takes_among_all():
    """A run builds only the parser of the command it names (argparse spends ~0.1 ms an
    option); each command's options are those of the full parser, which `rcfmt --help`
    and an unknown command still get."""
    from rcfmt.cli import COMMANDS, _parser

    def options(parser, name):
        sub = next(a for a in parser._actions if a.dest == "command")
        return list(sub.choices), [(a.dest, a.option_strings, a.default, a.required, a.choices, a.nargs, a.type, a.help)
                                   for a in sub.choices[name]._actions]

    full = _parser()
    for name in COMMANDS:
        built, alone = options(_parser(name), name)
        assert built == [name] and alone == options(full, name)[1], name
    assert options(full, "head")[0] == list(COMMANDS)
    with pytest.raises(SystemExit):
        main(["hed", "x.rcfmt"])  # (a misspelt command: the full parser's "invalid choice")


def test_inspect_looks_for_the_clustering_key_layout_writes(tmp_path, capsys):
    """(describe checks the key before importing rcfmt.layout: the two must agree.)"""
    from rcfmt.cli.describe import CLUSTERING_KEY

    assert CLUSTERING_KEY == METADATA_KEY


@pytest.mark.parametrize("columns", ["40", "100", "", "x"])
def test_help_is_laid_out_as_argparse_lays_it_out(monkeypatch, columns):
    """(The CLI tells argparse the terminal's width instead of letting it import shutil:
    the help reads the same at any COLUMNS, set, empty or not a number.)"""
    import argparse

    from rcfmt.cli import _HelpFormatter, _parser

    monkeypatch.setenv("COLUMNS", columns)
    ours = _parser()
    theirs = _parser()
    for p in [theirs, *next(a for a in theirs._actions if a.dest == "command").choices.values()]:
        p.formatter_class = argparse.HelpFormatter
    assert ours.formatter_class is _HelpFormatter
    assert ours.format_help() == theirs.format_help()
    for name in ("head", "convert"):
        sub_ours = next(a for a in ours._actions if a.dest == "command").choices[name]
        sub_theirs = next(a for a in theirs._actions if a.dest == "command").choices[name]
        assert sub_ours.format_help() == sub_theirs.format_help()


def test_the_command_leaves_without_finalizing_and_loses_no_output(tmp_path):
    """The entry point ends the process with ``os._exit`` once its output is flushed
    (issue 64: finalizing pyarrow costs a one-shot process 20-40 ms): buffered output
    larger than any buffer arrives whole, in a pipe and in a file; the exit codes are
    main's (0, 1 on an error, 2 on a usage error, 0 for --help); ``atexit`` handlers do
    not run."""
    path = tmp_path / "rows.rcfmt"
    rcfmt.write_table(pa.table({"a": np.arange(200_000), "s": [f"row {i}" for i in range(200_000)]}), path)
    expected = "".join(f'{i},"row {i}"\n' for i in range(200_000))
    entry = ("import atexit, sys; from rcfmt.cli import run; "
             "atexit.register(lambda: sys.stderr.write('finalized')); sys.argv[0] = 'rcfmt'; run()")

    buffered = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}  # (as a user's shell has it)

    def command(*args, stdout=subprocess.PIPE):
        return subprocess.run([sys.executable, "-c", entry, *map(str, args)], stdout=stdout, stderr=subprocess.PIPE,
                              text=True, timeout=300, env=buffered)

    piped = command("cat", path)  # (one large write)
    assert piped.returncode == 0 and piped.stderr == ""
    assert piped.stdout == '"a","s"\n' + expected
    lines = command("cat", path, "--format", "json")  # (a print a row: the last ones still buffered)
    assert lines.returncode == 0 and lines.stdout == "".join(f'{{"a": {i}, "s": "row {i}"}}\n' for i in range(200_000))
    with open(tmp_path / "out.txt", "w") as out:  # (a few lines, all in the buffer at the end)
        assert command("head", path, "-n", "3", stdout=out).returncode == 0
    assert (tmp_path / "out.txt").read_text().splitlines()[2:] == ["0  row 0", "1  row 1", "2  row 2"]
    missing = command("schema", tmp_path / "missing.rcfmt")
    assert missing.returncode == 1 and missing.stderr.startswith("rcfmt: error:") and "finalized" not in missing.stderr
    usage = command("head", path, "-n", "x")
    assert usage.returncode == 2 and "expected a whole number" in usage.stderr and "finalized" not in usage.stderr
    helped = command("--help")
    assert helped.returncode == 0 and "usage: rcfmt" in helped.stdout and helped.stderr == ""
    with_python = subprocess.run([sys.executable, "-c", entry.replace("run()", "sys.exit(0)")], capture_output=True,
                                 text=True, timeout=60)
    assert with_python.stderr == "finalized"  # (the handler runs when Python finalizes)


def test_a_dataset_named_by_a_file_uri_is_a_dataset(tmp_path):
    """``file://`` URIs name datasets to every command, as plain paths do."""
    ds = tmp_path / "d s#é"
    rcfmt.write_dataset(pa.table({"v": [1, 2], "k": ["a", "b"]}), ds, partition_by="k")
    from urllib.parse import quote

    uri = "file://" + quote(str(ds))
    for args in (("check",), ("inspect",), ("head",), ("history",)):
        plain, spelled = _run(*args, ds), _run(*args, uri)
        assert spelled.returncode == 0 and spelled.stdout.replace(uri, str(ds)) == plain.stdout, args


def test_convert_reads_back_the_csv_it_writes(tmp_path):
    """CSV written by convert reads back whole: NULL rows of a one-column file (Arrow's
    writer writes an empty line), NaN (not NULL), empty strings beside NULLs, and values
    holding newlines in a file of several read blocks; foreign targets get a plain
    file's mode; Arrow's refusals are rcfmt errors on one line."""
    one = pa.table({"f": [1.0, None, float("nan"), 2.0]})
    many = pa.table({"s": [f"line {i}\nnext" if i % 3 else ("" if i % 2 else None) for i in range(60_000)],
                     "i": pa.array(range(60_000), pa.int64())})
    for name, table in (("one", one), ("many", many)):
        rcfmt.write_table(table, tmp_path / f"{name}.rcfmt")
        _run("convert", tmp_path / f"{name}.rcfmt", tmp_path / f"{name}.csv")
        assert (tmp_path / f"{name}.csv").stat().st_size > (1 << 20) or name == "one"
        _run("convert", tmp_path / f"{name}.csv", tmp_path / f"{name}-back.rcfmt")
        back = rcfmt.read_table(tmp_path / f"{name}-back.rcfmt")
        assert back.num_rows == table.num_rows and repr(back.cast(table.schema).to_pylist()) == repr(table.to_pylist())
    umask = os.umask(0)
    os.umask(umask)
    assert (tmp_path / "one.csv").stat().st_mode & 0o777 == 0o666 & ~umask
    rcfmt.write_table(pa.table({"b": pa.array([b"\xff"], pa.binary())}), tmp_path / "bin.rcfmt")
    bad = _run("convert", tmp_path / "bin.rcfmt", tmp_path / "bin.csv", ok=False)
    assert bad.returncode == 1 and bad.stderr.startswith("rcfmt: error: convert:") and len(bad.stderr.splitlines()) == 1
    assert not (tmp_path / "bin.csv").exists()


def test_meta_reads_each_columns_block_statistics_once(tmp_path, monkeypatch):
    """``rcfmt meta`` of a file of many blocks decodes every column's block statistics
    once, not once per block (quadratic: 10,000 blocks took minutes); its chunks' min and
    max are the blocks' own."""
    from rcfmt.cli.reports import meta_report
    from rcfmt.file.reader import RcfmtFile

    path = tmp_path / "t.rcfmt"
    rcfmt.write_table(pa.table({"a": pa.array(range(300), pa.int64()), "s": [f"v{i:03d}" for i in range(300)]}),
                      path, block_rows=3)
    calls = []
    real = RcfmtFile.block_stats
    monkeypatch.setattr(RcfmtFile, "block_stats", lambda self, c: calls.append(c) or real(self, c))
    with RcfmtFile(path) as f:
        report = meta_report(f)
    assert len(calls) <= 4  # (the summary of the columns reads them too)
    assert [(c["min"], c["max"]) for c in report["blocks"][7]["chunks"]] == [(21, 23), ("v021", "v023")]


# ---------------------------------------------------------------- found by hunts (session 49)
def test_binary_values_decimals_and_folded_bloom_values(tmp_path):
    """Binary values print as {"hex": ...} whatever their bytes (valid UTF-8 ones printed
    as text, and CSV refused the others with a traceback); decimal statistics are exact
    (28 digits, then cut without a mark); a bloom value no row can equal says so; a SQL
    syntax error is one line without terminal codes."""
    import decimal

    big = decimal.Decimal("12345678901234567890123456789.123456789")
    path = tmp_path / "b.rcfmt"
    rcfmt.write_table(pa.table({"b": pa.array([b"\x00\xff", b"abc", b""]), "s": ["x", "abc", ""],
                                "d": pa.array([big, decimal.Decimal("-0.000000001"), None], pa.decimal128(38, 9)),
                                "u": pa.array([1, 2, 3], pa.uint64()), "f": [1.0, 2.0, 3.0]}),
                      path, bloom_filter_columns=["u", "f"])
    rows = _json("head", path)
    assert [r["b"] for r in rows] == [{"hex": "00ff"}, {"hex": "616263"}, {"hex": ""}]
    assert [r["d"] for r in rows] == [str(big), "-0.000000001", None]
    csv_lines = _run("cat", path).stdout.splitlines()
    assert csv_lines[2].startswith('"{""hex"": ""616263""}","abc"')
    meta = _json("meta", path)
    assert str(big) in json.dumps(meta) and "E+28" not in json.dumps(meta)
    assert "123456789012345678…" in _run("inspect", path).stdout
    for column, value in (("u", "-1"), ("f", "nan")):
        out = _run("bloom", path, "--column", column, "--value", value)
        assert "does not contain" in out.stdout and not out.stderr
    bad = _run("head", path, "--filter", "d >", ok=False)
    assert bad.returncode == 1 and len(bad.stderr.strip().splitlines()) == 1 and "\x1b" not in bad.stderr


def test_check_of_a_dataset_verifies_deletion_vectors_and_every_index_version(tmp_path, capsys):
    """``check`` agrees with the commands that read: a deletion vector that fails its
    checksum or is missing, and an old index version whose metadata cannot be read
    (history and inspect fail on it), make it exit 1 (before: "ok")."""
    root = tmp_path / "ds"
    rcfmt.write_dataset(pa.table({"x": np.arange(100_000)}), root)
    rcfmt.dataset(str(root)).delete(rcfmt.col("x").isin(list(range(0, 100_000, 7))))  # an external vector
    assert main(["check", str(root)]) == 0
    vector = next((root / "_rcfmt" / "deletions").iterdir())
    good = vector.read_bytes()
    vector.write_bytes(good[:-1] + bytes([good[-1] ^ 1]))
    capsys.readouterr()
    assert main(["check", str(root)]) == 1
    assert "deletion vector" in capsys.readouterr().err
    vector.unlink()
    assert main(["check", str(root)]) == 1
    vector.write_bytes(good)
    assert main(["check", str(root)]) == 0
    rcfmt.dataset(str(root)).evolve(add=[("y", pa.int64())])  # version 3, a checkpoint
    rcfmt.write_dataset(pa.table({"x": [1], "y": [2]}), root)  # version 4
    v1 = root / "_rcfmt" / "v00000000000000000001.rcfmt"
    data = bytearray(v1.read_bytes())
    data[-20] ^= 0xFF  # (the footer: its checksum fails)
    v1.write_bytes(bytes(data))
    capsys.readouterr()
    assert main(["check", str(root)]) == 1
    assert "index version 1" in capsys.readouterr().err


def test_inspect_and_history_of_a_dataset_with_forged_info_are_clean_errors(tmp_path, capsys):
    """Info keys ``inspect`` formats (counts, the clustering spec) that a forged version
    holds as something else are a CorruptFileError when read: exit 1 with rcfmt's
    message, not a ValueError or TypeError traceback."""
    from index_forgery import edit_version_info

    for key, value in (("num_files", "x"), ("clustering", {"columns": 5})):
        root = str(tmp_path / key)
        rcfmt.write_dataset(_table(10), root)
        edit_version_info(root, 1, lambda i: {**i, key: value})
        for command in ("inspect", "history"):
            assert main([command, root]) == 1, (key, command)
            err = capsys.readouterr().err
            assert err.startswith("rcfmt: error: dataset index version 1: malformed dataset metadata: " + key), err
