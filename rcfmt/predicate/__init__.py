"""Predicates: what a filter is and what it means, below every index and the scan.

The expression API (:mod:`~rcfmt.predicate.expr`), binding to a schema
(:mod:`~rcfmt.predicate.bind`), the normalized form every consumer takes
(:mod:`~rcfmt.predicate.nnf`), its evaluation on values (:mod:`~rcfmt.predicate.evaluate`,
:mod:`~rcfmt.predicate.arrow_eval`), on statistics (:mod:`~rcfmt.predicate.prune`,
:mod:`~rcfmt.predicate.intervals`) and on the rows it selects
(:mod:`~rcfmt.predicate.selection`), the residual a partial answer leaves
(:mod:`~rcfmt.predicate.residual`), and the translations from SQL, Spark and JSON
(:mod:`~rcfmt.predicate.sql_filter`, :mod:`~rcfmt.predicate.spark_meaning`,
:mod:`~rcfmt.predicate.nan_order`, :mod:`~rcfmt.predicate.expr_json`).
"""
