"""Pure pooling algorithms: depth-k pools, adaptive judging order, pool statistics.

Nothing here imports Django; every function takes plain data and is usable from a notebook. The inputs are
per topic ``ranked: dict[run, list[docid]]`` — each run's ranked list for one topic, already in trec_eval
order (see :func:`trec_order`) — or per campaign ``ranked_by_topic: dict[qid, dict[run, list[docid]]]``
(see :func:`rankings_by_topic`). Qrels are ``dict[qid, dict[docid, int]]``, as pytrec_eval takes them.

Strategies, by name in :data:`STRATEGIES`:

- ``depth``: judge in depth-k order (:func:`depth_order`), the non-adaptive baseline.
- ``mtf``: move-to-front (Cormack, Palmer & Clarke 1998), :class:`MoveToFrontChooser`.
- ``bandit-maxmean`` / ``bandit-thompson``: multi-armed bandits (Losada, Parapar & Barreiro 2016-17),
  :class:`MaxMeanChooser` and :class:`ThompsonChooser`.

A *chooser* is a small state machine the web app calls between judgements: :meth:`Chooser.next_document`
names the document to judge next, :meth:`Chooser.record` reports its grade, :meth:`Chooser.state` returns
a JSON-serialisable snapshot and :meth:`Chooser.from_state` resumes from it. Everything random comes from
a seeded ``numpy.random.Generator`` whose state is part of the snapshot, so a pool is reproducible (for a
fixed numpy version, whose stream numpy does not promise across versions) and a resumed chooser continues
exactly as an uninterrupted one would.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar, cast

import numpy as np
from scipy.stats import kendalltau

from pooling import trec_io

__all__ = [
    "STRATEGIES",
    "Chooser",
    "DepthChooser",
    "MaxMeanChooser",
    "MoveToFrontChooser",
    "ThompsonChooser",
    "allocate_budget",
    "depth_k_pool",
    "depth_k_pool_by_topic",
    "depth_order",
    "kendall_tau",
    "leave_one_out_qrels",
    "make_chooser",
    "overlap_jaccard",
    "pool_contributions",
    "rankings_by_topic",
    "simulate",
    "topic_seed",
    "topk_sets",
    "trec_order",
    "unique_contributions",
]

Ranked = Mapping[str, Sequence[str]]
Provenance = list[tuple[str, int]]  # [(run, rank), ...] of one pooled document
Qrels = Mapping[str, Mapping[str, int]]
Item = tuple[str, str]

STATE_VERSION = 1


# --------------------------------------------------------------------------------------------------------
# Run ordering (trec_eval's: score descending, ties by docid descending in byte order)


def trec_order(rows: Iterable[tuple[str, float]]) -> list[str]:
    """Return the docids of one run's rows for one topic in trec_eval 10 order.

    Order: score descending (as a double), ties broken by docid **descending** in the byte order of its
    UTF-8 encoding (trec_eval's ``strcmp(b, a)``), as :func:`pooling.trec_io.trec_order` defines it for
    every reader of runs. Rank 1 is the first element. A score that is not finite, or the same docid
    twice, raises ``ValueError`` (trec_eval stops on duplicate docs; the platform is stricter than its
    ``atof`` about scores).
    """
    docids: list[str] = []
    scores: list[float] = []
    seen: set[str] = set()
    for docid, score in rows:
        value = float(score)
        if not math.isfinite(value):
            raise ValueError(f"score of {docid!r} is not a finite number: {score!r}")
        if docid in seen:
            raise ValueError(f"duplicate docid {docid!r}")
        seen.add(docid)
        docids.append(docid)
        scores.append(value)
    encoded = [docid.encode("utf-8") for docid in docids]
    byte_rank = np.empty(len(docids), dtype=np.int64)  # each docid's place in byte order
    byte_rank[sorted(range(len(docids)), key=encoded.__getitem__)] = np.arange(len(docids))
    order = trec_io.trec_order(
        np.zeros(len(docids), dtype=np.intp), np.array(scores, dtype=np.float64), byte_rank, 1
    )
    return docids if order is None else [docids[i] for i in order.tolist()]


def rankings_by_topic(
    runs: Mapping[str, Iterable[tuple[str, str, float]]],
) -> dict[str, dict[str, list[str]]]:
    """Group runs' ``(qid, docid, score)`` rows into ``{qid: {run: ranked docids}}`` in trec_eval order.

    A run with no row for a topic is absent from that topic's dict (not present with an empty list).
    Topics and runs appear in sorted order. Errors as in :func:`trec_order`.
    """
    grouped: dict[str, dict[str, list[tuple[str, float]]]] = {}
    for run in sorted(runs):
        for qid, docid, score in runs[run]:
            grouped.setdefault(qid, {}).setdefault(run, []).append((docid, score))
    return {
        qid: {run: trec_order(rows) for run, rows in sorted(grouped[qid].items())} for qid in sorted(grouped)
    }


# --------------------------------------------------------------------------------------------------------
# Depth-k pooling (TREC's union of every run's first k documents)


def _check_depth(k: int | None) -> None:
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
        raise ValueError(f"depth must be a non-negative integer or None, got {k!r}")


def _truncated(ranked: Ranked, k: int | None) -> dict[str, list[str]]:
    """Each run's first ``k`` docids (all when ``k`` is None), runs in sorted order; duplicates raise."""
    _check_depth(k)
    out: dict[str, list[str]] = {}
    for run in sorted(ranked):
        docs = list(ranked[run])
        if len(set(docs)) != len(docs):
            raise ValueError(f"run {run!r} ranks the same docid twice")
        out[run] = docs if k is None else docs[:k]
    return out


def depth_k_pool(ranked: Ranked, k: int) -> dict[str, Provenance]:
    """Depth-k pool of one topic: ``{docid: [(run, rank), ...]}``.

    pool = ⋃ over runs r of the first ``k`` documents of r's list (a run shorter than ``k`` contributes
    all its documents). The provenance of a document is every ``(run, rank)`` with rank ≤ k (1-based)
    that put it in the pool, sorted by run name. Documents appear in order of first appearance when the
    runs are read in sorted name order, rank by rank; callers should not rely on that order.
    This is the reference implementation for the set-based SQL pool build.
    """
    if k is None:
        raise ValueError("depth_k_pool needs a depth k")
    pool: dict[str, list[tuple[str, int]]] = {}
    for run, docs in _truncated(ranked, k).items():
        for rank, docid in enumerate(docs, start=1):
            pool.setdefault(docid, []).append((run, rank))
    return pool


def depth_k_pool_by_topic(ranked_by_topic: Mapping[str, Ranked], k: int) -> dict[str, dict[str, Provenance]]:
    """:func:`depth_k_pool` for every topic: ``{qid: {docid: [(run, rank), ...]}}``."""
    return {qid: depth_k_pool(ranked_by_topic[qid], k) for qid in sorted(ranked_by_topic)}


def depth_order(ranked: Ranked, k: int | None) -> list[str]:
    """The baseline judging order "in depth-k order": every run's rank 1, then every run's rank 2, ...

    Within one rank the runs are taken in sorted name order; a document already listed is skipped. Only
    ranks ≤ ``k`` are used (every rank when ``k`` is None), so the result is exactly the depth-k pool.
    """
    lists = _truncated(ranked, k)
    order: list[str] = []
    seen: set[str] = set()
    longest = max((len(docs) for docs in lists.values()), default=0)
    for i in range(longest):
        for docs in lists.values():
            if i < len(docs) and docs[i] not in seen:
                seen.add(docs[i])
                order.append(docs[i])
    return order


# --------------------------------------------------------------------------------------------------------
# Adaptive choosers


def _is_relevant(grade: int | None, relevance_level: int) -> bool:
    return grade is not None and grade >= relevance_level


def _rng_state_out(rng: np.random.Generator) -> dict[str, Any]:
    # PCG64's 128-bit integers do not survive every JSON consumer as numbers; keep them as strings.
    raw = rng.bit_generator.state
    return {
        "bit_generator": raw["bit_generator"],
        "state": {name: str(value) for name, value in raw["state"].items()},
        "has_uint32": int(raw["has_uint32"]),
        "uinteger": int(raw["uinteger"]),
    }


def _rng_state_in(saved: Mapping[str, Any]) -> np.random.Generator:
    if saved["bit_generator"] != "PCG64":
        raise ValueError(f"unsupported bit generator {saved['bit_generator']!r}")
    bit_generator = np.random.PCG64()
    restored: dict[str, Any] = {
        "bit_generator": "PCG64",
        "state": {name: int(value) for name, value in saved["state"].items()},
        "has_uint32": int(saved["has_uint32"]),
        "uinteger": int(saved["uinteger"]),
    }
    bit_generator.state = cast(Any, restored)
    return np.random.Generator(bit_generator)


def _fingerprint(lists: Mapping[str, Sequence[str]]) -> str:
    payload = json.dumps([[run, list(docs)] for run, docs in sorted(lists.items())], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


class Chooser:
    """Picks the next document of one topic to judge, as judgements arrive.

    Protocol:

    - :meth:`next_document` returns the document to judge next, or None when every candidate (every
      document within ``depth`` of some run) is judged. It is idempotent: until that document is recorded,
      it returns the same document again.
    - :meth:`record` reports a grade. For the document :meth:`next_document` returned, the grade drives the
      strategy (``grade >= relevance_level`` is relevant; ``None`` = unrateable counts as non-relevant).
      Any other candidate is an *external* judgement (made elsewhere, e.g. before a run was added to the
      pool): it is marked judged, so no run will offer it again, and changes nothing else. A docid that is
      no candidate is ignored. Recording a document twice raises ``ValueError``.
    - :meth:`state` is a JSON-serialisable snapshot; :meth:`from_state` resumes it against the same ranked
      lists (checked by a fingerprint of the lists truncated at ``depth``).

    A chooser does not count the budget; the caller stops asking when it is spent.
    """

    strategy: ClassVar[str] = ""

    def __init__(self, ranked: Ranked, *, depth: int | None, seed: int, relevance_level: int = 1) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        if relevance_level < 1:
            raise ValueError("relevance_level must be at least 1 (grades below it count as non-relevant)")
        self.depth = depth
        self.seed = int(seed)
        self.relevance_level = int(relevance_level)
        self._lists = _truncated(ranked, depth)
        self._runs: list[str] = list(self._lists)  # sorted names
        self._candidates: set[str] = {docid for docs in self._lists.values() for docid in docs}
        self._positions: dict[str, int] = dict.fromkeys(self._runs, 0)
        self._judged: set[str] = set()
        self._judged_order: list[str] = []
        self._pending: tuple[str | None, str] | None = None
        self._fingerprint = _fingerprint(self._lists)
        self._rng = np.random.default_rng(self.seed)

    # -- shared mechanics ------------------------------------------------------------------------------

    def _next_unjudged(self, run: str) -> str | None:
        """Advance ``run`` past judged documents (at no cost) and return its best-ranked unjudged one."""
        docs = self._lists[run]
        position = self._positions[run]
        while position < len(docs) and docs[position] in self._judged:
            position += 1
        self._positions[run] = position
        return docs[position] if position < len(docs) else None

    def _live_runs(self) -> list[str]:
        """Runs that still have an unjudged document within depth, in sorted name order."""
        return [run for run in self._runs if self._next_unjudged(run) is not None]

    def _choose(self) -> tuple[str | None, str] | None:
        """Strategy hook: (run or None, docid) to judge next, or None when exhausted."""
        raise NotImplementedError

    def _update(self, run: str | None, grade: int | None) -> None:
        """Strategy hook: learn from the grade of the document ``run`` offered."""

    # -- public protocol -------------------------------------------------------------------------------

    def next_document(self) -> str | None:
        """The document to judge next (the same one until it is recorded), or None when none is left."""
        if self._pending is None:
            self._pending = self._choose()
        return None if self._pending is None else self._pending[1]

    def record(self, docid: str, grade: int | None) -> None:
        """Report the grade of ``docid`` (None = unrateable). See the class docstring for the rules."""
        if docid in self._judged:
            raise ValueError(f"{docid!r} is already recorded")
        if docid not in self._candidates:
            return
        if self._pending is not None and self._pending[1] == docid:
            run = self._pending[0]
            self._pending = None
            self._judged.add(docid)
            self._judged_order.append(docid)
            self._update(run, grade)
        else:
            self._judged.add(docid)
            self._judged_order.append(docid)

    @property
    def judged(self) -> tuple[str, ...]:
        """Candidates recorded so far, in recording order."""
        return tuple(self._judged_order)

    def state(self) -> dict[str, Any]:
        """JSON-serialisable snapshot (plain dicts, lists, strings and small ints)."""
        return {
            "version": STATE_VERSION,
            "strategy": self.strategy,
            "depth": self.depth,
            "seed": self.seed,
            "relevance_level": self.relevance_level,
            "fingerprint": self._fingerprint,
            "judged": list(self._judged_order),
            "pending": None if self._pending is None else list(self._pending),
            "rng": _rng_state_out(self._rng),
            **self._extra_state(),
        }

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        pass

    @classmethod
    def from_state(cls, ranked: Ranked, state: Mapping[str, Any]) -> Chooser:
        """Resume a chooser from :meth:`state` over the same ``ranked`` lists.

        Called on :class:`Chooser` it picks the class from ``state["strategy"]``; called on a subclass the
        strategy must match. Raises ``ValueError`` when the state does not fit the lists.
        """
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported chooser state version {state.get('version')!r}")
        target = _CHOOSERS.get(state["strategy"])
        if target is None or (cls is not Chooser and target is not cls):
            raise ValueError(
                f"state is for strategy {state['strategy']!r}, not {cls.strategy or 'a chooser'}"
            )
        chooser = target(
            ranked, depth=state["depth"], seed=state["seed"], relevance_level=state["relevance_level"]
        )
        if chooser._fingerprint != state["fingerprint"]:
            raise ValueError("the ranked lists differ from those the state was made with")
        for docid in state["judged"]:
            if docid not in chooser._candidates or docid in chooser._judged:
                raise ValueError(f"judged document {docid!r} is not a distinct candidate")
            chooser._judged.add(docid)
            chooser._judged_order.append(docid)
        if state["pending"] is not None:
            run, docid = state["pending"]
            if docid not in chooser._candidates or docid in chooser._judged:
                raise ValueError(f"pending document {docid!r} is not an unjudged candidate")
            if run is not None and run not in chooser._lists:
                raise ValueError(f"pending run {run!r} is not a run of this topic")
            chooser._pending = (run, docid)
        chooser._rng = _rng_state_in(state["rng"])
        chooser._load_extra_state(state)
        return chooser


class DepthChooser(Chooser):
    """Judges in :func:`depth_order` (rank 1 of every run, then rank 2, ...), ignoring grades.

    Uses no randomness; the seed is kept only so every chooser has the same signature.
    """

    strategy = "depth"

    def __init__(self, ranked: Ranked, *, depth: int | None, seed: int, relevance_level: int = 1) -> None:
        super().__init__(ranked, depth=depth, seed=seed, relevance_level=relevance_level)
        self._order = depth_order(self._lists, None)
        self._cursor = 0

    def _choose(self) -> tuple[str | None, str] | None:
        while self._cursor < len(self._order) and self._order[self._cursor] in self._judged:
            self._cursor += 1
        return None if self._cursor == len(self._order) else (None, self._order[self._cursor])


class MoveToFrontChooser(Chooser):
    """Move-to-front pooling (Cormack, Palmer & Clarke 1998): a run stays on top while it finds relevant
    documents.

    Every run starts with priority 0. To choose: if the last document judged through this chooser came
    from run r and was relevant, stay on r; otherwise take the run of highest priority, ties broken by a
    seeded random order of the runs (a permutation of the sorted run names drawn once from
    ``default_rng(seed)`` and kept in the state), earliest first. The chosen run offers its best-ranked
    unjudged document within ``depth``; documents already judged (through another run or externally) are
    skipped at no cost and the run advances. A relevant grade (``>= relevance_level``) keeps the run (its
    priority unchanged); a non-relevant or unrateable grade lowers its priority by one and the next choice
    starts over. A run with nothing left within depth is dropped. (With this fixed tie order the
    highest-priority rule would pick the same run again after a relevant grade anyway; the explicit "stay"
    keeps the rule as stated independent of the tie-break.)
    """

    strategy = "mtf"

    def __init__(self, ranked: Ranked, *, depth: int | None, seed: int, relevance_level: int = 1) -> None:
        super().__init__(ranked, depth=depth, seed=seed, relevance_level=relevance_level)
        self._order: list[str] = [self._runs[i] for i in self._rng.permutation(len(self._runs))]
        self._priority: dict[str, int] = dict.fromkeys(self._runs, 0)
        self._current: str | None = None

    def _choose(self) -> tuple[str | None, str] | None:
        if self._current is not None:
            docid = self._next_unjudged(self._current)
            if docid is not None:
                return self._current, docid
            self._current = None
        best: tuple[str, str] | None = None
        for run in self._order:  # strict ">" keeps the earliest run among equal priorities
            docid = self._next_unjudged(run)
            if docid is not None and (best is None or self._priority[run] > self._priority[best[0]]):
                best = (run, docid)
        return best

    def _update(self, run: str | None, grade: int | None) -> None:
        assert run is not None
        if _is_relevant(grade, self.relevance_level):
            self._current = run
        else:
            self._priority[run] -= 1
            self._current = None

    def _extra_state(self) -> dict[str, Any]:
        return {"order": list(self._order), "priority": dict(self._priority), "current": self._current}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        if sorted(state["order"]) != self._runs or set(state["priority"]) != set(self._runs):
            raise ValueError("the state's runs differ from the ranked lists' runs")
        if state["current"] is not None and state["current"] not in self._lists:
            raise ValueError(f"current run {state['current']!r} is not a run of this topic")
        self._order = list(state["order"])
        self._priority = {run: int(state["priority"][run]) for run in self._runs}
        self._current = state["current"]


class _BanditChooser(Chooser):
    """Runs as arms (Losada, Parapar & Barreiro 2016-17).

    Pulling arm r judges r's best-ranked unjudged document within ``depth`` (the whole list when ``depth``
    is None); documents already judged are skipped at no cost. Arms with nothing left are out. The reward
    is 1 if the grade is ``>= relevance_level`` and 0 otherwise (unrateable = 0), and — as in Losada et
    al.'s formulation — it updates **only the pulled arm**, even when other runs retrieved the same
    document; those runs simply skip it later. External judgements reward no arm.
    """

    def __init__(self, ranked: Ranked, *, depth: int | None, seed: int, relevance_level: int = 1) -> None:
        super().__init__(ranked, depth=depth, seed=seed, relevance_level=relevance_level)
        self._rel: dict[str, int] = dict.fromkeys(self._runs, 0)
        self._nonrel: dict[str, int] = dict.fromkeys(self._runs, 0)

    def _pick(self, arms: list[str]) -> str:
        raise NotImplementedError

    def _choose(self) -> tuple[str | None, str] | None:
        arms = self._live_runs()
        if not arms:
            return None
        arm = self._pick(arms)
        docid = self._next_unjudged(arm)
        assert docid is not None
        return arm, docid

    def _update(self, run: str | None, grade: int | None) -> None:
        assert run is not None
        if _is_relevant(grade, self.relevance_level):
            self._rel[run] += 1
        else:
            self._nonrel[run] += 1

    def _extra_state(self) -> dict[str, Any]:
        return {"rel": dict(self._rel), "nonrel": dict(self._nonrel)}

    def _load_extra_state(self, state: Mapping[str, Any]) -> None:
        if set(state["rel"]) != set(self._runs) or set(state["nonrel"]) != set(self._runs):
            raise ValueError("the state's runs differ from the ranked lists' runs")
        self._rel = {run: int(state["rel"][run]) for run in self._runs}
        self._nonrel = {run: int(state["nonrel"][run]) for run in self._runs}


class MaxMeanChooser(_BanditChooser):
    """MaxMean bandit: pull the live arm maximising (1 + rel) / (2 + rel + nonrel).

    That is the posterior mean of a Beta(1, 1) prior updated with the arm's rewards. Exact ties (compared
    in integer arithmetic) are broken uniformly by the seeded generator: ``rng.integers(len(tied))`` over
    the tied arms in sorted name order; no random number is drawn when one arm leads.
    """

    strategy = "bandit-maxmean"

    def _pick(self, arms: list[str]) -> str:
        def beats(a: str, b: str) -> int:
            # sign of mean(a) - mean(b) without floating point
            left = (1 + self._rel[a]) * (2 + self._rel[b] + self._nonrel[b])
            right = (1 + self._rel[b]) * (2 + self._rel[a] + self._nonrel[a])
            return (left > right) - (left < right)

        tied = [arms[0]]
        for arm in arms[1:]:
            sign = beats(arm, tied[0])
            if sign > 0:
                tied = [arm]
            elif sign == 0:
                tied.append(arm)
        return tied[0] if len(tied) == 1 else tied[int(self._rng.integers(len(tied)))]


class ThompsonChooser(_BanditChooser):
    """Thompson-sampling bandit: pull the live arm with the largest draw from Beta(1 + rel, 1 + nonrel).

    One vectorised ``rng.beta(a, b)`` call per choice over the live arms in sorted name order; ties
    (probability zero) go to the first.
    """

    strategy = "bandit-thompson"

    def _pick(self, arms: list[str]) -> str:
        a = np.array([1 + self._rel[arm] for arm in arms], dtype=float)
        b = np.array([1 + self._nonrel[arm] for arm in arms], dtype=float)
        return arms[int(np.argmax(self._rng.beta(a, b)))]


_CHOOSERS: dict[str, type[Chooser]] = {
    cls.strategy: cls for cls in (DepthChooser, MoveToFrontChooser, MaxMeanChooser, ThompsonChooser)
}

STRATEGIES: tuple[str, ...] = tuple(_CHOOSERS)
"""Strategy names: ``depth``, ``mtf``, ``bandit-maxmean``, ``bandit-thompson``."""


def make_chooser(
    strategy: str, ranked: Ranked, *, depth: int | None, seed: int, relevance_level: int = 1
) -> Chooser:
    """A fresh chooser for one topic's ``ranked`` lists. ``depth`` None means the whole lists."""
    if strategy not in _CHOOSERS:
        raise ValueError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    return _CHOOSERS[strategy](ranked, depth=depth, seed=seed, relevance_level=relevance_level)


def topic_seed(seed: int, qid: str) -> int:
    """The seed of one topic's chooser in a campaign seeded with ``seed``.

    The first 8 bytes (big-endian) of SHA-256 of ``f"{seed}:{qid}"``: stable across processes and Python
    versions (unlike ``hash``), and different topics get unrelated streams.
    """
    return int.from_bytes(hashlib.sha256(f"{seed}:{qid}".encode()).digest()[:8], "big")


def allocate_budget(budget: int, capacities: Mapping[str, int]) -> dict[str, int]:
    """Split a global budget of judgements across topics: even shares, leftovers redistributed.

    Water-filling: find the largest level L such that giving every topic ``min(capacity, L)`` stays within
    the budget; give that, then one more each to the first ``leftover`` topics (sorted qid order) whose
    capacity exceeds L. So every topic gets an even share capped at its capacity (the number of candidates
    it has), what small topics cannot use goes to the others, the result sums to
    ``min(budget, sum(capacities))``, and no topic gets more than one above a topic that still has room.
    This is the classic per-topic setting (each topic then runs its own chooser); the cross-topic "global"
    bandit of Losada et al. is not implemented.
    """
    if budget < 0:
        raise ValueError("budget must be non-negative")
    qids = sorted(capacities)
    caps = {qid: max(0, int(capacities[qid])) for qid in qids}

    def spent(level: int) -> int:
        return sum(min(cap, level) for cap in caps.values())

    low, high = 0, max(caps.values(), default=0)
    while low < high:  # largest level with spent(level) <= budget
        middle = (low + high + 1) // 2
        if spent(middle) <= budget:
            low = middle
        else:
            high = middle - 1
    allocation = {qid: min(caps[qid], low) for qid in qids}
    leftover = budget - spent(low)
    for qid in qids:
        if leftover == 0:
            break
        if caps[qid] > low:
            allocation[qid] += 1
            leftover -= 1
    return allocation


def simulate(
    strategy: str,
    ranked_by_topic: Mapping[str, Ranked],
    qrels: Qrels,
    *,
    budget: int,
    depth: int | None,
    seed: int,
    relevance_level: int = 1,
) -> list[Item]:
    """Replay known ``qrels`` as the judge and return the judging order as ``(qid, docid)`` pairs.

    The budget is split across topics by :func:`allocate_budget` (capacity = the topic's candidates within
    ``depth``). Each topic runs its own chooser, seeded with :func:`topic_seed`, for its share; topics are
    judged one after another in sorted qid order (raters work topic by topic). The judge's grade is
    ``qrels[qid][docid]``; a document absent from the qrels is graded 0 (non-relevant).
    """
    choosers = {
        qid: make_chooser(
            strategy,
            ranked_by_topic[qid],
            depth=depth,
            seed=topic_seed(seed, qid),
            relevance_level=relevance_level,
        )
        for qid in sorted(ranked_by_topic)
    }
    allocation = allocate_budget(budget, {qid: len(c._candidates) for qid, c in choosers.items()})
    order: list[Item] = []
    for qid, chooser in choosers.items():
        topic_qrels = qrels.get(qid, {})
        for _ in range(allocation[qid]):
            docid = chooser.next_document()
            if docid is None:  # unreachable: the allocation never exceeds the candidates
                break
            chooser.record(docid, topic_qrels.get(docid, 0))
            order.append((qid, docid))
    return order


# --------------------------------------------------------------------------------------------------------
# Pool statistics and pool bias (Zobel 1998, leave one run out)


def topk_sets(ranked_by_topic: Mapping[str, Ranked], k: int) -> dict[str, set[Item]]:
    """Each run's top-k over all topics: ``{run: {(qid, docid), ...}}`` (runs absent from every topic
    are absent)."""
    out: dict[str, set[Item]] = {}
    for qid, ranked in ranked_by_topic.items():
        for run, docs in _truncated(ranked, k).items():
            out.setdefault(run, set()).update((qid, docid) for docid in docs)
    return out


def pool_contributions(
    provenance: Mapping[str, Mapping[str, Iterable[tuple[str, int]]]],
) -> dict[str, set[Item]]:
    """Invert per-topic provenance (``{qid: {docid: [(run, rank), ...]}}``) to ``{run: {(qid, docid)}}``."""
    out: dict[str, set[Item]] = {}
    for qid, items in provenance.items():
        for docid, pairs in items.items():
            for run, _rank in pairs:
                out.setdefault(run, set()).add((qid, docid))
    return out


def overlap_jaccard(topk: Mapping[str, set[Item]]) -> dict[str, dict[str, float]]:
    """Pairwise Jaccard overlap of runs' item sets: ``J[a][b] = |A ∩ B| / |A ∪ B|``.

    Symmetric, ``J[a][a] = 1``; two empty sets have overlap 1.0 (identical sets, as scipy's Jaccard
    distance 0 for two all-false vectors). Runs in sorted order.
    """
    runs = sorted(topk)
    matrix: dict[str, dict[str, float]] = {run: {} for run in runs}
    for i, a in enumerate(runs):
        for b in runs[i:]:
            union = len(topk[a] | topk[b])
            value = 1.0 if union == 0 else len(topk[a] & topk[b]) / union
            matrix[a][b] = matrix[b][a] = value
    return matrix


def unique_contributions(topk: Mapping[str, set[Item]]) -> dict[str, set[Item]]:
    """For each run, the items no other run has: ``A \\ ⋃ others``.

    Pass :func:`topk_sets` (or :func:`pool_contributions` of a pool's provenance) to get each run's unique
    items in the pool; ``len`` gives the "unique" column of the pool statistics.
    """
    counts: dict[Item, int] = {}
    for items in topk.values():
        for item in items:
            counts[item] = counts.get(item, 0) + 1
    return {run: {item for item in topk[run] if counts[item] == 1} for run in sorted(topk)}


def kendall_tau(scores_a: Mapping[str, float], scores_b: Mapping[str, float]) -> float:
    """Kendall's τ-b between two system rankings given as ``{run: score}`` over the same runs.

    ``scipy.stats.kendalltau`` (variant ``b``, which corrects for ties) on the two score vectors, runs
    aligned by name. Different run sets raise ``ValueError``; fewer than two runs, or a ranking whose
    scores are all equal, gives NaN (τ is undefined).
    """
    if set(scores_a) != set(scores_b):
        raise ValueError("both rankings must score the same runs")
    runs = sorted(scores_a)
    if len(runs) < 2:
        return math.nan
    a = [float(scores_a[run]) for run in runs]
    b = [float(scores_b[run]) for run in runs]
    if len(set(a)) == 1 or len(set(b)) == 1:
        return math.nan
    return float(kendalltau(a, b, variant="b").statistic)


def leave_one_out_qrels(
    qrels: Qrels, provenance: Mapping[str, Mapping[str, Iterable[tuple[str, int]]]], run: str
) -> dict[str, dict[str, int]]:
    """Qrels as if ``run`` had not contributed to the pool (Zobel 1998, leave-one-run-out).

    ``provenance`` is the per-topic ``{qid: {docid: [(run, rank), ...]}}`` of the pool. Every judged item
    whose provenance names ``run`` and no other run is removed — it becomes unjudged, not non-relevant.
    Items without provenance (judged by other means) are kept. Every topic of ``qrels`` stays, possibly
    with fewer (or no) judged documents. The input is not modified.
    """
    out: dict[str, dict[str, int]] = {}
    for qid, judged in qrels.items():
        items = provenance.get(qid, {})
        kept: dict[str, int] = {}
        for docid, grade in judged.items():
            runs = {r for r, _rank in items.get(docid, ())}
            if runs != {run}:
                kept[docid] = grade
        out[qid] = kept
    return out
