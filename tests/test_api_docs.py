"""The API reference builds from the docstrings (docs/build_api.py, pdoc) without a
warning: a module that fails to import or a docstring pdoc cannot render fails here."""
from __future__ import annotations

import importlib.util
import pathlib

import pytest

pytest.importorskip("pdoc")
ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_the_api_reference_builds(tmp_path):
    spec = importlib.util.spec_from_file_location("build_api", ROOT / "docs" / "build_api.py")
    build_api = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_api)
    pages = build_api.build(tmp_path)
    names = {p.relative_to(tmp_path).as_posix() for p in pages}
    for module in build_api.MODULES:
        assert module.replace(".", "/") + ".html" in names, module
    reader = (tmp_path / "rcfmt" / "file" / "reader.html").read_text()
    assert "RcfmtFile" in reader and "scan" in reader  # the docstrings are rendered
