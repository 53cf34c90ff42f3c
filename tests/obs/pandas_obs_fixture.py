# Writes two h5ad files (a.h5ad, b.h5ad) into argv[1] whose obs tables hold every column kind
# tessera stores — categoricals with missing values and non-ASCII categories, one with more
# categories than --max-categories 4 across the two files, floats with NaN, nullable Int64 and
# boolean with pd.NA, plain bools and integers, a uint8 column that is float32 in the second
# file — and prints what pandas holds, per column, as JSON (missing as null), obs_names last.
import json, sys
import numpy as np, pandas as pd, anndata as ad, scipy.sparse as sp
out = sys.argv[1]
rng = np.random.default_rng(5)
def table(n, seed, cats_big, tissue_cats):
    r = np.random.default_rng(seed)
    df = pd.DataFrame(index=[f"cell-{seed}-{i}-ü" for i in range(n)])
    ct = pd.Categorical(r.choice(tissue_cats, n), categories=tissue_cats)
    ct[::7] = np.nan
    df["tissue"] = ct
    df["big"] = pd.Categorical(r.choice(cats_big, n), categories=cats_big)
    age = r.random(n) * 90
    age[::5] = np.nan
    df["age"] = age
    df["n_genes"] = r.integers(-5, 10**6, n).astype(np.int32)
    cnt = pd.array(r.integers(0, 50, n), dtype="Int64")
    cnt[::4] = pd.NA
    df["count_nullable"] = cnt
    flag = pd.array(r.random(n) > 0.5, dtype="boolean")
    flag[::3] = pd.NA
    df["flag_nullable"] = flag
    df["is_qc"] = r.random(n) > 0.3
    df["small_u8"] = r.integers(0, 255, n).astype(np.uint8)
    return df
a = table(23, 1, ["x1", "x2", "x3"], ["Gehirn", "Müller cell", "日本"])
b = table(18, 2, ["x4", "x5", "x1"], ["Müller cell", "T cell"])
b["small_u8"] = b["small_u8"].astype(np.float32)  # uint8 + float32 -> float32
for name, df in (("a", a), ("b", b)):
    X = sp.random(len(df), 9, density=0.4, format="csr", random_state=3, dtype=np.float32)
    X.data = np.ceil(X.data * 20)
    ad.AnnData(X=X, obs=df, var=pd.DataFrame(index=[f"g{i}" for i in range(9)])).write_h5ad(f"{out}/{name}.h5ad")
df = pd.concat([a, b])
exp = {}
for c in df.columns:
    vals = []
    for v in df[c].astype(object):
        if v is pd.NA or v is None or (isinstance(v, float) and np.isnan(v)):
            vals.append(None)
        elif isinstance(v, (bool, np.bool_)):
            vals.append(bool(v))
        elif isinstance(v, (int, np.integer)):
            vals.append(int(v))
        elif isinstance(v, (float, np.floating)):
            vals.append(float(v))
        else:
            vals.append(str(v))
    exp[c] = vals
exp["obs_names"] = [str(i) for i in df.index]
print(json.dumps(exp))
