"""The ``.option(...)``s of the rcfmt data source (documented in README.md), parsed and
validated in one place. Spark passes option keys case-insensitively; values are strings."""
from __future__ import annotations

import contextlib
import functools
import inspect
import os
import re

import pyarrow as pa

from rcfmt.errors import InvalidOptionError
from rcfmt.runtime.records import replace
from rcfmt.storage import FetchOptions

from .compat import SCAN_SCOPED_READ_INFO

__all__ = ["LOADED_VERSION", "ReadOptions", "WriteOptions", "StreamReadOptions", "StreamWriteOptions", "azure_options",
           "fetch_options", "lower_keys", "s3_options", "store_settings", "with_store_settings"]

#: options that set the S3 client: rcfmt's names, and the Hadoop S3A names users already
#: set for Spark (``fs.s3a.*``, also spelled as in SparkConf: ``spark.hadoop.fs.s3a.*``)
S3_OPTION_NAMES = {
    "endpoint": ("s3.endpoint", "fs.s3a.endpoint"),
    "region": ("s3.region", "fs.s3a.endpoint.region"),
    "access_key": ("s3.accessKey", "fs.s3a.access.key"),
    "secret_key": ("s3.secretKey", "fs.s3a.secret.key"),
    "session_token": ("s3.sessionToken", "fs.s3a.session.token"),
}


def lower_keys(options) -> dict:
    return {str(k).lower(): v for k, v in dict(options or {}).items()}


def _int(opts: dict, key: str, default, lo: int = 1):
    raw = opts.get(key.lower())
    if raw is None:
        return default
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise InvalidOptionError(f"option {key}={raw!r} must be an integer") from None
    if value < lo:
        raise InvalidOptionError(f"option {key}={raw!r} must be >= {lo}")
    return value


def _bool(opts: dict, key: str, default: bool) -> bool:
    raw = opts.get(key.lower())
    if raw is None:
        return default
    s = str(raw).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise InvalidOptionError(f"option {key}={raw!r} must be true or false")


def _list(opts: dict, key: str) -> list[str] | None:
    raw = opts.get(key.lower())
    if raw is None or not str(raw).strip():
        return None
    return [p.strip() for p in str(raw).split(",") if p.strip()]


#: the ``fetch`` option's presets, and the options that set FetchOptions' fields
FETCH_PRESETS = {"fewestrequests": FetchOptions, "fewestbytes": FetchOptions.fewest_bytes}
FETCH_FIELDS = {"coalesce_gap": "fetchCoalesceBytes", "tail_bytes": "fetchTailBytes",
                "max_request_bytes": "fetchMaxRequestBytes"}


def fetch_options(opts: dict) -> FetchOptions:
    """How reads of remote files trade requests for bytes: ``fetch`` (``fewestRequests``,
    the default, or ``fewestBytes``), then any of ``fetchCoalesceBytes``,
    ``fetchTailBytes`` and ``fetchMaxRequestBytes`` (:class:`rcfmt.FetchOptions`)."""
    raw = str(opts.get("fetch", "fewestRequests")).strip()
    preset = FETCH_PRESETS.get(raw.lower())
    if preset is None:
        raise InvalidOptionError(f"option fetch={raw!r} must be fewestRequests or fewestBytes")
    fetch = preset()
    fields = {field: _int(opts, key, None, lo=16 if field == "tail_bytes" else 0)
              for field, key in FETCH_FIELDS.items()}
    return replace(fetch, **{k: v for k, v in fields.items() if v is not None})


def s3_options(opts: dict) -> dict | None:
    """The S3 client settings (:func:`rcfmt.storage.s3_settings`) the options give, or
    None (the environment's ``AWS_*`` alone)."""
    out = {}
    for setting, names in S3_OPTION_NAMES.items():
        for name in names:
            for key in (name.lower(), "spark.hadoop." + name.lower()) if name.startswith("fs.") else (name.lower(),):
                value = opts.get(key)
                if value is not None and str(value).strip():
                    if setting in out and out[setting] != str(value).strip():
                        raise InvalidOptionError(f"S3 option {name} is given twice with different values")
                    out[setting] = str(value).strip()
    if not out:
        return None
    from rcfmt.storage import check_s3_settings

    return check_s3_settings(out)


#: options that set the Azure client: rcfmt's names (each a setting of
#: :func:`rcfmt.storage.azure_settings`)
AZURE_OPTION_NAMES = {"connection_string": "azure.connectionString", "account_name": "azure.accountName",
                      "account_key": "azure.accountKey", "sas_token": "azure.sasToken", "endpoint": "azure.endpoint"}
