"""`--json` of `cells info`, `cells verify` and `tessera info/verify` on a deltacells dataset,
against the source h5ad, the tile files on disk and the spec's own tile decoder (test_cells.py)."""
import json
import struct

import numpy as np
import pytest

from cells_truth import read_source, write_source
from conftest import run_cli
from test_cells import decode_tile


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    root = tmp_path_factory.mktemp("cells-json")
    write_source(root / "a.h5ad", n_cells=300, n_genes=200, seed=5)
    run_cli("cells", "convert", "--h5ad-glob", root / "a.h5ad", "--output", root / "ds", "--tile-size", "64",
            "--quiet")
    return root


def test_info_json_against_the_source_and_the_files(converted, tmp_path):
    ds = converted / "ds"
    adata = read_source(converted / "a.h5ad")
    info = json.loads(run_cli("cells", "info", ds, "--json", "--cache-dir", tmp_path).stdout)
    assert json.loads(run_cli("info", ds, "--json", "--cache-dir", tmp_path).stdout) == info  # routed the same
    tiles = sorted((ds / "tiles").iterdir())
    starts = range(0, 300, 64)
    assert info["path"] == str(ds) and info["format"] == "deltacells-dataset" and info["version"] == 2
    assert (info["n_cells"], info["n_genes"], info["tile_size"], info["n_tiles"]) == (300, 200, 64, len(tiles))
    assert info["tile_cells"] == [min(64, 300 - s) for s in starts]
    assert info["tile_nnz"] == [adata.X[s:s + 64].nnz for s in starts]
    assert info["nonzeros"] == adata.X.nnz
    assert info["tile_bytes"] == [p.stat().st_size for p in tiles] and info["bytes"] == sum(info["tile_bytes"])
    assert info["has_gene_order"] and info["has_var_names"] and info["has_var_table"]
    obs = info["obs"]
    assert obs["columns"] == adata.obs.shape[1] + 1  # + obs_names
    assert sum(obs["kinds"].values()) == obs["columns"] and obs["localized"] == 0
    assert obs["cache_root"] == str(tmp_path)
    run_cli("cells", "obs", "localize", ds, "--columns", "cell_type,age", "--cache-dir", tmp_path)
    again = json.loads(run_cli("cells", "info", ds, "--json", "--cache-dir", tmp_path).stdout)
    assert again["obs"]["localized"] == 2
    assert info["metadata"]["source"] == "h5ad"


def test_tile_info_json_against_the_spec_decoder(converted):
    tile = sorted((converted / "ds" / "tiles").iterdir())[1]
    buf = tile.read_bytes()
    indptr, indices, _ = decode_tile(buf)
    info = json.loads(run_cli("cells", "info", tile, "--json").stdout)
    version, _, n_cells, nnz, n_genes, n_chunks = struct.unpack_from("<IIQQII", buf, 8)
    assert (info["format"], info["version"], info["n_cells"], info["n_genes"]) == ("deltacells-tile", version, n_cells, n_genes)
    assert info["nonzeros"] == nnz == indices.size and info["bytes"] == len(buf)
    assert len(info["chunks"]) == n_chunks
    assert info["chunks"][0]["cells"][0] == 0 and info["chunks"][-1]["cells"][1] == n_cells
    for chunk in info["chunks"]:
        lo, hi = chunk["cells"]
        assert chunk["nonzeros"] == [int(indptr[lo]), int(indptr[hi])]


def test_verify_json_reports_success_and_failure_as_one_object(converted, tmp_path):
    import shutil

    ok = json.loads(run_cli("verify", converted / "ds", "--json").stdout)
    assert ok["ok"] and ok["failure"] is None and ok["tiles"] == 5 and ok["cells"] == 300
    assert ok["obs_verified"] and ok["obs_shards"] >= 1 and ok["warnings"] == []
    bad = tmp_path / "bad"
    shutil.copytree(converted / "ds", bad)
    tile = sorted((bad / "tiles").iterdir())[2]
    raw = bytearray(tile.read_bytes())
    raw[200] ^= 0xFF
    tile.write_bytes(bytes(raw))
    proc = run_cli("cells", "verify", bad, "--json", check=False)
    assert proc.returncode == 1 and proc.stderr == ""
    report = json.loads(proc.stdout)
    assert not report["ok"] and report["tiles"] is None
    assert report["failure"]["kind"] == "format" and tile.name in report["failure"]["message"]
    # without --json the text report is unchanged: progress on stdout, the error on stderr
    text = run_cli("cells", "verify", bad, check=False)
    assert text.returncode == 1 and text.stdout.startswith("verified") and tile.name in text.stderr


def test_verify_json_of_a_single_tile(converted):
    tile = sorted((converted / "ds" / "tiles").iterdir())[0]
    report = json.loads(run_cli("cells", "verify", tile, "--json").stdout)
    indices = decode_tile(tile.read_bytes())[1]
    assert report["kind"] == "tile" and report["ok"] and report["nonzeros"] == indices.size and report["cells"] == 64


def test_obs_info_json_names_every_source_column(converted, tmp_path):
    adata = read_source(converted / "a.h5ad")
    info = json.loads(run_cli("cells", "obs", "info", converted / "ds", "--json", "--cache-dir", tmp_path).stdout)
    columns = {c["name"]: c for c in info["columns"]}
    assert set(columns) == set(adata.obs.columns) | {"obs_names"}
    for name in adata.obs.columns:
        is_category = str(adata.obs[name].dtype) == "category"
        assert (columns[name]["kind"] == "category") == is_category, name
        if is_category:
            assert columns[name]["categories"] == len(adata.obs[name].cat.categories)
        assert columns[name]["bytes_to_fetch"] > 0 and not columns[name]["local"]
    run_cli("cells", "obs", "localize", converted / "ds", "--columns", "donor", "--cache-dir", tmp_path)
    again = json.loads(run_cli("cells", "obs", "info", converted / "ds", "--json", "--cache-dir", tmp_path).stdout)
    assert [c["name"] for c in again["columns"] if c["local"]] == ["donor"]
    assert again["cache"].startswith(str(tmp_path))
