"""Spark discovers this module (any top-level ``pyspark_*`` module exposing
``DefaultSource``) and registers the rcfmt data source under the name "rcfmt", so
``spark.read.format("rcfmt")`` works with no register call. See ``spark_datasource``."""
from spark_datasource import DefaultSource

__all__ = ["DefaultSource"]
