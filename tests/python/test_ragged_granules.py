"""`ragged build --config` from ICESat-2 ATL06 granules in the product's layout (six beams of
`land_ice_segments` with quality summary, σ, `_FillValue`s and `delta_time`), written here with
h5py, and zagg's own `atl06.yaml`. Truth: numpy applied as the config defines each statistic,
per cell, with the cells computed by healpy on the closed-form authalic latitude."""
import json
import pathlib

import numpy as np
import pytest

from tessera import ragged

from conftest import run_cli
from test_ragged_cell_of import authalic_closed_form

h5py = pytest.importorskip("h5py")
healpy = pytest.importorskip("healpy")

CONFIGS = pathlib.Path(__file__).resolve().parents[1] / "data" / "conformance" / "zagg" / "configs"
BEAMS = ["gt1l", "gt1r", "gt2l", "gt2r", "gt3l", "gt3r"]
FILL = np.finfo(np.float32).max


def write_granule(path, seed, beams):
    """One ATL06 granule: per beam a track of segments crossing a small area of Antarctica."""
    rng = np.random.default_rng(seed)
    columns = []
    with h5py.File(path, "w") as f:
        f["ancillary_data/atlas_sdp_gps_epoch"] = np.array([1198800018.0])
        for beam in beams:
            n = int(rng.integers(300, 600))
            lat = np.linspace(-75.0, -74.6, n) + rng.normal(0, 0.002, n)
            lon = 100.0 + rng.uniform(0.0, 0.6, n)
            h = rng.normal(2500.0, 30.0, n).astype(np.float32)
            s = rng.uniform(0.05, 0.5, n).astype(np.float32)
            q = (rng.uniform(size=n) < 0.15).astype(np.int8)
            h[rng.uniform(size=n) < 0.05] = FILL
            s[rng.uniform(size=n) < 0.03] = FILL
            g = f.create_group(f"{beam}/land_ice_segments")
            g["latitude"], g["longitude"] = lat, lon
            g["delta_time"] = np.sort(rng.uniform(1e8, 1e8 + 60, n))
            g["atl06_quality_summary"] = q
            for name, data in (("h_li", h), ("h_li_sigma", s)):
                g.create_dataset(name, data=data, chunks=True, compression="gzip")
                g[name].attrs["_FillValue"] = np.float32(FILL)
            columns.append((lat, lon, h, s, q))
    return columns


@pytest.fixture(scope="module")
def granules(tmp_path_factory):
    root = tmp_path_factory.mktemp("granules")
    paths, columns = [], []
    for i in range(3):
        path = root / f"ATL06_2019010{i}_000{i}0203_006_01.h5"
        columns += write_granule(path, i, BEAMS if i != 1 else BEAMS[:4])  # one granule lacks two beams
        paths.append(path)
    lat, lon, h, s, q = (np.concatenate(c) for c in zip(*columns))
    return root, paths, (lat, lon, h, s, q)


def test_atl06_granules_with_zaggs_config_give_numpys_statistics(granules, tmp_path):
    _, paths, (lat, lon, h, s, q) = granules
    args = ["ragged", "build", "--config", CONFIGS / "atl06.yaml", "--out", tmp_path / "hive", "--threads", "1"]
    for p in paths:
        args += ["--input", p]
    report = json.loads(run_cli(*args).stdout)
    flagged = q != 0
    filled = ~flagged & ((h == FILL) | (s == FILL))
    keep = ~flagged & ~filled
    assert report["rows"] == {"read": int(lat.size), "accepted": int(keep.sum()), "rejected": int((~keep).sum()),
                              "rejected_by_reason": {"fill_value": int(filled.sum()), "quality_filter": int(flagged.sum())}}

    cells = healpy.ang2pix(2**12, lon[keep], authalic_closed_form(lat[keep]), nest=True, lonlat=True)
    hk, sk = h[keep].astype(np.float64), s[keep].astype(np.float64)
    checked = 0
    for path in ragged.leaves(tmp_path / "hive"):
        leaf = ragged.open(path)
        start = leaf.field("h_tdigest").axis()["root_start"]
        arrays = {name: leaf.read_array(name) for name in
                  ("count", "h_min", "h_max", "h_mean", "h_sigma", "h_variance", "h_q25", "h_q50", "h_q75")}
        for i in np.flatnonzero(arrays["count"]):
            mine = cells == start + i
            x, w = hk[mine], 1.0 / sk[mine] ** 2
            assert arrays["count"][i] == mine.sum()
            assert arrays["h_min"][i] == np.float32(x.min()) and arrays["h_max"][i] == np.float32(x.max())
            np.testing.assert_allclose(arrays["h_mean"][i], np.average(x, weights=w), rtol=1e-6)
            np.testing.assert_allclose(arrays["h_sigma"][i], 1.0 / np.sqrt(np.sum(w)), rtol=1e-6)
            np.testing.assert_allclose(arrays["h_variance"][i], np.var(x), rtol=1e-5, atol=1e-3)
            for q_name, quantile in (("h_q25", 0.25), ("h_q50", 0.5), ("h_q75", 0.75)):
                np.testing.assert_allclose(arrays[q_name][i], np.quantile(x, quantile), rtol=1e-6)
            checked += 1
    assert checked == len(np.unique(cells))
    assert report["cells_with_data"] == checked
    assert ragged.verify(tmp_path / "hive")["ok"]


