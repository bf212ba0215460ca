"""Build the API reference (HTML, from the docstrings) with pdoc.

    python docs/build_api.py [OUTPUT_DIR]     # default: docs/api/ (not committed)

Any warning pdoc raises (a module that fails to import, a docstring it cannot render,
a broken cross-reference) fails the build: tests/test_api_docs.py runs it in CI.
"""
from __future__ import annotations

import pathlib
import sys
import warnings

#: the public modules, in the order a reader meets them
MODULES = [
    "rcfmt",  # with rcfmt.dataset and its modules (rcfmt.__all__ names the package)
    "rcfmt.file.reader",
    "rcfmt.file.writer",
    "rcfmt.predicate.expr",
    "rcfmt.predicate.bind",
    "rcfmt.predicate.nnf",
    "rcfmt.predicate.arrow_eval",
    "rcfmt.scan.scanner",
    "rcfmt.predicate.sql_filter",
    "rcfmt.dataset.writer",
    "rcfmt.dataset.optimize",
    "rcfmt.layout",
    "rcfmt.storage",
    "rcfmt.storage.fetch",
    "rcfmt.file.footer_cache",
    "rcfmt.interop.polars",  # public as rcfmt.polars
    "rcfmt.interop.pandas_io",  # public as rcfmt.pandas_io
    "rcfmt.runtime.progress",
    "rcfmt.errors",
    "rcfmt.cli",
    "rcfmt.cli.reports",
    "spark_datasource",
]


def build(output: pathlib.Path) -> list[pathlib.Path]:
    """Render :data:`MODULES` into ``output``; returns the HTML pages written."""
    import pdoc
    import pdoc.render

    pdoc.render.configure(docformat="restructuredtext", search=True, show_source=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pdoc.pdoc(*MODULES, output_directory=output)
    return sorted(output.rglob("*.html"))


if __name__ == "__main__":
    out = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "api"
    pages = build(out)
    print(f"wrote {len(pages)} pages to {out}")
