"""Inputs and independent expectations for the obs/var input tests (tests/obs_input/*).

Run with /usr/bin/python3 (numpy, pandas, h5py, anndata from Debian). Subcommands:

  h5ad OUT EXPECTED [--cells N] [--raw]
      An AnnData file written by anndata with obs columns of every kind (categoricals of
      strings, ints, floats and bools with missing values, one with more categories than a
      small limit, numeric arrays of every width, bool, nullable integer and boolean with
      missing values, unique non-ASCII strings) and a var with a named index and columns of
      several kinds (with --raw also raw/var). EXPECTED gets what anndata.read_h5ad reads back,
      in the layout `expected()` describes.
  legacy OUT EXPECTED
      The AnnData 0.7 layout written with h5py (codes datasets whose `categories` attribute
      references obs/__categories/<name>), an unnamed `_index`, plus a `nullable-string-array`
      column (values + mask) and an `array` of fixed-length byte strings.
  broken DIR
      Damaged variants of a small file: DIR/short_column.h5ad (a column one row short),
      DIR/bad_code.h5ad (a category code past the vocabulary), DIR/unsupported.h5ad (a 2-D obs
      column and a dict column), DIR/no_column_order.h5ad.
  pandas_meta VAR_H5AD META_JSON WASM_JSON [--raw]
      META_JSON is the `pandas` metadata tessera wrote into var.parquet for the var of
      VAR_H5AD, WASM_JSON what parquet-wasm read from that file. Checks the metadata against
      what pyarrow's Table.from_pandas(var, preserve_index=True) would write (categoricals as
      their strings), and every value against anndata's var.
"""
import argparse
import json
import math
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")


def py_str(v):
    """Python's str() of a category or value (what tessera stores as category text)."""
    if isinstance(v, (bool, np.bool_)):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v)


def expected(df):
    """Columns as tessera's readers should see them: kind, dtype, values (strings or null)."""
    import pandas as pd

    out = []
    for name in df.columns:
        s = df[name]
        col = {"name": name}
        if isinstance(s.dtype, pd.CategoricalDtype):
            col["kind"] = "category"
            col["categories"] = [py_str(c) for c in s.cat.categories]
            col["values"] = [int(c) for c in s.cat.codes]
        elif str(s.dtype) == "boolean":
            col["kind"] = "bool"
            col["values"] = [None if v is pd.NA else py_str(bool(v)) for v in s]
        elif str(s.dtype) == "bool":
            col["kind"] = "bool"
            col["values"] = [py_str(bool(v)) for v in s]
        elif str(s.dtype)[:1] in ("I", "U"):  # pandas nullable integers
            col["kind"] = "numeric"
            col["dtype"] = str(s.dtype).lower()
            col["values"] = [None if v is pd.NA else str(int(v)) for v in s]
        elif s.dtype.kind in "iuf":
            col["kind"] = "numeric"
            col["dtype"] = {"float32": "float", "float64": "double"}.get(str(s.dtype), str(s.dtype))
            col["values"] = [py_str(v) for v in s.to_numpy()]
        else:
            col["kind"] = "string"
            col["values"] = [None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for v in s]
        out.append(col)
    return out


