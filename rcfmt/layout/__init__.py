"""Clustering layouts: sort, Z-order and Hilbert keys over rank- or direct-mapped values.

Min/max skipping only works when rows that are queried together sit together. This
package computes the row order of a clustered layout; the writer and the dataset layer
apply it.

>>> order = cluster_order(table, ["l_shipdate", "l_partkey"], curve="hilbert")
>>> clustered = cluster(table, ["l_shipdate", "l_partkey"])           # Z-order, rank
>>> spec = ClusteringSpec(["l_shipdate", "l_partkey"]).fit(table)     # bounds recorded
>>> rcfmt.write_table(spec.apply(table), path, metadata={METADATA_KEY: spec.to_json()})

Modules: :mod:`.normalize` (order-preserving uint64 keys per type), :mod:`.bounds`
(range bounds from a sample, bucket ids), :mod:`.curves` (coordinates, Z-order,
Hilbert, permutations), :mod:`.spec` (``ClusteringSpec``). The loops run in
``rcfmt._native.layout``.
"""
from .bounds import (
    DEFAULT_NUM_BUCKETS,
    DEFAULT_SAMPLE_SIZE,
    bounds_from_json,
    bounds_from_sample,
    bounds_to_json,
    bucket_ids,
    range_bounds,
    sample_column,
)
from .curves import (
    CURVES,
    DEFAULT_KEY_BITS,
    MAPPINGS,
    bits_per_dimension,
    cluster,
    cluster_keys,
    cluster_order,
    curve_keys,
    fit_bounds,
    sort_keys,
    to_signed,
)
from .spec import METADATA_KEY, ClusteringSpec

__all__ = [
    "cluster_keys", "cluster_order", "cluster", "ClusteringSpec", "METADATA_KEY",
    "range_bounds", "sample_column", "bounds_from_sample", "bucket_ids", "bounds_to_json", "bounds_from_json",
    "fit_bounds", "curve_keys", "sort_keys", "to_signed", "bits_per_dimension",
    "CURVES", "MAPPINGS", "DEFAULT_KEY_BITS", "DEFAULT_NUM_BUCKETS", "DEFAULT_SAMPLE_SIZE",
]