#: and the Hadoop ABFS names users already set for Spark: the key or fixed SAS token of
#: an account (``fs.azure.account.key.ACCOUNT.dfs.core.windows.net``, also with
#: ``spark.hadoop.`` before it)
_HADOOP_AZURE = re.compile(r"\A(?:spark\.hadoop\.)?fs\.azure\.(account\.key|sas\.fixed\.token)\.([^.]+)\.")


def azure_options(opts: dict) -> dict | None:
    """The Azure client settings (:func:`rcfmt.storage.azure_settings`) the options
    give, or None (the environment's ``AZURE_STORAGE_*``)."""
    out = {}

    def put(setting: str, value, name: str) -> None:
        value = str(value).strip()
        if setting in out and out[setting] != value:
            raise InvalidOptionError(f"Azure option {name} is given twice with different values")
        out[setting] = value

    for setting, name in AZURE_OPTION_NAMES.items():
        if opts.get(name.lower()) is not None and str(opts[name.lower()]).strip():
            put(setting, opts[name.lower()], name)
    for key, value in opts.items():
        m = _HADOOP_AZURE.match(key)
        if m and value is not None and str(value).strip():
            put("account_name", m.group(2), key)
            put("account_key" if m.group(1) == "account.key" else "sas_token", value, key)
    if not out:
        return None
    from rcfmt.storage import check_azure_settings

    return check_azure_settings(out)


@contextlib.contextmanager
def store_settings(options):
    """The S3 and Azure client settings of ``options`` (a ReadOptions or WriteOptions)
    in force within the block."""
    from rcfmt.storage import azure_settings, s3_settings

    with s3_settings(options.s3), azure_settings(options.azure):
        yield


def with_store_settings(method):
    """Run ``method`` (a function or a generator function) with the store client
    settings of ``self.options`` in force (:func:`store_settings`): every entry point
    Spark calls in a Python worker."""
    if inspect.isgeneratorfunction(method):
        @functools.wraps(method)
        def generator(self, *args, **kwargs):
            with store_settings(self.options):
                yield from method(self, *args, **kwargs)

        return generator

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with store_settings(self.options):
            return method(self, *args, **kwargs)

    return wrapper


def _path(opts: dict, remote_ok: bool = False) -> str:
    """The dataset path of the options: local (Hadoop's ``file:/abs/path`` too) or,
    with ``remote_ok``, an ``s3://`` URI (Hadoop's ``s3a://`` spelling is taken for it:
    rcfmt reads S3 through pyarrow, with the credentials and endpoint of the options or
    the environment), a ``gs://`` URI (Google's default credentials; an emulator's
    endpoint from ``STORAGE_EMULATOR_HOST``) or an Azure URI (``abfss://container@account.dfs.core.windows.net/...``,
    ``az://container/...``; settings from the options or the environment)."""
    path = opts.get("path")
    if not path:
        raise InvalidOptionError("the rcfmt data source needs a path: .load(path) / .save(path) or .option('path', ...)")
    if "," in path and not os.path.exists(path):
        raise InvalidOptionError(f"one path per read/write, got {path!r}")
    if path.startswith("file:") and not path.startswith("file://"):  # Hadoop's file:/abs/path
        path = path[len("file:"):]
    from rcfmt.storage import local_path

    lowered = path.lower()
    if remote_ok and lowered.startswith(("s3://", "s3a://")):
        return "s3://" + path.split("://", 1)[1].rstrip("/")
    if remote_ok and lowered.startswith(("gs://", "abfs://", "abfss://", "az://")):
        return path.rstrip("/")
    return os.path.abspath(local_path(path))


#: the version a relation reads when the user named none: the latest one when it was
#: loaded, set by ``RcfmtDataSource.schema()`` (Spark pickles the source once per load
#: and every plan of the relation unpickles it), so that every action on one DataFrame
#: reads one version, as a Parquet DataFrame reads the files listed at its load
LOADED_VERSION = "rcfmt.loadedVersion"