def test_flags_override_the_config_and_granules_need_one(granules, tmp_path):
    _, paths, (lat, lon, h, s, q) = granules
    report = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl06.yaml", "--input", paths[0],
                                "--out", tmp_path / "coarse", "--cell-order", "9", "--shard-order", "4").stdout)
    manifest = json.loads((tmp_path / "coarse" / "morton_hive.json").read_text())
    assert (manifest["cell_order"], manifest["shard_order"]) == (9, 4)
    assert report["rows"]["accepted"] > 0

    # A quoted glob is expanded by tessera, in natural order: the same build as the files listed.
    globbed = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl06.yaml", "--input",
                                 paths[0].parent / "ATL06_*.h5", "--out", tmp_path / "globbed", "--threads", "1").stdout)
    listed = ["--input" if i % 2 == 0 else str(paths[i // 2]) for i in range(2 * len(paths))]
    explicit = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl06.yaml", *listed,
                                  "--out", tmp_path / "listed", "--threads", "1").stdout)
    assert [l["combined_hash"] for l in globbed["leaves"]] == [l["combined_hash"] for l in explicit["leaves"]]
    assert globbed["rows"] == explicit["rows"]
    nothing = run_cli("ragged", "build", "--config", CONFIGS / "atl06.yaml", "--input", tmp_path / "none_*.h5",
                      "--out", tmp_path / "none", check=False)
    assert nothing.returncode != 0 and "no input matches" in nothing.stderr

    bare = run_cli("ragged", "build", "--input", paths[0], "--out", tmp_path / "bare", "--value-col", "h_li", check=False)
    assert bare.returncode != 0 and "an HDF5 file" in bare.stderr and "--config" in bare.stderr
    rectilinear = run_cli("ragged", "build", "--config", CONFIGS / "atl03.yaml", "--input", paths[0],
                          "--out", tmp_path / "rect", check=False)
    assert rectilinear.returncode != 0
    assert "atl03.yaml: output.grid.type: 'rectilinear': tessera builds HEALPix morton hives only" in rectilinear.stderr
    assert not (tmp_path / "rect" / "morton_hive.json").exists()


def test_atl03_mini_with_the_tdigest_hive_config_matches_the_reference_digests(tmp_path):
    """zagg's own ATL03 test granule and its hive config, orders lowered with flags to fit the tiny
    file and δ lowered so cells hold merged centroids. Truth: h5py + the same filter, healpy
    cells, and the spec's digest algorithm (tests/ragged_cli/tdigest_reference.py)."""
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "ragged_cli"))
    from tdigest_reference import digest

    granule = CONFIGS.parent / "tests" / "data" / "index" / "atl03_mini.h5"
    report = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl03_tdigest_healpix_hive.yaml", "--input",
                                granule, "--out", tmp_path / "hive", "--cell-order", "8", "--shard-order", "4",
                                "--chunk-order", "6", "--delta", "12", "--threads", "1").stdout)
    lat, lon, h, dropped, off_globe = [], [], [], 0, 0
    with h5py.File(granule, "r") as f:
        for beam in BEAMS:
            if f"{beam}/heights" not in f:
                continue
            g = f[f"{beam}/heights"]
            passed = g["signal_conf_ph"][:, 0] != -2
            on_globe = np.abs(g["lat_ph"][:]) <= 90  # the fixture's second beam has latitudes of 100-119
            keep = passed & on_globe
            lat.append(g["lat_ph"][:][keep])
            lon.append(g["lon_ph"][:][keep])
            h.append(g["h_ph"][:][keep].astype(np.float64))
            dropped += int((~passed).sum())
            off_globe += int((passed & ~on_globe).sum())
    lat, lon, h = np.concatenate(lat), np.concatenate(lon), np.concatenate(h)
    assert dropped > 0 and report["rows"]["accepted"] == lat.size > 1000
    assert report["rows"]["rejected_by_reason"] == {"filtered": dropped, "latitude_out_of_range": off_globe}

    cells = healpy.ang2pix(2**8, lon, authalic_closed_form(lat), nest=True, lonlat=True)
    want_counts = dict(zip(*np.unique(cells, return_counts=True)))
    got_counts, merged = {}, 0
    for path in ragged.leaves(tmp_path / "hive"):
        field = ragged.open(path, "h_tdigest")
        start = field.axis()["root_start"]
        for index, rows in field.cells():
            cell = start + index
            got_counts[cell] = float(rows[:, 1].sum(dtype=np.float64))
            members = h[cells == cell]
            want_rows, _, _ = digest(members, np.ones(members.size), None, None, 12)
            assert rows.astype(np.float32).view(np.uint32).tolist() == want_rows
            merged += int(rows.shape[0] < members.size)
    assert got_counts == {int(k): float(v) for k, v in want_counts.items()}
    assert merged > 0  # some cells really were digested, not stored photon by photon


