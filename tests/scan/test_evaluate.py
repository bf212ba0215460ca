"""The exact filter evaluator's fast paths agree with plain Python arithmetic."""
import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt.scan.evaluate import _decimal_compare

OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}
EDGES = [0, 1, -1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, -(2**64), 10**37, -(10**37), 2**127 - 1, -(2**127)]
int128 = st.one_of(st.sampled_from(EDGES), st.integers(-(2**127), 2**127 - 1),
                   st.sampled_from(EDGES).flatmap(lambda e: st.integers(e - 2, e + 2)).filter(
                       lambda v: -(2**127) <= v < 2**127))


def _raw(values):
    return np.frombuffer(b"".join(v.to_bytes(16, "little", signed=True) for v in values), dtype="V16")


@settings(max_examples=200, deadline=None)
@given(values=st.lists(int128, min_size=1, max_size=50), literal=int128, op=st.sampled_from(sorted(OPS)))
def test_decimal_compare_matches_python(values, literal, op):
    got = _decimal_compare(_raw(values), op, literal)
    assert got.tolist() == [OPS[op](v, literal) for v in values]


@pytest.mark.parametrize("op", sorted(OPS))
def test_decimal_compare_word_boundaries(op):
    values = [e + d for e in EDGES for d in (-1, 0, 1) if -(2**127) <= e + d < 2**127]
    for literal in EDGES:
        assert _decimal_compare(_raw(values), op, literal).tolist() == [OPS[op](v, literal) for v in values]
