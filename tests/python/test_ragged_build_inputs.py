"""`ragged build` from a CSV file written the way spreadsheets and pandas write them (quoted
fields holding commas, doubled quotes and line breaks, CRLF line ends, a byte-order mark), from a
Parquet file of an independent writer and from an HDF5 granule read through a config builds the
same hive, content hash for content hash, as the same points given as `.npy` columns."""
import json

import numpy as np

from conftest import run_cli


def points(n=3000, seed=5):
    rng = np.random.default_rng(seed)
    lat = rng.uniform(44.0, 46.0, n)
    lon = rng.uniform(6.0, 8.0, n)
    value = rng.normal(1000.0, 40.0, n)
    return lat, lon, value


def build(tmp_path, name, source):
    out = tmp_path / name
    proc = run_cli("ragged", "build", "--input", source, "--out", out, "--value-col", "height",
                   "--cell-order", "12", "--shard-order", "6", "--threads", "1")
    return json.loads(proc.stdout)


def test_quoted_csv_and_npy_columns_build_identical_hives(tmp_path):
    lat, lon, value = points()
    columns = tmp_path / "columns"
    columns.mkdir()
    for name, data in (("lat", lat), ("lon", lon), ("height", value)):
        np.save(columns / f"{name}.npy", data)

    # repr() is the shortest text that reads back as the same double.
    rows = ['"station, name","lat","lon","height"']
    for i in range(len(lat)):
        label = f'"site {i}, ""north""\nridge"' if i % 3 == 0 else f"site{i}"
        height = f'"{value[i]!r}"' if i % 2 else repr(value[i])
        rows.append(f"{label},{lat[i]!r},\"{lon[i]!r}\",{height}")
    csv = tmp_path / "points.csv"
    csv.write_bytes(b"\xef\xbb\xbf" + "\r\n".join(rows).encode() + b"\r\n")

    # The same points as one beam of an HDF5 granule, read through a zagg-style config.
    import h5py

    granule = tmp_path / "granule.h5"
    with h5py.File(granule, "w") as f:
        g = f.create_group("gt1l/points")
        g["lat"], g["lon"], g["height"] = lat, lon, value
    config = tmp_path / "points.yaml"
    config.write_text("data_source:\n  groups: [gt1l, gt2l]\n"
                      "  coordinates: {latitude: '/{group}/points/lat', longitude: '/{group}/points/lon'}\n"
                      "  variables: {height: '/{group}/points/height'}\n"
                      "aggregation:\n  variables:\n    count: {function: len, source: height}\n"
                      "output:\n  grid: {type: healpix, indexing_scheme: nested, parent_order: 6, child_order: 12}\n")
    from_h5 = json.loads(run_cli("ragged", "build", "--input", granule, "--config", config, "--out", tmp_path / "h5",
                                 "--threads", "1").stdout)

    from_npy = build(tmp_path, "npy", columns)
    from_csv = build(tmp_path, "csv", csv)
    assert from_csv["rows"] == from_npy["rows"] == from_h5["rows"] == {"read": 3000, "accepted": 3000, "rejected": 0,
                                                                       "rejected_by_reason": {}}
    assert len(from_npy["leaves"]) >= 2
    assert [(l["leaf"], l["combined_hash"]) for l in from_csv["leaves"]] == \
           [(l["leaf"], l["combined_hash"]) for l in from_npy["leaves"]] == \
           [(l["leaf"], l["combined_hash"]) for l in from_h5["leaves"]]


def test_a_malformed_csv_names_the_file_and_line(tmp_path):
    csv = tmp_path / "bad.csv"
    csv.write_text('lat,lon,height\n45.1,7.1,1000\n45.2,"7.2"x,1001\n')
    proc = run_cli("ragged", "build", "--input", csv, "--out", tmp_path / "out", "--value-col", "height", check=False)
    assert proc.returncode == 1
    assert f"{csv}: line 3, field 2: characters after the closing quote" in proc.stderr
    unclosed = tmp_path / "unclosed.csv"
    unclosed.write_text('lat,lon,height\n45.1,7.1,1000\n45.2,"7.2,1001\n45.3,7.3,1002\n')
    proc = run_cli("ragged", "build", "--input", unclosed, "--out", tmp_path / "out", "--value-col", "height", check=False)
    assert proc.returncode == 1
    assert f"{unclosed}: line 3: a quoted field is not closed before the end of the file" in proc.stderr
    assert not (tmp_path / "out" / "morton_hive.json").exists()


