"""pandas in and out: the index (named, multi-level, range), nullable dtypes and
categoricals come back as the writer's DataFrame had them, with filters and column
subsets, from files and datasets."""
from __future__ import annotations

import numpy as np
import pytest

import rcfmt

pd = pytest.importorskip("pandas")


def _frame() -> "pd.DataFrame":
    n = 500
    i = np.arange(n)
    return pd.DataFrame({
        "a": pd.array([None if k % 7 == 0 else int(k) for k in i], dtype="Int64"),
        "b": pd.Categorical([["x", "y", "z"][k % 3] for k in i]),
        "c": pd.array([None if k % 5 == 0 else bool(k % 2) for k in i], dtype="boolean"),
        "s": pd.array([None if k % 11 == 0 else f"s{k % 17}" for k in i], dtype="string"),
        "f": np.where(i % 13 == 0, np.nan, i / 4.0),
        "t": pd.date_range("2024-01-01", periods=n, freq="h", tz="UTC"),
    }, index=pd.Index(i * 10, name="key"))


def test_round_trip_keeps_index_dtypes_and_categoricals(tmp_path):
    df = _frame()
    rcfmt.write_table(df, tmp_path / "f.rcfmt", block_rows=128)
    back = rcfmt.read_pandas(tmp_path / "f.rcfmt")
    pd.testing.assert_frame_equal(back, df, check_dtype=True)
    assert isinstance(back["b"].dtype, pd.CategoricalDtype) and back.index.name == "key"


def test_an_ordered_categorical_comes_back_ordered(tmp_path):
    """The file stores values and the categories in its metadata: an ordered categorical
    comes back ordered by its written categories, unused ones kept, so comparisons work;
    categories JSON cannot hold exactly come back sorted from the values."""
    cats = pd.Categorical(["b", "a", None, "b"], categories=["a", "b", "c"], ordered=True)
    df = pd.DataFrame({"c": cats, "u": pd.Categorical(["y", "x", "y", None]),
                       "r": pd.Categorical(["b", "a", "b", "a"], categories=["b", "a", "z"], ordered=True),
                       "t": pd.Categorical(pd.to_datetime(["2024-01-02", "2024-01-01", None, "2024-01-02"]))})
    rcfmt.write_table(df, tmp_path / "o.rcfmt")
    back = rcfmt.read_pandas(tmp_path / "o.rcfmt")
    assert back["c"].cat.ordered and list(back["c"].cat.categories) == ["a", "b", "c"]
    assert not back["u"].cat.ordered and list(back["u"].cat.categories) == ["x", "y"]
    assert list(back["r"].cat.categories) == ["b", "a", "z"] and (back["r"] > "b").tolist() == [False, True] * 2
    assert list(back["t"].cat.categories) == sorted(df["t"].cat.categories)
    assert (back["c"] > "a").tolist() == [True, False, False, True]
    assert back["c"].tolist()[:2] == ["b", "a"] and pd.isna(back["c"].tolist()[2])


def test_filters_and_columns_keep_the_index(tmp_path):
    df = _frame()
    rcfmt.write_table(df, tmp_path / "f.rcfmt", block_rows=128)
    got = rcfmt.read_pandas(tmp_path / "f.rcfmt", columns=["b", "a"], filter=rcfmt.col("a") >= 400)
    want = df[df["a"].fillna(-1) >= 400][["b", "a"]]
    pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("keep", [lambda df: df["b"] == "y", lambda df: df["b"] == "nope"])
def test_a_filtered_categorical_keeps_the_written_categories(tmp_path, keep):
    """The categories are the DataFrame's, not those of the rows a filter kept (pandas'
    own indexing and read_parquet keep them all; an empty result had object ones)."""
    df = _frame()
    rcfmt.write_table(df, tmp_path / "f.rcfmt", block_rows=128)
    literal = "y" if keep(pd.DataFrame({"b": ["y"]})).all() else "nope"
    got = rcfmt.read_pandas(tmp_path / "f.rcfmt", filter=rcfmt.col("b") == literal)
    assert got["b"].dtype == df["b"].dtype
    pd.testing.assert_frame_equal(got, df[keep(df)])


@pytest.mark.parametrize("columns", ["af", {"a"}, 3])
def test_columns_must_be_a_list_of_names(tmp_path, columns):
    """As read_table: a string is one name, not its letters ('af' read columns a and f)."""
    rcfmt.write_table(pd.DataFrame({"a": [1], "f": [2.0], "af": [3]}), tmp_path / "f.rcfmt")
    with pytest.raises(rcfmt.InvalidOptionError, match="columns must be a list of column names"):
        rcfmt.read_pandas(tmp_path / "f.rcfmt", columns=columns)
    assert list(rcfmt.read_pandas(tmp_path / "f.rcfmt", columns=["af"]).columns) == ["af"]
    for names in (pd.Index(["f", "a"]), np.array(["f", "a"]), (c for c in ["f", "a"])):  # (lists of names)
        assert list(rcfmt.read_pandas(tmp_path / "f.rcfmt", columns=names).columns) == ["f", "a"]


