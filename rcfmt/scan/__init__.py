"""The scan: predicate expressions, pruning, row selections and late materialization."""
