"""What a one-shot process imports (issue 64): ``import rcfmt`` and a first lookup, a
filtered read, a full read, a write, ``open`` + ``schema`` and the CLI's ``head``,
``inspect``, ``check`` and ``meta`` import nothing but the standard library, numpy,
pyarrow (not ``pyarrow.compute``: 25 ms), zstandard, lz4 and orjson -- no pandas (0.2 s,
which ``pa.array`` and ``pa.scalar`` pull in on their first call), no Polars, no cloud
SDK, no sqlglot for a plain SQL predicate. Counted in fresh interpreters, not timed (bench/bench_cold.py times them)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import rcfmt

ALLOWED = {"numpy", "pyarrow", "zstandard", "lz4", "orjson", "rcfmt", "cython_runtime"}
FORBIDDEN_SUBMODULES = ("pyarrow.compute", "pyarrow.pandas_compat", "pyarrow.dataset", "pyarrow.parquet",
                        # the object stores' modules: local paths need none of them (urllib, ipaddress, ...)
                        "rcfmt.storage.s3", "rcfmt.storage.gcs", "rcfmt.storage.azure",
                        # finding the codecs' shared libraries needs neither (their patterns: ~0.6 ms)
                        "glob", "importlib.util")

_REPORT = """
import json, sys
stdlib = set(sys.stdlib_module_names)
top = sorted({m.split('.')[0] for m in sys.modules} - stdlib)
print(json.dumps({"top": top, "modules": sorted(sys.modules)}))
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("cold")
    n = 50_000
    rng = np.random.default_rng(0)
    table = pa.table({"k": np.arange(n), "d": pa.array((np.arange(n) // 50).astype(np.int32)).view(pa.date32()),
                      "x": rng.standard_normal(n), "s": [f"s{i % 300}" for i in range(n)],
                      "p": pa.array([__import__("decimal").Decimal(int(v)) / 100 for v in rng.integers(0, 10**6, n)],
                                  pa.decimal128(12, 2)),
                      # (aware timestamps: pyarrow imports pandas to make them Python values)
                      "t": pa.array(np.arange(n, dtype=np.int64) * 60_000_000).view(pa.timestamp("us", "Europe/Paris"))})
    path = root / "t.rcfmt"
    rcfmt.write_table(table, path, block_rows=16_384)
    rcfmt.write_dataset(table, root / "ds", block_rows=16_384, target_file_rows=20_000)
    return path, root


def _modules(code: str, *argv) -> dict:
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code) + _REPORT, *map(str, argv)],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def _check(got: dict, what: str) -> None:
    extra = set(got["top"]) - ALLOWED - {m for m in got["top"] if m.startswith("_")}
    assert not extra, f"{what} imported {sorted(extra)}"
    heavy = [m for m in FORBIDDEN_SUBMODULES if m in got["modules"]]
    assert not heavy, f"{what} imported {heavy}"


