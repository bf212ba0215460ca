# cython: language_level=3
"""Positional reads of many byte ranges of one descriptor in one GIL-free call.

A scan reads the pages it needs as ranges of a file (sorted, disjoint); read one by one
from Python, each costs a call and a GIL hand-off besides its ``pread``: a lookup of
every column of a wide file reads tens of them. :func:`read_ranges` reads them all in
one section without the GIL. Kernel only: no policy, status codes, the caller raises.
"""
from libc.errno cimport EINTR, errno
from libc.stdint cimport int64_t, uint8_t
from posix.unistd cimport pread

__all__ = ["read_ranges"]


def read_ranges(int fd, const int64_t[::1] starts, const int64_t[::1] ends, uint8_t[::1] out, int64_t base):
    """Read the file bytes ``[starts[i], ends[i])`` of descriptor ``fd`` into
    ``out[starts[i] - base : ends[i] - base]``, every range in turn (short reads
    resumed, EINTR retried). Returns ``(i, error)``: ``(-1, 0)`` when every range was
    read whole; else the first range not read whole, with the OS error number (0: the
    file ended first). A range outside ``out`` is refused before anything is read
    (ValueError)."""
    cdef Py_ssize_t n = starts.shape[0], i, size = out.shape[0]
    cdef int64_t done, want
    cdef long got
    cdef int err = 0
    cdef Py_ssize_t failed = -1
    if ends.shape[0] != n:
        raise ValueError("starts and ends differ in length")
    for i in range(n):
        if starts[i] < base or ends[i] < starts[i] or ends[i] - base > size:
            raise ValueError(f"range [{starts[i]}, {ends[i]}) lies outside the buffer of {size} bytes at {base}")
    if size == 0:
        return -1, 0
    with nogil:
        for i in range(n):
            done = 0
            want = ends[i] - starts[i]
            while done < want:
                got = pread(fd, &out[0] + (starts[i] - base + done), <size_t>(want - done), starts[i] + done)
                if got < 0:
                    if errno == EINTR:
                        continue
                    err = errno
                    break
                if got == 0:
                    break
                done += got
            if done < want:
                failed = i
                break
    return failed, err
