"""The ``rcfmt`` command (docs/CLI.md): describe, read, check, convert and maintain rcfmt
files and datasets, at local paths and object-store URIs.

Describing commands take ``--json`` and then print one JSON document of the shape
docs/CLI.md gives (:mod:`rcfmt.cli.reports`). Every failure exits 1 with rcfmt's error
text on stderr (``rcfmt: error: ...``); ``check`` exits 1 when it finds corruption;
usage errors exit 2.
"""
from __future__ import annotations

import argparse
import json
import sys

from ..errors import RcfmtError
from .describe import column_summary, describe, describe_dataset

__all__ = ["main", "run", "describe", "describe_dataset", "column_summary"]


def _columns(text: str | None) -> list[str] | None:
    return None if text is None else [c.strip() for c in text.split(",") if c.strip()]


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, ensure_ascii=False))


def _table_text(rows: list[dict], columns: list[str]) -> str:
    """``rows`` (JSON-ready dicts) as an aligned text table."""
    cells = [[("null" if r.get(c) is None else str(r.get(c))) for c in columns] for r in rows]
    widths = [min(40, max([len(c)] + [len(row[i]) for row in cells])) for i, c in enumerate(columns)]
    lines = ["  ".join(c[:w].ljust(w) for c, w in zip(columns, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(v[:w].ljust(w) for v, w in zip(row, widths)) for row in cells]
    return "\n".join(lines)


def _filter(text: str | None, schema):
    if text is None:
        return None
    from ..predicate.sql_filter import parse_filter

    return parse_filter(text, schema)


def _source(path: str):
    """``(schema filters may name, the file or dataset)``: each has ``scan`` and
    ``take``; a file is closed by :func:`_close`."""
    from .reports import is_dataset

    if is_dataset(path):
        from ..dataset import open_dataset

        ds = open_dataset(path)
        from ..schema.nested import bind_schema

        return bind_schema(ds.schema), ds
    from ..file.reader import RcfmtFile

    f = RcfmtFile(path)
    return f.bind_schema, f


def _dataset_dir(path: str) -> str:
    """``path`` for the commands that maintain a dataset (history, vacuum, optimize): a
    local path must be a directory -- a typo or a file is an error, not an empty history
    or "removed 0 files"."""
    import os

    from ..storage import is_remote, local_path, remote_kind

    if not is_remote(path):
        local = local_path(path)
        if not os.path.exists(local):
            raise RcfmtError(f"{path}: no such dataset directory")
        if not os.path.isdir(local):
            raise RcfmtError(f"{path} is a file, not a dataset directory")
        return path
    kind = remote_kind(path)  # (one request: an error for a bucket that does not exist)
    if kind is None:
        raise RcfmtError(f"{path}: no such dataset (nothing is stored under this prefix)")
    if kind == "file":
        raise RcfmtError(f"{path} is an object, not a dataset prefix")
    return path


def _count(text: str) -> int:
    """A count or number on the command line (``-n``, ``--block``): an int, not negative."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number 0 or more, got {value}")
    return value


def _hours(text: str) -> float:
    """``--retention-hours``: a finite number of hours, 0 or more."""
    import math

    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a number of hours, 0 or more, got {text!r}")
    return value


def _close(source) -> None:
    close = getattr(source, "close", None)  # (a file; a dataset holds nothing open)
    if close is not None:
        close()


def _positions(text: str, count: int) -> list[int]:
    """``--rows``' comma-separated positions (ranges ``a-b`` inclusive, too) of a source
    of ``count`` rows: a range reaching past them ends at its first position out of
    range, which ``take`` then refuses by name (a range is never spelled out further)."""
    out = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        lo, dash, hi = part.partition("-") if not part.startswith("-") else (part, "", "")
        try:
            lo, hi = int(lo), int(hi) if dash else None
        except ValueError:
            raise RcfmtError(f"--rows takes row positions (0-based) such as 5,17,90211 or 10-19, got {part!r}") from None
        if hi is None:
            out.append(lo)
        elif hi < lo:
            raise RcfmtError(f"--rows: the range {part!r} ends before it starts")
        else:
            out.extend(range(lo, min(hi, count - 1) + 1))
            if hi >= count:
                out.append(max(lo, count))
    return out


def _head(args) -> int:
    import pyarrow as pa

    from .reports import rows_report

    if args.rows is not None and args.filter is not None:
        raise RcfmtError("--rows and --filter cannot be combined: --rows names the rows to print")
    schema, source = _source(args.path)
    try:
        if args.rows is not None:  # the rows at those positions, in that order
            table = source.take(_positions(args.rows, source.num_rows), _columns(args.columns))
        elif args.filter is None and not args.row_position:  # the first rows: only the pages holding them
            table = source.take(range(max(0, min(args.n, source.num_rows))), _columns(args.columns))
        else:
            scan = source.scan(_columns(args.columns), _filter(args.filter, schema),
                               with_row_position=args.row_position)
            batches, rows = [], 0
            for batch in scan.iter_batches():
                if rows >= args.n:
                    break
                batches.append(batch.slice(0, args.n - rows))
                rows += batches[-1].num_rows
            table = pa.Table.from_batches(batches, schema=scan.output_schema)
    finally:
        _close(source)
    out = rows_report(table)
    if args.json:
        _print_json(out)
    else:
        print(_table_text(out, list(out[0]) if out else table.schema.names))
    return 0


def _cat(args) -> int:
    import pyarrow as pa

    schema, source = _source(args.path)
    try:
        scan = source.scan(_columns(args.columns), _filter(args.filter, schema), with_row_position=args.row_position)
        if args.format == "json":
            from .reports import rows_report

            for batch in scan.iter_batches():
                for row in rows_report(pa.Table.from_batches([batch])):
                    print(json.dumps(row, ensure_ascii=False))
        else:
            import pyarrow.csv as csv

            sink = pa.BufferOutputStream()
            with csv.CSVWriter(sink, _csv_schema(scan.output_schema)) as w:
                for batch in scan.iter_batches():
                    w.write_batch(_csv_batch(batch))
            sys.stdout.write(sink.getvalue().to_pybytes().decode("utf-8"))
    finally:
        _close(source)
    return 0


def _csv_schema(schema):
    """``schema`` as CSV cells show it: nested fields as strings (cells hold them as
    JSON), run_end_encoded ones as their values' (Arrow's CSV writer refuses runs)."""
    import pyarrow as pa

    return pa.schema([f.with_type(_csv_type(f.type)) for f in schema])


def _csv_type(t):
    import pyarrow as pa

    if pa.types.is_run_end_encoded(t):
        return _csv_type(t.value_type)
    return pa.string() if _as_text(t) else t


def _as_text(t) -> bool:
    """Whether CSV cells show a column of type ``t`` as text: nested ones as JSON,
    extension types (which Arrow's CSV writer refuses) as ``cat --format json`` shows
    them (a uuid in its canonical form), intervals of months or of (days, ms), which it
    cannot cast to text, as JSON too, and binary values as ``{"hex": ...}`` (it wrote
    their bytes as text, and refused those that are not UTF-8)."""
    import pyarrow as pa

    from ..schema.nested import is_nested

    return is_nested(t) or isinstance(t, pa.BaseExtensionType) or t.id in (21, 22) or pa.types.is_binary(t) \
        or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t)


def _csv_batch(batch):
    """``batch`` with nested columns as JSON text (as ``cat --format json`` shows them)
    and run_end_encoded ones decoded."""
    import pyarrow as pa

    from ..schema.nested_runs import decode_runs
    from .reports import rows_report

    schema = _csv_schema(batch.schema)
    if schema.equals(batch.schema):
        return batch
    text = [i for i, f in enumerate(batch.schema) if schema.field(i).type == pa.string() and f.type != pa.string()
            and (_as_text(f.type) or pa.types.is_run_end_encoded(f.type))]
    rows = [list(r.values()) for r in rows_report(pa.Table.from_batches([batch]))] if text else []  # (by position)
    columns = []
    for i, field in enumerate(batch.schema):
        if i in text:
            cells = [None if r[i] is None else r[i] if isinstance(r[i], str)
                     else json.dumps(r[i], ensure_ascii=False) for r in rows]
            columns.append(pa.array(cells, pa.string()))
        elif pa.types.is_run_end_encoded(field.type):
            columns.append(decode_runs(batch.column(i)))
        else:
            columns.append(batch.column(i))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def _check(args) -> int:
    from .reports import check_dataset, check_file, is_dataset

    result = check_dataset(args.path) if is_dataset(args.path) else check_file(args.path)
    if args.json:
        _print_json(result)
    elif result["ok"]:
        what = f"{len(result['files'])} files" if "files" in result else f"{result['blocks']} blocks, {result['pages']} pages"
        print(f"ok: {args.path} ({what}; every checksum and structural rule holds)")
    else:
        print(f"corrupt: {result['error']}", file=sys.stderr)
    return 0 if result["ok"] else 1


def _file_report(args, report):
    """``report(file)`` of the file at ``args.path``; printed as JSON (and None returned)
    under ``--json``."""
    from ..file.reader import RcfmtFile

    with RcfmtFile(args.path) as f:
        out = report(f)
    if args.json:
        _print_json(out[0] if isinstance(out, tuple) else out)  # (report, text): the report
        return None
    return out


def _run(args) -> int:
    from . import reports

    cmd = args.command
    if cmd == "inspect":
        if args.json:  # a dataset's summary, or a file's meta report
            if reports.is_dataset(args.path):
                _print_json(reports.dataset_report(args.path))
            else:
                _file_report(args, reports.meta_report)
            return 0
        if reports.is_dataset(args.path):
            print(describe_dataset(args.path))
        else:
            from ..file.reader import RcfmtFile

            with RcfmtFile(args.path) as f:
                print(describe(f))
        return 0
    if cmd == "schema":
        out = reports.schema_report(args.path)
        if args.json:
            _print_json(out)
        else:
            print(_table_text(out["columns"], ["name", "type", "nullable"]))
            if out["partition_by"]:
                print(f"partitioned by: {', '.join(out['partition_by'])}")
        return 0
    if cmd == "meta":
        out = _file_report(args, lambda f: (reports.meta_report(f), describe(f)))
        if out is None:
            return 0
        out, summary = out
        print(summary)
        print()
        rows = [{"block": b["block"], "rows": b["num_rows"], "stored_bytes": b["stored_bytes"], **c}
                for b in out["blocks"] for c in b["chunks"]]
        print(_table_text(rows, ["block", "rows", "column", "encoding", "compression", "stored_bytes",
                                 "uncompressed_bytes", "pages", "null_count", "min", "max", "bitmap_index_bytes"]))
        for name, report in out.get("bitmap_indexes", {}).items():  # why each column has an index or none
            built = ", ".join(f"{kind} in {n} blocks" for kind, n in report["kinds"].items())
            skipped = "; ".join(f"{why} ({n} blocks)" for why, n in report["not_indexed"].items())
            print(f"bitmap index {name}: {built or 'none'}{'; ' + skipped if skipped else ''}")
        return 0
    if cmd == "pages":
        out = _file_report(args, lambda f: reports.pages_report(f, args.column, args.block))
        if out is not None:
            print(_table_text(out, ["block", "column", "page", "first_row", "num_rows", "offset", "stored_bytes",
                                    "uncompressed_bytes", "encoding", "null_count", "min", "max"]))
        return 0
    if cmd == "index":
        out = _file_report(args, lambda f: reports.index_report(f, args.column, args.block))
        if out is not None:
            print(f"page index region: offset {out['offset']}, {out['length']} bytes")
            print(_table_text(out["chunks"], ["block", "column", "offset", "length", "pages", "crc32"]))
        return 0
    if cmd == "dictionary":
        out = _file_report(args, lambda f: reports.dictionary_report(f, args.column, args.block))
        if out is not None:
            for entry in out:
                values = entry["dictionary"]
                shown = "not dictionary-encoded" if values is None else f"{len(values)} values: " + ", ".join(
                    json.dumps(v, ensure_ascii=False) for v in values[:50]) + (" ..." if len(values) > 50 else "")
                print(f"block {entry['block']}: {shown}")
        return 0
    if cmd == "bloom":
        out = _file_report(args, lambda f: reports.bloom_report(f, args.column, args.value))
        if out is not None:
            for b in out["blocks"]:
                verdict = ("no filter (might contain)" if not b["has_filter"] else
                           "might contain" if b["might_contain"] else "does not contain")
                print(f"block {b['block']}: {verdict}")
        return 0
    if cmd == "head":
        return _head(args)
    if cmd == "cat":
        return _cat(args)
    if cmd == "check":
        return _check(args)
    if cmd == "history":
        out = reports.history_report(_dataset_dir(args.path))
        if args.json:
            _print_json(out)
        else:
            print(_table_text(out, ["version", "operation", "num_files", "num_rows", "added_files", "removed_files",
                                    "rows_deleted", "rows_updated", "rows_inserted", "timestamp"]))
        return 0
    if cmd == "vacuum":
        from ..dataset import vacuum

        removed = vacuum(_dataset_dir(args.path), retention_seconds=args.retention_hours * 3600.0, dry_run=args.dry_run,
                         progress=args.progress, enforce_retention_duration=args.enforce_retention_duration)
        if args.json:
            _print_json({"dry_run": args.dry_run, "files": removed})
        else:
            print(("would remove" if args.dry_run else "removed") + f" {len(removed)} files")
            for p in removed:
                print(f"  {p}")
        return 0
    if cmd == "optimize":
        from ..dataset import open_dataset

        ds = open_dataset(_dataset_dir(args.path))
        before = ds.version
        options = {"curve": args.curve, "force": args.force, "progress": args.progress}
        if args.target_file_rows is not None:
            options["target_file_rows"] = args.target_file_rows
        after = ds.optimize(_columns(args.cluster_by), **options)
        if args.json:
            _print_json({"version_before": before, "version": after.version, "files": after.num_files})
        elif after.version == before:
            print(f"nothing to do: {args.path} stays at version {before}")
        else:
            print(f"optimized {args.path}: version {before} -> {after.version}, {after.num_files} files")
        return 0
    if cmd == "plot":
        from .plot import plot

        out = args.output or "rcfmt-plot.png"
        summary = plot(args.path, args.column, out)
        print(f"wrote {out}: {summary}")
        return 0
    if cmd == "convert":
        import pyarrow as pa

        from .convert import convert

        try:
            fmt = convert(args.source, args.target, block_rows=args.block_rows, compression=args.compression,
                          cluster_by=_columns(args.cluster_by), curve=args.curve,
                          partition_by=_columns(args.partition_by), progress=args.progress)
        except pa.ArrowException as exc:  # (reading the source or writing a foreign target)
            raise RcfmtError(f"convert: {exc}") from None
        if fmt == "rcfmt":
            from ..file.reader import RcfmtFile

            with RcfmtFile(args.target) as f:
                print(describe(f))
        elif fmt == "dataset":
            print(describe_dataset(args.target))
        else:
            print(f"wrote {args.target} ({fmt})")
        return 0
    raise AssertionError(cmd)  # pragma: no cover - argparse knows the commands


def _terminal_columns() -> int:
    """The terminal's width as :func:`shutil.get_terminal_size` finds it: ``COLUMNS``,
    else the width of standard output's terminal, else 80."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS", 0))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, given the terminal's width: left to find it, argparse imports
    :mod:`shutil`, which imports bz2 and lzma (3 ms at every run, for help that a run
    without ``--help`` never shows)."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None):
        super().__init__(prog, indent_increment, max_help_position,
                         _terminal_columns() - 2 if width is None else width)  # (argparse keeps 2 columns free)


class _Unbuilt:
    """Stands in for the parser of a command the command line does not name."""

    def add_argument(self, *args, **kwargs) -> None:
        pass


def _parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: with that command's options alone (what a
    run of that command parses: argparse spends about 0.1 ms an option, most of it
    looking for translations of its messages), not every command's."""
    parser = argparse.ArgumentParser(prog="rcfmt", description="Describe, read, check, convert and maintain "
                                     "rcfmt files and datasets (local paths and object-store URIs).",
                                     formatter_class=_HelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name, help_text, *, path="PATH", json_option=True):
        if only is not None and name != only:
            return _Unbuilt()
        p = sub.add_parser(name, help=help_text, description=help_text, formatter_class=_HelpFormatter)
        if path:
            p.add_argument("path", metavar=path)
        if json_option:
            p.add_argument("--json", action="store_true", help="print one JSON document (docs/CLI.md)")
        return p

    command("inspect", "a summary of a file (blocks, encodings, sizes, bounds) or a dataset")
    command("schema", "the columns of a file or dataset")
    command("meta", "the file and every block: rows, bytes, per chunk encoding, codec, sizes, stats", path="FILE")
    for name, text in (("pages", "every page: first row, rows, encoding, sizes, min/max, nulls (from the page index)"),
                       ("index", "where the page index lies, per column chunk")):
        p = command(name, text, path="FILE")
        p.add_argument("--column")
        p.add_argument("--block", type=_count)
    p = command("dictionary", "the dictionary of a column's chunks", path="FILE")
    p.add_argument("--column", required=True)
    p.add_argument("--block", type=_count)
    p = command("bloom", "might each block hold a value? (its bloom filter)", path="FILE")
    p.add_argument("--column", required=True)
    p.add_argument("--value", required=True)
    p = command("head", "the first rows of a file or dataset, or the rows at given positions")
    p.add_argument("-n", type=_count, default=10)
    p.add_argument("--columns", help="comma-separated column names")
    p.add_argument("--filter", help="a SQL predicate, e.g. \"x > 5 AND dt >= DATE '2024-01-01'\"")
    p.add_argument("--rows", help="the rows at these 0-based positions, in this order: 5,17,90211 or 10-19")
    p.add_argument("--row-position", action="store_true", help="add each row's position as _row_position")
    p = command("cat", "every (selected) row, as CSV or JSON lines", json_option=False)
    p.add_argument("--columns")
    p.add_argument("--filter")
    p.add_argument("--row-position", action="store_true", help="add each row's position as _row_position")
    p.add_argument("--format", choices=("csv", "json"), default="csv")
    command("check", "verify every checksum and structural rule; exit 1 on corruption")
    command("history", "the versions of a dataset", path="DIR")
    p = command("vacuum", "delete what no version of a dataset needs any more", path="DIR")
    p.add_argument("--retention-hours", type=_hours, default=1.0)
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--no-enforce-retention-duration", dest="enforce_retention_duration", action="store_false",
                   help="take a retention under an hour (no write may be running)")
    p = command("optimize", "rewrite a dataset clustered (or compacted) and commit", path="DIR")
    p.add_argument("--cluster-by", help="comma-separated columns (default: the recorded clustering)")
    p.add_argument("--curve", choices=("zorder", "hilbert", "sort"), default="zorder")
    p.add_argument("--target-file-rows", type=int)
    p.add_argument("--force", action="store_true")
    p = command("plot", "draw the min/max boxes of blocks and pages (or a dataset's files) into an image",
                json_option=False)
    p.add_argument("--column", action="append", required=True, help="one column (pages over rows) or two (a plane)")
    p.add_argument("-o", "--output", help="the image (default rcfmt-plot.png)")
    p = command("convert", "convert between Parquet, Arrow IPC/Feather, CSV and rcfmt (files or datasets)",
                path=None, json_option=False)
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--block-rows", type=int)
    p.add_argument("--compression")
    p.add_argument("--cluster-by")
    p.add_argument("--curve", choices=("zorder", "hilbert", "sort"), default="zorder")
    p.add_argument("--partition-by")
    for name in ("convert", "optimize", "vacuum"):
        if name not in sub.choices:  # (not built: see ``only``)
            continue
        sub.choices[name].add_argument("--no-progress", dest="progress", action="store_const", const=False,
                                       default=None, help="no progress bar (default: one on a terminal)")
    return parser


