"""Shared pytest setup for rcfmt's test suites.

Puts ``tests/`` on ``sys.path`` so every suite (tests/, tests/scan/, tests/encodings/)
can ``import strategies`` (or ``from tests import strategies`` when run from the repo
root), and registers the hypothesis profile ``rcfmt`` (loaded unless
``HYPOTHESIS_PROFILE`` names another): no deadline, since CI machines are slow and
shared. Suites size their ``max_examples`` with ``strategies.examples(n)``; set
``RCFMT_EXAMPLES_SCALE=20`` for a long local run.

Scans of the suites' small files decode their blocks on the pool, as scans of large
blocks do by default (``RCFMT_PARALLEL_BLOCK_BYTES=0``, inherited by the fresh
interpreters tests start): races between a scan's workers stay covered. The default
threshold is tested on its own (tests/scan/test_stream_threads.py).
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

os.environ.setdefault("RCFMT_PARALLEL_BLOCK_BYTES", "0")  # (before rcfmt is imported)

TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:
    sys.path.insert(0, str(TESTS))
ROOT = TESTS.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

settings.register_profile(
    "rcfmt",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "rcfmt"))
