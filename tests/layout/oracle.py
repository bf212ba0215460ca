"""An order oracle written independently of rcfmt.layout: the sort key of every slot
of an Arrow array as a Python tuple (NULL first, NaN after +inf, -0.0 equal to +0.0,
strings and binary bytewise, decimals by their unscaled integer)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from strategies import storage_of, validity_of

NULL = (0,)


def sort_keys(arr) -> list[tuple]:
    """One comparable tuple per slot of ``arr`` (Array or ChunkedArray)."""
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    t = arr.type
    valid = validity_of(arr)
    values = storage_of(arr)
    out = []
    for i in range(len(arr)):
        if not valid[i]:
            out.append(NULL)
            continue
        v = values[i]
        if pa.types.is_floating(t):
            f = float(np.asarray(v).view(np.float32 if t.bit_width == 32 else np.float64))
            out.append((1, 1, 0.0) if f != f else (1, 0, f))
        elif pa.types.is_decimal(t):
            out.append((1, int.from_bytes(bytes(np.asarray(v).tobytes()), "little", signed=True)))
        elif isinstance(v, (bytes, bytearray)):
            out.append((1, bytes(v)))
        else:
            out.append((1, int(v)))
    return out


def row_keys(table: pa.Table, columns) -> list[tuple]:
    cols = [sort_keys(table.column(c)) for c in columns]
    return list(zip(*cols)) if cols else []


def assert_weakly_monotone(keys: np.ndarray, oracle: list, *, strict: bool = False, where: str = "") -> None:
    """Sorting rows by ``oracle`` leaves ``keys`` non-decreasing; equal oracle values have
    equal keys; with ``strict`` different oracle values have different keys."""
    keys = np.asarray(keys)
    as_int = [int(k) if keys.ndim == 1 else tuple(int(w) for w in k) for k in keys]
    order = sorted(range(len(oracle)), key=lambda i: oracle[i])
    for a, b in zip(order[:-1], order[1:]):
        if oracle[a] == oracle[b]:
            assert as_int[a] == as_int[b], f"{where}: equal values {oracle[a]} got keys {as_int[a]} != {as_int[b]}"
        else:
            assert as_int[a] <= as_int[b], f"{where}: {oracle[a]} < {oracle[b]} but key {as_int[a]} > {as_int[b]}"
            if strict:
                assert as_int[a] < as_int[b], f"{where}: {oracle[a]} < {oracle[b]} share key {as_int[a]}"
