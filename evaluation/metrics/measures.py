"""trec_eval's measures by name: the families (``FAMILIES``, in trec_eval's output order), its and
pytrec_eval's syntax for measures and their parameters (``plan_measures``: ``P.5,10``, ``ndcg_cut_10``,
nicknames such as ``official``), and the function that computes each (``_measure_function``)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from evaluation.metrics import binary, graded, sets
from evaluation.metrics.ranked import Gain, Ranked

#: trec_eval's default cutoffs for P, recall and ndcg_cut (also used for judged).
DEFAULT_CUTOFFS: tuple[int, ...] = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
#: trec_eval's multiples of R for Rprec_mult.
RPREC_MULT_FRACTIONS: tuple[float, ...] = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)


@dataclass(frozen=True)
class Family:
    """A trec_eval measure family. ``kind``: ``single`` (one value, no parameter), ``long`` (an integer
    count, printed with %ld), ``cut`` (integer cutoffs, one value per cutoff named ``family_k``), ``fcut``
    (fractional cutoffs, named ``family_%3.2f``), ``fparam`` (one value with float parameters, named
    ``family`` or, when parameters are given, ``family_<params as written>``), ``meta`` (runid). ``summary``:
    how the ``all`` line aggregates the per-topic values: ``mean``, ``sum``, ``gm`` (geometric mean with the
    values floored at 1e-5, trec_eval's MIN_GEO_MEAN) or ``count`` (num_q). ``per_topic``: whether trec_eval
    prints a per-topic line for it under -q."""

    name: str
    kind: Literal["single", "long", "cut", "fcut", "fparam", "pairs", "text", "meta"]
    default: tuple[float, ...] = ()
    summary: Literal["mean", "sum", "gm", "count"] = "mean"
    per_topic: bool = True
    arity: int | None = None  # how many parameters an ``fparam`` family takes, if a fixed number


#: Every family, in trec_eval's output order (its te_trec_measures table); ``judged`` is the platform's.
FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("runid", "meta", per_topic=False),
        Family("num_q", "long", summary="count", per_topic=False),
        Family("num_ret", "long", summary="sum"),
        Family("num_rel", "long", summary="sum"),
        Family("num_rel_ret", "long", summary="sum"),
        Family("map", "single"),
        Family("gm_map", "single", summary="gm", per_topic=False),
        Family("Rprec", "single"),
        Family("bpref", "single"),
        Family("recip_rank", "single"),
        Family("iprec_at_recall", "fcut", binary.IPREC_FRACTIONS),
        Family("P", "cut", DEFAULT_CUTOFFS),
        Family("relstring", "text", (10,)),
        Family("recall", "cut", DEFAULT_CUTOFFS),
        Family("infAP", "single"),
        Family("gm_bpref", "single", summary="gm", per_topic=False),
        Family("Rprec_mult", "fcut", RPREC_MULT_FRACTIONS),
        Family("utility", "fparam", (1.0, -1.0, 0.0, 0.0), arity=4),
        Family("11pt_avg", "fparam", binary.IPREC_FRACTIONS),
        Family("binG", "single"),
        Family("G", "pairs"),
        Family("dcg", "pairs"),
        Family("ideal_dcg", "pairs"),
        Family("ndcg", "pairs"),
        Family("ndcg_rel", "pairs"),
        Family("Rndcg", "pairs"),
        Family("ndcg_cut", "cut", DEFAULT_CUTOFFS),
        Family("map_cut", "cut", DEFAULT_CUTOFFS),
        Family("relative_P", "cut", DEFAULT_CUTOFFS),
        Family("success", "cut", (1, 5, 10)),
        Family("set_P", "single"),
        Family("set_relative_P", "single"),
        Family("set_recall", "single"),
        Family("set_map", "single"),
        Family("set_F", "fparam", (1.0,)),
        Family("num_nonrel_judged_ret", "long", summary="sum"),
        Family("rbp", "pairs"),
        Family("rbp_resid", "single"),
        Family("unj", "cut", (5, 10, 20)),
        Family("judged", "cut", DEFAULT_CUTOFFS),
    )
}
#: Families in output order, with whether they take parameters (kept for callers of the old table).
MEASURE_FAMILIES: dict[str, bool] = {f.name: f.kind in ("cut", "fcut", "fparam") for f in FAMILIES.values()}
# trec_eval's own lists (measures.c), in its order; a family the platform lacks is left out of the nickname.
_COUNTS = ["runid", "num_q", "num_ret", "num_rel", "num_rel_ret"]  # every list starts with these
_OFFICIAL = [*_COUNTS, "map", "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall", "P"]
_SET_MEASURES = ["set_P", "set_recall", "set_relative_P", "set_map", "set_F"]
_NICKNAMES: dict[str, list[str]] = {
    "official": _OFFICIAL,
    "all_trec": [
        *_OFFICIAL,
        "relstring",
        "recall",
        "unj",
        "rbp",
        "rbp_resid",
        "infAP",
        "gm_bpref",
        "utility",
        "11pt_avg",
        "ndcg",
        "relative_P",
        "Rprec_mult",
        "success",
        "map_cut",
        "ndcg_cut",
        "ndcg_rel",
        "Rndcg",
        "binG",
        "G",
        *_SET_MEASURES,
        "num_nonrel_judged_ret",
    ],  # fmt: skip
    "set": [*_COUNTS, "utility", *_SET_MEASURES],
}
#: trec_eval families the platform does not compute (see the README).
NOT_SUPPORTED = (
    "prefs_*", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg", "yaap",  # other qrels formats (prefs, qrels_jg)
)  # fmt: skip
_PYTREC_NAME = re.compile(r"^(?P<family>[A-Za-z0-9_]+?)_(?P<param>\d+(?:\.\d+)?)$")


@dataclass(frozen=True)
class Measure:
    """One value per topic: its printed name, its family and its parameter (a cutoff, a fraction, or the
    float parameters of an ``fparam`` family)."""

    name: str
    family: Family
    param: Any = None


def supported_measures() -> list[str]:
    """The family names and nicknames accepted by ``parse_measures``."""
    return [*FAMILIES, *_NICKNAMES]


def plan_measures(specs: Iterable[str]) -> list[Measure]:
    """Expand measure specifications into the measures to compute, in trec_eval's output order.

    trec_eval's syntax: ``P.5,10`` (cutoffs, sorted; a duplicate is an error), ``iprec_at_recall.0.1,0.5``,
    ``11pt_avg.0.2,0.5,0.8``, ``set_F.0.5``, a bare family for its default parameters, nicknames
    (``official``, ``all_trec``, ``set``). As in trec_eval, the first parameters given for a family win:
    ``-m P.5 -m P.20`` computes P_5 only. pytrec_eval's names (``P_5``, ``ndcg_cut_10``,
    ``iprec_at_recall_0.10``) are accepted too; those of one family add up (``P_5``, ``P_10``: both),
    with the first trec_eval-style parameters of the family if any. Unknown names: ValueError listing the
    supported ones.
    """
    marked: list[str] = []
    dotted: dict[str, str] = {}
    underscored: dict[str, list[str]] = {}
    for spec in specs:
        for part in spec.split():
            family, params, style = _parse_one(part)
            for name in _NICKNAMES.get(family, [family]):
                if name not in marked:
                    marked.append(name)
            if params is None:
                continue
            if style == "dot":
                dotted.setdefault(family, params)
            else:
                underscored.setdefault(family, []).append(params)
    plan: list[Measure] = []
    for fam in FAMILIES.values():
        if fam.name not in marked:
            continue
        given = dotted.get(fam.name)
        if fam.name in underscored:
            given = ",".join(([given] if given else []) + underscored[fam.name])
            plan.extend(_expand(fam, given, dedupe=True, printable=None))
        else:
            plan.extend(_expand(fam, given, dedupe=False, printable=given))
    return plan


def measures_as_asked(specs: Iterable[str]) -> list[Measure]:
    """The measures of ``plan_measures(specs)`` the specifications name themselves, in the order they were
    given rather than trec_eval's output order: ``-m ndcg_cut.10 -m P.10`` gives ndcg_cut_10 first. A
    nickname (``official``, ``all_trec``, ``set``) names none, so ``[]`` when only nicknames were given.
    Within one specification, its measures in the plan's order (``P.5,10``: P_5, then P_10); a
    specification the plan does not compute (``P.20`` after ``P.5``: the first parameters win) adds none."""
    specs = list(specs)
    plan = plan_measures(specs)
    asked: list[Measure] = []
    for spec in specs:
        for part in spec.split():
            if part in _NICKNAMES:
                continue
            own = {m.name for m in plan_measures([part])}
            asked.extend(m for m in plan if m.name in own and m not in asked)
    return asked


def parse_measures(specs: Iterable[str]) -> list[str]:
    """The printed names of ``plan_measures(specs)``, e.g. ``['map', 'P_5', 'P_10', 'ndcg_cut_10']``."""
    return [m.name for m in plan_measures(specs)]


def _unknown(part: str) -> ValueError:
    return ValueError(
        f"unknown measure {part!r}; supported: {', '.join(supported_measures())} "
        f"(with parameters as in trec_eval, e.g. P.5,10 or iprec_at_recall.0.5)"
    )


def _parse_one(part: str) -> tuple[str, str | None, str]:
    if part in FAMILIES or part in _NICKNAMES:
        return part, None, ""
    match = _PYTREC_NAME.match(part)
    if match and match["family"] in FAMILIES and FAMILIES[match["family"]].kind in ("cut", "fcut"):
        return match["family"], match["param"], "underscore"
    family, dot, params = part.partition(".")
    if dot and family in FAMILIES and FAMILIES[family].kind in ("cut", "fcut", "fparam", "pairs", "text"):
        if not params:
            raise ValueError(f"measure {part!r} has an empty parameter")
        return family, params, "dot"
    raise _unknown(part)


def _numbers(family: Family, params: str) -> Any:
    if family.kind == "pairs":  # grade=gain,grade=gain (trec_eval's gain maps)
        try:
            pairs = [p.split("=") for p in params.split(",")]
            key = str if family.name == "rbp" else int  # ndcg, dcg, G, ...: grade=gain; rbp: p=0.95
            return {key(name): float(value) for name, value in pairs}
        except ValueError:
            raise ValueError(
                f"bad parameters {params!r} for {family.name!r}: write grade=gain,... (ndcg.1=3,2=9) "
                "or p=VALUE (rbp.p=0.95)"
            ) from None
    try:
        values = [float(p) for p in params.split(",")]
    except ValueError:
        raise ValueError(f"bad parameters {params!r} for measure {family.name!r}") from None
    if family.arity is not None and len(values) != family.arity:
        example = ",".join(f"{v:g}" for v in family.default)
        raise ValueError(
            f"measure {family.name} takes {family.arity} parameters ({family.name}.{example}), not {params!r}"
        )
    if family.kind == "cut":
        if any(v != int(v) for v in values):
            raise ValueError(f"cutoffs of {family.name!r} must be integers, not {params!r}")
        if min(values) < 1:
            raise ValueError(f"cutoffs must be positive in measure {family.name}.{params}")
    return values


def _expand(family: Family, params: str | None, *, dedupe: bool, printable: str | None) -> list[Measure]:
    values = list(family.default) if params is None else _numbers(family, params)
    if family.kind in ("single", "long", "meta"):
        return [Measure(family.name, family)]
    if family.kind in ("fparam", "pairs", "text"):
        name = family.name if printable is None else f"{family.name}_{printable}"
        return [Measure(name, family, values or None if family.kind == "pairs" else tuple(values))]
    values = sorted(set(values)) if dedupe else sorted(values)
    if len(set(values)) != len(values):
        raise ValueError(f"duplicate cutoffs in measure {family.name}.{params}")  # trec_eval refuses too
    if family.kind == "cut":
        return [Measure(f"{family.name}_{int(v)}", family, int(v)) for v in values]
    return [Measure(f"{family.name}_{v:3.2f}", family, v) for v in values]


def _measure_function(measure: Measure, gain: Gain) -> Callable[[Ranked], np.ndarray]:
    simple: dict[str, Callable[[Ranked], np.ndarray]] = {
        "num_q": lambda r: np.ones(r.n_topics, dtype=np.float64),
        "num_ret": sets.num_ret,
        "num_rel": sets.num_rel,
        "num_rel_ret": sets.num_rel_ret,
        "map": binary.map,
        "gm_map": binary.map,
        "Rprec": binary.Rprec,
        "bpref": binary.bpref,
        "gm_bpref": binary.bpref,
        "recip_rank": binary.recip_rank,
        "infAP": binary.infAP,
        "set_P": sets.set_P,
        "set_relative_P": sets.set_relative_P,
        "set_recall": sets.set_recall,
        "set_map": sets.set_map,
        "num_nonrel_judged_ret": sets.num_nonrel_judged_ret,
        "binG": binary.binG,
        "rbp_resid": graded.rbp_resid,
    }
    cut: dict[str, Callable[[Ranked, Any], np.ndarray]] = {
        "P": binary.P_k,
        "recall": binary.recall_k,
        "ndcg_cut": lambda r, k: graded.ndcg_cut_k(r, k, gain),
        "map_cut": binary.map_cut_k,
        "relative_P": binary.relative_P_k,
        "success": binary.success_k,
        "judged": binary.judged_k,
        "iprec_at_recall": binary.iprec_at_recall,
        "Rprec_mult": binary.Rprec_mult,
        "11pt_avg": binary.eleven_pt_avg,
        "set_F": lambda r, ps: sets.set_F(r, ps[0]),
        "utility": sets.utility,
        "unj": binary.unj_k,
        "rbp": lambda r, pairs: graded.rbp(r, (pairs or {}).get("p", 0.9)),
        "ndcg": lambda r, gains: graded.ndcg(r, gain, gains),
        "dcg": graded.dcg,
        "ideal_dcg": graded.ideal_dcg,
        "G": graded.G,
        "ndcg_rel": graded.ndcg_rel,
        "Rndcg": graded.Rndcg,
    }
    name = measure.family.name
    if name in simple:
        return simple[name]
    if name in cut:
        return lambda r: cut[name](r, measure.param)
    raise ValueError(f"unknown measure {measure.name!r}")
