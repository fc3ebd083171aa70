"""Position propensities of the position-based click model (PBM), pure numpy (no Django).

The PBM: a user examines position k with probability θ_k and clicks an examined document d with
probability γ_d, so P(click d at k) = θ_k·γ_d. Every estimator here returns θ normalised so that θ_1 = 1
(only ratios are identified from clicks), as an `Estimate` with its diagnostics and warnings.

The input is `Counts`: impressions and clicks per cell (query-document pair, position, logger), the
sufficient statistics of the PBM. Positions are 1-based.

- `given`: the user's own θ, validated (each in (0, 1]).
- `randtop`: RandTop-n (Joachims et al. 2017): the top n were shuffled uniformly, so relevance is
  independent of position and θ_k/θ_1 = CTR_k / CTR_1 over positions 1..n.
- `harvest`: intervention harvesting (Agarwal et al. 2019): a (query, document) shown at positions k and
  k' (by different loggers, or by a randomised one) is an intervention on the pair (k, k'). For each pair,
  θ_k/θ_k' = Σ_{(q,d)∈S_kk'} w_q·ĉ_k(q,d) / Σ w_q·ĉ_k'(q,d), where ĉ_k is the click rate of (q,d) at k and
  w_q the query's impressions (the paper's weighting with deterministic loggers). The pair ratios are
  combined into one curve by weighted least squares on log θ (weights 1/var of the log ratio, θ_1 = 1).
  Reports the number of interventions (pairs (q,d)) and clicks per position pair, and warns for a
  position no document was ever moved to or from.
- `swap_k`: swap interventions (position 1 swapped with a random k): harvesting restricted to the pairs
  (1, k), each read directly.
- `em`: regression-free EM for the PBM (Chuklin et al. 2015; Wang et al. 2018) on the cells aggregated
  over loggers; identifiable only when documents appear at several positions (warned otherwise).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from online.logformats import MAX_POSITION

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


#: RandTop's deepest randomised depth `n`: a page shows at most MAX_POSITION positions.
MAX_DEPTH = MAX_POSITION


class PropensityError(ValueError):
    """A propensity that cannot be used (outside (0, 1], not finite, or no data to estimate it), or an
    argument an estimator cannot take (RandTop's `n` outside 1..MAX_DEPTH)."""


def depth_problem(n: Any) -> str | None:
    """What is wrong with RandTop's `n`, the depth it shuffled (None: nothing): a whole number from 1 to
    MAX_DEPTH. The one rule: `randtop` refuses with it, and the API, the log page and the command ask it
    before they start."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 1 <= n <= MAX_DEPTH:
        return f"n must be a whole number from 1 to {MAX_DEPTH} (the depth it shuffled), not {n}"
    return None


@dataclass
class Counts:
    """Impressions and clicks per cell: `pair` indexes the (query, document), `query` its query,
    `position` is 1-based, `logger` indexes the ranker that showed it."""

    pair: IntArray
    query: IntArray
    position: IntArray
    logger: IntArray
    impressions: FloatArray
    clicks: FloatArray

    @classmethod
    def from_cells(
        cls,
        pair: Any,
        position: Any,
        impressions: Any,
        clicks: Any,
        *,
        query: Any = None,
        logger: Any = None,
    ) -> Counts:
        pair_a = np.asarray(pair, dtype=np.int64)
        n = len(pair_a)
        return cls(
            pair=pair_a,
            query=np.asarray(query if query is not None else pair_a, dtype=np.int64),
            position=np.asarray(position, dtype=np.int64),
            logger=np.asarray(logger if logger is not None else np.zeros(n), dtype=np.int64),
            impressions=np.asarray(impressions, dtype=np.float64),
            clicks=np.asarray(clicks, dtype=np.float64),
        )

    @property
    def max_position(self) -> int:
        return int(self.position.max()) if len(self.position) else 0


@dataclass
class Estimate:
    theta: list[float]
    method: str
    diagnostics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def validate(theta: Any) -> list[float]:
    """θ as a list of floats, one per position (at most MAX_POSITION), each finite and in (0, 1];
    PropensityError naming the position otherwise."""
    values = list(theta)
    if not values:
        raise PropensityError("no propensities given")
    if len(values) > MAX_POSITION:
        raise PropensityError(
            f"{len(values):,} propensities given; a page shows at most {MAX_POSITION:,} positions"
        )
    out = []
    for k, value in enumerate(values, start=1):
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise PropensityError(f"position {k}: propensity {value!r} is not a number") from None
        if not np.isfinite(number) or not 0.0 < number <= 1.0:
            raise PropensityError(f"position {k}: propensity {value!r} is outside (0, 1]")
        out.append(number)
    return out


def given(theta: Any) -> Estimate:
    """The user's θ, validated, as given (not renormalised: they said what θ_1 is)."""
    return Estimate(theta=validate(theta), method="given")


def _normalise(theta: FloatArray) -> list[float]:
    if not np.isfinite(theta[0]) or theta[0] <= 0:
        raise PropensityError("position 1 has no clicks: θ cannot be normalised")
    return [float(v) for v in np.clip(theta / theta[0], 1e-6, 1.0)]  # NaN (undefined) stays NaN


def randtop(counts: Counts, n: int | None = None) -> Estimate:
    """RandTop-n: θ_k/θ_1 = CTR_k / CTR_1 for k ≤ n (n defaults to the deepest position logged; a given n
    is 1 to MAX_DEPTH, `depth_problem`, a PropensityError else)."""
    if n is None:
        n = counts.max_position
    elif problem := depth_problem(n):
        raise PropensityError(problem)
    if n < 1:
        raise PropensityError("no impressions")
    keep = counts.position <= n
    imp = np.bincount(counts.position[keep] - 1, weights=counts.impressions[keep], minlength=n)
    clk = np.bincount(counts.position[keep] - 1, weights=counts.clicks[keep], minlength=n)
    warnings = [f"position {k + 1}: no impressions" for k in np.flatnonzero(imp == 0)]
    warnings += [f"position {k + 1}: no clicks: θ undefined" for k in np.flatnonzero((imp > 0) & (clk == 0))]
    # undefined (NaN) where nothing was shown or nothing clicked: a θ of 0 clipped to 1e-6 would weigh a
    # later click there a million times
    ctr = np.divide(clk, imp, out=np.full(n, np.nan), where=(imp > 0) & (clk > 0))
    return Estimate(
        theta=_normalise(ctr),
        method="randtop",
        diagnostics={"impressions": imp.tolist(), "clicks": clk.tolist(), "n": n},
        warnings=warnings,
    )


def _cell_rates(counts: Counts) -> tuple[Any, Any, Any, Any, Any]:
    """Cells aggregated over loggers: (pair, position) → impressions, clicks; and each pair's query
    weight w_q (the query's impressions per position shown, i.e. its number of result lists)."""
    k = counts.max_position
    key = counts.pair * k + (counts.position - 1)
    uniq, inv = np.unique(key, return_inverse=True)
    imp = np.bincount(inv, weights=counts.impressions)
    clk = np.bincount(inv, weights=counts.clicks)
    pair = uniq // k
    pos = uniq % k + 1
    query_of_pair = np.zeros(int(counts.pair.max()) + 1, dtype=np.int64)
    query_of_pair[counts.pair] = counts.query
    # a query's weight is its number of result lists: the impressions at its most-shown position
    n_queries = int(counts.query.max()) + 1
    per_position = np.bincount(
        counts.query * k + counts.position - 1, weights=counts.impressions, minlength=n_queries * k
    )
    lists = per_position.reshape(n_queries, k).max(axis=1)
    weight = lists[query_of_pair[pair]]
    return pair, pos, imp, clk, weight


def pair_ratios(
    counts: Counts, pairs: list[tuple[int, int]] | None = None
) -> dict[tuple[int, int], dict[str, float]]:
    """For each position pair (k, k') with k < k': the harvested ratio θ_k'/θ_k and its support — the
    number of interventions (query-document pairs seen at both), their clicks at each position."""
    pair, pos, imp, clk, weight = _cell_rates(counts)
    kmax = counts.max_position
    rate = np.divide(clk, imp, out=np.zeros_like(clk), where=imp > 0)
    n_pairs = int(pair.max()) + 1 if len(pair) else 0
    dense_rate = np.full((n_pairs, kmax), np.nan)
    dense_rate[pair, pos - 1] = rate
    dense_clk = np.zeros((n_pairs, kmax))
    dense_clk[pair, pos - 1] = clk
    w = np.zeros(n_pairs)
    w[pair] = weight
    seen = ~np.isnan(dense_rate)
    wanted = pairs or [(a, b) for a in range(1, kmax + 1) for b in range(a + 1, kmax + 1)]
    out: dict[tuple[int, int], dict[str, float]] = {}
    for a, b in wanted:
        both = seen[:, a - 1] & seen[:, b - 1]
        count = int(both.sum())
        if not count:
            out[(a, b)] = {"interventions": 0, "clicks_a": 0.0, "clicks_b": 0.0, "ratio": float("nan")}
            continue
        num = float((w[both] * dense_rate[both, b - 1]).sum())
        den = float((w[both] * dense_rate[both, a - 1]).sum())
        out[(a, b)] = {
            "interventions": count,
            "clicks_a": float(dense_clk[both, a - 1].sum()),
            "clicks_b": float(dense_clk[both, b - 1].sum()),
            "ratio": num / den if den > 0 else float("nan"),
        }
    return out


def _pair_table(ratios: dict[tuple[int, int], dict[str, float]]) -> list[dict[str, Any]]:
    return [
        {"a": a, "b": b, **{key: value for key, value in stats.items() if key != "ratio"}}
        | {"ratio": None if not np.isfinite(stats["ratio"]) else stats["ratio"]}
        for (a, b), stats in sorted(ratios.items())
    ]


def swap_k(counts: Counts) -> Estimate:
    """Swap interventions: θ_k/θ_1 read from the pair (1, k) alone, for each k."""
    kmax = counts.max_position
    ratios = pair_ratios(counts, [(1, k) for k in range(2, kmax + 1)])
    theta = [1.0]
    warnings = []
    for k in range(2, kmax + 1):
        stats = ratios[(1, k)]
        if not stats["interventions"] or not np.isfinite(stats["ratio"]):
            warnings.append(f"position {k}: no document was swapped between positions 1 and {k}")
            theta.append(float("nan"))
        else:
            theta.append(float(min(max(stats["ratio"], 1e-6), 1.0)))
    return Estimate(theta=theta, method="swap", diagnostics={"pairs": _pair_table(ratios)}, warnings=warnings)


def harvest(counts: Counts) -> Estimate:
    """Intervention harvesting across loggers: pair ratios combined by weighted least squares on log θ."""
    kmax = counts.max_position
    ratios = pair_ratios(counts)
    rows, rhs, weights = [], [], []
    for (a, b), stats in ratios.items():
        if stats["interventions"] and stats["clicks_a"] > 0 and stats["clicks_b"] > 0:
            row = np.zeros(kmax)
            row[b - 1], row[a - 1] = 1.0, -1.0
            rows.append(row)
            rhs.append(np.log(stats["ratio"]))
            weights.append(1.0 / (1.0 / stats["clicks_a"] + 1.0 / stats["clicks_b"]))
    warnings = []
    moved = np.zeros(kmax, dtype=bool)
    for (a, b), stats in ratios.items():
        if stats["interventions"]:
            moved[a - 1] = moved[b - 1] = True
    if not moved.any():
        raise PropensityError(
            "documents never change rank across the loggers: there is no intervention to harvest"
        )
    for k in np.flatnonzero(~moved):
        warnings.append(f"position {k + 1}: no document was ever shown there and at another position")
    if not rows:
        raise PropensityError(
            "no intervention has clicks at both of its positions: θ cannot be harvested from this log"
        )
    design = np.array(rows)[:, 1:]  # log θ_1 = 0
    sw = np.sqrt(np.array(weights))
    solution, *_ = np.linalg.lstsq(design * sw[:, None], np.array(rhs) * sw, rcond=None)
    theta = np.exp(np.concatenate([[0.0], solution]))
    reachable = _connected_to_first(ratios, kmax)
    theta[~reachable] = np.nan
    for k in np.flatnonzero(~reachable & moved):
        warnings.append(f"position {k + 1}: its interventions never connect to position 1")
    return Estimate(
        theta=[float(min(v, 1.0)) if np.isfinite(v) else float("nan") for v in theta],
        method="harvest",
        diagnostics={"pairs": _pair_table(ratios)},
        warnings=warnings,
    )


def _connected_to_first(ratios: dict[tuple[int, int], dict[str, float]], kmax: int) -> NDArray[np.bool_]:
    reach = np.zeros(kmax, dtype=bool)
    reach[0] = True
    changed = True
    while changed:
        changed = False
        for (a, b), stats in ratios.items():
            usable = stats["interventions"] and stats["clicks_a"] > 0 and stats["clicks_b"] > 0
            if usable and reach[a - 1] != reach[b - 1]:
                reach[a - 1] = reach[b - 1] = True
                changed = True
    return reach


def em(counts: Counts, *, iterations: int = 500, tol: float = 1e-7) -> Estimate:
    """EM for the PBM on cells (pair, position) aggregated over loggers.

    E-step for the non-clicks of a cell: P(examined, not relevant | no click) = θ(1-γ)/(1-θγ) and
    P(not examined, relevant | no click) = (1-θ)γ/(1-θγ); a click is examined and relevant. M-step: θ_k and
    γ_d are the expected examined / relevant shares of their cells' impressions. Stops once no θ_k moves by
    `tol` in an iteration, or at `iterations` with a warning that it did not converge (the cap stays low:
    the click labels' bootstrap runs EM again for every replicate).
    """
    pair, pos, imp, clk, _ = _cell_rates(counts)
    kmax = counts.max_position
    n_pairs = int(pair.max()) + 1
    positions_per_pair = np.bincount(pair, minlength=n_pairs)
    warnings = []
    if (positions_per_pair <= 1).all():
        warnings.append(
            "documents never change rank: EM cannot tell position from relevance, θ is not identified"
        )
    theta = np.full(kmax, 0.5)
    gamma = np.full(n_pairs, 0.5)
    imp_k = np.bincount(pos - 1, weights=imp, minlength=kmax)
    imp_d = np.bincount(pair, weights=imp, minlength=n_pairs)
    non = imp - clk
    done, shift = 0, float("inf")
    for step in range(1, iterations + 1):
        done = step
        t, g = theta[pos - 1], gamma[pair]
        denom = np.maximum(1.0 - t * g, 1e-12)
        exam = clk + non * t * (1.0 - g) / denom
        rel = clk + non * (1.0 - t) * g / denom
        new_theta = np.divide(
            np.bincount(pos - 1, weights=exam, minlength=kmax), imp_k, where=imp_k > 0, out=np.zeros(kmax)
        )
        gamma = np.clip(
            np.divide(
                np.bincount(pair, weights=rel, minlength=n_pairs),
                imp_d,
                where=imp_d > 0,
                out=np.zeros(n_pairs),
            ),
            1e-9,
            1 - 1e-9,
        )
        shift = float(np.abs(new_theta - theta).max())
        theta = np.clip(new_theta, 1e-9, 1.0)
        if shift < tol:
            break
    converged = shift < tol
    if not converged:
        warnings.append(
            f"EM stopped at its cap of {iterations:,} iterations without converging: θ still moved by "
            f"{shift:.2g} in the last one (tolerance {tol:g}), so it is not yet the likelihood's maximum"
        )
    return Estimate(
        theta=_normalise(theta),
        method="em",
        diagnostics={
            "iterations": done,
            "converged": converged,
            "last_shift": shift,
            "theta_unnormalised": theta.tolist(),
        },
        warnings=warnings,
    )


def estimate(method: str, counts: Counts | None, **params: Any) -> Estimate:
    """Dispatch by method name (the one place the pages, API, commands and tasks choose)."""
    if method == "given":
        return given(params["theta"])
    if counts is None or not len(counts.pair):
        raise PropensityError("the log has no impressions to estimate from")
    if method == "randtop":
        return randtop(counts, params.get("n"))
    if method == "swap":
        return swap_k(counts)
    if method == "harvest":
        return harvest(counts)
    if method == "em":
        return em(counts, iterations=int(params.get("iterations", 500)))
    raise PropensityError(f"unknown method {method!r}")
