"""Python values of Arrow arrays of any type, built level by level from their buffers
and children: the tests' oracle where pyarrow's own ``to_pylist`` crashes (pyarrow 26
segfaults on some valid run_end_encoded nestings) or compares too much."""
from __future__ import annotations

import numpy as np
import pyarrow as pa


def py_values(arr) -> list:
    """Python values of ``arr`` (any type), built level by level from buffers and
    children (pyarrow's own to_pylist crashes on some run_end_encoded nestings)."""
    if isinstance(arr, pa.ChunkedArray):
        return [v for c in arr.chunks for v in py_values(c)]
    t, n, off = arr.type, len(arr), arr.offset
    if isinstance(t, pa.BaseExtensionType):
        return py_values(arr.storage)
    if pa.types.is_run_end_encoded(t):
        ends = arr.run_ends.to_pylist()
        values = py_values(arr.values)
        return [values[int(np.searchsorted(ends, off + i, side="right"))] for i in range(n)]
    if pa.types.is_dictionary(t):
        d = py_values(arr.dictionary)
        return [None if i is None else d[i] for i in arr.indices.to_pylist()]
    valid = [True] * n
    if arr.null_count and not pa.types.is_union(t):
        valid = arr.is_valid().to_pylist()
    if pa.types.is_struct(t):
        kids = [py_values(arr.field(i)) for i in range(t.num_fields)]
        return [dict(zip([f.name for f in t], row)) if v else None for v, row in zip(valid, zip(*kids) if kids else [()] * n)]
    if pa.types.is_union(t):
        codes = np.frombuffer(arr.buffers()[1], np.int8, count=off + n)[off:]
        index = {c: i for i, c in enumerate(t.type_codes)}
        kids = [py_values(arr.field(i)) for i in range(t.num_fields)]
        if t.mode == "sparse":
            return [kids[index[c]][i] for i, c in enumerate(codes)]
        offs = np.frombuffer(arr.buffers()[2], np.int32, count=off + n)[off:]
        return [kids[index[c]][o] for c, o in zip(codes, offs)]
    if pa.types.is_fixed_size_list(t):
        k = t.list_size
        items = py_values(arr.values.slice(off * k, n * k))
        return [items[i * k:(i + 1) * k] if v else None for i, v in enumerate(valid)]
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offs = arr.offsets.to_pylist()
        items = py_values(arr.values)
        if pa.types.is_map(t):
            items = [(e["key"], e["value"]) for e in items]
        return [items[a:b] if v else None for v, a, b in zip(valid, offs[:-1], offs[1:])]
    return arr.to_pylist()
