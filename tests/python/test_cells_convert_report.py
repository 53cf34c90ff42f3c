"""What `cells convert` tells a user about their h5ad: what it leaves out, and where the counts
are when X holds normalised values. The files are written with anndata; what they hold is read
back with h5py, never taken from tessera."""
import h5py
import numpy as np
import pytest
import scipy.sparse

from conftest import run_cli

anndata = pytest.importorskip("anndata")


def write_atlas(path, *, normalised, layers=True, raw=True):
    rng = np.random.default_rng(0)
    counts = scipy.sparse.random(40, 12, density=0.4, format="csr", random_state=1, dtype=np.float32)
    counts.data = np.ceil(counts.data * 9)
    x = counts.copy()
    if normalised:
        x.data = np.log1p(x.data / 3.0).astype(np.float32)
    a = anndata.AnnData(X=x)
    a.obs_names = [f"c{i}" for i in range(40)]
    a.var_names = [f"g{j}" for j in range(12)]
    a.obsm["X_pca"] = rng.normal(size=(40, 2))
    a.obsm["X_umap"] = rng.normal(size=(40, 2))
    a.uns["log1p"] = {"base": "e"}
    if layers:
        a.layers["counts"] = counts
    if raw:
        a.raw = anndata.AnnData(X=counts, var=a.var)
    a.write_h5ad(path)


def members(path, group):
    with h5py.File(path, "r") as f:
        return sorted(f[group].keys()) if group in f else []


def test_the_report_lists_what_is_not_converted(tmp_path):
    write_atlas(tmp_path / "a.h5ad", normalised=False)
    out = run_cli("cells", "convert", "--h5ad-glob", tmp_path / "a.h5ad", "--output", tmp_path / "ds").stdout
    line = next(l for l in out.splitlines() if l.startswith("not converted: "))
    listed = line[len("not converted: "):].split(" (")[0].split(", ")
    expected = [f"obsm/{m}" for m in members(tmp_path / "a.h5ad", "obsm")]
    expected += [f"uns/{m}" for m in members(tmp_path / "a.h5ad", "uns")]
    expected += ["layers/counts", "raw/X"]
    assert sorted(listed) == sorted(expected)
    # --layer converts the layer: then X is what is left out
    out = run_cli("cells", "convert", "--h5ad-glob", tmp_path / "a.h5ad", "--output", tmp_path / "ds2",
                  "--layer", "counts").stdout
    line = next(l for l in out.splitlines() if l.startswith("not converted: "))
    assert "X" in line.split(": ", 1)[1].split(" (")[0].split(", ") and "layers/counts" not in line


@pytest.mark.parametrize("layers, raw, advice", [
    (True, True, "convert the raw counts with --layer NAME (layers: counts) or --use-raw (raw/X)"),
    (False, True, "convert the raw counts with --use-raw (raw/X)"),
    (False, False, "the files have no layers or raw/X"),
])
def test_normalised_x_points_at_the_counts(tmp_path, layers, raw, advice):
    write_atlas(tmp_path / "n.h5ad", normalised=True, layers=layers, raw=raw)
    proc = run_cli("cells", "convert", "--h5ad-glob", tmp_path / "n.h5ad", "--output", tmp_path / "ds", "--quiet",
                   check=False)
    assert proc.returncode == 1 and "counts must be finite integers" in proc.stderr
    assert advice in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "ds").exists()
    if layers or raw:  # and the advice works
        flag = ["--layer", "counts"] if layers else ["--use-raw"]
        run_cli("cells", "convert", "--h5ad-glob", tmp_path / "n.h5ad", "--output", tmp_path / "ok", "--quiet", *flag)
