"""How many threads rcfmt's pools use, and the pools: one rule for every pool that
decodes, encodes or scans on the CPU (the request pool of object storage is sized by
:data:`rcfmt.storage.fetch.FETCH_CONCURRENCY`, requests in flight rather than cores).
"""
from __future__ import annotations

import os
import sys
import threading
import weakref
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # (concurrent.futures imports logging: 4 ms a process that runs no pool need not pay)
    from concurrent.futures import ThreadPoolExecutor

__all__ = ["MAX_CPU_THREADS", "MAX_FILE_THREADS", "InlinePool", "cpu_threads", "shared_pool", "thread_pool",
           "wait_all"]

#: threads that decode blocks of one file, or encode the chunks of a block, at most
MAX_CPU_THREADS = 8
#: files of a dataset scanned at once, at most (each on one thread)
MAX_FILE_THREADS = 4

_POOLS: dict[str, ThreadPoolExecutor] = {}
_LOCK = threading.Lock()
_HOOK_LOCK = threading.Lock()


_CORES: list[int] = []


def cpu_threads(limit: int = MAX_CPU_THREADS) -> int:
    """The cores of this machine, at most ``limit`` (counted once per process: the count
    reads a file of the kernel's, and a scan asks for it per block)."""
    if not _CORES:
        _CORES.append(os.cpu_count() or 1)
    return min(limit, _CORES[0])


def shared_pool(name: str, limit: int = MAX_CPU_THREADS) -> ThreadPoolExecutor:
    """The process-wide pool of :func:`cpu_threads` threads (at most ``limit``) named
    ``rcfmt-<name>`` ("scan": blocks of every scan; "columns": groups of a block's
    columns, when its scan runs one block at a time; "write": chunks of every write;
    "files": the files of a dataset scan, :data:`MAX_FILE_THREADS`), created on first use
    and kept: starting and joining threads cost a selective scan of a few blocks more
    than decoding them (a 10-row take of a 12-file dataset: 3 ms). Work on it never
    waits for other work on it. A forked child starts without pools (threads do not
    survive a fork). Once the interpreter is exiting: an :class:`InlinePool`."""
    if _exiting():
        return InlinePool()
    with _LOCK:
        pool = _POOLS.get(name)
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = _POOLS[name] = _tracked(ThreadPoolExecutor(cpu_threads(limit), thread_name_prefix=f"rcfmt-{name}"))
        return pool


def thread_pool(workers: int, name: str = ""):
    """A new ``ThreadPoolExecutor`` of ``workers`` threads named ``name``; an
    :class:`InlinePool` once the interpreter is exiting."""
    if _exiting():
        return InlinePool()
    from concurrent.futures import ThreadPoolExecutor

    return _tracked(ThreadPoolExecutor(workers, thread_name_prefix=name))


_MADE: "weakref.WeakSet" = weakref.WeakSet()  # every pool handed out, while it lives
_HOOKED: list = []


def _tracked(pool):
    """``pool``, remembered so that, when the interpreter starts to exit, its ``submit``
    and ``map`` are made to run work inline (a pool held across the exit -- an S3 read's
    fetch pool, an Azure upload's, a scan being resumed -- would refuse it). The hook runs
    where Python shuts its own pools down, before any atexit handler; nothing on the
    path of a submit changes before that."""
    with _HOOK_LOCK:
        _MADE.add(pool)
        if not _HOOKED:
            _HOOKED.append(True)
            register = getattr(threading, "_register_atexit", None)
            if register is not None:
                try:
                    register(_inline_every_pool)
                except RuntimeError:  # (exiting already: pools are inline from now on)
                    pass
    return pool


def _inline_every_pool() -> None:
    inline = InlinePool()
    for pool in list(_MADE):
        pool.submit, pool.map = inline.submit, inline.map


def _exiting() -> bool:
    """Whether the interpreter has begun to exit: Python then refuses new work on every
    thread pool (and new pools' imports), before it runs ``atexit`` handlers -- where a
    read or write (a flush at exit) must still work."""
    futures = sys.modules.get("concurrent.futures.thread")
    return bool(getattr(threading, "_SHUTTING_DOWN", False) or getattr(futures, "_shutdown", False))


class InlinePool:
    """An executor that runs each call on the calling thread (what rcfmt's pools are
    once the interpreter is exiting): ``submit`` returns a finished future."""

    def submit(self, fn, /, *args, **kwargs):
        from concurrent.futures import Future

        done = Future()
        try:
            done.set_result(fn(*args, **kwargs))
        except BaseException as exc:
            done.set_exception(exc)
        return done

    def map(self, fn, *iterables):
        return iter([fn(*args) for args in zip(*iterables)])

    def shutdown(self, wait: bool = True, **_) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass


def wait_all(futures) -> None:
    """Wait until every one of ``futures`` is done (none: imports nothing)."""
    futures = list(futures)
    if futures:
        from concurrent.futures import wait

        wait(futures)


def _forget_pools() -> None:
    global _LOCK
    _POOLS.clear()
    _LOCK = threading.Lock()


os.register_at_fork(after_in_child=_forget_pools)