def obs_frame(n):
    import pandas as pd

    rng = np.random.default_rng(7)
    many = ["type_%03d" % i for i in range(150)]
    cat_values = [["alpha", "beta", "grün", "日本"][i % 4] for i in range(n)]
    cat_values[3] = None
    icat = [[10, -3, 7][i % 3] for i in range(n)]
    icat[1] = None
    fcat = [[0.1, 2.5, 1e16, 1e-05, float("inf")][i % 5] for i in range(n)]
    fcat[2] = np.nan
    bcat = [[True, False][i % 2] for i in range(n)]
    bcat[4] = None
    nint = pd.array([None if i % 5 == 0 else i * 3 - 7 for i in range(n)], dtype="Int32")
    nbool = pd.array([None if i % 4 == 1 else i % 3 == 0 for i in range(n)], dtype="boolean")
    f64 = rng.normal(size=n)
    f64[5] = np.nan
    return pd.DataFrame(
        {
            "cell_type": pd.Categorical(cat_values, categories=["alpha", "beta", "grün", "日本", "unused"]),
            "batch": pd.Categorical(icat),
            "score_bin": pd.Categorical(fcat),
            "is_doublet_cat": pd.Categorical(bcat),
            "cluster": pd.Categorical([many[i % len(many)] for i in range(n)]),
            "i8": rng.integers(-128, 128, n).astype(np.int8),
            "i16": rng.integers(-30000, 30000, n).astype(np.int16),
            "i32": rng.integers(-(2**31), 2**31 - 1, n).astype(np.int32),
            "i64": np.array([-(2**63) if i == 0 else i * 10**12 for i in range(n)], dtype=np.int64),
            "u8": rng.integers(0, 256, n).astype(np.uint8),
            "u16": rng.integers(0, 65536, n).astype(np.uint16),
            "u32": np.array([2**32 - 1 if i == 1 else i for i in range(n)], dtype=np.uint32),
            "u64": np.array([2**64 - 1 if i == 2 else i for i in range(n)], dtype=np.uint64),
            "f32": rng.normal(size=n).astype(np.float32),
            "f64": f64,
            "ok": np.array([i % 3 != 0 for i in range(n)]),
            "n_int": nint,
            "n_bool": nbool,
            "barcode_text": ["cell-%d-ü😀" % i for i in range(n)],
        },
        index=["C%05d" % i for i in range(n)],
    )


def var_frame(n_genes):
    import pandas as pd

    return pd.DataFrame(
        {
            "gene_symbols": ["SYM%d-ß" % i for i in range(n_genes)],
            "feature_types": pd.Categorical(["Gene Expression"] * (n_genes - 1) + [None]),
            "n_cells": np.arange(n_genes, dtype=np.int64) * 3,
            "mean": np.array([0.5 * i if i != 1 else np.nan for i in range(n_genes)], dtype=np.float64),
            "highly_variable": np.array([i % 2 == 0 for i in range(n_genes)]),
            "n_int": pd.array([None if i == 0 else i for i in range(n_genes)], dtype="UInt16"),
        },
        index=pd.Index(["ENSG%05d" % i for i in range(n_genes)], name="gene_ids"),
    )


def frame_dump(obs, var, names, var_index_name):
    return {
        "obs": expected(obs),
        "obs_names": list(names),
        "var": expected(var),
        "var_index": list(var.index),
        "var_index_name": var_index_name,
    }


def cmd_h5ad(a):
    import anndata
    import scipy.sparse as sp

    n, g = max(a.cells, 8), 6
    ad = anndata.AnnData(X=sp.csr_matrix((n, g), dtype=np.float32), obs=obs_frame(n), var=var_frame(g))
    if a.raw:
        raw = ad.copy()
        raw.var = raw.var.rename(columns={"gene_symbols": "raw_symbols"})
        ad = ad[:, :3].copy()
        ad.var = ad.var[["n_cells"]]
        ad.raw = raw
    ad.write_h5ad(a.out)
    back = anndata.read_h5ad(a.out)
    var = back.raw.var if a.raw else back.var
    with open(a.expected, "w") as f:
        json.dump(frame_dump(back.obs, var, back.obs_names, var.index.name), f)


