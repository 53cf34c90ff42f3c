# Independent recomputation of query results with numpy (used by query_differential_test.cpp).
# argv[1]: manifest JSON with one record per query: the raw logical array, dtype, shape, the
# selection, op, axes, parameters, and the engine's `execution` object (or its error text).
# Prints every disagreement and a final "checked N cases, F failures" line.
import json
import math
import sys
import warnings

import numpy as np

warnings.simplefilter("ignore")

DTYPES = {"f32": "<f4", "f64": "<f8", "i32": "<i4", "i64": "<i8", "u8": "|u1",
          "u16": "<u2", "i16": "<i2", "u32": "<u4", "u64": "<u8", "f16": "<f2"}


def as_float(v):
    return math.nan if v is None else float(v)


def same_exact(a, b):
    if a is None:  # JSON writes NaN and ±inf as null
        return not math.isfinite(float(b))
    a, b = as_float(a), as_float(b)
    return (math.isnan(a) and math.isnan(b)) or a == b


def close(a, b, tol):
    if a is None:
        return not math.isfinite(float(b))
    a, b = as_float(a), as_float(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= tol


def fibers(x, axes):
    """(cells, fiber) view: kept axes first in order, reduced axes after in ascending order."""
    nd = x.ndim
    red = list(range(nd)) if not axes else sorted(axes)
    kept = [d for d in range(nd) if d not in red]
    y = np.transpose(x, kept + red)
    cells = int(np.prod([x.shape[d] for d in kept])) if kept else 1
    return y.reshape(cells, -1)


def histogram(v, bins, lo=None, hi=None):
    if lo is None:
        fin = v[np.isfinite(v)]
        if fin.size == 0:
            return None
        lo, hi = float(fin.min()), float(fin.max())
    span = hi - lo
    degenerate = span < 2.220446049250313e-16
    width = span / bins
    edges = [lo] + [hi if degenerate else lo + i * width for i in range(1, bins)] + [hi]
    counts = [0.0] * bins
    excluded = 0.0
    for x in v:
        x = float(x)
        if not (lo <= x <= hi):
            excluded += 1
            continue
        b = 0
        if not degenerate:
            f = math.floor((x - lo) / width)
            b = bins - 1 if f >= bins else int(f)
        counts[b] += 1
    return counts, edges, excluded


def check(rec):
    raw = np.fromfile(rec["raw"], dtype=DTYPES[rec["dtype"]]).reshape(rec["shape"])
    selection = rec["selection"] or [{}] * len(rec["shape"])
    sl = tuple(slice(a.get("start", 0), a.get("stop", n), a.get("step", 1))
               for a, n in zip(selection, rec["shape"]))
    x = raw[sl].astype(np.float64)
    op, axes, params = rec["op"], rec["axes"], rec["params"]
    F = fibers(x, axes)
    scalar = not axes
    integer = rec["dtype"][0] in "iu"

    if "error" in rec:
        err = rec["error"]
        if op in ("covariance", "correlation") and not np.isfinite(x).all():
            return err.endswith("require finite values in the logical selection")
        if op == "histogram" and "min" not in params and any(not np.isfinite(r).any() for r in F):
            return "no finite values" in err
        if op in ("covariance", "correlation") and x.ndim != 2:
            return "rank-2" in err
        return False

    ex = rec["execution"]
    if ex["operation_element_count"] != x.size:
        return False

    def get(scalar_key, partial_key):
        return [ex[scalar_key]] if scalar else ex[partial_key]

    sum_abs = np.abs(F).sum(axis=1)
    sum_sq = (F * F).sum(axis=1)

    def tolerant(got, want, scale):
        return len(got) == len(want) and all(close(g, w, 1e-12 * max(1.0, s)) for g, w, s in zip(got, want, scale))

    def exact(got, want):
        return len(got) == len(want) and all(same_exact(g, w) for g, w in zip(got, want))

    k = "operation_" + op
    pk = "operation_reduced_" + op
    if op == "sum":
        want = F.sum(axis=1)
        got = get(k, pk)
        if integer and all(s < 2 ** 53 for s in sum_abs):
            return exact(got, want)
        return tolerant(got, want, sum_abs)
    if op == "mean":
        return tolerant(get(k, pk), F.mean(axis=1), sum_abs)
    if op == "norm_l1":
        return tolerant(get(k, pk), sum_abs, sum_abs)
    if op == "norm_l2":
        return tolerant(get(k, pk), np.sqrt(sum_sq), sum_abs)
    if op == "var":
        return tolerant(get(k, pk), F.var(axis=1), sum_sq)
    if op == "std":
        return tolerant(get(k, pk), F.std(axis=1), sum_sq)
    if op == "product":
        want = np.prod(F, axis=1)
        got = get(k, pk)
        return len(got) == len(want) and all(close(g, w, 1e-12 * abs(w)) for g, w in zip(got, want))
    if op == "count":
        return scalar or exact(ex[pk], [float(F.shape[1])] * F.shape[0])
    if op in ("min", "max"):
        return exact(get(k, pk), F.min(axis=1) if op == "min" else F.max(axis=1))
    if op in ("arg_min", "arg_max"):
        name = op.replace("_", "")
        want = np.argmin(F, axis=1) if op == "arg_min" else np.argmax(F, axis=1)
        return exact(get("operation_" + name + "_index", "operation_reduced_" + name), want)
    if op in ("all_finite", "any_nan", "any_inf"):
        fn = {"all_finite": lambda r: bool(np.isfinite(r).all()), "any_nan": lambda r: bool(np.isnan(r).any()),
              "any_inf": lambda r: bool(np.isinf(r).any())}[op]
        return get(k, pk) == [fn(r) for r in F]
    if op in ("nan_count", "inf_count"):
        fn = np.isnan if op == "nan_count" else np.isinf
        return exact(get(k, pk), [float(fn(r).sum()) for r in F])
    if op == "null_count":
        fill = math.nan if rec["nan_fill"] else float(params["fill"])
        if math.isnan(fill):
            want = [float(np.isnan(r).sum()) for r in F]
        else:
            bits = np.array([fill]).view(np.uint64)[0]
            want = [float((r.view(np.uint64) == bits).sum()) for r in F]
        return exact(get(k, pk), want)
    if op in ("nan_mean", "nan_std"):
        want = []
        for r in F:
            v = r[~np.isnan(r)]
            want.append(math.nan if v.size == 0 else (v.mean() if op == "nan_mean" else v.std()))
        scale = [np.abs(r[~np.isnan(r)]).sum() if op == "nan_mean" else (r[~np.isnan(r)] ** 2).sum() for r in F]
        return tolerant(get(k, pk), want, scale)
    if op == "median":
        return exact(get(k, pk), np.median(F, axis=1))
    if op == "quantile":
        return exact(get(k, pk), np.quantile(F, params["q"], axis=1, method="linear"))
    if op == "histogram":
        lo, hi = params.get("min"), params.get("max")
        hs = [histogram(r, params["bins"], lo, hi) for r in F]
        if scalar:
            c, e, exc = hs[0]
            return (exact(ex["operation_histogram_counts"], c) and exact(ex["operation_histogram_edges"], e)
                    and same_exact(ex["operation_histogram_excluded"], exc))
        counts = [v for h in hs for v in h[0]]
        return (exact(ex["operation_reduced_histogram_counts"], counts)
                and exact(ex["operation_reduced_histogram_excluded"], [h[2] for h in hs]))
    if op in ("covariance", "correlation"):
        obs = axes[0]
        m = x if obs == 0 else x.T  # rows = observations
        d = m - m.mean(axis=0)
        cov = (d.T @ d) / m.shape[0]
        if op == "correlation":
            sd = np.sqrt(np.clip(np.diag(cov), 0, None))
            want = np.zeros_like(cov)
            for j in range(cov.shape[0]):
                for kk in range(cov.shape[0]):
                    want[j, kk] = 1.0 if j == kk else (0.0 if sd[j] == 0 or sd[kk] == 0 else cov[j, kk] / (sd[j] * sd[kk]))
            scale = [1.0] * want.size
        else:
            want = cov
            scale = [float((m * m).sum())] * want.size
        got = ex[k]
        return (ex[k + "_order"] == m.shape[1] and len(got) == want.size
                and all(close(g, w, 1e-10 * max(1.0, s)) for g, w, s in zip(got, want.ravel(), scale)))
    return False


def main():
    cases = json.load(open(sys.argv[1]))
    failures = 0
    for i, rec in enumerate(cases):
        try:
            ok = check(rec)
        except Exception as e:  # a crash in the checker is a failure too
            ok = False
            rec["checker_exception"] = repr(e)
        if not ok:
            failures += 1
            if failures <= 20:
                slim = {k: v for k, v in rec.items() if k != "execution"}
                ex = rec.get("execution", {})
                slim["result"] = {k: v for k, v in ex.items() if k.startswith("operation_")}
                print("MISMATCH", i, json.dumps(slim)[:1500])
    print(f"checked {len(cases)} cases, {failures} failures")


main()