class ReadOptions:
    """``path``, ``version``, ``maxPartitionBytes``, ``minPartitions``, ``batchRows``,
    ``verifyChecksums``, ``statsDir``, ``pushdown``, ``planningFooters``, ``fetch`` and
    ``fetch*Bytes`` (:func:`fetch_options`), and the
    relation-defining ``filter`` (a SQL predicate), ``filterExpr`` (an rcfmt expression
    as JSON, ANDed with ``filter``) and ``columns`` (comma-separated)."""

    def __init__(self, options):
        opts = lower_keys(options)
        self.path = _path(opts, remote_ok=True)
        self.s3 = s3_options(opts)
        self.azure = azure_options(opts)
        self.version = _int(opts, "version", None)
        if self.version is None:
            self.version = _int(opts, LOADED_VERSION, None)
        self.max_partition_bytes = _int(opts, "maxPartitionBytes", 128 << 20)
        # (Spark's own file sources aim for its default parallelism: the cores of local[*])
        self.min_partitions = _int(opts, "minPartitions", os.cpu_count() or 1)
        self.batch_rows = _int(opts, "batchRows", 262144)
        self.planning_footers = _int(opts, "planningFooters", 32, lo=0)
        self.verify_checksums = _bool(opts, "verifyChecksums", True)
        self.fetch = fetch_options(opts)
        self.stats_dir = opts.get("statsdir") or None
        raw = str(opts.get("pushdown", "auto")).strip().lower()
        if raw not in ("auto", "true", "false"):
            raise InvalidOptionError(f"option pushdown={raw!r} must be auto, true or false")
        self.pushdown_option = raw
        # relation-defining options: every scan of the DataFrame is these rows of these columns
        self.filter = opts.get("filter") or None
        self.filter_expr = opts.get("filterexpr") or None  # an rcfmt expression as JSON (rcfmt.predicate.expr_json)
        # (an empty list: no column -- count(*) and existence answered from metadata)
        self.columns = [] if "columns" in opts and not str(opts["columns"]).strip() else _list(opts, "columns")

    def relation_schema(self, schema: pa.Schema) -> pa.Schema:
        """The dataset ``schema`` narrowed to the ``columns`` option (in its order)."""
        if self.columns is None:
            return schema
        lower = {n.lower(): n for n in schema.names}
        picked = []
        for name in self.columns:
            found = name if name in schema.names else lower.get(name.lower())
            if found is None:
                raise InvalidOptionError(f"columns option: unknown column {name!r}; columns: {schema.names}")
            if found in picked:
                raise InvalidOptionError(f"columns option: column {name!r} listed twice")
            picked.append(found)
        return pa.schema([schema.field(n) for n in picked], metadata=schema.metadata)

    @property
    def pushdown(self) -> bool:
        """Whether the reader offers filter pushdown: "auto" does where Spark keeps the
        pushdown read plan scoped to its scan (see spark_datasource.source)."""
        if self.pushdown_option == "auto":
            return SCAN_SCOPED_READ_INFO
        return self.pushdown_option == "true"


class WriteOptions:
    """``path``, ``blockRows``, ``pageSize``, ``pageRows``, ``compressedPageSize``, ``zstdBlockSize``, ``compression``,
    ``compressionLevel``, ``statsTruncate``, ``targetFileRows``, ``partitionBy``,
    ``clusterBy``, ``curve``, ``mapping``, ``clusteringSpec`` (JSON of a fitted
    :class:`rcfmt.layout.ClusteringSpec`, set by :mod:`spark_datasource.clustering`) and
    ``expectedVersion`` (the write fails with CommitConflictError unless the dataset is
    at that version when it starts; an overwrite also fails if a commit lands meanwhile),
    ``replaceWhere``, ``replaceWhereCheck`` and ``partitionOverwriteMode``.

    ``partitionOverwriteMode`` (``static``, the default, or ``dynamic``; mode
    "overwrite" only): ``dynamic`` replaces only the partitions the written rows fall
    in, as Spark's option of that name does for its file sources, in one commit: the
    files of those partitions in the version the job started from are removed, the
    written files added, other partitions kept (an unpartitioned dataset is one
    partition). The data is checked as an append's. Spark's session setting
    ``spark.sql.sources.partitionOverwriteMode`` does not reach a Python data source:
    give the write option.

    ``replaceWhere`` (mode "overwrite" only; an append refuses it): a Spark SQL
    predicate, in the syntax of the read ``filter`` option (:mod:`rcfmt.predicate.sql_filter`,
    Spark's semantics). The write replaces the rows of the dataset matching it (TRUE,
    not NULL) by the written rows, in one commit: those rows are deleted by deletion
    vectors, the other rows stay, the written files are added (history: operation
    ``replaceWhere``, ``replace_where``, ``rows_deleted``, ``rows_inserted``). The data
    is checked as an append's (columns, types, the dataset's partitioning). Every
    written row must satisfy the predicate, as Delta requires: a row for which it is
    FALSE or NULL fails the job and nothing is written (``replaceWhereCheck=false``
    writes such rows anyway; they then stand outside what the predicate replaced). A
    predicate that does not parse, that names an unknown column or that cannot be
    translated exactly fails before any task runs. The rows deleted are those of the
    version the job started from; a commit landing meanwhile that deleted rows of the
    same files (or rewrote them) fails the write with CommitConflictError, other
    commits (e.g. appends) are kept."""

    def __init__(self, options):
        opts = lower_keys(options)
        self.path = _path(opts, remote_ok=True)
        self.s3 = s3_options(opts)
        self.azure = azure_options(opts)
        self.writer_options = {}
        for key, name, lo in (("blockRows", "block_rows", 1), ("pageSize", "page_size", 64),
                              ("pageRows", "page_rows", 1), ("compressedPageSize", "compressed_page_size", 64),
                              ("statsTruncate", "stats_truncate", 1), ("zstdBlockSize", "zstd_block_size", 1024),
                              ("compressionLevel", "compression_level", -7)):
            value = _int(opts, key, None, lo)
            if value is not None:
                self.writer_options[name] = value
        if opts.get("compression") is not None:
            self.writer_options["compression"] = str(opts["compression"]).strip().lower()
        from rcfmt.dataset import DEFAULT_TARGET_FILE_ROWS

        self.target_file_rows = _int(opts, "targetFileRows", DEFAULT_TARGET_FILE_ROWS)
        self.partition_by = _list(opts, "partitionBy")
        self.cluster_by = _list(opts, "clusterBy")
        self.curve = str(opts.get("curve") or "zorder").strip().lower()
        self.mapping = str(opts.get("mapping") or "rank").strip().lower()
        self.expected_version = _int(opts, "expectedVersion", None, lo=0)
        raw = opts.get("replacewhere")
        if raw is not None and not str(raw).strip():
            raise InvalidOptionError("option replaceWhere is empty; give a SQL predicate (to replace every row, "
                                     "overwrite without it)")
        self.replace_where = None if raw is None else str(raw)
        self.replace_where_check = _bool(opts, "replaceWhereCheck", True)
        mode = str(opts.get("partitionoverwritemode") or "static").strip().lower()
        if mode not in ("static", "dynamic"):
            raise InvalidOptionError(f"option partitionOverwriteMode must be 'static' or 'dynamic', got {mode!r}")
        self.dynamic_overwrite = mode == "dynamic"
        self.clustering_spec = None
        if opts.get("clusteringspec"):
            from rcfmt.layout import ClusteringSpec

            self.clustering_spec = ClusteringSpec.from_json(opts["clusteringspec"])
            if self.cluster_by is not None and list(self.clustering_spec.columns) != self.cluster_by:
                raise InvalidOptionError(f"clusterBy={self.cluster_by} disagrees with clusteringSpec columns "
                                         f"{list(self.clustering_spec.columns)}")