def write_legacy(path):
    """AnnData 0.7's dataframe layout, written by hand with h5py."""
    import h5py

    n = 6
    text = h5py.string_dtype()
    with h5py.File(path, "w") as f:
        obs = f.create_group("obs")
        obs.attrs["encoding-type"] = "dataframe"
        obs.attrs["encoding-version"] = "0.1.0"
        obs.attrs["_index"] = "_index"
        obs.attrs["column-order"] = np.array(["kind", "level", "note", "fixed", "count"], dtype=object)
        obs.create_dataset("_index", data=np.array(["a%d" % i for i in range(n)], dtype=object), dtype=text)
        cats = obs.create_group("__categories")
        kinds = cats.create_dataset("kind", data=np.array(["T cell", "B cell", "NK ü"], dtype=object), dtype=text)
        codes = obs.create_dataset("kind", data=np.array([0, 1, 2, -1, 1, 0], dtype=np.int8))
        codes.attrs["categories"] = kinds.ref
        levels = cats.create_dataset("level", data=np.array([1, 5, 9], dtype=np.int64))
        lcodes = obs.create_dataset("level", data=np.array([2, 2, 1, 0, -1, 0], dtype=np.int16))
        lcodes.attrs["categories"] = levels.ref
        note = obs.create_group("note")
        note.attrs["encoding-type"] = "nullable-string-array"
        note.attrs["encoding-version"] = "0.1.0"
        note.create_dataset("values", data=np.array(["x", "", "zß", "w", "v", "u"], dtype=object), dtype=text)
        note.create_dataset("mask", data=np.array([False, False, True, False, True, False]))
        obs.create_dataset("fixed", data=np.array([b"ab", b"c", b"", b"def", b"g", b"h"], dtype="S3"))
        obs.create_dataset("count", data=np.arange(n, dtype=np.uint32))
        var = f.create_group("var")
        var.attrs["encoding-type"] = "dataframe"
        var.attrs["_index"] = "index"
        var.attrs["column-order"] = np.array(["kind"], dtype=object)
        var.create_dataset("index", data=np.array(["g0", "g1"], dtype=object), dtype=text)
        vcats = var.create_group("__categories")
        vk = vcats.create_dataset("kind", data=np.array(["p", "q"], dtype=object), dtype=text)
        vcodes = var.create_dataset("kind", data=np.array([1, -1], dtype=np.int8))
        vcodes.attrs["categories"] = vk.ref
    return {
        "obs": [
            {"name": "kind", "kind": "category", "categories": ["T cell", "B cell", "NK ü"], "values": [0, 1, 2, -1, 1, 0]},
            {"name": "level", "kind": "category", "categories": ["1", "5", "9"], "values": [2, 2, 1, 0, -1, 0]},
            {"name": "note", "kind": "string", "values": ["x", "", None, "w", None, "u"]},
            {"name": "fixed", "kind": "string", "values": ["ab", "c", "", "def", "g", "h"]},
            {"name": "count", "kind": "numeric", "dtype": "uint32", "values": [str(i) for i in range(n)]},
        ],
        "obs_names": ["a%d" % i for i in range(n)],
        "var": [{"name": "kind", "kind": "string", "values": ["q", None]}],
        "var_index": ["g0", "g1"],
        "var_index_name": "index",
    }


def cmd_legacy(a):
    exp = write_legacy(a.out)
    # anndata itself reads the legacy categoricals the same way (the extra encodings it predates).
    try:
        import anndata

        back = anndata.read_h5ad(a.out)
        assert list(back.obs["kind"].astype(object).where(back.obs["kind"].notna(), None)) == [
            "T cell", "B cell", "NK ü", None, "B cell", "T cell"]
    except ImportError:
        pass
    except Exception as e:  # anndata 0.8 cannot read nullable-string-array; the categoricals are checked above
        if "nullable-string-array" not in str(e) and "note" not in str(e):
            print("anndata:", e, file=sys.stderr)
    with open(a.expected, "w") as f:
        json.dump(exp, f)


def small_anndata(path, mutate):
    import anndata
    import h5py
    import pandas as pd
    import scipy.sparse as sp

    n = 4
    obs = pd.DataFrame({"group": pd.Categorical(["a", "b", "a", "b"]), "x": np.arange(n, dtype=np.float32)},
                       index=["c%d" % i for i in range(n)])
    anndata.AnnData(X=sp.csr_matrix((n, 2), dtype=np.float32), obs=obs,
                    var=pd.DataFrame(index=["g0", "g1"])).write_h5ad(path)
    with h5py.File(path, "r+") as f:
        mutate(f)


def cmd_broken(a):
    import h5py

    def short(f):
        del f["obs/x"]
        f["obs"].create_dataset("x", data=np.arange(3, dtype=np.float32))
        f["obs/x"].attrs["encoding-type"] = "array"

    def bad_code(f):
        f["obs/group/codes"][2] = 5

    def unsupported(f):
        f["obs"].create_dataset("matrix", data=np.zeros((4, 2)))
        f["obs/matrix"].attrs["encoding-type"] = "array"
        d = f["obs"].create_group("nested")
        d.attrs["encoding-type"] = "dict"
        f["obs"].attrs["column-order"] = np.array(["group", "matrix", "nested", "x"], dtype=object)

    def no_order(f):
        del f["obs"].attrs["column-order"]

    small_anndata(a.dir + "/short_column.h5ad", short)
    small_anndata(a.dir + "/bad_code.h5ad", bad_code)
    small_anndata(a.dir + "/unsupported.h5ad", unsupported)
    small_anndata(a.dir + "/no_column_order.h5ad", no_order)