def test_located_and_timed_config_builds_what_the_same_points_with_gps_times_build(tmp_path):
    """zagg's located, per-centroid-timed ATL03 config on atl03_mini.h5: the leaf content (digests,
    locations and the _times companion) equals a build of the same filtered photons from .npy
    columns with --located and --time-col in GPS nanoseconds, computed here in numpy as the
    product defines them: atlas_sdp_gps_epoch + delta_time."""
    granule = CONFIGS.parent / "tests" / "data" / "index" / "atl03_mini.h5"
    orders = ["--cell-order", "8", "--shard-order", "4", "--chunk-order", "6", "--delta", "12", "--threads", "1"]
    from_granule = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl03_tdigest_located_healpix.yaml",
                                      "--input", granule, "--out", tmp_path / "granule", *orders).stdout)
    columns = {"lat": [], "lon": [], "h_ph": [], "t": []}
    with h5py.File(granule, "r") as f:
        epoch = float(f["ancillary_data/atlas_sdp_gps_epoch"][0])
        for beam in BEAMS:
            if f"{beam}/heights" not in f:
                continue
            g = f[f"{beam}/heights"]
            keep = g["signal_conf_ph"][:, 0] != -2
            columns["lat"].append(g["lat_ph"][:][keep])
            columns["lon"].append(g["lon_ph"][:][keep])
            columns["h_ph"].append(g["h_ph"][:][keep])
            columns["t"].append(np.round((epoch + g["delta_time"][:][keep]) * 1e9).astype(np.int64))
    npy = tmp_path / "npy"
    npy.mkdir()
    for name, parts in columns.items():
        np.save(npy / f"{name}.npy", np.concatenate(parts))
    from_npy = json.loads(run_cli("ragged", "build", "--input", npy, "--out", tmp_path / "npy-hive", "--value-col",
                                  "h_ph", "--located", "--time-col", "t", "--time-format", "gps-ns", *orders).stdout)
    assert from_granule["rows"]["accepted"] == from_npy["rows"]["accepted"] > 1000
    assert len(from_granule["leaves"]) >= 2
    assert [(l["leaf"], l["combined_hash"]) for l in from_granule["leaves"]] == \
           [(l["leaf"], l["combined_hash"]) for l in from_npy["leaves"]]
    leaf = ragged.open(tmp_path / "granule" / from_granule["leaves"][0]["leaf"])
    assert leaf.field("h_tdigest").times is not None and leaf.field("h_tdigest").locations is not None


