"""Adaptive choosers over the runs' ranked lists: the chooser protocol, depth order and move-to-front.

Pure (no Django). Split out of :mod:`pooling.strategies` (which re-exports every name here and documents
the protocol); :mod:`pooling.bandits` and :mod:`pooling.cal` add their choosers to :data:`CHOOSERS`
through :func:`register`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar, cast

import numpy as np

from pooling.ranking import Ranked, _truncated, depth_order

STATE_VERSION = 1


@dataclass(frozen=True)
class TopicTexts:
    """The texts a text-reading chooser (``cal``) learns from: the topic's query, description and
    narrative joined, and each candidate document's title and body by docid. Run-based choosers ignore
    it; a document missing from ``documents`` has no text."""

    topic: str = ""
    documents: Mapping[str, str] = field(default_factory=dict)


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

    def __init__(
        self,
        ranked: Ranked,
        *,
        depth: int | None,
        seed: int,
        relevance_level: int = 1,
        texts: TopicTexts | None = None,
    ) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int | np.integer):
            raise ValueError(f"seed must be an integer, got {seed!r}")
        if relevance_level < 1:
            raise ValueError("relevance_level must be at least 1 (grades below it count as non-relevant)")
        self.depth = depth
        self.seed = int(seed)
        self.relevance_level = int(relevance_level)
        self.texts = texts or TopicTexts()
        self._lists = _truncated(ranked, depth)
        self._runs: list[str] = list(self._lists)  # sorted names
        self._candidates: set[str] = {docid for docs in self._lists.values() for docid in docs}
        self._positions: dict[str, int] = dict.fromkeys(self._runs, 0)
        self._judged: set[str] = set()
        self._judged_order: list[str] = []
        self._pending: tuple[str | None, str] | None = None
        self._fingerprint = _fingerprint(self._lists)
        self._rng = np.random.default_rng(self.seed)
        self._start()

    def _start(self) -> None:
        """A strategy's own set-up, once the shared state above exists (the constructor's one hook)."""

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

    def next_documents(self) -> list[str]:
        """Every document to select for judging now: the next one, or for a strategy that works in
        batches (``cal``) its whole open batch."""
        docid = self.next_document()
        return [] if docid is None else [docid]

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
    def from_state(
        cls, ranked: Ranked, state: Mapping[str, Any], *, texts: TopicTexts | None = None
    ) -> Chooser:
        """Resume a chooser from :meth:`state` over the same ``ranked`` lists (and ``texts``, for a
        chooser that reads them).

        Called on :class:`Chooser` it picks the class from ``state["strategy"]``; called on a subclass the
        strategy must match. Raises ``ValueError`` when the state does not fit the lists.
        """
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported chooser state version {state.get('version')!r}")
        target = CHOOSERS.get(state["strategy"])
        if target is None or (cls is not Chooser and target is not cls):
            raise ValueError(
                f"state is for strategy {state['strategy']!r}, not {cls.strategy or 'a chooser'}"
            )
        chooser = target(
            ranked,
            depth=state["depth"],
            seed=state["seed"],
            relevance_level=state["relevance_level"],
            texts=texts,
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

    def _start(self) -> None:
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

    def _start(self) -> None:
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


CHOOSERS: dict[str, type[Chooser]] = {cls.strategy: cls for cls in (DepthChooser, MoveToFrontChooser)}

C = TypeVar("C", bound=type[Chooser])


def register(cls: C) -> C:
    """Add a chooser class to :data:`CHOOSERS` under its ``strategy`` name (used as a decorator)."""
    CHOOSERS[cls.strategy] = cls
    return cls
