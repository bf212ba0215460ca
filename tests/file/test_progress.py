"""Progress bars: on a terminal (tested through a pseudo-terminal), never when the output
is not one or when turned off, and a bad option refused before anything is written."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import rcfmt

pty = pytest.importorskip("pty")


def _in_terminal(args, size=(24, 100)) -> tuple[int, str]:
    """Run ``rcfmt ARGS`` with stdout and stderr on a pseudo-terminal of ``size`` (rows,
    columns; (0, 0) as some terminals report): (exit code, output)."""
    import fcntl
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", size[0], size[1], 0, 0))
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([sys.executable, "-m", "rcfmt.cli", *map(str, args)], stdout=slave, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=300), b"".join(chunks).decode("utf-8", "replace")


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory):
    n = 300_000
    path = tmp_path_factory.mktemp("progress") / "big.parquet"
    pq.write_table(pa.table({"k": np.arange(n), "v": np.random.default_rng(0).random(n)}), path, row_group_size=20_000)
    return path, n


def test_convert_draws_a_bar_on_a_terminal_only(parquet_file, tmp_path):
    src, n = parquet_file
    for size in ((24, 100), (0, 0)):
        code, out = _in_terminal(["convert", src, tmp_path / f"a{size[0]}.rcfmt"], size)
        assert code == 0, out
        assert "convert: 100%" in out and "300k/300k" in out and "rows/s" in out, (size, out)
    code, out = _in_terminal(["convert", src, tmp_path / "b.rcfmt", "--no-progress"])
    assert code == 0 and "convert:" not in out and "rows" in out  # the summary, no bar
    piped = subprocess.run([sys.executable, "-m", "rcfmt.cli", "convert", str(src), str(tmp_path / "c.rcfmt")],
                           capture_output=True, text=True, timeout=300)
    assert piped.returncode == 0 and piped.stderr == ""  # not a terminal: silent
    assert rcfmt.read_table(tmp_path / "c.rcfmt").num_rows == n


def test_library_operations_take_progress(tmp_path, capfd):
    t = pa.table({"k": np.arange(50_000), "v": np.arange(50_000) % 7})
    ds = rcfmt.write_dataset(t, tmp_path / "ds", progress=True, target_file_rows=10_000)
    err = capfd.readouterr().err
    assert "write_dataset" in err and "50.0k" in err
    ds.optimize(["v", "k"], target_file_rows=20_000, progress=True)
    assert "optimize: 100%" in capfd.readouterr().err
    rcfmt.dataset.vacuum(tmp_path / "ds", retention_seconds=0, progress=True, enforce_retention_duration=False)
    assert "vacuum: 100%" in capfd.readouterr().err
    rcfmt.write_table(t, tmp_path / "f.rcfmt", progress=True, block_rows=10_000)
    assert "write: 100%" in capfd.readouterr().err
    rcfmt.write_table(t, tmp_path / "g.rcfmt")  # not a terminal (captured): silent
    assert capfd.readouterr().err == ""
    assert rcfmt.read_table(tmp_path / "f.rcfmt").equals(rcfmt.read_table(tmp_path / "g.rcfmt"))


def test_a_bad_progress_option_is_refused_before_anything_is_written(tmp_path):
    t = pa.table({"k": np.arange(10)})
    for call in (lambda: rcfmt.write_table(t, tmp_path / "x.rcfmt", progress="yes"),
                 lambda: rcfmt.write_dataset(t, tmp_path / "ds", progress=1)):
        with pytest.raises(rcfmt.InvalidOptionError, match="progress"):
            call()
    assert os.listdir(tmp_path) == []
