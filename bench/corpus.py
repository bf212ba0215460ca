"""Round-trip the public conformance corpora through rcfmt and classify every file.

    python bench/corpus.py --arrow-testing DIR --parquet-testing DIR [--verbose]

``DIR``: checkouts of apache/arrow-testing and apache/parquet-testing (their ``data/``
trees: ``arrow-ipc-stream/integration/**/*.arrow_file``, ``**/*.parquet``). Each file
pyarrow can read is written with rcfmt's default options, read back, and put in one
class:

- ``exact``: the same schema (field and schema metadata included) and values (NaN
  equal to NaN);
- ``normalised``: the same values in the documented stored form (README "Types":
  dictionaries decoded, string/binary views as string/binary, list views as lists);
- ``invalid input``: Arrow's own full validation refuses the table (a decimal beyond
  its precision, a date64 that is not whole days) and rcfmt refuses it at write, as it
  must (what rcfmt writes, rcfmt reads back);
- ``refused``: rcfmt raises on valid input -- a gap;
- ``WRONG``: rcfmt returns other values -- a bug.

Files pyarrow itself cannot read are counted apart. Exit status 1 if any file is
``refused`` or ``WRONG``.
"""
from __future__ import annotations

import argparse
import collections
import os
import pathlib
import sys
import tempfile

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

import rcfmt


def corpus_files(arrow_testing: str | None, parquet_testing: str | None) -> list[pathlib.Path]:
    files: list[pathlib.Path] = []
    if arrow_testing:
        files += sorted(pathlib.Path(arrow_testing).glob("**/*.arrow_file"))
    if parquet_testing:
        files += sorted(pathlib.Path(parquet_testing).glob("**/*.parquet"))
    return files


def read_with_pyarrow(path: pathlib.Path) -> pa.Table:
    if path.suffix == ".parquet":
        return pq.read_table(path)
    with ipc.open_file(path) as reader:
        return reader.read_all()


def stored_form(t: pa.DataType) -> pa.DataType:
    """The type rcfmt documents reading ``t`` back as (README "Types")."""
    if pa.types.is_dictionary(t):
        return stored_form(t.value_type)
    if t == pa.string_view():
        return pa.string()
    if t == pa.binary_view():
        return pa.binary()
    if pa.types.is_struct(t):
        return pa.struct([f.with_type(stored_form(f.type)) for f in t])
    if pa.types.is_list_view(t) or pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(stored_form(t.value_type)))
    if pa.types.is_large_list_view(t) or pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(stored_form(t.value_type)))
    if pa.types.is_fixed_size_list(t):
        return pa.list_(t.value_field.with_type(stored_form(t.value_type)), t.list_size)
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(stored_form(t.key_type)), t.item_field.with_type(stored_form(t.item_type)),
                       t.keys_sorted)
    return t


def same_values(a: pa.Table, b: pa.Table) -> bool:
    """Equal schemas (field and schema metadata included) and values, NaN equal to NaN."""
    return a.schema.equals(b.schema, check_metadata=True) and a.num_rows == b.num_rows \
        and (a.equals(b) or same_python_values(a, b))


def classify(path: pathlib.Path, scratch: str) -> tuple[str, str]:
    try:
        table = read_with_pyarrow(path)
    except Exception as exc:  # noqa: BLE001 (pyarrow refuses the file: not ours to judge)
        return "pyarrow cannot read", f"{type(exc).__name__}: {exc}"
    try:
        table.validate(full=True)
        valid = True
    except pa.ArrowInvalid:
        valid = False
    out = os.path.join(scratch, "t.rcfmt")
    try:
        rcfmt.write_table(table, out)
        back = rcfmt.read_table(out)
    except rcfmt.RcfmtError as exc:
        if not valid and isinstance(exc, rcfmt.errors.InvalidDataError):
            return "invalid input", str(exc)
        return "refused", f"{type(exc).__name__}: {exc}"
    except Exception as exc:  # noqa: BLE001 (anything else out of rcfmt is a bug)
        return "WRONG", f"{type(exc).__name__} (not an rcfmt error): {exc}"
    if same_values(back, table):
        return "exact", ""
    want = pa.schema([f.with_type(stored_form(f.type)) for f in table.schema], metadata=table.schema.metadata)
    if not back.schema.equals(want, check_metadata=True):
        return "WRONG", f"read back as {back.schema}, documented as {want}"
    if same_python_values(back, table):
        return "normalised", ""
    return "WRONG", "read back values differ"


def same_python_values(a: pa.Table, b: pa.Table) -> bool:
    """The same Python values row by row (dictionaries and views compare as their
    values; NaN as NaN)."""
    try:
        return all([repr(v) for v in x.to_pylist()] == [repr(v) for v in y.to_pylist()]
                   for x, y in zip(a.columns, b.columns))
    except (pa.ArrowException, ValueError, KeyError, OverflowError, NotImplementedError):
        return False


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arrow-testing", help="a checkout of apache/arrow-testing")
    parser.add_argument("--parquet-testing", help="a checkout of apache/parquet-testing")
    parser.add_argument("--verbose", action="store_true", help="print every file's class")
    args = parser.parse_args(argv)
    files = corpus_files(args.arrow_testing, args.parquet_testing)
    if not files:
        parser.error("no corpus files found: pass --arrow-testing and/or --parquet-testing")
    counts: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as scratch:
        for path in files:
            kind, detail = classify(path, scratch)
            counts[kind] += 1
            if args.verbose or kind in ("refused", "WRONG"):
                print(f"{kind:20s} {path}{': ' + detail[:200] if detail else ''}")
    readable = sum(n for k, n in counts.items() if k != "pyarrow cannot read")
    print(f"\n{len(files)} files, {readable} pyarrow reads: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return 1 if counts["refused"] or counts["WRONG"] else 0


if __name__ == "__main__":
    sys.exit(main())
