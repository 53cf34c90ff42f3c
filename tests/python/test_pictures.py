"""The pictures tessera draws, read back with Pillow and checked against numpy and matplotlib.

`tet cat --png`: the quicklook of a 2-D slice.
The picture's layout (docs/cli/tet-cat.md): a 10-pixel margin, the title (14 pixels high) and
8 pixels, then the data, one square of side k per value (k = 512 // longest side, at least 1),
and 14 pixels to its right the 20-pixel colour bar, high end at the top.
"""
import subprocess

import numpy as np
import pytest
from matplotlib import colormaps
from PIL import Image

from tessera import tet

from conftest import run_cli
from test_cells import write_h5ad

IMAGE_X, IMAGE_Y = 10, 10 + 14 + 8


def picture(path) -> np.ndarray:
    with Image.open(path) as im:
        assert im.mode == "RGBA"
        return np.asarray(im)


def data_pixels(rgba: np.ndarray, rows: int, cols: int, k: int) -> np.ndarray:
    """The centre pixel of each value's square, as a (rows, cols, 4) array."""
    ys = IMAGE_Y + np.arange(rows) * k + k // 2
    xs = IMAGE_X + np.arange(cols) * k + k // 2
    return rgba[np.ix_(ys, xs)]


def expected_colours(values: np.ndarray, low: float, high: float, name: str = "viridis") -> np.ndarray:
    t = np.clip((values - low) / (high - low), 0, 1)
    return np.round(np.asarray(colormaps[name](t))[..., :3] * 255)


@pytest.fixture
def field(tmp_path):
    a = np.arange(2 * 40 * 60, dtype=np.float32).reshape(2, 40, 60) / 7.0
    a[1, 3, 5] = np.nan
    tet.write(tmp_path / "f.tet", {"a": a}, chunks=(1, 16, 16), codec="zstd")
    return tmp_path / "f.tet", a


def test_a_slice_is_drawn_in_viridis_with_its_range(field, tmp_path):
    path, a = field
    out = run_cli("tet", "cat", path, "a", "--png", tmp_path / "q.png", "--selection", '[{"start":1,"stop":2},{},{}]')
    values = a[1].astype(np.float64)
    low, high = np.nanmin(values), np.nanmax(values)
    assert out.stdout.strip() == (f"{tmp_path / 'q.png'}: {picture(tmp_path / 'q.png').shape[1]} x "
                                  f"{picture(tmp_path / 'q.png').shape[0]} pixels, colour bar {low:.4g} .. {high:.4g}, "
                                  "1 missing values transparent")
    rgba = picture(tmp_path / "q.png")
    k = 512 // 60
    got = data_pixels(rgba, 40, 60, k)
    finite = np.isfinite(values)
    # The colour map interpolates viridis between 33 anchors: within 3 levels of matplotlib's table.
    assert np.abs(got[finite][:, :3].astype(int) - expected_colours(values[finite], low, high)).max() <= 3
    assert (got[finite][:, 3] == 255).all()
    assert got[3, 5, 3] == 0, "NaN is transparent"
    # The colour bar: its top row is the high end, its bottom row the low end.
    bar_x = IMAGE_X + 60 * k + 14 + 10
    assert tuple(rgba[IMAGE_Y, bar_x, :3]) == tuple(expected_colours(np.array(high), low, high))
    assert tuple(rgba[IMAGE_Y + 40 * k - 1, bar_x, :3]) == tuple(expected_colours(np.array(low), low, high))