def mixed_confidence_granule(path, seed=11):
    """atl03_mini.h5 copied with seeded per-surface signal confidences (-1…4, mostly low, so that
    about a third of the photons are noise on every surface); the TEP marks (-2 in column 0)
    that the config's filter drops are kept."""
    import shutil

    shutil.copyfile(CONFIGS.parent / "tests" / "data" / "index" / "atl03_mini.h5", path)
    rng = np.random.default_rng(seed)
    with h5py.File(path, "r+") as f:
        for beam in BEAMS:
            if f"{beam}/heights" not in f:
                continue
            ds = f[f"{beam}/heights/signal_conf_ph"]
            old = ds[:]
            new = rng.choice([-1, 0, 1, 2, 3, 4], size=old.shape, p=[0.35, 0.25, 0.2, 0.1, 0.05, 0.05]).astype(np.int8)
            new[old[:, 0] == -2, 0] = -2
            ds[...] = new
    return path


def strata_truth(granule):
    """The filtered photons of atl03_mini.h5 as zagg's strata config reads them: heights,
    coordinates and the five per-surface signal confidences, by h5py."""
    lat, lon, h, conf = [], [], [], []
    with h5py.File(granule, "r") as f:
        for beam in BEAMS:
            if f"{beam}/heights" not in f:
                continue
            g = f[f"{beam}/heights"]
            keep = (g["signal_conf_ph"][:, 0] != -2) & (np.abs(g["lat_ph"][:]) <= 90)
            lat.append(g["lat_ph"][:][keep])
            lon.append(g["lon_ph"][:][keep])
            h.append(g["h_ph"][:][keep].astype(np.float64))
            conf.append(g["signal_conf_ph"][:][keep])
    return np.concatenate(lat), np.concatenate(lon), np.concatenate(h), np.concatenate(conf)


def composition_word(conf, threshold=2):
    """Spec §2.7 in numpy: lanes 0–4 the fraction of the rows whose confidence in each surface
    reaches the threshold, lanes 5–7 those whose strongest confidence is exactly 2, 3, 4;
    round half to even of 255·c/N, clipped, at least 1 when present; lane i in bits 8i…8i+7."""
    n = conf.shape[0]
    if n == 0:
        return 0
    strongest = conf.max(axis=1)
    counts = np.concatenate([(conf >= threshold).sum(axis=0), [(strongest == k).sum() for k in (2, 3, 4)]])
    lanes = np.clip(np.round(255.0 * counts / n), 0, 255).astype(np.uint64)
    lanes[(counts > 0) & (lanes == 0)] = 1
    return int(sum(int(q) << (8 * i) for i, q in enumerate(lanes)))


