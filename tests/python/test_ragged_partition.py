"""`_tessera.ragged_partition_rows`, the driver's split of a distributed ragged build: checked
against numpy — every shard's rows in one partition, partitions in ascending shard order, each
column's rows copied in input order whatever its dtype, refused rows in the last partition."""
import numpy as np
import pytest

import tessera
from tessera import _tessera

REFUSED = np.iinfo(np.uint64).max


def columns(n=50_000, seed=2):
    rng = np.random.default_rng(seed)
    lat, lon = rng.uniform(-30, 70, n), rng.uniform(-120, 60, n)
    lat[[3, 40]] = np.nan, 91.0
    return dict(lat=lat, lon=lon, value=rng.normal(size=n).astype(np.float32),
                time=rng.integers(0, 1 << 60, n, dtype=np.int64), flag=rng.integers(0, 2, n).astype(np.uint8))


@pytest.mark.parametrize("order,partitions", [(2, 4), (4, 8), (12, 3)])
def test_partitions_match_numpy(order, partitions):
    c = columns()
    c["index"] = np.arange(len(c["lat"]))
    parts, occupied, refused = _tessera.ragged_partition_rows(c["lat"], c["lon"], order, "authalic", partitions, c)
    shards = _tessera.ragged_cell_of(c["lat"], c["lon"], order, "authalic", refused_as_max=True)
    assert refused == 2
    assert np.array_equal(occupied, np.unique(shards[shards != REFUSED]))
    assert 1 <= len(parts) <= partitions
    assert np.array_equal(np.sort(np.concatenate([p["index"] for p in parts])), c["index"])
    previous_last = -1
    for i, part in enumerate(parts):
        rows = part["index"]
        assert np.all(np.diff(rows) > 0)  # input order
        for name, column in c.items():
            assert part[name].dtype == column.dtype
            assert np.array_equal(part[name], column[rows], equal_nan=column.dtype.kind == "f"), name
        mine = shards[rows]
        if i + 1 < len(parts):
            assert not np.any(mine == REFUSED)
        else:  # the refused rows travel with the last run
            assert np.count_nonzero(mine == REFUSED) == 2
            mine = mine[mine != REFUSED]
        # a run of whole shards, after the previous run's
        assert mine.min() > previous_last
        assert np.count_nonzero((shards >= mine.min()) & (shards <= mine.max())) == len(mine)
        previous_last = int(mine.max())
    if order == 4:  # many shards: about equal rows
        assert max(len(p["lat"]) for p in parts) < 1.3 * len(c["lat"]) / len(parts)


def test_bad_columns_are_refused():
    c = columns(1_000)
    with pytest.raises(tessera.UsageError, match="column extra"):
        _tessera.ragged_partition_rows(c["lat"], c["lon"], 3, "authalic", 2, {"extra": np.zeros(5)})
    with pytest.raises(tessera.UsageError, match="Python objects"):
        _tessera.ragged_partition_rows(c["lat"], c["lon"], 3, "authalic", 2,
                                       {"extra": np.array(["a"] * 1_000, dtype=object)})
    with pytest.raises(tessera.UsageError, match="partitions"):
        _tessera.ragged_partition_rows(c["lat"], c["lon"], 3, "authalic", 0, {})
