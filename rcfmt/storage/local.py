"""Local files: read with ``os.pread`` on one descriptor, written to a temporary file
beside the target that is fsync'd and renamed over it."""
from __future__ import annotations

import os
import stat
import threading

from ..errors import InvalidOptionError, RcfmtError, StorageError
from .base import ByteSink, ByteSource, DirectoryError, tmp_name

__all__ = ["LocalFile", "LocalSink", "names", "sizes", "delete", "size", "read_whole", "replace"]


class LocalFile(ByteSource):
    """A local file: one descriptor, ``os.pread`` (releases the GIL). Reads count
    themselves in and out: :meth:`close` while other threads read closes the descriptor
    once the last of them is done (its number is never reused under a read in flight,
    which would read another file), and reads after it raise "file is closed"."""

    def __init__(self, path: str):
        self._lock = threading.Lock()
        self._reads = 0  # in flight
        self._closing = False
        try:
            self._fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except IsADirectoryError:
            self._fd = None
            raise DirectoryError(path) from None
        st = os.fstat(self._fd)
        if stat.S_ISDIR(st.st_mode):  # Linux opens directories read-only
            self.close()
            raise DirectoryError(path)
        self.size = st.st_size
        self.version = (st.st_dev, st.st_ino, st.st_mtime_ns)  # (of the file opened: a replacement differs)

    def _enter(self) -> int:
        with self._lock:
            if self._fd is None or self._closing:
                raise RcfmtError("file is closed")
            self._reads += 1
            return self._fd

    def _leave(self) -> None:
        with self._lock:
            self._reads -= 1
            if self._closing and not self._reads:
                self._close_now()

    def read_at(self, offset: int, length: int) -> bytes:
        fd = self._enter()
        try:
            return os.pread(fd, length, offset)
        finally:
            self._leave()

    def read_into(self, offset: int, out: memoryview) -> int:
        fd = self._enter()
        try:
            done = 0
            while done < len(out):  # preadv may return short counts (signals); 0 is the end of the file
                n = os.preadv(fd, [out[done:]], offset + done)
                if n == 0:
                    break
                done += n
            return done
        finally:
            self._leave()

    def read_ranges_into(self, starts, ends, out, base: int) -> int:
        """Read the ranges ``[starts[i], ends[i])`` (int64 arrays) into ``out`` (a
        writable buffer holding file offset ``base`` at 0) in one GIL-free call; the
        index of the first range the file ended before, or -1 when all were read whole
        (an OS error raises OSError)."""
        from .._native.preads import read_ranges

        fd = self._enter()
        try:
            failed, err = read_ranges(fd, starts, ends, out, base)
        finally:
            self._leave()
        if err:
            raise OSError(err, os.strerror(err))
        return failed

    def close(self) -> None:
        lock = getattr(self, "_lock", None)
        if lock is None:  # (a constructor that failed before its lock)
            return
        with lock:
            self._closing = True
            if not self._reads:
                self._close_now()

    def _close_now(self) -> None:
        fd, self._fd = getattr(self, "_fd", None), None
        if fd is not None:
            os.close(fd)


class LocalSink(ByteSink):
    """A temporary file beside the target, fsync'd and renamed over it."""

    def __init__(self, path: str):
        self.path = path
        if os.path.isdir(path):  # (os.replace would fail only once the whole file is written)
            raise DirectoryError(path, writing=True)
        directory = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(directory):
            raise InvalidOptionError(f"directory {directory!r} does not exist")
        self.tmp_path = os.path.join(directory, tmp_name(os.path.basename(path)))
        try:
            self._file = open(self.tmp_path, "wb")
        except OSError as exc:  # (named by the target: the temporary name is the writer's own)
            raise type(exc)(exc.errno, f"cannot write {path!r} ({exc.strerror}: the file is written under "
                                       f"{os.path.basename(self.tmp_path)!r} beside it first)") from None

    def write(self, data) -> None:
        try:
            self._file.write(data)
        except OSError as exc:
            raise self._failed(exc) from None

    def commit(self) -> None:
        try:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            os.replace(self.tmp_path, self.path)
        except OSError as exc:
            raise self._failed(exc) from None

    def _failed(self, exc: OSError) -> StorageError:
        """The file system's refusal (disk full, file too large, ...) as a StorageError
        naming the target (the caller aborts: nothing is left under either name)."""
        return StorageError(exc.errno, f"writing {self.path!r} failed: {exc.strerror or exc}")

    def abort(self) -> None:
        try:
            self._file.close()
        finally:
            try:
                os.unlink(self.tmp_path)
            except FileNotFoundError:
                pass


def names(directory: str) -> list[str]:
    """Names of the entries of ``directory``; empty if it does not exist."""
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []


def sizes(directory: str) -> dict[str, int]:
    """``{name: size}`` of the files in ``directory``; empty if it does not exist."""
    try:
        with os.scandir(directory) as it:
            return {e.name: e.stat().st_size for e in it if e.is_file()}
    except FileNotFoundError:
        return {}


def delete(path: str) -> None:
    """Delete the file ``path`` (FileNotFoundError if there is none)."""
    os.unlink(path)


def size(path: str) -> int | None:
    """Bytes of the regular file ``path`` (one ``stat``); None if there is none."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def read_whole(path: str, limit: int | None = None) -> bytes | None:
    """The bytes of the small file ``path``; None if there is none. ``limit``: its first
    ``limit`` bytes at most, of a regular file only (a FIFO or device is None: opened
    without blocking, never read)."""
    try:
        if limit is None:
            with open(path, "rb") as f:
                return f.read()
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    with open(fd, "rb", closefd=True) as f:
        return f.read(limit) if stat.S_ISREG(os.fstat(fd).st_mode) else None


def replace(path: str, data: bytes) -> None:
    """Write ``data`` as ``path``: a temporary file renamed over it (readers see the old
    bytes or the new ones, never a mix; not fsync'd: for what a crash may lose)."""
    tmp = os.path.join(os.path.dirname(path), tmp_name(os.path.basename(path)))
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