def test_fill_values_and_valid_range_drop_exactly_the_rows_numpy_drops(tmp_path):
    from tessera import ragged

    lat, lon, value = points(2000, 9)
    value = value.astype(np.float32)
    value[::37] = np.finfo(np.float32).max  # the ICESat-2 products' _FillValue
    value[5::41] = -9999.0
    is_fill = (value == np.finfo(np.float32).max) | (value == -9999.0)
    outside = ~is_fill & ((value < 950.0) | (value > 1050.0))
    keep = ~is_fill & ~outside
    assert is_fill.sum() > 50 and outside.sum() > 50 and keep.sum() > 1000

    filtered = ragged.build(tmp_path / "filtered", lat=lat, lon=lon, value=value, drop_value=[3.4028235e38, -9999],
                            valid_range=(950, 1050), cell_order=12, shard_order=6, threads=1)
    assert filtered["rows"] == {"read": 2000, "accepted": int(keep.sum()), "rejected": int((~keep).sum()),
                                "rejected_by_reason": {"fill_value": int(is_fill.sum()), "outside_valid_range": int(outside.sum())}}
    truth = ragged.build(tmp_path / "truth", lat=lat[keep], lon=lon[keep], value=value[keep], cell_order=12,
                         shard_order=6, threads=1)
    assert [(l["leaf"], l["combined_hash"]) for l in filtered["leaves"]] == \
           [(l["leaf"], l["combined_hash"]) for l in truth["leaves"]]

    # One-sided ranges, and the CLI spelling of a negative drop value.
    low_only = ragged.build(tmp_path / "low", lat=lat, lon=lon, value=value, valid_range=(0, None),
                            cell_order=12, shard_order=6, threads=1)
    assert low_only["rows"]["rejected_by_reason"] == {"outside_valid_range": int((value < 0).sum())}
    np.save(tmp_path / "lat.npy", lat)
    np.save(tmp_path / "lon.npy", lon)
    np.save(tmp_path / "height.npy", value)
    proc = run_cli("ragged", "build", "--input", tmp_path, "--out", tmp_path / "cli", "--value-col", "height",
                   "--cell-order", "12", "--shard-order", "6", "--drop-value=-9999", "--drop-value", "3.4028235e38")
    assert json.loads(proc.stdout)["rows"]["rejected_by_reason"] == {"fill_value": int(is_fill.sum())}
    bad = run_cli("ragged", "build", "--input", tmp_path, "--out", tmp_path / "bad", "--value-col", "height",
                  "--valid-range", "1050,950", check=False)
    assert bad.returncode != 0 and "--valid-range" in bad.stderr


def test_parquet_points_build_the_hive_the_npy_columns_build(tmp_path):
    """The Parquet file comes from an independent writer (the Rust Apache Parquet writer compiled
    to WebAssembly): several zstd row groups, a float32 value column with nulls."""
    import pathlib
    import subprocess

    from tessera import ragged

    lat, lon, value = points(2500, 13)
    value = value.astype(np.float32)
    null = np.zeros(len(value), bool)
    null[::23] = True
    spec = {"compression": "ZSTD", "rowGroupSize": 700, "columns": [
        {"name": "lat", "type": "double", "data": lat.tolist()},
        {"name": "lon", "type": "double", "data": lon.tolist()},
        {"name": "height", "type": "float", "data": [None if n else float(v) for v, n in zip(value, null)]},
    ]}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    node_dir = pathlib.Path(__file__).resolve().parents[1] / "columnar" / "node"
    parquet = tmp_path / "points.parquet"
    subprocess.run(["node", str(node_dir / "write_parquet_wasm.mjs"), str(parquet), str(tmp_path / "spec.json")],
                   check=True, cwd=node_dir)

    from_parquet = build(tmp_path, "parquet", parquet)
    assert from_parquet["rows"] == {"read": 2500, "accepted": int((~null).sum()), "rejected": int(null.sum()),
                                    "rejected_by_reason": {"non_finite_value": int(null.sum())}}
    truth = ragged.build(tmp_path / "truth", lat=lat[~null], lon=lon[~null], value=value[~null], cell_order=12,
                         shard_order=6, threads=1)
    assert len(truth["leaves"]) >= 2
    assert [(l["leaf"], l["combined_hash"]) for l in from_parquet["leaves"]] == \
           [(l["leaf"], l["combined_hash"]) for l in truth["leaves"]]
    missing = run_cli("ragged", "build", "--input", parquet, "--out", tmp_path / "x", "--value-col", "h", check=False)
    assert missing.returncode != 0 and f"{parquet}: no column 'h' in the Parquet schema" in missing.stderr