@pytest.mark.parametrize("what, code", [
    ("import rcfmt", "import rcfmt"),
    ("a lookup", "import sys, rcfmt; rcfmt.read_table(sys.argv[1], filter=rcfmt.col('k') == 31337)"),
    ("a filtered read", """
        import datetime, sys, rcfmt
        from rcfmt import col
        t = rcfmt.read_table(sys.argv[1], columns=['k', 'd', 'p'],
                             filter=(col('d') >= datetime.date(1970, 3, 1)) & (col('d') < datetime.date(1970, 3, 8))
                             & (col('s') != 's7') & col('x').isin([0.5, 1.5]) & (col('p') < 5000))
    """),
    ("a full read", "import sys, rcfmt; rcfmt.read_table(sys.argv[1])"),
    ("open + schema", "import sys, rcfmt; f = rcfmt.open(sys.argv[1]); f.schema; f.num_rows"),
    ("a take in order", "import sys, rcfmt; rcfmt.open(sys.argv[1]).take([3, 40_000])"),
    ("row positions", "import sys, rcfmt; rcfmt.read_table(sys.argv[1], filter=rcfmt.col('k') < 10, "
                      "with_row_position=True)"),
    ("a dataset's filtered read", """
        import os, sys, rcfmt
        from rcfmt import col
        ds = rcfmt.dataset(os.path.join(os.path.dirname(sys.argv[1]), 'ds'))
        t = ds.read(['k', 's'], filter=(col('k') >= 100) & (col('k') < 30_000) & (col('s') != 's7'))
        n = ds.count_rows(filter=col('p') < 5000)
    """),
    ("a Spark task's scan of dataset fragments", """
        import os, sys, rcfmt
        from rcfmt import col
        from rcfmt.dataset import scan_fragments
        ds = rcfmt.dataset(os.path.join(os.path.dirname(sys.argv[1]), 'ds'))
        scan = scan_fragments(ds.get_fragments(), ds.schema, ['k', 'x'], col('k') < 25_000, use_threads=False)
        batches = list(scan.iter_batches(65536))
    """),
    ("the filter option's parse (Spark's relation option)", """
        import sys, rcfmt
        from rcfmt.predicate.sql_filter import parse_filter
        f = rcfmt.open(sys.argv[1])
        expr = parse_filter("(k BETWEEN 3 AND 9 OR k IN (40, NULL) OR s IN ('s1', NULL)) AND s NOT LIKE 's2%' "
                            "AND x <= double('NaN')", f.schema)
        t = rcfmt.read_table(sys.argv[1], filter=expr)
    """),
    ("a write", """
        import sys, numpy as np, pyarrow as pa, rcfmt
        t = rcfmt.read_table(sys.argv[1])
        rcfmt.write_table(t.select(['k', 'd', 'x', 'p']), sys.argv[1] + '.copy')
    """),
])
def test_first_calls_import_only_what_they_need(files, what, code):
    path, _ = files
    _check(_modules(code, path), what)


@pytest.mark.parametrize("command, options", [
    ("head", []), ("inspect", []), ("check", []), ("meta", []), ("schema", []),
    # (a plain SQL predicate is parsed by rcfmt itself: no sqlglot, 0.15 s)
    ("head", ["--filter", "k < 5 AND s NOT LIKE 's1%' AND d >= DATE '1970-01-01'"]),
])
def test_the_cli_starts_without_heavy_imports(files, command, options):
    path, _ = files
    code = f"""
        import io, contextlib, sys
        from rcfmt.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main([{command!r}, sys.argv[1], *{options!r}]) == 0
    """
    _check(_modules(code, path), f"rcfmt {command} {' '.join(options)}")


#: standard modules a process that runs no thread pool and reads local files need not
#: import (concurrent.futures brings logging: 4 ms; urllib.parse brings ipaddress: 2 ms;
#: shutil, which argparse asks the terminal's width, brings bz2 and lzma: 3 ms)
UNPOOLED = ("concurrent.futures", "logging", "urllib.parse", "shutil")


@pytest.mark.parametrize("what, code", [
    ("a lookup", "import sys, rcfmt; rcfmt.read_table(sys.argv[1], filter=rcfmt.col('k') == 31337, use_threads=False)"),
    ("open + schema", "import sys, rcfmt; f = rcfmt.open(sys.argv[1]); f.schema; f.num_rows"),
    *[(f"rcfmt {command}", f"""
        import io, contextlib, sys
        from rcfmt.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            main([{command!r}, sys.argv[1]])
    """) for command in ("head", "inspect")],
])
def test_unthreaded_local_reads_import_no_pool_or_url_modules(files, what, code):
    path, _ = files
    got = [m for m in UNPOOLED if m in _modules(code, path)["modules"]]
    assert not got, f"{what} imported {got}"


def test_the_count_sees_a_heavy_import():
    """(The check itself: pandas, or pyarrow.compute alone, is seen.)"""
    with pytest.raises(AssertionError, match="pandas"):
        _check(_modules("import pandas"), "pandas")
    with pytest.raises(AssertionError, match="pyarrow.compute"):
        _check(_modules("import pyarrow.compute"), "compute")
    with pytest.raises(AssertionError, match="rcfmt.storage.azure"):
        _check(_modules("from rcfmt.storage import AZURE_SETTINGS"), "azure settings")