def test_atl03_mini_with_the_strata_config_splits_signal_and_noise_as_numpy_does(tmp_path):
    """zagg's signal/noise strata config on atl03_mini.h5 with mixed confidences (orders and δ
    lowered to fit the tiny file): per cell, `count` holds every photon, `h_tdigest_signal` the digest of the photons with
    any surface confidence >= 2 and `h_tdigest_noise` of the others (the spec's algorithm,
    tests/ragged_cli/tdigest_reference.py), each with its row-aligned locations, and
    `composition` the word numpy computes from the signal photons' confidences."""
    import sys

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "ragged_cli"))
    from tdigest_reference import digest

    granule = mixed_confidence_granule(tmp_path / "atl03_mixed.h5")
    orders = ["--cell-order", "8", "--shard-order", "4", "--chunk-order", "6", "--delta", "12", "--threads", "1"]
    report = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl03_tdigest_strata_healpix.yaml",
                                "--input", granule, "--out", tmp_path / "hive", *orders).stdout)
    lat, lon, h, conf = strata_truth(granule)
    assert report["rows"]["accepted"] == h.size > 1000
    signal = (conf >= 2).any(axis=1)
    assert 0 < signal.sum() < h.size  # both strata are populated
    cells = healpy.ang2pix(2**8, lon, authalic_closed_form(lat), nest=True, lonlat=True)

    seen = {"count": set(), "signal": set(), "noise": set()}
    compositions = {}
    for path in ragged.leaves(tmp_path / "hive"):
        leaf = ragged.open(path)
        assert sorted(p.split("/")[1] for p in leaf.fields()) == ["h_tdigest_noise", "h_tdigest_signal"]
        start = leaf.field("h_tdigest_signal").axis()["root_start"]
        counts = leaf.read_array("count")
        for index in np.flatnonzero(counts):
            seen["count"].add(start + int(index))
            assert counts[index] == (cells == start + index).sum()
        words = leaf.read_array("composition")
        for index in np.flatnonzero(counts):
            compositions[start + int(index)] = int(words[index])
        for stratum, rows_of in (("signal", signal), ("noise", ~signal)):
            field = leaf.field(f"h_tdigest_{stratum}")
            assert field.locations is not None
            locations = ragged.open(path, field.locations)
            for index, rows in field.cells():
                cell = start + index
                seen[stratum].add(cell)
                members = h[(cells == cell) & rows_of]
                want_rows, _, _ = digest(members, np.ones(members.size), None, None, 12)
                assert rows.astype(np.float32).view(np.uint32).tolist() == want_rows
                assert locations.read_cell(index).shape[0] == rows.shape[0]
    assert seen["count"] == set(np.unique(cells).tolist())
    assert seen["signal"] == set(np.unique(cells[signal]).tolist())
    assert seen["noise"] == set(np.unique(cells[~signal]).tolist())
    want = {int(c): composition_word(conf[(cells == c) & signal]) for c in np.unique(cells)}
    assert compositions == want
    assert len(set(want.values())) > len(want) // 2  # the words differ from cell to cell
    assert seen["signal"] & seen["noise"]  # cells holding both strata

    verify = json.loads(run_cli("ragged", "verify", tmp_path / "hive").stdout)
    assert verify["ok"] and verify["failed"] == 0
    # Readers strict-check the composition block (spec §2.7): lanes out of order are reported.
    meta_path = next((tmp_path / "hive").rglob("composition/zarr.json"))
    meta = json.loads(meta_path.read_text())
    meta["attributes"]["composition"]["lanes"][5:7] = ["med", "low"]
    meta_path.write_text(json.dumps(meta))
    damaged = run_cli("ragged", "verify", tmp_path / "hive", check=False)
    failures = [f for leaf in json.loads(damaged.stdout)["leaves"] for f in leaf["failures"]]
    assert damaged.returncode == 1 and [f["rule"] for f in failures] == ["composition"]
    assert "lanes must be [land, ocean" in failures[0]["message"]

    # The same photons from .npy columns, the confidences by the config's variable names: the
    # same leaves, byte for byte in content.
    npy = tmp_path / "npy"
    npy.mkdir()
    for name, column in {"lat": lat, "lon": lon, "h_ph": h}.items():
        np.save(npy / f"{name}.npy", column)
    for i, surface in enumerate(["land", "ocean", "sea_ice", "land_ice", "inland_water"]):
        np.save(npy / f"signal_conf_{surface}.npy", conf[:, i])
    from_npy = json.loads(run_cli("ragged", "build", "--config", CONFIGS / "atl03_tdigest_strata_healpix.yaml",
                                  "--input", npy, "--out", tmp_path / "npy-hive", *orders).stdout)
    assert [(l["leaf"], l["combined_hash"]) for l in from_npy["leaves"]] == \
           [(l["leaf"], l["combined_hash"]) for l in report["leaves"]]


def test_strata_expressions_outside_numpys_meaning_are_refused(tmp_path):
    """A `where` that Python would read differently from how it looks (`a >= 2 | b >= 2` binds
    `2 | b` first), names an unknown variable, or calls a function is refused naming the key."""
    import yaml

    config = yaml.safe_load((CONFIGS / "atl03_tdigest_strata_healpix.yaml").read_text())
    granule = CONFIGS.parent / "tests" / "data" / "index" / "atl03_mini.h5"
    cases = {
        "signal_conf_land >= 2 | signal_conf_ocean >= 2": "parenthesize each comparison",
        "(signal_conf_lnd >= 2)": "'signal_conf_lnd' is not one of data_source.variables",
        "np.any(signal_conf_land >= 2)": "a call, attribute or subscript",
        "(signal_conf_land >= 2) or (signal_conf_ocean >= 2)": "'or'",
    }
    for i, (where, message) in enumerate(cases.items()):
        config["aggregation"]["variables"]["h_tdigest_signal"]["params"]["where"] = where
        path = tmp_path / f"c{i}.yaml"
        path.write_text(yaml.safe_dump(config))
        out = run_cli("ragged", "build", "--config", path, "--input", granule, "--out", tmp_path / f"h{i}", check=False)
        assert out.returncode != 0
        assert "aggregation.variables.h_tdigest_signal.params.where" in out.stderr and message in out.stderr, out.stderr
        assert not (tmp_path / f"h{i}" / "morton_hive.json").exists()
