"""Where a Spark query's time goes, seen from inside Spark's Python workers.

With ``.option("statsDir", dir)`` every entry point Spark runs in a Python worker
appends a record to ``dir``: ``schema()`` (a driver-side worker, at ``load()``), the
planner (``reader()`` then ``partitions()``, another driver-side worker) and each task's
``read()`` (an executor's worker). A record holds the wall-clock times of the call
(``time.time()``: comparable across the processes of one machine), the process that ran
it (its pid, when it started, whether this was its first rcfmt call: Spark reuses its
Python workers, so a process's first call paid the imports its unpickling triggered) and
the top-level modules loaded in it (what the call's path imported). The bench
(``bench/bench_spark.py --breakdown``) lines them up against the driver's start and end
of the query and against the same records of a floor source.
"""
from __future__ import annotations

import json
import os
import sys
import time
import uuid

__all__ = ["process_info", "write_record", "top_level_modules"]

_SEEN_CALL = False  # (per process) has an rcfmt entry point run here already?


def _process_start() -> float | None:
    """When this process started (seconds since the epoch; Linux only, else None)."""
    try:
        with open("/proc/self/stat") as fh:
            ticks = int(fh.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/stat") as fh:
            boot = next(int(line.split()[1]) for line in fh if line.startswith("btime "))
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def top_level_modules() -> list[str]:
    """The top-level packages and modules loaded in this process (sorted)."""
    return sorted({name.partition(".")[0] for name in list(sys.modules)})


def process_info() -> dict:
    """This process: pid, start time, and whether no rcfmt entry point ran in it before
    (the first call of a worker; this call marks it as seen)."""
    global _SEEN_CALL
    first, _SEEN_CALL = not _SEEN_CALL, True
    return {"pid": os.getpid(), "process_start": _process_start(), "first_call": first}


def write_record(directory: str, kind: str, record: dict) -> None:
    """Write ``record`` (with ``kind`` and the loaded modules) as
    ``<directory>/<kind>-<id>.json``, atomically (a reader never sees half of it)."""
    os.makedirs(directory, exist_ok=True)
    name = f"{kind}-{record.get('plan_id', 'x')}-{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
    tmp = os.path.join(directory, f".{name}.tmp")
    with open(tmp, "w") as fh:
        json.dump({"kind": kind, "written": time.time(), "modules": top_level_modules(), **record}, fh)
    os.replace(tmp, os.path.join(directory, name))
