"""Independent reference for `tessera ragged build` tests (numpy only, written from the spec).

Usage: python3 tdigest_reference.py POINTS.csv DELTA OUT.json [located] [sigma]

POINTS.csv has the columns the build read plus two the build ignores: `cell` (the order-c cell
word of the row, decimal) and `point` (its order-29 point word). Rows whose `ok` column is 0 were
refused by the build and are skipped. For every cell this computes, from the spec's algorithm
(zagg-ragged.md section 6.3, the k1 merging digest) and numpy's statistics (section 6.1a):
count, the digest rows as float32 bit patterns, the location words (deepest common ancestor of
multi-member centroids), the time words (toc join), and the dense statistics as float32 bits.
"""
import csv
import json
import sys

import numpy as np


def k1(q, delta):
    return delta * (np.arcsin(2.0 * np.clip(q, 0.0, 1.0) - 1.0) / np.pi + 0.5)


def partition(weights, delta):
    kr = k1(np.cumsum(weights) / np.cumsum(weights)[-1], delta)
    starts, s, n = [], 0, len(weights)
    while s < n:
        starts.append(s)
        kl = (0.0 if s == 0 else kr[s - 1]) + 1.0
        e = int(np.searchsorted(kr, kl, side="right"))
        s = max(e, s + 1)
    return np.array(starts, dtype=np.intp)


# --- morton words (mortie packed u64): enough to take a deepest common ancestor -------------
def tuples_of(word):
    """Base cell and the 29 stored tuples of an order-29 point or area word."""
    base = (word >> 60) - 1
    body = [(word >> (60 - 2 * n)) & 3 for n in range(1, 28)]
    suffix = word & 0x3F
    if suffix >= 48:
        t28, t29, order = (suffix - 48) // 4, (suffix - 48) % 4, 29
        return base, body + [t28, t29], order
    if suffix >= 28:
        s = suffix - 28
        order = 29 if s % 5 else 28
        return base, body + ([s // 5, s % 5 - 1] if order == 29 else [s // 5]), order
    return base, body[:suffix], suffix


def area_word(base, tuples):
    order = len(tuples)
    w = (base + 1) << 60
    for n in range(1, min(order, 27) + 1):
        w |= tuples[n - 1] << (60 - 2 * n)
    if order <= 27:
        return w | order
    if order == 28:
        return w | (28 + 5 * tuples[27])
    return w | (28 + 5 * tuples[27] + tuples[28] + 1)


def common_ancestor(words):
    decoded = [tuples_of(w) for w in words]
    base = decoded[0][0]
    assert all(d[0] == base for d in decoded)
    depth = min(d[2] for d in decoded)
    k = 0
    while k < depth and all(d[1][k] == decoded[0][1][k] for d in decoded):
        k += 1
    return area_word(base, decoded[0][1][:k])


# --- toc words -----------------------------------------------------------------------------
def toc_codes(w):
    if w & (1 << 31):
        return w >> 32, (w >> 33) + 1
    return w >> 32, w & ((1 << 31) - 1)


def toc_join(a, b):
    if a == b:
        return a
    sa, ea = toc_codes(a)
    sb, eb = toc_codes(b)
    return (min(sa, sb) << 32) | max(ea, eb)


def digest(values, weights, locations, times, delta):
    order = np.argsort(values, kind="stable")
    m, w = values[order], weights[order]
    starts = partition(w, delta)
    wsum = np.add.reduceat(w, starts)
    mean = np.add.reduceat(m * w, starts) / wsum
    ends = list(starts[1:]) + [len(m)]
    locs, tims = [], []
    for b, e in zip(starts, ends):
        members = order[b:e]
        if locations is not None:
            locs.append(locations[members[0]] if e - b == 1 else common_ancestor([locations[i] for i in members]))
        if times is not None:
            t = times[members[0]]
            for i in members[1:]:
                t = toc_join(t, times[i])
            tims.append(t)
    rows = np.stack([mean.astype(np.float32), wsum.astype(np.float32)], axis=1)
    return rows.view(np.uint32).tolist(), [str(x) for x in locs], [str(x) for x in tims]


def stats(x, sigma):
    out = {"min": np.min(x), "max": np.max(x)}
    if sigma is not None:
        out["mean"] = np.sum(x / sigma**2) / np.sum(1 / sigma**2)
        out["sigma"] = 1 / np.sqrt(np.sum(1 / sigma**2))
    else:
        out["mean"] = np.mean(x)
    out["variance"] = np.var(x)
    q = np.quantile(x, [0.25, 0.5, 0.75])
    out["q25"], out["q50"], out["q75"] = q
    return {k: int(np.float32(v).view(np.uint32)) for k, v in out.items()}


def main():
    path, delta, out_path = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["ok"] == "1"]
    cells = {}
    for r in rows:
        cells.setdefault(r["cell"], []).append(r)
    has = rows[0].keys() if rows else {}
    result = {}
    for cell, members in cells.items():
        x = np.array([float(r["value"]) for r in members], dtype=np.float64)
        w = np.array([float(r["w"]) for r in members]) if "w" in has else np.ones_like(x)
        locations = [int(r["point"]) for r in members] if "located" in sys.argv[4:] else None
        times = [int(r["toc"]) for r in members] if "t" in has else None
        sigma = np.array([float(r["sigma"]) for r in members]) if "sigma" in sys.argv[4:] else None
        rows32, locs, tims = digest(x, w, locations, times, delta)
        entry = {"count": len(members), "rows": rows32, "locations": locs, "times": tims, "stats": stats(x, sigma)}
        if times is not None:
            t = times[0]
            for v in times[1:]:
                t = toc_join(t, v)
            entry["observed"] = str(t)
        result[cell] = entry
    with open(out_path, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
