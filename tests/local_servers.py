"""What the local test servers started as subprocesses share (``local_gcs.py``,
``local_azure.py``): a free port, waiting until the server answers, stopping it."""
from __future__ import annotations

import socket
import subprocess
import time
import urllib.request

__all__ = ["free_port", "wait_until_serving", "stop"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, proc: subprocess.Popen, what: str, seconds: float = 20) -> None:
    """Return once a GET of ``url`` is answered; RuntimeError if ``proc`` exits or
    ``seconds`` pass first."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{what} did not start (exit code {proc.poll()})") from None
            time.sleep(0.05)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
