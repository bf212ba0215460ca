"""``ClusteringSpec``: what a clustered layout was made of, recorded in file metadata.

A spec names the columns, the curve and the mapping, plus everything needed to
recompute the same keys elsewhere: key bits, bucket count, sample size, seed and (for
"rank", once fitted) the range bounds of every column. It is stored as JSON under the
metadata key :data:`METADATA_KEY`::

    spec = ClusteringSpec(["l_shipdate", "l_partkey"], curve="hilbert").fit(table)
    rcfmt.write_table(spec.apply(table), path, metadata={METADATA_KEY: spec.to_json()})

    {"version": 1, "columns": ["l_shipdate", "l_partkey"], "curve": "hilbert",
     "mapping": "rank", "key_bits": 64, "num_buckets": 1024, "sample_size": 100000,
     "seed": 0, "bounds": {"l_shipdate": {"type": {"type": "date32[day]"},
                                          "values": [8054, ...]}, ...}}

Distributed use (Spark): fit on the driver (``spec.fit(sample)``), ship
``spec.to_json()``, and on every executor ``ClusteringSpec.from_json(text).keys(batch)``
gives keys that agree across partitions (``to_signed`` makes them Spark longs).
"""
from __future__ import annotations

import json
from typing import Mapping

import numpy as np
import pyarrow as pa

from ..runtime.records import record, field, replace
from ..errors import InvalidOptionError
from ..interop.arrow import as_table
from ..schema.arrow_io import take
from .bounds import DEFAULT_NUM_BUCKETS, DEFAULT_SAMPLE_SIZE, MAX_NUM_BUCKETS, bounds_from_json, bounds_to_json, check_int
from .curves import CURVES, DEFAULT_KEY_BITS, MAPPINGS, MAX_DIMS, bits_per_dimension, cluster_keys, cluster_order, fit_bounds

__all__ = ["ClusteringSpec", "METADATA_KEY", "SPEC_VERSION"]

#: file / dataset metadata key holding ``ClusteringSpec.to_json()``
METADATA_KEY = "rcfmt.clustering"
SPEC_VERSION = 1