def test_multi_index_and_range_index(tmp_path):
    df = _frame().reset_index()
    df["g"] = df["key"] % 4
    multi = df.set_index(["key", "g"])
    rcfmt.write_table(multi, tmp_path / "m.rcfmt")
    pd.testing.assert_frame_equal(rcfmt.read_pandas(tmp_path / "m.rcfmt"), multi)
    plain = df.drop(columns=["key", "g"])  # a RangeIndex: stored as metadata only
    rcfmt.write_table(plain, tmp_path / "r.rcfmt")
    back = rcfmt.read_pandas(tmp_path / "r.rcfmt")
    pd.testing.assert_frame_equal(back, plain)
    assert isinstance(back.index, pd.RangeIndex)


@pytest.mark.parametrize("index", [pd.RangeIndex(500), pd.RangeIndex(10, 1510, 3, name="r"),
                                   pd.RangeIndex(0, -500, -1, name="down")], ids=repr)
def test_a_filtered_range_index_keeps_the_labels_of_its_rows(tmp_path, index):
    """A RangeIndex is stored as its bounds; the rows a filter keeps get their own labels
    back (as ``df[mask]`` has them), whichever blocks and threads read them, not labels
    numbered afresh from 0; unfiltered, the RangeIndex itself."""
    df = _frame().reset_index(drop=True).set_axis(index)
    rcfmt.write_table(df, tmp_path / "r.rcfmt", block_rows=128, page_rows=50)
    for flt, mask in [(rcfmt.col("a") >= 400, df["a"].fillna(-1) >= 400),
                      (rcfmt.col("b") == "y", df["b"] == "y"), (rcfmt.col("a") < 0, df["a"].fillna(0) < 0)]:
        for threads in (False, True):
            got = rcfmt.read_pandas(tmp_path / "r.rcfmt", columns=["a", "s"], filter=flt, use_threads=threads)
            pd.testing.assert_frame_equal(got, df[mask][["a", "s"]], check_index_type=False)
    back = rcfmt.read_pandas(tmp_path / "r.rcfmt")
    assert isinstance(back.index, pd.RangeIndex) and back.index.equals(index)


@pytest.mark.parametrize("index", [pd.RangeIndex(10, 14), pd.RangeIndex(20, 12, -2, name="a"),
                                   pd.MultiIndex.from_arrays([pd.RangeIndex(4, name="r"), list("wxyz")])],
                         ids=["range", "named like a column", "a level of a MultiIndex"])
def test_clustering_keeps_each_row_its_range_index_label(tmp_path, index):
    """A RangeIndex is stored as its bounds, which label rows by number: rows reordered
    by ``cluster_by`` keep their labels (stored as a column, as preserve_index does)."""
    df = pd.DataFrame({"a": [3, 1, 2, 0], "b": list("pqrs")}, index=index)
    rcfmt.write_table(df, tmp_path / "c.rcfmt", cluster_by=["a"], curve="sort")
    back = rcfmt.read_pandas(tmp_path / "c.rcfmt")
    assert back["a"].tolist() == [0, 1, 2, 3]
    pd.testing.assert_frame_equal(back.sort_index(), df.sort_index(), check_index_type=False)
    pd.testing.assert_frame_equal(rcfmt.read_pandas(tmp_path / "c.rcfmt", filter=rcfmt.col("a") >= 2).sort_index(),
                                  df[df["a"] >= 2].sort_index(), check_index_type=False)


def test_ordered_categoricals_under_any_label_and_in_the_index(tmp_path):
    """Ordered and sorted whatever labels the categorical: an int or tuple column label,
    a CategoricalIndex, a level of a MultiIndex (as pyarrow's Parquet round trip)."""
    cat = pd.Categorical(["b", "a", "b", None], categories=["a", "b"], ordered=True)
    frames = {"int label": pd.DataFrame({0: cat}), "tuple label": pd.DataFrame({("x", "y"): cat}),
              "index": pd.DataFrame({"v": [1, 2, 3, 4]}, index=pd.CategoricalIndex(cat, name="k")),
              "level": pd.DataFrame({"v": [1, 2, 3, 4]}, index=pd.MultiIndex.from_arrays([cat, [1, 2, 3, 4]]))}
    for what, df in frames.items():
        rcfmt.write_table(df, tmp_path / "c.rcfmt")
        back = rcfmt.read_pandas(tmp_path / "c.rcfmt")
        pd.testing.assert_frame_equal(back, df, obj=what)


def test_a_filtered_range_level_of_a_multi_index_keeps_its_labels(tmp_path):
    df = pd.DataFrame({"v": [1, 2, 3]},
                      index=pd.MultiIndex.from_arrays([pd.RangeIndex(10, 16, 2), ["a", "b", "c"]], names=["n", "k"]))
    rcfmt.write_table(df, tmp_path / "m.rcfmt")
    got = rcfmt.read_pandas(tmp_path / "m.rcfmt", filter=rcfmt.col("v") > 1)
    pd.testing.assert_frame_equal(got, df[df["v"] > 1])


def test_datasets_give_the_rows_with_the_index_as_a_column(tmp_path):
    """(Datasets do not keep pandas metadata yet: the index comes back as a column.)"""
    df = _frame()
    rcfmt.write_dataset(df, tmp_path / "ds", target_file_rows=200)
    back = rcfmt.read_pandas(tmp_path / "ds", filter=rcfmt.col("key") < 1000).sort_values("key")
    want = df[df.index < 1000].reset_index()
    assert back["key"].tolist() == want["key"].tolist()
    assert back["s"].fillna("<na>").tolist() == want["s"].fillna("<na>").tolist()
