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

- the streams registered here, made before rcfmt's ``atexit`` hook runs, raise at
  their next batch once it has run, and the hook waits (at most a second, the GIL
  released) for batches being made and for open streams to end or to go unasked for
  0.1 s (Polars holds back a stream whose pipeline is full: its consumer is the exiting
  thread), and 0.1 s after a stream raised or was closed -- so that a Polars thread about
  to ask for a batch meets the error, and is done with Python, before finalization ends
  threads (the hook waiting only for batches being made left 1 abort in 200 runs); a
  stream Polars makes while the hook waits is ended too. A scan made after the hook (in
  an exit handler that runs later) reads as usual; one made before and read after
  raises :class:`~rcfmt.errors.RcfmtError` rather than end short;
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
# stops: times the exit hook ran; active: batches being made; open: streams made and not
# ended; last: time.monotonic() of the last batch asked for or made; failed: of the last
# stream that ended other than exhausted (it raised, or was closed)
_state = {"stops": 0, "active": 0, "open": 0, "last": 0.0, "failed": 0.0, "hooked": False, "stopping": False}
#: the longest the exit hook waits for batches being made and streams to end
EXIT_WAIT_SECONDS = 1.0
#: how long open streams must go unasked for the hook to take them as held back by Polars
#: (its pipeline full: the consumer is the exiting thread) rather than about to be asked
EXIT_IDLE_SECONDS = 0.1
#: the least the exit hook waits for array releases under way, whatever the waits above took
RELEASE_WAIT_SECONDS = 0.1


def register_io_source(source, **options):
    """:func:`polars.io.plugins.register_io_source` of ``source`` (a function returning
    a generator of DataFrames), its streams ended at interpreter exit."""
    from polars.io.plugins import register_io_source as register

    with _lock:
        if not _state["hooked"]:
            atexit.register(_stop)
            _state["hooked"] = True
    return register(lambda *args: _Stream(source, args), **options)


class _Stream:
    """The batches of ``source(*args)`` (made on the first ``next``), counted open from
    the moment Polars makes the stream until it ends (exhausted, failed, closed or
    collected); one made before the exit hook ran raises at its next batch after."""

    def __init__(self, source, args):
        self._source, self._args, self._batches = source, args, None
        with _lock:  # (one made while the hook runs is a Polars thread's, not a later exit handler's)
            self._born = _state["stops"] - (1 if _state["stopping"] else 0)
            _state["open"] += 1
        self._open = True

    def __iter__(self):
        return self

    def __next__(self):
        if not self._open:
            raise StopIteration
        if _state["stops"] > self._born:
            self.close()
            from ..errors import RcfmtError

            raise RcfmtError("the interpreter is exiting: a scan_rcfmt stream made before rcfmt's exit "
                             "hook ran was ended there (Polars' threads would abort the process)")
        with _lock:
            _state["active"] += 1
            _state["last"] = time.monotonic()
        try:
            if self._batches is None:
                self._batches = self._source(*self._args)
            return next(self._batches)
        except StopIteration:
            self.close(exhausted=True)
            raise
        except BaseException:
            self.close()
            raise
        finally:
            with _lock:
                _state["active"] -= 1
                _state["last"] = time.monotonic()

    def close(self, exhausted: bool = False) -> None:
        """End the stream (the scan's files closed, its stats counted); idempotent."""
        with _lock:
            was_open, self._open = self._open, False
            if was_open:
                _state["open"] -= 1
                if not exhausted:  # (Polars' thread may still use Python for what it raised)
                    _state["failed"] = time.monotonic()
        close = getattr(self._batches, "close", None) if was_open else None
        if close is not None:
            close()

    def __del__(self):
        if self._open:
            try:
                self.close()
            except Exception:  # (during finalization: the module's globals may be gone)
                pass


def _stop() -> None:
    """rcfmt's exit hook: streams made before it raise at their next batch; wait (the
    GIL released, at most :data:`EXIT_WAIT_SECONDS`) for batches being made, for open
    streams to end or go unasked for :data:`EXIT_IDLE_SECONDS`, and as long after a
    stream raised or was closed -- a Polars thread about to ask for a batch gets the
    error now, and is done with Python, before finalization -- then stop the releases of
    handed-over arrays (waiting at least :data:`RELEASE_WAIT_SECONDS` for those under
    way)."""
    with _lock:
        _state["stops"] += 1
        _state["hooked"] = False  # (a scan made after this hook registers another)
        _state["stopping"] = True
    try:
        _wait()
    finally:
        with _lock:
            _state["stopping"] = False


def _wait() -> None:
    """The exit hook's waits (see :func:`_stop`)."""
    begun = time.monotonic()
    end = begun + EXIT_WAIT_SECONDS
    while time.monotonic() < end:
        with _lock:
            now = time.monotonic()
            asked = _state["active"] or (_state["open"] and now - max(begun, _state["last"]) < EXIT_IDLE_SECONDS) \
                or now - _state["failed"] < EXIT_IDLE_SECONDS
        if not asked:
            break
        time.sleep(0.001)
    stop_releases(max(RELEASE_WAIT_SECONDS, end - time.monotonic()))
