"""``rcfmt convert SRC DST``: Parquet, Arrow IPC (Feather v2), CSV and rcfmt in either
direction, streamed batch by batch (a clustered single file is the exception: its rows
are ordered in memory).

The format is read from the name: ``.parquet``/``.pq``, ``.arrow``/``.feather``/
``.ipc``, ``.csv``, ``.rcfmt``; a directory (an existing one, a name ending in ``/``,
a name without a suffix, an object-store prefix, or any target with
``--partition-by``) is an rcfmt dataset.
"""
from __future__ import annotations

import os
from typing import Iterator

import pyarrow as pa

from ..errors import InvalidOptionError

__all__ = ["FORMATS", "format_of", "open_source", "convert"]

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".arrow": "ipc", ".feather": "ipc", ".ipc": "ipc",
           ".csv": "csv", ".rcfmt": "rcfmt"}


def format_of(path: str, *, target: bool = False, partitioned: bool = False) -> str:
    """"parquet", "ipc", "csv", "rcfmt" or "dataset" for ``path``."""
    from ..storage import is_remote, local_path, remote_kind

    text = str(path)
    if target and partitioned:
        return "dataset"
    if text.endswith("/") or (not is_remote(text) and os.path.isdir(local_path(text))):
        return "dataset"
    suffix = os.path.splitext(text.rstrip("/"))[1].lower()
    if suffix in FORMATS:
        return FORMATS[suffix]
    if not suffix:
        if is_remote(text) and not target and remote_kind(text) == "file":
            return "rcfmt"
        return "dataset"
    raise InvalidOptionError(f"{text!r}: unknown format {suffix!r}; known: {sorted(FORMATS)} or a directory")


def open_source(path: str) -> tuple[pa.Schema, Iterator[pa.RecordBatch], int | None]:
    """``(schema, batches, rows if known)`` of the file or dataset at ``path``."""
    fmt = format_of(path)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        pf = pq.ParquetFile(path)
        return pf.schema_arrow, pf.iter_batches(), pf.metadata.num_rows
    if fmt == "ipc":
        import pyarrow.ipc as ipc

        try:
            reader = ipc.open_file(path)
            return reader.schema, (reader.get_batch(i) for i in range(reader.num_record_batches)), None
        except pa.ArrowInvalid:  # the streaming format
            stream = ipc.open_stream(path)
            return stream.schema, iter(stream), None
    if fmt == "csv":
        reader = _open_csv(path)
        return reader.schema, iter(reader), None
    if fmt == "rcfmt":
        from ..file.reader import RcfmtFile

        f = RcfmtFile(path)
        scan = f.scan()

        def batches():
            try:
                yield from scan.iter_batches()
            finally:
                f.close()

        return scan.output_schema, batches(), f.num_rows
    from ..dataset import open_dataset

    ds = open_dataset(path)
    return ds.schema, ds.iter_batches(), ds.num_rows


def convert(source: str, target: str, *, block_rows: int | None = None, compression: str | None = None,
            cluster_by: list[str] | None = None, curve: str = "zorder", partition_by: list[str] | None = None,
            progress=None) -> str:
    """Convert ``source`` into ``target``; returns the target's format. ``progress``: a
    bar of rows on stderr (None: on a terminal; True; False)."""
    from ..runtime.progress import progress_bar, wanted

    wanted(progress)
    out_fmt = format_of(target, target=True, partitioned=bool(partition_by))
    if out_fmt != "dataset" and partition_by:
        raise InvalidOptionError("--partition-by writes a dataset: give a directory as the target")
    if out_fmt not in ("rcfmt", "dataset") and (cluster_by or block_rows or compression not in (None, "auto")):
        raise InvalidOptionError("--block-rows, --compression and --cluster-by apply to rcfmt targets")
    schema, batches, total = open_source(source)
    with progress_bar(progress, total=total, desc="convert") as step:
        def counted():
            for batch in batches:
                yield batch
                step(batch.num_rows)

        return _convert(pa.RecordBatchReader.from_batches(schema, counted()), target, out_fmt, block_rows,
                        compression, cluster_by, curve, partition_by)


def _convert(reader: pa.RecordBatchReader, target: str, out_fmt: str, block_rows, compression, cluster_by, curve,
             partition_by) -> str:
    options = {}
    if block_rows:
        options["block_rows"] = block_rows
    if compression:
        options["compression"] = compression
    if out_fmt == "rcfmt":
        from ..file.writer import write_table

        write_table(reader.read_all() if cluster_by else reader, target, cluster_by=cluster_by, curve=curve,
                    progress=False, **options)
    elif out_fmt == "dataset":
        from ..dataset import write_dataset

        write_dataset(reader, target.rstrip("/") if "://" in target else target, partition_by=partition_by,
                      cluster_by=cluster_by, curve=curve, progress=False, **options)
    else:
        _write_foreign(reader, target, out_fmt)
    return out_fmt


def _open_csv(path: str):
    """A CSV file's batches, read as the CSV this command writes reads back whole: only
    an unquoted empty field is NULL (``""`` is an empty string, ``nan`` a NaN, as DuckDB
    reads them), values may hold newlines, and in a one-column file an empty line is a
    NULL (Arrow's writer writes one so); blank lines between rows of several columns are
    skipped."""
    import pyarrow.csv as csv

    convert = csv.ConvertOptions(null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False)
    reader = csv.open_csv(path, parse_options=csv.ParseOptions(newlines_in_values=True), convert_options=convert)
    if len(reader.schema) == 1:
        reader = csv.open_csv(path, parse_options=csv.ParseOptions(newlines_in_values=True, ignore_empty_lines=False),
                              convert_options=convert)
    return reader


def _write_foreign(reader: pa.RecordBatchReader, target: str, fmt: str) -> None:
    """Stream into a Parquet, IPC or CSV file, written under a temporary name and renamed
    when whole (a failure leaves nothing at ``target``)."""
    import tempfile

    directory = os.path.dirname(os.path.abspath(target))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(target)}.", suffix=".tmp", dir=directory)
    os.close(fd)
    try:
        if fmt == "parquet":
            import pyarrow.parquet as pq

            with pq.ParquetWriter(tmp, reader.schema) as w:
                for batch in reader:
                    w.write_batch(batch)
        elif fmt == "ipc":
            import pyarrow.ipc as ipc

            with ipc.new_file(tmp, reader.schema) as w:
                for batch in reader:
                    w.write_batch(batch)
        else:
            import pyarrow.csv as csv

            with csv.CSVWriter(tmp, reader.schema) as w:
                for batch in reader:
                    w.write_batch(batch)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # (as the file a plain open makes: mkstemp's is 0600)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