#: the commands :func:`_parser` knows
COMMANDS = ("inspect", "schema", "meta", "pages", "index", "dictionary", "bloom", "head", "cat", "check", "history",
            "vacuum", "optimize", "plot", "convert")


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser(argv[0] if argv and argv[0] in COMMANDS else None).parse_args(argv)
    try:
        return _run(args)
    except BrokenPipeError:  # e.g. `rcfmt cat ... | head`: the reader has what it wanted
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # (no second error at exit)
        return 0
    except (RcfmtError, OSError) as exc:
        print(f"rcfmt: error: {exc}", file=sys.stderr)
        return 1


def run() -> None:
    """The ``rcfmt`` command's entry point: :func:`main`, then the process ends at once.

    Finalizing the interpreter (tearing down pyarrow's and numpy's modules) costs a
    one-shot process 20-40 ms after its work is done (issue 64). By the time
    :func:`main` returns, every file a command wrote is closed and committed, so the
    process leaves with ``os._exit`` once stdout and stderr are flushed. ``atexit``
    handlers and finalizers do not run. An exception escaping :func:`main` (a bug) ends
    the process as Python does, traceback and all."""
    try:
        code = main()
    except SystemExit as stop:  # argparse: usage errors (2), --help (0)
        code = stop.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
    _leave(0 if code is None else code)


def _leave(code: int) -> None:
    """Flush the standard streams and end the process with ``code``, skipping the
    interpreter's finalization."""
    import os

    try:
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (as :func:`main` treats it)
        pass
    except OSError as exc:  # e.g. a full disk: the output is incomplete
        _report(f"rcfmt: error: {exc}")
        code = code or 1
    _report(None)
    if "logging" in sys.modules:
        sys.modules["logging"].shutdown()
    os._exit(code)


def _report(message: str | None) -> None:
    """``message`` (if any) on stderr, then stderr flushed; a closed stderr is ignored."""
    try:
        if message is not None:
            print(message, file=sys.stderr)
        sys.stderr.flush()
    except OSError:
        pass
