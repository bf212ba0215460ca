"""rcfmt's Polars IO source, stopped before the interpreter exits.

Polars' engine pulls a source's batches from its own (tokio) threads, and frees the
frames it was handed there too. A process that leaves a scan half consumed
(``scan_rcfmt(...).collect_batches()`` and one ``next()``) exits while such a thread is
about to call the generator again, or to free a frame whose buffers are numpy arrays
(their release takes the GIL): Python 3.11 ends a thread that asks for the GIL during
finalization with ``pthread_exit``, whose unwinding Rust or pyarrow's ``noexcept``
destructors do not let through, and glibc aborts the process (exit code 134: "FATAL:
exception not rethrown", 15 runs in 80; "terminate called without an active
exception", 2 in 40 once the first was fixed). So:

- the generators registered here, made before rcfmt's ``atexit`` hook runs, raise at
  their next batch once it has run -- before finalization ends any thread -- and the
  hook waits (at most a second, the GIL released) for a batch being made to be handed
  over. A scan made after the hook (in an exit handler that runs later) reads as usual;
  one made before and read after raises :class:`~rcfmt.errors.RcfmtError` rather than
  end short;
- frames are handed over through :func:`exit_safe_stream`, whose arrays free nothing
  once the hook ran (the process's end frees it), and the hook waits for releases under
  way (:func:`rcfmt._native.exit_safe.stop_releases`).
"""
from __future__ import annotations

import atexit
import threading
import time

from .._native.exit_safe import exit_safe_stream, stop_releases

__all__ = ["exit_safe_stream", "register_io_source"]

_lock = threading.Lock()
_state = {"stops": 0, "active": 0, "hooked": False}  # stops: times the exit hook ran
#: the longest the exit hook waits for batches being made
EXIT_WAIT_SECONDS = 1.0


def register_io_source(source, **options):
    """:func:`polars.io.plugins.register_io_source` of ``source`` (a function returning
    a generator of DataFrames), its generators ended at interpreter exit."""
    from polars.io.plugins import register_io_source as register

    with _lock:
        if not _state["hooked"]:
            atexit.register(_stop)
            _state["hooked"] = True

    def stopping(*args):
        born = _state["stops"]
        batches = source(*args)
        try:
            while True:
                if _state["stops"] > born:
                    from ..errors import RcfmtError

                    raise RcfmtError("the interpreter is exiting: a scan_rcfmt stream made before rcfmt's exit "
                                     "hook ran was ended there (Polars' threads would abort the process)")
                with _lock:
                    _state["active"] += 1
                try:
                    batch = next(batches)
                except StopIteration:
                    return
                finally:
                    with _lock:
                        _state["active"] -= 1
                yield batch
        finally:
            batches.close()  # (the scan's files closed, its stats counted)

    return register(stopping, **options)


def _stop() -> None:
    with _lock:
        _state["stops"] += 1
        _state["hooked"] = False  # (a scan made after this hook registers another)
    end = time.monotonic() + EXIT_WAIT_SECONDS
    while _state["active"] and time.monotonic() < end:
        time.sleep(0.001)
    stop_releases(max(0.0, end - time.monotonic()))
