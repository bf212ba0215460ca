"""Row-level changes: deletes, updates and upserts, rcfmt against Lance and delta-rs.

TPC-H lineitem (natural order, SF ``--scale``, optionally its first ``--rows`` rows) with
one column added for every engine: ``k = l_orderkey * 8 + l_linenumber`` (int64, unique,
the merge key). Each engine writes it with its default options as a dataset of about
``--files`` (12) files:

* rcfmt: ``rcfmt.write_dataset(t, path, target_file_rows=ceil(rows / 12))``;
* Lance: ``lance.write_dataset(t, path, max_rows_per_file=ceil(rows / 12))``;
* delta-rs: 12 slices of ceil(rows / 12) rows, ``write_deltalake(path, slice)`` then
  ``mode="append"`` (12 commits, one file each). delta-rs has no rows-per-file option and
  its ``target_file_size`` does not give a predictable count (at SF0.1 a target of 1/12 of
  the one-file size gave 25 files), so the slices make the 12 files.

Then, in a process per engine per round (rounds interleaved), each operation runs on a
FRESH copy of the initial dataset (``shutil.copytree`` then ``os.sync()``, neither timed;
the dataset is opened untimed too, only the operation's call is timed; one untimed
warm-up run, then best of ``--repeat``):

* ``delete_1k``: the 1,000 rows of 1,000 random ``k`` values (seed 42, the same for every
  engine): rcfmt ``col("k").isin(keys)``, Lance / delta ``k IN (...)``;
* ``delete_1pct``: ``l_orderkey >= lo AND l_orderkey < hi``, the orders of the 1 % of rows
  starting at row n/2 (one contiguous range);
* ``update_10k``: ``SET l_discount = 0.00`` where ``l_orderkey`` is in the range of the
  10,000 rows starting at row n/4 (rcfmt ``update``, Lance ``update``, delta ``update``);
* ``upsert_10k``: merge on ``k`` of 10,000 rows: 5,000 existing rows (random, with
  ``l_discount = 0.00`` and a new comment) and 5,000 new ones (random rows moved to order
  keys above the maximum); update all when matched, insert all when not matched
  (rcfmt ``merge``, Lance ``merge_insert``, delta ``merge``).

(With ``--rows`` or a small scale, 10,000 becomes at most rows/10 and 1,000 at most
rows/100.) After each operation (untimed) the worker reads ``k`` and ``l_discount`` back
and the parent checks row count, ``sum(k)`` and ``sum(l_discount)`` against a reference
computed in memory with pyarrow: every engine must agree with it.

Reads before and after deletes (same process, the states interleaved, warm-up then best
of ``--scan-repeat``): the initial dataset, the dataset after ``delete_1pct`` and the
dataset after ``delete_1k`` (deletion vectors in every file for rcfmt and Lance):

* ``scan``: every column into Arrow (rcfmt ``Dataset.read()``, Lance ``to_table()``,
  delta ``DeltaTable.scan().read_all()``, its DataFusion reader);
* ``q6``: TPC-H Q6, the filter and projection in the engine (rcfmt ``read(columns,
  filter)``, Lance ``to_table(columns, filter=sql)``, delta ``scan(columns,
  predicate=sql)``) and ``sum(l_extendedprice * l_discount)`` in pyarrow (exact decimal);
* ``count``: open and count the rows (rcfmt ``rcfmt.dataset(p).count_rows()``, from the
  index; Lance ``lance.dataset(p).count_rows()``; delta ``DeltaTable(p).count()``, from
  the file statistics of the log). The unit tests check that rcfmt's reads no data file.

Reported: medians over rounds, ratios peer / rcfmt (above 1: rcfmt faster), the data each
operation wrote (bytes of the files it added or changed, data, deletion vectors and
metadata), the data files of the version it made (the files it replaced not counted;
Lance: fragments), and for the reads the ratio after / before
(rcfmt's target: the scan after a 1 % delete within 1.1x of the scan before). Engines use
their default threading (all cores).

    python bench/bench_changes.py [--scale 1] [--rows N] [--rounds 3] [--repeat 1] [--scan-repeat 3]
                                  [--files 12] [--engines rcfmt,lance,delta] [--ops ...]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from decimal import Decimal
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DATA_DIR, busy_warning, machine_line, md_table, write_json  # noqa: E402

ENGINES = ("rcfmt", "lance", "delta")
OPS = ("delete_1k", "delete_1pct", "update_10k", "upsert_10k")
STATES = ("before", "after_delete_1pct", "after_delete_1k")
READS = ("scan", "q6", "count")
STATE_OF_OP = {"delete_1pct": "after_delete_1pct", "delete_1k": "after_delete_1k"}
Q6 = {"date_lo": "1994-01-01", "date_hi": "1995-01-01", "disc_lo": "0.05", "disc_hi": "0.07", "qty_lt": "24"}
Q6_SQL = (f"l_shipdate >= CAST('{Q6['date_lo']}' AS DATE) AND l_shipdate < CAST('{Q6['date_hi']}' AS DATE) "
          f"AND l_discount >= CAST('{Q6['disc_lo']}' AS DECIMAL(15,2)) "
          f"AND l_discount <= CAST('{Q6['disc_hi']}' AS DECIMAL(15,2)) "
          f"AND l_quantity < CAST('{Q6['qty_lt']}' AS DECIMAL(15,2))")
ZERO_SQL = "CAST(0 AS DECIMAL(15,2))"


# --------------------------------------------------------------------------- data
def _tag(args) -> str:
    return f"sf{args.scale:g}" + (f"_r{args.rows}" if args.rows else "") + f"_f{args.files}"


def _base(args) -> Path:
    return DATA_DIR / "changes" / _tag(args)


def _with_key(table):
    import pyarrow as pa
    import pyarrow.compute as pc

    k = pc.add(pc.multiply(table["l_orderkey"], 8), pc.cast(table["l_linenumber"], pa.int64()))
    return table.append_column(pa.field("k", pa.int64()), k)


def _orderkey_range(okeys: np.ndarray, start: int, rows: int) -> tuple[int, int, int]:
    """``[lo, hi)`` of l_orderkey from row ``start`` covering about ``rows`` rows (whole
    orders; the data is sorted by l_orderkey) and the rows it covers."""
    lo = int(okeys[start])
    hi = int(okeys[min(start + rows, len(okeys) - 1)])
    if hi <= lo:
        hi = lo + 1
    return lo, hi, int(np.count_nonzero((okeys >= lo) & (okeys < hi)))


def _checks(table) -> list:
    """Row count, sum(k), sum(l_discount) (exact decimal, as a string)."""
    import pyarrow.compute as pc

    return [table.num_rows, int(pc.sum(table["k"]).as_py() or 0), str(pc.sum(table["l_discount"]).as_py())]


def _q6_value(t) -> str:
    import pyarrow.compute as pc

    return str(pc.sum(pc.multiply(t["l_extendedprice"], t["l_discount"])).as_py())


def _q6_reference(table) -> str:
    import datetime as dt

    import pyarrow as pa
    import pyarrow.compute as pc

    dec = pa.decimal128(15, 2)
    d = lambda s: pa.scalar(dt.date.fromisoformat(s), pa.date32())  # noqa: E731
    m = pc.and_(pc.greater_equal(table["l_shipdate"], d(Q6["date_lo"])), pc.less(table["l_shipdate"], d(Q6["date_hi"])))
    m = pc.and_(m, pc.greater_equal(table["l_discount"], pa.scalar(Decimal(Q6["disc_lo"]), dec)))
    m = pc.and_(m, pc.less_equal(table["l_discount"], pa.scalar(Decimal(Q6["disc_hi"]), dec)))
    m = pc.and_(m, pc.less(table["l_quantity"], pa.scalar(Decimal(Q6["qty_lt"]), dec)))
    return _q6_value(table.filter(m))


def prepare(args, engines) -> tuple[Path, dict]:
    """Write the initial dataset of each engine (once), the operations' parameters
    (spec.json, upsert.parquet) and the reference results; returns (base dir, spec)."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from datasets import tpch_lineitem

    base = _base(args)
    base.mkdir(parents=True, exist_ok=True)
    spec_path = base / "spec.json"
    need = [e for e in engines if not (base / e).exists()]
    if spec_path.exists() and not need:
        return base, json.loads(spec_path.read_text())
    table = tpch_lineitem(args.scale)
    if args.rows:
        table = table.slice(0, args.rows).combine_chunks()
    table = _with_key(table)
    n = table.num_rows
    file_rows = math.ceil(n / args.files)
    okeys = table["l_orderkey"].to_numpy()
    keys = table["k"].to_numpy()
    rng = np.random.default_rng(42)
    n_del = min(1_000, n // 100)
    del_keys = np.sort(rng.choice(keys, size=n_del, replace=False)).astype(np.int64)
    r1 = _orderkey_range(okeys, n // 2, n // 100)
    n_upd = min(10_000, n // 10)
    r2 = _orderkey_range(okeys, n // 4, n_upd)
    picks = rng.choice(n, size=n_upd, replace=False)
    half = n_upd // 2
    matched = table.take(pa.array(np.sort(picks[:half])))
    dec = pa.decimal128(15, 2)
    matched = matched.set_column(matched.schema.get_field_index("l_discount"), "l_discount",
                                 pa.array([Decimal("0.00")] * matched.num_rows, dec))
    matched = matched.set_column(matched.schema.get_field_index("l_comment"), "l_comment",
                                 pa.array(["upserted"] * matched.num_rows))
    new = table.take(pa.array(np.sort(picks[half:])))
    shift = int(okeys.max())
    new_ok = pc.add(new["l_orderkey"], shift)
    new = new.set_column(0, "l_orderkey", new_ok)
    new = new.set_column(new.schema.get_field_index("k"), "k",
                         pc.add(pc.multiply(new_ok, 8), pc.cast(new["l_linenumber"], pa.int64())))
    source = pa.concat_tables([matched, new]).combine_chunks()
    pq.write_table(source, base / "upsert.parquet")

    # reference results, computed in memory
    reference = {}
    mask_del = pc.is_in(table["k"], pa.array(del_keys))
    after_1k = table.filter(pc.invert(mask_del))
    mask_r1 = pc.and_(pc.greater_equal(table["l_orderkey"], r1[0]), pc.less(table["l_orderkey"], r1[1]))
    after_1pct = table.filter(pc.invert(mask_r1))
    mask_r2 = pc.and_(pc.greater_equal(table["l_orderkey"], r2[0]), pc.less(table["l_orderkey"], r2[1]))
    disc = pc.if_else(mask_r2, pa.scalar(Decimal("0.00"), dec), table["l_discount"])
    updated = table.set_column(table.schema.get_field_index("l_discount"), "l_discount", disc)
    upserted = pa.concat_tables([table.filter(pc.invert(pc.is_in(table["k"], source["k"]))), source])
    reference["ops"] = {"delete_1k": _checks(after_1k), "delete_1pct": _checks(after_1pct),
                        "update_10k": _checks(updated), "upsert_10k": _checks(upserted)}
    reference["reads"] = {
        state: {"scan": t.num_rows, "q6": _q6_reference(t), "count": t.num_rows}
        for state, t in (("before", table), ("after_delete_1pct", after_1pct), ("after_delete_1k", after_1k))}
    spec = {"rows": n, "file_rows": file_rows, "files": args.files, "del_keys": del_keys.tolist(),
            "range_1pct": list(r1[:2]), "range_1pct_rows": r1[2], "range_update": list(r2[:2]),
            "range_update_rows": r2[2], "upsert_rows": source.num_rows, "upsert_matched": half,
            "reference": reference}
    spec_path.write_text(json.dumps(spec))
    del after_1k, after_1pct, updated, upserted

    for engine in need:
        path = base / engine
        tmp = path.with_name(path.name + ".tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        start = time.perf_counter()
        if engine == "rcfmt":
            import rcfmt

            rcfmt.write_dataset(table, str(tmp), target_file_rows=file_rows, progress=False)
        elif engine == "lance":
            import lance

            lance.write_dataset(table, str(tmp), max_rows_per_file=file_rows)
        elif engine == "delta":
            from deltalake import write_deltalake

            for i in range(0, n, file_rows):
                write_deltalake(str(tmp), table.slice(i, file_rows), mode="error" if i == 0 else "append")
        print(f"  wrote {engine} in {time.perf_counter() - start:.1f} s: {len(_data_files(engine, tmp))} data files, "
              f"{_size(tmp) / 1e6:.1f} MB", file=sys.stderr)
        tmp.rename(path)
    return base, spec


def _data_files(engine: str, path: Path) -> list[Path]:
    if engine == "rcfmt":
        return [p for p in path.rglob("*.rcfmt") if not any(part.startswith("_") for part in p.relative_to(path).parts)]
    if engine == "lance":
        return list((path / "data").glob("*.lance"))
    return [p for p in path.rglob("*.parquet") if "_delta_log" not in p.parts]


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _listing(path: Path) -> dict[str, int]:
    return {str(p.relative_to(path)): p.stat().st_size for p in path.rglob("*") if p.is_file()}


# --------------------------------------------------------------------------- engines
class Engine:
    """Open a dataset, apply an operation, read it back: one engine's calls."""

    def __init__(self, name: str, spec: dict, source):
        self.name, self.spec, self.source = name, spec, source

    # -- open (untimed before an operation; timed in ``count``)
    def open(self, path: str):
        if self.name == "rcfmt":
            import rcfmt

            return rcfmt.dataset(path)
        if self.name == "lance":
            import lance

            return lance.dataset(path)
        from deltalake import DeltaTable

        return DeltaTable(path)

    # -- the operations
    def op(self, op: str, ds) -> None:
        s = self.spec
        if self.name == "rcfmt":
            import pyarrow as pa
            import rcfmt

            col = rcfmt.col
            if op == "delete_1k":
                ds.delete(col("k").isin(s["del_keys"]))
            elif op == "delete_1pct":
                lo, hi = s["range_1pct"]
                ds.delete((col("l_orderkey") >= lo) & (col("l_orderkey") < hi))
            elif op == "update_10k":
                lo, hi = s["range_update"]
                ds.update((col("l_orderkey") >= lo) & (col("l_orderkey") < hi),
                          set={"l_discount": pa.scalar(Decimal("0.00"), pa.decimal128(15, 2))})
            elif op == "upsert_10k":
                ds.merge(self.source, on="k", when_matched="update", when_not_matched="insert")
            return
        keys_sql = "k IN (" + ", ".join(map(str, s["del_keys"])) + ")"
        r1 = "l_orderkey >= {} AND l_orderkey < {}".format(*s["range_1pct"])
        r2 = "l_orderkey >= {} AND l_orderkey < {}".format(*s["range_update"])
        if self.name == "lance":
            if op == "delete_1k":
                ds.delete(keys_sql)
            elif op == "delete_1pct":
                ds.delete(r1)
            elif op == "update_10k":
                ds.update({"l_discount": ZERO_SQL}, where=r2)
            elif op == "upsert_10k":
                ds.merge_insert("k").when_matched_update_all().when_not_matched_insert_all().execute(self.source)
            return
        if op == "delete_1k":
            ds.delete(keys_sql)
        elif op == "delete_1pct":
            ds.delete(r1)
        elif op == "update_10k":
            ds.update(updates={"l_discount": ZERO_SQL}, predicate=r2)
        elif op == "upsert_10k":
            (ds.merge(self.source, predicate="t.k = s.k", source_alias="s", target_alias="t")
             .when_matched_update_all().when_not_matched_insert_all().execute())

    # -- reads
    def read(self, ds, columns=None, sql=None, expr=None):
        import pyarrow as pa

        if self.name == "rcfmt":
            return ds.read(columns, filter=expr)
        if self.name == "lance":
            return ds.to_table(columns=columns, filter=sql)
        return pa.table(ds.scan(columns=columns, predicate=sql).read_all())

    def q6(self, ds) -> str:
        expr = None
        if self.name == "rcfmt":
            import datetime as dt

            import rcfmt

            col = rcfmt.col
            expr = ((col("l_shipdate") >= dt.date.fromisoformat(Q6["date_lo"]))
                    & (col("l_shipdate") < dt.date.fromisoformat(Q6["date_hi"]))
                    & col("l_discount").between(Decimal(Q6["disc_lo"]), Decimal(Q6["disc_hi"]))
                    & (col("l_quantity") < Decimal(Q6["qty_lt"])))
        return _q6_value(self.read(ds, ["l_extendedprice", "l_discount"], sql=Q6_SQL, expr=expr))

    def live_files(self, ds) -> int:
        """Data files of the current version (files an operation replaced not counted)."""
        if self.name == "rcfmt":
            return ds.num_files
        if self.name == "lance":
            return len(ds.get_fragments())
        return len(ds.file_uris())

    def count(self, path: str) -> int:
        ds = self.open(path)
        return ds.count() if self.name == "delta" else ds.count_rows()


def _fresh_copy(src: Path, dst: Path) -> None:
    shutil.rmtree(dst, ignore_errors=True)
    shutil.copytree(src, dst)
    os.sync()  # so the operation's own syncs do not flush the copy


def worker(engine: str, base: str, ops: list[str], reads: list[str], repeat: int, scan_repeat: int) -> dict:
    import pyarrow.parquet as pq

    base = Path(base)
    spec = json.loads((base / "spec.json").read_text())
    eng = Engine(engine, spec, pq.read_table(base / "upsert.parquet"))
    init = base / engine
    work = base / "_work" / engine
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    out: dict = {"ops": {}, "reads": {}}
    kept: dict[str, Path] = {}
    for op in ops:
        times, res = [], {}
        try:
            for i in range(1 + repeat):  # run 0: warm-up
                path = work / f"{op}-{i}"
                _fresh_copy(init, path)
                before = _listing(path)
                ds = eng.open(str(path))
                start = time.perf_counter()
                eng.op(op, ds)
                elapsed = time.perf_counter() - start
                del ds
                if i:
                    times.append(elapsed)
                after = _listing(path)
                res["written"] = sum(size for name, size in after.items() if before.get(name) != size)
                reopened = eng.open(str(path))
                res["files_after"] = eng.live_files(reopened)
                res["check"] = _checks(eng.read(reopened, ["k", "l_discount"]))
                del reopened
                if op in STATE_OF_OP and i == repeat:
                    kept[STATE_OF_OP[op]] = path
                else:
                    shutil.rmtree(path)
            res["best"], res["times"] = min(times), times
        except Exception:
            res["error"] = traceback.format_exc()
        out["ops"][op] = res

    if reads:
        states = {"before": work / "before"}
        _fresh_copy(init, states["before"])
        states.update(kept)
        opened = {s: eng.open(str(p)) for s, p in states.items()}
        runs = {s: {r: [] for r in reads} for s in states}
        checks = {s: {} for s in states}
        errors = {}
        for i in range(1 + scan_repeat):  # run 0: warm-up; the states interleaved
            for s, path in states.items():
                for r in reads:
                    if (s, r) in errors:
                        continue
                    fn = {"scan": lambda: eng.read(opened[s]).num_rows, "q6": lambda: eng.q6(opened[s]),
                          "count": lambda: eng.count(str(path))}[r]
                    try:
                        start = time.perf_counter()
                        value = fn()
                        elapsed = time.perf_counter() - start
                    except Exception:
                        errors[(s, r)] = traceback.format_exc()
                        continue
                    checks[s][r] = value
                    if i:
                        runs[s][r].append(elapsed)
        for s in states:
            out["reads"][s] = {r: ({"error": errors[(s, r)]} if (s, r) in errors else
                                   {"best": min(runs[s][r]), "times": runs[s][r], "check": checks[s][r]})
                               for r in reads}
        del opened
    shutil.rmtree(work, ignore_errors=True)
    return out


# --------------------------------------------------------------------------- report
def _ms(v) -> str:
    return "error" if v is None else f"{v * 1e3:.1f}"


def _ratio(a, b) -> str:
    return f"{a / b:.2f}x" if a is not None and b else ""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1)
    ap.add_argument("--rows", type=int, default=0, help="only the first ROWS rows (smoke runs)")
    ap.add_argument("--files", type=int, default=12, help="files of the initial dataset")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=1, help="timed runs of each operation per round (after a warm-up)")
    ap.add_argument("--scan-repeat", type=int, default=3, help="timed runs of each read per round (after a warm-up)")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--reads", default=",".join(READS), help="reads before/after the deletes ('' for none)")
    ap.add_argument("--worker", nargs=4, metavar=("ENGINE", "BASE", "OPS", "READS"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        engine, base, ops, reads = args.worker
        out = worker(engine, base, [o for o in ops.split(",") if o], [r for r in reads.split(",") if r],
                     args.repeat, args.scan_repeat)
        print(json.dumps(out))
        return 0
    engines = [e for e in args.engines.split(",") if e]
    ops = [o for o in args.ops.split(",") if o]
    reads = [r for r in args.reads.split(",") if r]
    warning = busy_warning()
    if warning:
        print(warning, file=sys.stderr)
    base, spec = prepare(args, engines)
    ref = spec["reference"]
    print(f"  {spec['rows']:,} rows, {spec['files']} files of {spec['file_rows']:,} rows; delete_1k: "
          f"{len(spec['del_keys']):,} keys; delete_1pct: l_orderkey in [{spec['range_1pct'][0]}, "
          f"{spec['range_1pct'][1]}), {spec['range_1pct_rows']:,} rows; update_10k: l_orderkey in "
          f"[{spec['range_update'][0]}, {spec['range_update'][1]}), {spec['range_update_rows']:,} rows; "
          f"upsert_10k: {spec['upsert_rows']:,} rows, {spec['upsert_matched']:,} matching", file=sys.stderr)

    op_runs = {e: {o: [] for o in ops} for e in engines}
    read_runs = {e: {s: {r: [] for r in reads} for s in STATES} for e in engines}
    written: dict = {e: {} for e in engines}
    errors: list[str] = []
    failures: list[str] = []
    for rnd in range(args.rounds):
        for engine in engines:
            out = subprocess.run([sys.executable, __file__, "--repeat", str(args.repeat), "--scan-repeat",
                                  str(args.scan_repeat), "--worker", engine, str(base), ",".join(ops), ",".join(reads)],
                                 capture_output=True, text=True,
                                 env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)})
            if out.returncode:
                print(out.stderr, file=sys.stderr)
                raise SystemExit(f"{engine} failed")
            got = json.loads(out.stdout.strip().splitlines()[-1])
            for o in ops:
                res = got["ops"][o]
                if "error" in res:
                    errors.append(f"round {rnd + 1}, {engine} {o}:\n{res['error']}")
                    continue
                op_runs[engine][o].append(res["best"])
                written[engine][o] = (res["written"], res["files_after"])
                if res["check"] != ref["ops"][o]:
                    failures.append(f"{o}: {engine} {res['check']} != reference {ref['ops'][o]}")
            for s, rs in got["reads"].items():
                for r, res in rs.items():
                    if "error" in res:
                        errors.append(f"round {rnd + 1}, {engine} {r} {s}:\n{res['error']}")
                        continue
                    read_runs[engine][s][r].append(res["best"])
                    if res["check"] != ref["reads"][s][r]:
                        failures.append(f"{r} {s}: {engine} {res['check']!r} != reference {ref['reads'][s][r]!r}")
        print(f"  round {rnd + 1}/{args.rounds} done", file=sys.stderr)

    med = lambda v: statistics.median(v) if v else None  # noqa: E731
    op_med = {e: {o: med(v) for o, v in os_.items()} for e, os_ in op_runs.items()}
    read_med = {e: {s: {r: med(v) for r, v in rs.items()} for s, rs in ss.items()} for e, ss in read_runs.items()}
    peers = [e for e in engines if e != "rcfmt"]
    has_rcfmt = "rcfmt" in engines

    print(machine_line())
    subset = f" (first {args.rows:,} rows)" if args.rows else ""
    print(f"\nlineitem SF{args.scale:g}{subset} + k: {spec['rows']:,} rows, "
          f"initial datasets of {spec['files']} files; medians of {args.rounds} rounds (each the best of "
          f"{args.repeat} runs on fresh copies), ms\n")
    headers = ["operation", "rows after", *[f"{e} (ms)" for e in engines],
               *([f"{e} / rcfmt" for e in peers] if has_rcfmt else []),
               *[f"{e} written (MB)" for e in engines], *[f"{e} files after" for e in engines]]
    rows = []
    for o in ops:
        base_t = op_med.get("rcfmt", {}).get(o)
        rows.append([o, f"{ref['ops'][o][0]:,}", *[_ms(op_med[e][o]) for e in engines],
                     *([_ratio(op_med[e][o], base_t) for e in peers] if has_rcfmt else []),
                     *[f"{written[e][o][0] / 1e6:.2f}" if o in written[e] else "" for e in engines],
                     *[str(written[e][o][1]) if o in written[e] else "" for e in engines]])
    print(md_table(headers, rows))

    if reads:
        print(f"\nReads before and after the deletes (best of {args.scan_repeat} per round, medians), ms\n")
        headers = ["read", "state", *[f"{e} (ms)" for e in engines], *[f"{e} after / before" for e in engines],
                   *([f"{e} / rcfmt" for e in peers] if has_rcfmt else [])]
        rows = []
        for r in reads:
            for s in STATES:
                vals = {e: read_med[e][s][r] for e in engines}
                if all(v is None for v in vals.values()):
                    continue
                base_t = vals.get("rcfmt")
                rows.append([r, s, *[_ms(vals[e]) for e in engines],
                             *["" if s == "before" else _ratio(vals[e], read_med[e]["before"][r]) for e in engines],
                             *([_ratio(vals[e], base_t) for e in peers] if has_rcfmt else [])])
        print(md_table(headers, rows))
        if has_rcfmt and "scan" in reads:
            b = read_med["rcfmt"]["before"]["scan"]
            a = read_med["rcfmt"]["after_delete_1pct"]["scan"]
            if a and b:
                print(f"\nrcfmt full scan after the 1 % delete / before: {a / b:.2f}x (target: within 1.1x)"
                      f"{'' if a / b <= 1.1 else '  <-- ABOVE TARGET'}")
        print("\nQ6 (reference): " + ", ".join(f"{s} {ref['reads'][s]['q6']}" for s in STATES))
    if errors:
        print("\nERRORS:\n" + "\n".join(errors))
    if failures:
        print("RESULT MISMATCH:\n  " + "\n  ".join(failures))
    write_json("changes", {"spec": {k: v for k, v in spec.items() if k != "del_keys"}, "op_medians": op_med,
                           "op_runs": op_runs, "read_medians": read_med, "read_runs": read_runs,
                           "written": written, "errors": errors, "failures": failures}, args)
    return 1 if failures or errors else 0


if __name__ == "__main__":
    sys.exit(main())