def test_range_origin_and_colormap_options(field, tmp_path):
    path, a = field
    run_cli("tet", "cat", path, "a", "--png", tmp_path / "q.png", "--selection", '[{"start":0,"stop":1},{},{}]',
            "--png-range", "100,200", "--png-origin", "bottom", "--png-colormap", "rdbu")
    values = a[0].astype(np.float64)[::-1]   # row 0 at the bottom
    got = data_pixels(picture(tmp_path / "q.png"), 40, 60, 512 // 60)
    expected = expected_colours(values, 100, 200, "RdBu_r")
    assert np.abs(got[..., :3].astype(int) - expected).max() <= 3   # the 11 ColorBrewer colours matplotlib interpolates too


def test_large_slices_are_block_averaged(tmp_path):
    a = np.random.default_rng(1).random((5000, 9)).astype(np.float64)
    tet.write(tmp_path / "tall.tet", {"t": a}, chunks=(1000, 9))
    run_cli("tet", "cat", tmp_path / "tall.tet", "t", "--png", tmp_path / "q.png")
    shrink = -(-5000 // 2048)                                 # 3
    means = np.array([a[i:i + shrink].reshape(-1, 3, 3).mean(axis=0).mean(axis=0) for i in range(0, 5000, shrink)])
    means = np.array([[a[i:i + shrink, j:j + shrink].mean() for j in range(0, 9, shrink)] for i in range(0, 5000, shrink)])
    got = data_pixels(picture(tmp_path / "q.png"), means.shape[0], means.shape[1], 1)
    expected = expected_colours(means, a.min(), a.max())
    assert np.abs(got[..., :3].astype(int) - expected).max() <= 3


def test_log_scale_and_npy_together(tmp_path):
    a = np.logspace(-2, 3, 64 * 64).reshape(64, 64)
    a[0, 0] = -1.0
    tet.write(tmp_path / "l.tet", {"l": a})
    out = run_cli("tet", "cat", tmp_path / "l.tet", "l", "--png", tmp_path / "q.png", "--png-scale", "log",
                  "--out", tmp_path / "l.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "l.npy"), a)
    positive = a[a > 0]
    assert f"colour bar {positive.min():.4g} .. {positive.max():.4g}, 1 missing" in out.stdout
    got = data_pixels(picture(tmp_path / "q.png"), 64, 64, 8)
    t = (np.log10(np.where(a > 0, a, 1)) - np.log10(positive.min())) / (np.log10(positive.max()) - np.log10(positive.min()))
    expected = np.round(colormaps["viridis"](np.clip(t, 0, 1))[..., :3] * 255)
    ok = a > 0
    assert np.abs(got[ok][:, :3].astype(int) - expected[ok]).max() <= 3 and got[0, 0, 3] == 0


ONE_SLICE = '[{"start":0,"stop":1},{},{}]'


@pytest.mark.parametrize("args, status, message", [
    ([], 1, "a PNG shows two axes, and a[:, :, :] keeps 3; select one index on the others"),
    (["--selection", ONE_SLICE, "--png-range", "5,1"], 2, "--png-range: needs LO < HI, got '5,1'"),
    (["--selection", ONE_SLICE, "--png-range", "a,1"], 2, "--png-range: must be LO,HI with two finite numbers"),
    (["--selection", ONE_SLICE, "--png-range", "1"], 2, "--png-range: must be LO,HI with two finite numbers"),
    (["--selection", ONE_SLICE, "--png-colormap", "jet"], 2, "--png-colormap: jet not in {"),
    (["--selection", ONE_SLICE, "--png-scale", "sqrt"], 2, "--png-scale: sqrt not in {"),
])
def test_bad_requests_fail_and_write_nothing(field, tmp_path, args, status, message):
    path, _ = field
    proc = run_cli("tet", "cat", path, "a", "--png", tmp_path / "q.png", *args, check=False)
    assert proc.returncode == status and message in proc.stderr, proc.stderr
    assert not (tmp_path / "q.png").exists()


def test_neither_output_is_a_usage_error(field):
    proc = run_cli("tet", "cat", field[0], "a", check=False)
    assert proc.returncode == 2 and "--out OUT.npy, --png OUT.png or both is required" in proc.stderr


# ---- cells info --png -------------------------------------------------------------------------

BAR = (0x3B, 0x52, 0x8B)


def bar_heights(rgba: np.ndarray, panels: list[list[float]]) -> list[list[int]]:
    """Bar heights in pixels, panel by panel and bar by bar, following the chart's layout: a
    10-pixel margin, the title line (20 pixels) and 4, then per panel its title line, 120 pixels
    of plot and 12 of space; the plot starts 8 pixels right of the widest y label."""
    def label_width(text):
        return (len(text) * 6 - 1) * 2
    label_w = max([label_width("0")] + [label_width(f"{max(p):.4g}") for p in panels])
    plot_x = 10 + label_w + 8
    n = len(panels[0])
    bar_w = max(1, 600 // n)
    heights = []
    for k in range(len(panels)):
        base = 10 + 20 + 4 + k * 152 + 20 + 120
        region = rgba[base - 120:base, plot_x:plot_x + n * bar_w, :3]
        is_bar = (region == BAR).all(axis=2)
        heights.append([int(is_bar[:, c * bar_w].sum()) for c in range(n)])
    return heights


def expected_heights(values: list[float]) -> list[int]:
    top = max(values)
    return [max(1, int(np.floor(min(v / top, 1) * 120 + 0.5))) if v > 0 else 0 for v in values]  # C llround


def test_cells_summary_chart_shows_each_tile(tmp_path):
    x, _, _ = write_h5ad(tmp_path / "a.h5ad", n_cells=230, n_genes=37, seed=3)
    run_cli("cells", "convert", "--h5ad-glob", tmp_path / "a.h5ad", "--output", tmp_path / "ds", "--tile-size", "32")
    out = run_cli("cells", "info", tmp_path / "ds", "--png", tmp_path / "s.png")
    rgba = picture(tmp_path / "s.png")
    assert f"picture:        {tmp_path / 's.png'} ({rgba.shape[1]} x {rgba.shape[0]} pixels)" in out.stdout
    # Independent truth: cells and nonzeros per tile from the source matrix, bytes from the tile files.
    starts = range(0, 230, 32)
    cells = [min(32, 230 - s) for s in starts]
    nnz = [int(np.count_nonzero(x[s:s + 32])) for s in starts]
    sizes = [p.stat().st_size for p in sorted((tmp_path / "ds" / "tiles").iterdir())]
    panels = [cells, [n / c for n, c in zip(nnz, cells)], [b / n for b, n in zip(sizes, nnz)]]
    assert bar_heights(rgba, panels) == [expected_heights(p) for p in panels]


def test_cells_summary_chart_refuses_a_single_tile(conformance, tmp_path):
    tile = sorted((conformance / "deltacells" / "dataset_small" / "tiles").iterdir())[0]
    proc = run_cli("cells", "info", tile, "--png", tmp_path / "s.png", check=False)
    assert proc.returncode == 1 and "--png draws the tiles of a dataset" in proc.stderr
    assert not (tmp_path / "s.png").exists()
