"""A long differential run of rcfmt's filters against DuckDB: N random predicates over
random NULL-heavy tables, each answered by rcfmt (a file written with random options and
read through a rotating read path: read_table, scans with and without indexes,
batches, block ranges, count, a dataset) and by DuckDB (``SELECT id FROM t WHERE <sql>``
over the same Arrow table). Tables, trees and the SQL spelling come from
``tests/sql_differential.py``, which the test suite's bounded version
(tests/scan/test_duckdb_differential.py) shares.

    python fuzz/differential_duckdb.py                       # 100,000 predicates, seed 0
    python fuzz/differential_duckdb.py -n 20000 --seed 7 --out /tmp/diffs

A disagreement is shrunk (fewer rows, smaller tree) and written to ``--out`` as a
reproduction (the table as Arrow IPC, the filter, the SQL, both answers, the writer
options); the run goes on. Seeded: a seed and a count repeat the same predicates. The
last line says ``checked N predicates, K disagreements``; the exit status is 1 if K > 0.
DuckDB failing on a query (a translation gap, not an rcfmt answer) is counted apart.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.feather as feather  # noqa: E402

import sql_differential as sd  # noqa: E402

PATHS = (*sd.FILE_PATHS, "dataset")


def _answer(path, expr, how):
    try:
        return sd.read_ids(path, expr, how)
    except Exception as exc:  # an error is a disagreement too
        return f"error: {type(exc).__name__}: {exc}"


def _expected(ids: list[int], how: str):
    return len(ids) if how == "count" else ids


class Shrinker:
    """Fewer rows, no early block ends, a smaller tree, while rcfmt and DuckDB still disagree."""

    def __init__(self, workdir: Path):
        self.workdir = workdir
        self.duck = sd.DuckOracle()
        self.k = 0

    def disagrees(self, tab: sd.Table, tree, options, cuts, how):
        self.k += 1
        target = self.workdir / f"shrink{self.k}"
        if target.exists():
            shutil.rmtree(target) if target.is_dir() else target.unlink()
        rng = sd.RandomChooser(self.k)
        try:
            if how == "dataset":
                sd.write_as_dataset(tab, target, options, rng)
            else:
                sd.write_file(tab, target, options, [c for c in cuts if c <= tab.table.num_rows])
        except Exception as exc:
            return f"write error: {exc}", None
        self.duck.load(tab.table)
        try:
            want = self.duck.ids(sd.to_sql(tree, tab.types))
        except Exception:
            return None
        got = _answer(target, sd.to_rcfmt(tree), how)
        return (got, _expected(want, how)) if got != _expected(want, how) else None

    def run(self, tab: sd.Table, tree, options, cuts, how, budget: int = 400):
        answers = self.disagrees(tab, tree, options, cuts, how)
        if answers is None:
            return tab, tree, cuts, options, None  # not reproducible alone
        tries = 0
        progress = True
        while progress and tries < budget:
            progress = False
            n = tab.table.num_rows
            chunk = max(1, n // 2)
            while chunk >= 1 and tries < budget:  # drop row ranges
                start = 0
                while start < tab.table.num_rows and tries < budget:
                    keep = [i for i in range(tab.table.num_rows) if not start <= i < start + chunk]
                    smaller = _take(tab, keep)
                    tries += 1
                    found = self.disagrees(smaller, tree, options, _shift(cuts, start, chunk), how)
                    if found is not None:
                        tab, answers, cuts, progress = smaller, found, _shift(cuts, start, chunk), True
                    else:
                        start += chunk
                chunk //= 2
            if cuts and tries < budget:  # no early block ends
                tries += 1
                found = self.disagrees(tab, tree, options, [], how)
                if found is not None:
                    cuts, answers, progress = [], found, True
            for smaller in sd.shrink_tree(tree):  # smaller trees
                if tries >= budget:
                    break
                tries += 1
                found = self.disagrees(tab, smaller, options, cuts, how)
                if found is not None:
                    tree, answers, progress = smaller, found, True
                    break
        used = ["id", *[c for c in tab.data_columns if c in _columns(tree)]]
        if len(used) < tab.table.num_columns:  # only the columns the tree names
            narrow = sd.Table(tab.table.select(used), tab.values, {c: tab.types[c] for c in used[1:]})
            narrow_options = _options_for(options, used)
            found = self.disagrees(narrow, tree, narrow_options, cuts, how)
            if found is not None:
                tab, options, answers = narrow, narrow_options, found
        return tab, tree, cuts, options, answers


def _columns(tree) -> set[str]:
    if isinstance(tree, sd.Leaf):
        return {tree.column}
    if isinstance(tree, sd.Not):
        return _columns(tree.child)
    return set().union(*(_columns(c) for c in tree.children))


def _options_for(options: dict, names: list[str]) -> dict:
    """``options`` without the columns not in ``names``."""
    out = dict(options)
    for key in ("bitmap_indexes", "encoding"):
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k in names}
    if isinstance(out.get("bloom_filter_columns"), list):
        out["bloom_filter_columns"] = [k for k in out["bloom_filter_columns"] if k in names]
    return out


def _shift(cuts, start, chunk):
    return sorted(c if c <= start else max(start, c - chunk) for c in cuts)


def _take(tab: sd.Table, keep: list[int]) -> sd.Table:
    idx = pa.array(keep, pa.int64())
    table = tab.table.take(idx)
    table = table.set_column(0, "id", pa.array(range(len(keep)), pa.int64()))
    return sd.Table(table, tab.values, tab.types)  # (values: the literal pools, unchanged)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", "--predicates", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-table", type=int, default=60, help="predicates per random table")
    ap.add_argument("--max-rows", type=int, default=200)
    ap.add_argument("--max-columns", type=int, default=4)
    ap.add_argument("--dataset-every", type=int, default=8, help="also write every k-th table as a dataset")
    ap.add_argument("--progress-every", type=int, default=5000)
    ap.add_argument("--out", default=None, help="directory for reproductions (default: a temporary one)")
    ap.add_argument("--no-shrink", action="store_true")
    args = ap.parse_args(argv)

    caps = sd.duckdb_capabilities()
    kinds = sd.kinds_for(caps)
    import duckdb

    print(f"duckdb {duckdb.__version__}, TIMESTAMPTZ_NS: {caps['tz_ns']}; {len(kinds)} column types; "
          f"seed {args.seed}, {args.predicates} predicates", flush=True)
    out = Path(args.out) if args.out else None  # (made at the first disagreement)
    work = Path(tempfile.mkdtemp(prefix="rcfmt-diff-work-"))
    duck = sd.DuckOracle()
    shrinker = Shrinker(work)
    checked = disagreements = duck_errors = 0
    partial = 0  # predicates selecting some but not all rows (a sanity figure)
    per_path = {p: 0 for p in PATHS}
    started = time.time()
    next_report = args.progress_every
    table_no = 0
    try:
        while checked < args.predicates:
            r = sd.RandomChooser(args.seed * 1_000_003 + table_no)
            table_no += 1
            tab = sd.gen_table(r, max_rows=args.max_rows, max_columns=args.max_columns, kinds=kinds)
            options = sd.gen_write_options(r, tab)
            cuts = sd.gen_cuts(r, tab.table.num_rows)
            path = work / f"t{table_no % 2}.rcfmt"
            sd.write_file(tab, path, options, cuts)
            paths = list(sd.FILE_PATHS)
            ds_path = None
            if args.dataset_every and table_no % args.dataset_every == 0:
                ds_path = work / f"ds{table_no}"
                sd.write_as_dataset(tab, ds_path, options, r)
                paths.append("dataset")
            duck.load(tab.table)
            count = min(args.per_table, args.predicates - checked)
            trees = [sd.gen_tree(r, tab) for _ in range(count)]
            sqls = [sd.to_sql(t, tab.types) for t in trees]
            wants = []
            for s in sqls:
                try:
                    wants.append(duck.ids(s))
                except Exception as exc:  # (a translation gap: counted apart)
                    wants.append(exc)
            n = tab.table.num_rows
            for k, (tree, sql, want) in enumerate(zip(trees, sqls, wants)):
                checked += 1
                how = paths[(table_no + k) % len(paths)]
                if isinstance(want, Exception):
                    duck_errors += 1
                    print(f"duckdb error ({type(want).__name__}: {str(want).splitlines()[0]}) on: {sql}", flush=True)
                    continue
                per_path[how] += 1
                partial += 0 < len(want) < n
                expr = sd.to_rcfmt(tree)
                got = _answer(ds_path if how == "dataset" else path, expr, how)
                if got == _expected(want, how):
                    continue
                disagreements += 1
                if out is None:
                    out = Path(tempfile.mkdtemp(prefix="rcfmt-diff-"))
                _report(out, disagreements, tab, tree, options, cuts, how, got, _expected(want, how), shrinker,
                        not args.no_shrink)
            if ds_path is not None:
                shutil.rmtree(ds_path, ignore_errors=True)
            if checked >= next_report or checked >= args.predicates:
                rate = checked / (time.time() - started)
                print(f"{checked} predicates ({rate:.0f}/s, {table_no} tables), {disagreements} disagreements, "
                      f"{duck_errors} duckdb errors", flush=True)
                next_report += args.progress_every
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed = time.time() - started
    print(f"read paths: {json.dumps(per_path)}; {partial} predicates selected some but not all rows; "
          f"{elapsed:.0f} s")
    if disagreements:
        print(f"reproductions in {out}")
    print(f"checked {checked} predicates, {disagreements} disagreements")
    return 1 if disagreements else 0


def _report(out: Path, k: int, tab, tree, options, cuts, how, got, want, shrinker: Shrinker, shrink: bool):
    from rcfmt.predicate.arrow_eval import selection_mask

    if shrink:
        small, small_tree, small_cuts, small_options, answers = shrinker.run(tab, tree, options, cuts, how)
        if answers is not None:
            tab, tree, cuts, options, (got, want) = small, small_tree, small_cuts, small_options, answers
    expr = sd.to_rcfmt(tree)
    try:
        mask = selection_mask(expr, tab.table)
        oracle = sorted(tab.table.column("id").filter(pa.array(mask)).to_pylist())
    except Exception as exc:
        oracle = f"error: {exc}"
    where = out / f"disagreement{k}"
    where.mkdir(parents=True, exist_ok=True)
    feather.write_feather(tab.table, where / "table.arrow", compression="uncompressed")
    text = (f"filter: {expr!r}\nsql:    {sd.to_sql(tree, tab.types)}\nread path: {how}\n"
            f"rcfmt:  {got}\nduckdb: {want}\nrcfmt in-memory evaluation (rcfmt.predicate.arrow_eval): {oracle}\n"
            f"writer options: {options!r}\nblock cuts (flush_block after row): {cuts}\n"
            f"table ({tab.table.num_rows} rows): {tab.table.schema}\n{tab.table.to_pylist()}\n")
    (where / "README.txt").write_text(text)
    print(f"DISAGREEMENT {k} -> {where}\n{text}", flush=True)


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