def dataclass_users(root) -> list[str]:
    """Modules under ``root`` that import :mod:`dataclasses`."""
    import ast
    from pathlib import Path

    found = []
    for path in sorted(Path(root).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and not node.level else []
            if "dataclasses" in names:
                found.append(path.relative_to(root).as_posix())
    return found


def test_no_module_declares_a_dataclass(tmp_path):
    """A dataclass compiles its methods at import (0.5 ms a class: 20-25 ms of a one-shot
    lookup for the read path's classes); rcfmt declares records
    (:mod:`rcfmt.runtime.records`)."""
    from pathlib import Path

    assert dataclass_users(Path(rcfmt.__file__).parent) == []
    (tmp_path / "m.py").write_text("def f():\n    from dataclasses import dataclass\n")  # (the check can fail)
    assert dataclass_users(tmp_path) == ["m.py"]


def test_inspect_of_a_file_without_clustering_imports_no_clustering_code(files):
    """(rcfmt.layout: 2.8 ms, for the one line of a file that records a clustering spec)"""
    path, _ = files
    code = """
        import io, contextlib, sys
        from rcfmt.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(['inspect', sys.argv[1]]) == 0
    """
    assert "rcfmt.layout" not in _modules(code, path)["modules"]


@pytest.mark.parametrize("what, code", [
    ("a full read", "import sys, rcfmt; rcfmt.read_table(sys.argv[1])"),
    ("rcfmt head", """
        import io, contextlib, sys
        from rcfmt.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(['head', sys.argv[1]]) == 0
    """),
])
def test_reads_without_a_filter_import_no_binding(files, what, code):
    """(binding a filter's literals needs fractions and the conversions: 2-3 ms; its NNF,
    evaluation and the pruning stages another 4-5 ms)"""
    path, _ = files
    got = _modules(code, path)["modules"]
    assert "rcfmt.scan.executor" in got, what  # (the scan ran here: the check can see the rest)
    loaded = [m for m in ("rcfmt.predicate.bind", "fractions", "rcfmt.predicate.expr", "rcfmt.predicate.nnf",
                          "rcfmt.predicate.evaluate", "rcfmt.predicate.intervals", "rcfmt.predicate.prune",
                          "rcfmt.index.bloom.chunks", "rcfmt.index.bitmap.answer") if m in got]
    assert not loaded, (what, loaded)


#: the encodings' own modules (and the dictionary builder's kernels): what writes pages,
#: not what reads them
ENCODING_MODULES = ("rcfmt.encodings.plain", "rcfmt.encodings.dictionary", "rcfmt.encodings.rle",
                    "rcfmt.encodings.bitpack", "rcfmt.encodings.delta", "rcfmt.encodings.alp",
                    "rcfmt.encodings.delta_length", "rcfmt.encodings.byte_split", "rcfmt.encodings.selector",
                    "rcfmt._native.dictbuild")


@pytest.mark.parametrize("what, code", [
    ("open + schema", "import sys, rcfmt; f = rcfmt.open(sys.argv[1]); f.schema; f.num_rows"),
    ("a lookup", "import sys, rcfmt; rcfmt.read_table(sys.argv[1], filter=rcfmt.col('k') == 31337)"),
    ("a window", """
        import datetime, sys, rcfmt
        from rcfmt import col
        rcfmt.read_table(sys.argv[1], filter=(col('d') >= datetime.date(1970, 3, 1)) & (col('d') < datetime.date(1970, 3, 8)))
    """),
    ("rcfmt head", """
        import io, contextlib, sys
        from rcfmt.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(['head', sys.argv[1]]) == 0
    """),
    ("rcfmt inspect", """
        import io, contextlib, sys
        from rcfmt.cli import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(['inspect', sys.argv[1]]) == 0
    """),
])
def test_reads_load_no_encoding_module(files, what, code):
    """Opening a file, describing it and reading it check and name its chunks' encodings
    through rcfmt.encodings.ids alone (the registry loads eight modules and their
    kernels: about 3 ms); a read's pages are decoded natively."""
    path, _ = files
    got = _modules(code, path)["modules"]
    assert "rcfmt.encodings.ids" in got, what  # (the table was consulted: the check can see the rest)
    assert not [m for m in ENCODING_MODULES if m in got], (what, [m for m in ENCODING_MODULES if m in got])
