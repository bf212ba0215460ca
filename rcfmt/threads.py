"""How many threads rcfmt's pools use: one rule for every pool that decodes, encodes or
scans on the CPU (the request pool of object storage is sized by
:data:`rcfmt.storage.fetch.FETCH_CONCURRENCY`, requests in flight rather than cores).
"""
from __future__ import annotations

import os

__all__ = ["MAX_CPU_THREADS", "MAX_FILE_THREADS", "cpu_threads"]

#: threads that decode blocks of one file, or encode the chunks of a block, at most
MAX_CPU_THREADS = 8
#: files of a dataset scanned at once, at most (each on one thread)
MAX_FILE_THREADS = 4


def cpu_threads(limit: int = MAX_CPU_THREADS) -> int:
    """The cores of this machine, at most ``limit``."""
    return min(limit, os.cpu_count() or 1)
