"""What differs between the Spark versions the source supports, decided once at import."""
from __future__ import annotations

from pyspark.sql.datasource import DataSourceReader

__all__ = ["SCAN_SCOPED_READ_INFO"]


def _scan_scoped_read_info() -> bool:
    """Whether this Spark keeps a pushdown read plan scoped to its scan. Spark 4.1-4.3
    store it on the relation and hand it to later scans of the same DataFrame that push
    no filter (fixed together with limit pushdown, which added ``DataSourceReader.pushLimit``)."""
    return hasattr(DataSourceReader, "pushLimit")


#: see :mod:`spark_datasource.source` (plan ownership) and docs/SPARK_NOTES
SCAN_SCOPED_READ_INFO = _scan_scoped_read_info()
