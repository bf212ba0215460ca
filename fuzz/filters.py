"""Filters the fuzzers scan mutated files with, shared by ``fuzz_pages.py`` (its child
processes) and the atheris ``scan`` harness."""
from __future__ import annotations

import datetime
import decimal

import pyarrow as pa

from rcfmt import col


def _bounds(t: pa.DataType):
    """Literals below and above most values of a column's type, or None."""
    if pa.types.is_integer(t):
        return (-3, 10**6) if pa.types.is_signed_integer(t) else (1, 10**6)
    if pa.types.is_floating(t):
        return -1e9, 1e9
    if pa.types.is_date(t):
        return datetime.date(1971, 1, 1), datetime.date(2100, 1, 1)
    if pa.types.is_decimal(t):
        return decimal.Decimal(-1), decimal.Decimal(10**6)
    if pa.types.is_string(t):
        return "", "zzzz"
    return None


def pushed_conjunction(schema: pa.Schema):
    """Comparisons, ``!=``, NOT ``isin`` and IS NOT NULL ANDed over the fields that take
    them (None: no field does): intervals, sets, validity and dictionary tables the page
    pipeline evaluates while it decodes, permissive enough that blocks survive pruning
    and reach the decoders."""
    out = None
    for k, field in enumerate(schema):
        found = _bounds(field.type)
        if found is None:
            continue
        c = col(field.name)
        if k % 3 == 0:
            leaf = (c <= found[1]) & c.is_valid()
        elif k % 3 == 1:
            leaf = c > found[0]
        else:  # (values outside most columns' ranges: sets that exclude little)
            leaf = (c != found[0]) & ~c.isin([found[0], found[1]])
        out = leaf if out is None else out & leaf
    return out
