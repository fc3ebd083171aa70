"""Agreement among many raters: Fleiss' kappa (the same number of ratings per item) and Krippendorff's
alpha (missing ratings allowed; nominal, ordinal, interval)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from judgements.agreement.kappa import Level
from judgements.agreement.records import RatingData, rating_data

# --------------------------------------------------------------------------------------------------------
# Fleiss' kappa
# --------------------------------------------------------------------------------------------------------


def fleiss_kappa(table: npt.ArrayLike) -> float | None:
    """Fleiss' kappa of an items × categories table of counts, every row summing to the same n ≥ 2.

    P_i = (Σ_j n_ij² − n) / (n(n − 1)), P̄ = mean P_i, p_j = Σ_i n_ij / (N n), P_e = Σ_j p_j²,
    κ = (P̄ − P_e) / (1 − P_e) — ``statsmodels.stats.inter_rater.fleiss_kappa(table, method="fleiss")``.
    ``None`` when there are no items or P_e = 1 (every rating in one category). ValueError for negative
    counts, rows with different totals, or fewer than 2 ratings per item.
    """
    t = np.asarray(table)
    if t.ndim != 2:
        raise ValueError("table must be items × categories")
    if t.shape[0] == 0:
        return None
    if t.dtype.kind not in "iu":
        if not (np.isfinite(t).all() and (t == np.round(t)).all()):
            raise ValueError("table must hold whole counts")
        t = t.astype(np.int64)
    if (t < 0).any():
        raise ValueError("table counts must be non-negative")
    totals = t.sum(axis=1)
    n = int(totals[0])
    if (totals != n).any():
        raise ValueError(f"every item must have the same number of ratings; row totals are {set(totals)}")
    if n < 2:
        raise ValueError("Fleiss' kappa needs at least 2 ratings per item")
    tf = t.astype(np.float64)
    n_items = t.shape[0]
    p = tf.sum(axis=0) / (n_items * n)
    p_e = float((p * p).sum())
    p_bar = float(((tf * tf).sum(axis=1) - n).mean() / (n * (n - 1)))
    if p_e >= 1.0:
        return None
    return (p_bar - p_e) / (1.0 - p_e)


@dataclass(frozen=True)
class FleissTable:
    """Items × labels count table for Fleiss' kappa: only items with ``n_ratings`` graded judgements.

    ``n_dropped`` items had at least one graded judgement but a different number of them."""

    table: np.ndarray
    items: list[Hashable]
    n_ratings: int
    n_dropped: int


def fleiss_table(records: Iterable[Sequence[Any]], *, labels: Sequence[int]) -> FleissTable:
    """Build the Fleiss table from records, keeping the items with the modal number of graded judgements.

    The mode is taken over items with at least 2 graded judgements (a single rating carries no
    agreement), ties going to the larger number. Unrateable judgements do not count as ratings.
    """
    return _fleiss_table(rating_data(records, labels=labels))


def _fleiss_table(data: RatingData) -> FleissTable:
    m = data.item_counts.sum(axis=1)
    rated = m >= 1
    multi = m[m >= 2]
    if multi.size == 0:
        return FleissTable(np.zeros((0, data.labels.size), dtype=np.int64), [], 0, int(rated.sum()))
    counts = Counter(multi.tolist())
    top = max(counts.values())
    mode = max(v for v, c in counts.items() if c == top)
    keep = m == mode
    idx = np.flatnonzero(keep)
    return FleissTable(
        data.item_counts[keep].copy(),
        [data.items[i] for i in idx.tolist()],
        int(mode),
        int(rated.sum() - keep.sum()),
    )


# --------------------------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------------------------


def _check_level(level: str) -> None:
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")


def krippendorff_alpha_from_counts(
    value_counts: npt.ArrayLike, *, values: Sequence[float], level: Level = "nominal"
) -> float | None:
    """Krippendorff's alpha from a units × values table of counts (n_uv = coders giving unit u value v).

    Coincidence-matrix formulation (Krippendorff 2011): over units with m_u ≥ 2 values,
    o_ck = Σ_u (n_uc n_uk − δ_ck n_uc) / (m_u − 1); n_c = Σ_k o_ck; n = Σ_c n_c;
    e_ck = (n_c n_k − δ_ck n_c) / (n − 1); α = 1 − Σ o_ck δ²_ck / Σ e_ck δ²_ck, with
    δ²_ck = [c ≠ k] (nominal), (v_c − v_k)² (interval), and for ordinal
    (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over the ordered ``values``. ``None`` when no unit has 2 values or
    the expected disagreement is 0 (all pairable values equal).
    """
    _check_level(level)
    vc = np.asarray(value_counts, dtype=np.float64)
    vals = np.asarray(values, dtype=np.float64)
    if vc.ndim != 2 or vc.shape[1] != vals.size:
        raise ValueError("value_counts must be units × values, one column per value")
    m = vc.sum(axis=1)
    vc = vc[m >= 2]
    m = m[m >= 2]
    if vc.shape[0] == 0:
        return None
    scaled = vc / (m - 1)[:, None]
    o = scaled.T @ vc - np.diag(scaled.sum(axis=0))
    n_c = o.sum(axis=0)
    n = n_c.sum()
    e = (np.outer(n_c, n_c) - np.diag(n_c)) / (n - 1)
    k = vals.size
    if level == "nominal":
        d = 1.0 - np.eye(k)
    elif level == "interval":
        d = (vals[:, None] - vals[None, :]) ** 2
    else:
        cum = np.cumsum(n_c)
        i = np.arange(k)
        lo = np.minimum(i[:, None], i[None, :])
        hi = np.maximum(i[:, None], i[None, :])
        between = cum[hi] - cum[lo] + n_c[lo]  # Σ_{g=lo..hi} n_g
        d = (between - (n_c[lo] + n_c[hi]) / 2.0) ** 2
    d_e = float((e * d).sum())
    if d_e <= 0.0:
        return None
    return 1.0 - float((o * d).sum()) / d_e


def krippendorff_alpha(
    reliability_data: npt.ArrayLike,
    *,
    level: Level = "nominal",
    value_domain: Sequence[float] | None = None,
) -> float | None:
    """Krippendorff's alpha of a coders × units matrix with NaN for a missing value.

    ``value_domain`` is the ordered set of possible values (the rubric's grades); values outside it are a
    ValueError. If omitted, the values present are used — which gives the same alpha at every level
    (unused values carry n_g = 0), but pass the rubric to be checked. Matches
    ``krippendorff.alpha(reliability_data=..., level_of_measurement=..., value_domain=...)``; ``None``
    where that raises for lack of pairable values or returns NaN. See :func:`krippendorff_alpha_from_counts`.
    """
    _check_level(level)
    data = np.asarray(reliability_data, dtype=np.float64)
    if data.ndim != 2:
        raise ValueError("reliability_data must be coders × units")
    present = ~np.isnan(data)
    observed = np.unique(data[present])
    if value_domain is None:
        domain = observed
    else:
        domain = np.asarray(value_domain, dtype=np.float64)
        if np.unique(domain).size != domain.size:
            raise ValueError("value_domain must be distinct values")
        if level != "nominal" and (np.diff(domain) <= 0).any():
            raise ValueError("value_domain must be in ascending order for ordinal and interval levels")
        missing = np.setdiff1d(observed, domain)
        if missing.size:
            raise ValueError(f"reliability data holds values outside value_domain: {missing[:10].tolist()}")
    if domain.size == 0:
        return None
    order = np.argsort(domain, kind="stable")
    pos = np.searchsorted(domain[order], data[present])
    col = order[np.minimum(pos, domain.size - 1)]
    unit = np.nonzero(present)[1]
    n_units = data.shape[1]
    counts = np.bincount(unit * domain.size + col, minlength=n_units * domain.size).reshape(
        n_units, domain.size
    )
    return krippendorff_alpha_from_counts(counts, values=domain.tolist(), level=level)