@record(frozen=True)
class ClusteringSpec:
    """A clustering layout: ``columns`` (1..64 names), ``curve`` ("zorder", "hilbert",
    "sort"), ``mapping`` ("rank", "direct"), ``key_bits``, ``num_buckets``,
    ``sample_size``, ``seed`` and ``bounds`` (column -> pyarrow Array of range bounds;
    only for "rank"; columns without bounds get them from the data at hand)."""

    columns: tuple[str, ...]
    curve: str = "zorder"
    mapping: str = "rank"
    key_bits: int = DEFAULT_KEY_BITS
    num_buckets: int = DEFAULT_NUM_BUCKETS
    sample_size: int = DEFAULT_SAMPLE_SIZE
    seed: int = 0
    bounds: Mapping[str, pa.Array] | None = field(default=None, compare=False)

    def __post_init__(self):
        columns = (self.columns,) if isinstance(self.columns, str) else tuple(self.columns)
        if not columns or not all(isinstance(c, str) and c for c in columns):
            raise InvalidOptionError(f"cluster_by must name one or more columns, got {self.columns!r}")
        if len(set(columns)) != len(columns) or len(columns) > MAX_DIMS:
            raise InvalidOptionError(f"columns must be distinct and at most {MAX_DIMS}, got {list(columns)}")
        object.__setattr__(self, "columns", columns)
        if self.curve not in CURVES:
            raise InvalidOptionError(f"curve must be one of {CURVES}, got {self.curve!r}")
        if self.mapping not in MAPPINGS:
            raise InvalidOptionError(f"mapping must be one of {MAPPINGS}, got {self.mapping!r}")
        if self.curve != "sort":
            bits_per_dimension(len(columns), self.key_bits)
        object.__setattr__(self, "key_bits", check_int("key_bits", self.key_bits, 1, 64 * MAX_DIMS))
        object.__setattr__(self, "num_buckets", check_int("num_buckets", self.num_buckets, 1, MAX_NUM_BUCKETS - 1))
        object.__setattr__(self, "sample_size", check_int("sample_size", self.sample_size, 1))
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0))
        if self.bounds is not None:
            if self.mapping != "rank":
                raise InvalidOptionError('bounds apply to mapping="rank" only')
            if not isinstance(self.bounds, Mapping) or set(self.bounds) - set(columns):
                raise InvalidOptionError("bounds must map clustering columns to arrays of bounds")
            bounds = {}
            for name, b in self.bounds.items():
                if not isinstance(b, (pa.Array, pa.ChunkedArray)):
                    raise InvalidOptionError(f"bounds of {name!r} must be a pyarrow Array, got {type(b).__name__}")
                b = b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b
                if b.null_count:
                    raise InvalidOptionError(f"bounds of {name!r} must not contain NULL")
                bounds[name] = b
            object.__setattr__(self, "bounds", bounds)

    # ------------------------------------------------------------------ computing
    @property
    def fitted(self) -> bool:
        """Whether keys are a pure function of the values (no data-dependent bounds left)."""
        return self.mapping == "direct" or self.curve == "sort" or (
            self.bounds is not None and all(c in self.bounds for c in self.columns))

    def fit(self, table) -> "ClusteringSpec":
        """This spec with the range bounds of every column computed from ``table``
        (a sample is enough); bounds already present are kept."""
        if self.mapping != "rank" or self.curve == "sort":
            return self
        bounds = fit_bounds(table, list(self.columns), num_buckets=self.num_buckets,
                            sample_size=self.sample_size, seed=self.seed, bounds=self.bounds)
        return replace(self, bounds=bounds)

    def _options(self) -> dict:
        return dict(num_buckets=self.num_buckets, sample_size=self.sample_size, seed=self.seed,
                    bounds=self.bounds if self.mapping == "rank" else None, key_bits=self.key_bits)

    def keys(self, table) -> np.ndarray:
        """:func:`~rcfmt.layout.cluster_keys` of ``table`` under this spec."""
        return cluster_keys(table, list(self.columns), self.curve, self.mapping, **self._options())

    def order(self, table) -> np.ndarray:
        """:func:`~rcfmt.layout.cluster_order` of ``table`` under this spec."""
        if self.curve == "sort":
            return cluster_order(table, list(self.columns), "sort", self.mapping)
        return cluster_order(table, list(self.columns), self.curve, self.mapping, **self._options())

    def apply(self, table) -> pa.Table:
        """``table`` reordered by this spec."""
        table = as_table(table)
        return take(table, pa.array(self.order(table)))

    # ------------------------------------------------------------------ serialization
    def to_dict(self, *, include_bounds: bool = True) -> dict:
        out = {"version": SPEC_VERSION, "columns": list(self.columns), "curve": self.curve,
               "mapping": self.mapping, "key_bits": self.key_bits, "num_buckets": self.num_buckets,
               "sample_size": self.sample_size, "seed": self.seed}
        if include_bounds and self.bounds:
            out["bounds"] = {name: bounds_to_json(self.bounds[name]) for name in self.columns if name in self.bounds}
        return out

    def to_json(self, *, include_bounds: bool = True) -> str:
        """Compact JSON (``include_bounds=False`` leaves the bounds out: smaller, but a
        "rank" spec then has to be fitted again to reproduce keys)."""
        return json.dumps(self.to_dict(include_bounds=include_bounds), separators=(",", ":"), allow_nan=False)

    @classmethod
    def from_dict(cls, obj: dict) -> "ClusteringSpec":
        if not isinstance(obj, dict):
            raise InvalidOptionError(f"a clustering spec must be a JSON object, got {type(obj).__name__}")
        version = obj.get("version", SPEC_VERSION)
        if not isinstance(version, int) or version > SPEC_VERSION:
            raise InvalidOptionError(f"clustering spec version {version!r} is not supported "
                                     f"(this rcfmt reads version {SPEC_VERSION})")
        bounds = obj.get("bounds")
        try:
            if bounds is not None:
                if not isinstance(bounds, dict):
                    raise ValueError("bounds must be an object")
                bounds = {name: bounds_from_json(b) for name, b in bounds.items()}
            known = ("columns", "curve", "mapping", "key_bits", "num_buckets", "sample_size", "seed")
            return cls(**{k: obj[k] for k in known if k in obj}, bounds=bounds)
        except (ValueError, TypeError, KeyError, OverflowError, pa.ArrowException) as exc:
            if isinstance(exc, InvalidOptionError):
                raise
            raise InvalidOptionError(f"malformed clustering spec: {exc}") from None

    @classmethod
    def from_json(cls, text) -> "ClusteringSpec":
        """Parse :meth:`to_json` output (str or bytes); InvalidOptionError if malformed."""
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8")
        try:
            obj = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise InvalidOptionError(f"malformed clustering spec: {exc}") from None
        return cls.from_dict(obj)

    @classmethod
    def from_metadata(cls, metadata) -> "ClusteringSpec | None":
        """The spec stored under :data:`METADATA_KEY` in a metadata dict, or None."""
        if not metadata:
            return None
        value = metadata.get(METADATA_KEY, metadata.get(METADATA_KEY.encode()))
        return None if value is None else cls.from_json(value)

    def __str__(self) -> str:
        mapping = "" if self.curve == "sort" else f"[{self.mapping}]"
        return f"{self.curve}{mapping}({', '.join(self.columns)})"
