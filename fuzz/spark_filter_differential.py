"""Long run of the ``filter`` option against Spark: random Spark SQL predicates over
NULL- and NaN-holding columns, each one's rows from Spark's WHERE on Parquet compared
with rcfmt's scan of the translated predicate, and every ``--relation-every``-th one
through the Spark relation (``spark.read.format("rcfmt").option("filter", p)``) with
and without the same WHERE on top. Predicates the translator refuses are counted apart
(a refusal is allowed; a wrong row is not).

    python fuzz/spark_filter_differential.py --predicates 10000 --seed 1

Prints progress and ends with ``checked N predicates, K disagreements``; exit 1 on any
disagreement (each printed with both answers).
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests"), os.path.join(ROOT, "tests", "spark")]

from filter_differential import differential_table, rcfmt_ids, relation_ids, spark_truths, write_copies  # noqa: E402
from sql_predicates import PredicateGenerator  # noqa: E402

from rcfmt.errors import InvalidOptionError  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--predicates", type=int, default=10_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--batch", type=int, default=200, help="predicates per round of Spark queries")
    ap.add_argument("--relation-every", type=int, default=100, help="every k-th predicate also through the relation")
    args = ap.parse_args()

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join([ROOT, *filter(None, [os.environ.get("PYTHONPATH")])])
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").appName("rcfmt-filter-differential")
             .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
             .config("spark.sql.session.timeZone", "America/Los_Angeles").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    table = differential_table()
    gen = PredicateGenerator(table, seed=args.seed)
    bad = refused = relations = done = 0
    start = time.time()
    with tempfile.TemporaryDirectory() as base:
        pq, rc = write_copies(spark, table, base)
        while done < args.predicates:
            batch = [gen.predicate().render("spark") for _ in range(min(args.batch, args.predicates - done))]
            for predicate, want in zip(batch, spark_truths(spark, pq, batch)):
                done += 1
                try:
                    got = rcfmt_ids(rc, table.schema, predicate)
                except InvalidOptionError:
                    refused += 1
                    continue
                answers = [("scan", got)]
                if done % args.relation_every == 0:
                    relations += 1
                    answers += [("relation", relation_ids(spark, rc, predicate, where=False)),
                                ("relation + WHERE", relation_ids(spark, rc, predicate, where=True))]
                for path, ids in answers:
                    if ids != want:
                        bad += 1
                        print(f"DISAGREE ({path}): {predicate}\n  spark: {len(want)} rows {want[:20]}\n"
                              f"  rcfmt: {len(ids)} rows {ids[:20]}", flush=True)
            print(f"{done} predicates, {refused} refused, {relations} through the relation, {bad} disagreements, "
                  f"{time.time() - start:.0f} s", flush=True)
    spark.stop()
    print(f"checked {done} predicates ({refused} refused by the translator, {relations} also through the "
          f"relation with and without WHERE), {bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