class StreamReadOptions(ReadOptions):
    """A streaming read's options (``spark.readStream.format("rcfmt")``): those of
    :class:`ReadOptions` except ``version``, and ``startingVersion`` (a version number:
    stream the rows appended by that version and the later ones; ``latest``: only
    versions committed after the query starts; absent: the rows of the latest version
    first, then the later versions), ``maxFilesPerTrigger`` and ``maxRowsPerTrigger``
    (admission control: at most that many files / rows per micro-batch, at least one
    file) and ``skipChangeCommits`` (versions that delete or rewrite rows -- overwrite,
    delete, update, merge, replaceWhere -- are skipped instead of failing the query)."""

    def __init__(self, options):
        super().__init__(options)
        opts = lower_keys(options)
        self.version = None  # (a stream follows the versions after its start, whichever was loaded)
        if _int(opts, "version", None) is not None:
            raise InvalidOptionError("option version applies to batch reads; a streaming read starts at "
                                     "option startingVersion (a version number or 'latest')")
        raw = opts.get("startingversion")
        if raw is None or str(raw).strip().lower() == "latest":
            self.starting_version = None if raw is None else "latest"
        else:
            self.starting_version = _int(opts, "startingVersion", None, lo=1)
        self.max_files = _int(opts, "maxFilesPerTrigger", None)
        self.max_rows = _int(opts, "maxRowsPerTrigger", None)
        self.skip_change_commits = _bool(opts, "skipChangeCommits", False)


class StreamWriteOptions(WriteOptions):
    """A streaming write's options (``df.writeStream.format("rcfmt")``): those of
    :class:`WriteOptions` except ``replaceWhere``, ``expectedVersion`` and ``partitionOverwriteMode``, and
    ``txnAppId`` (the application whose batches the dataset records for exactly-once
    commits; default: the streaming query's id, read from the ``checkpointLocation``'s
    ``metadata`` file, which Spark writes when the query starts)."""

    def __init__(self, options):
        super().__init__(options)
        opts = lower_keys(options)
        for key, value in (("replaceWhere", self.replace_where), ("expectedVersion", self.expected_version),
                           ("partitionOverwriteMode", "dynamic" if self.dynamic_overwrite else None)):
            if value is not None:
                raise InvalidOptionError(f"option {key} applies to batch writes, not to a streaming write")
        self.application = str(opts["txnappid"]).strip() if str(opts.get("txnappid") or "").strip() else None
        self.checkpoint_location = opts.get("checkpointlocation") or None
