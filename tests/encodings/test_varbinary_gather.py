"""The native gather of variable-length values (dictionary entries, sampled rows,
selected rows) against slicing the bytes in Python."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rcfmt._native import varbinary


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.binary(max_size=40), min_size=1, max_size=60), data=st.data(),
       lead=st.integers(0, 20), trail=st.integers(0, 20))
def test_gather_is_slicing(values, data, lead, trail):
    """Any indices, values of every length (short ones near the end of the buffer
    included: no byte past it may be needed), offsets not starting at 0, buffers with
    bytes before and after the values."""
    raw = b"\xee" * lead + b"".join(values) + b"\xdd" * trail
    lengths = np.array([len(v) for v in values], dtype=np.int64)
    offsets = lead + np.concatenate(([0], np.cumsum(lengths)))
    indices = data.draw(st.lists(st.integers(0, len(values) - 1), max_size=80))
    for dtype in (np.int32, np.uint8, np.int64):
        idx = np.array(indices, dtype=dtype)
        buffer = np.frombuffer(raw, dtype=np.uint8)
        out_offsets, out = varbinary.gather(offsets, buffer, idx)
        got = [out[out_offsets[i]:out_offsets[i + 1]].tobytes() for i in range(len(idx))]
        assert got == [values[i] for i in indices]
        assert out_offsets.dtype == np.int32 and len(out) == sum(len(values[i]) for i in indices)


def test_gather_of_the_last_short_value_reads_nothing_past_the_buffer():
    """A short value that ends the buffer is copied exactly (a 16-byte move would read
    past it): the buffer ends where an unreadable page begins, so an over-read faults."""
    import ctypes
    import mmap

    page = mmap.PAGESIZE
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    with mmap.mmap(-1, 2 * page) as m:
        m[:page] = bytes(range(256)) * (page // 256)
        base = ctypes.addressof(ctypes.c_char.from_buffer(m))
        assert libc.mprotect(base + page, page, 0) == 0  # PROT_NONE
        try:
            buffer = np.frombuffer(m, dtype=np.uint8, count=page)
            offsets = np.array([0, page - 3, page - 1, page], dtype=np.int64)
            out_offsets, out = varbinary.gather(offsets, buffer, np.array([2, 1, 2], dtype=np.int64))
            assert out.tobytes() == m[page - 1:page] + m[page - 3:page - 1] + m[page - 1:page]
            del buffer
        finally:
            libc.mprotect(base + page, page, 3)  # PROT_READ | PROT_WRITE, for munmap's sake