def pyarrow_metadata(df):
    """pyarrow.pandas_compat.construct_metadata for a frame of flat columns with its index kept
    (preserve_index=True), derived from pandas' own dtype names."""
    import pandas as pd

    def logical(s):
        if str(s.dtype) in ("bool", "boolean"):
            return "bool"
        if s.dtype.kind in "iuf":
            return {"float32": "float32", "float64": "float64"}.get(str(s.dtype), str(s.dtype).lower())
        if str(s.dtype)[:1] in ("I", "U"):
            return str(s.dtype).lower()
        kind = pd.api.types.infer_dtype(s, skipna=True)
        return "unicode" if kind == "string" else kind

    def entry(name, field, s):
        return {"name": name, "field_name": field, "pandas_type": logical(s), "numpy_type": str(s.dtype), "metadata": None}

    level = df.columns
    kind = pd.api.types.infer_dtype(level, skipna=True)
    column_index = {"name": level.name, "field_name": level.name, "pandas_type": "unicode" if kind == "string" else kind,
                    "numpy_type": str(level.dtype), "metadata": {"encoding": "UTF-8"} if kind == "string" else None}
    index_field = df.index.name if df.index.name is not None else "__index_level_0__"
    columns = [entry(c, c, df[c]) for c in df.columns]
    columns.append(entry(df.index.name, index_field, df.index.to_series()))
    return {"index_columns": [index_field], "column_indexes": [column_index], "columns": columns,
            "creator": {"library": "tessera"}, "pandas_version": pd.__version__}


def cmd_pandas_meta(a):
    import anndata

    back = anndata.read_h5ad(a.var_h5ad)
    var = (back.raw.var if a.raw else back.var).copy()
    for c in var.columns:  # tessera stores categoricals as their strings
        if str(var[c].dtype) == "category":
            var[c] = var[c].astype(object).where(var[c].notna(), None)
    got = json.load(open(a.meta))
    want = pyarrow_metadata(var)
    assert got["creator"]["library"] == "tessera" and isinstance(got["creator"].get("version"), str), got["creator"]
    got["creator"] = {"library": "tessera"}
    assert got == want, "pandas metadata differs:\n got  %s\n want %s" % (json.dumps(got), json.dumps(want))
    wasm = json.load(open(a.wasm))
    index_field = want["index_columns"][0]
    assert wasm["names"] == list(var.columns) + [index_field], wasm["names"]
    assert json.loads(wasm["kv"]["pandas"]) == json.load(open(a.meta)), "parquet-wasm sees other metadata"
    frame = var.copy()
    frame.index = range(len(frame))
    frame[index_field] = list(var.index)
    for c in frame.columns:
        for i, v in enumerate(frame[c]):
            theirs = wasm["columns"][c][i]
            missing = v is None or v is pd_na() or (isinstance(v, float) and math.isnan(v))
            if missing:
                assert theirs is None, (c, i, theirs)
            elif isinstance(v, (bool, np.bool_)):
                assert theirs == ("true" if v else "false"), (c, i, theirs)
            elif isinstance(v, (float, np.floating)):
                assert float(theirs) == float(v), (c, i, theirs, v)
            elif isinstance(v, (int, np.integer)):
                assert int(theirs) == int(v), (c, i, theirs, v)
            else:
                assert theirs == v, (c, i, theirs, v)
    print("ok")


def pd_na():
    import pandas as pd

    return pd.NA


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("h5ad")
    h.add_argument("out")
    h.add_argument("expected")
    h.add_argument("--cells", type=int, default=40)
    h.add_argument("--raw", action="store_true")
    lg = sub.add_parser("legacy")
    lg.add_argument("out")
    lg.add_argument("expected")
    b = sub.add_parser("broken")
    b.add_argument("dir")
    m = sub.add_parser("pandas_meta")
    m.add_argument("var_h5ad")
    m.add_argument("meta")
    m.add_argument("wasm")
    m.add_argument("--raw", action="store_true")
    a = p.parse_args()
    {"h5ad": cmd_h5ad, "legacy": cmd_legacy, "broken": cmd_broken, "pandas_meta": cmd_pandas_meta}[a.cmd](a)


if __name__ == "__main__":
    main()
