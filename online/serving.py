"""The search path of interleaving experiments: what a front end calls once per search.

`serve` gives an experiment's interleaved list for a query as one searcher sees it, with nothing written
and nothing read from the database once warm: the runs' top documents, who may use which experiment,
whose token a key is and each collection's query texts are kept per process (`_Memo`) for the times
below. `qid_of_query` maps a query text to its topic by the click logs' rule (`clicklogs.text_index`).
Creating experiments, logging impressions and computing results are `online.experiments`.
"""

from __future__ import annotations

import functools
import hashlib
import random
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from django.core.exceptions import ValidationError
from django.db.models import F

from labeling.auth import TokenAuthentication
from online import clicklogs, interleaving
from online.experiment_models import InterleavingExperiment
from pooling.models import RunRow, Topic

#: How long a process keeps a run's top documents for a query before reading them again (a run replaced
#: in place, `import_run --replace`, is served fresh after this long; a new run is a new id, at once).
LIST_SECONDS = 600.0
LIST_ENTRIES = 50_000
#: How long a process keeps who may use which experiment and whose token a key is (a client removed, an
#: experiment deactivated, a token deleted, its user deactivated take effect on the search path after this
#: long).
ACCESS_SECONDS = 5.0
ACCESS_ENTRIES = 10_000
#: A process adds the searches it answered 404 for an unmapped query text to the experiment's count at
#: most this often (a write per unmapped search would put one on the search path).
UNMAPPED_FLUSH_SECONDS = 5.0
MAX_QUERY_TEXT = 1000


K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class _Memo(Generic[K, V]):
    """Per process: answers kept `seconds` (the search path asks the same few on every request), at most
    `entries` of them (all dropped when full: simpler than an LRU, and refilled in a few requests)."""

    def __init__(self, seconds: float, entries: int) -> None:
        self.seconds, self.entries = seconds, entries
        self._entries: dict[K, tuple[float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, compute: Callable[[], V]) -> V:
        now = time.monotonic()
        hit = self._entries.get(key)
        if hit is not None and hit[0] >= now:
            return hit[1]
        value = compute()
        with self._lock:
            if len(self._entries) >= self.entries:
                self._entries.clear()
            self._entries[key] = (now + self.seconds, value)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


#: A run's top documents for a query: (run id, qid, depth) → docids, or None for a qid the collection lacks.
_lists: _Memo[tuple[int, str, int], tuple[str, ...] | None] = _Memo(LIST_SECONDS, LIST_ENTRIES)
#: Which experiment a caller may use: (user id, name) → the experiment, or None.
_usable: _Memo[tuple[int, str], InterleavingExperiment | None] = _Memo(ACCESS_SECONDS, ACCESS_ENTRIES)
#: Whose an API token is: key → (user, token) as `TokenAuthentication` found them (a refusal is not kept).
_tokens: _Memo[str, tuple[Any, Any]] = _Memo(ACCESS_SECONDS, ACCESS_ENTRIES)
#: A collection's query texts: collection id → {normalised text: qid}, kept as long as the runs' lists.
_texts: _Memo[int, dict[str, str]] = _Memo(LIST_SECONDS, 1000)


class _Unmapped:
    """Unmapped searches counted in the process, added to `InterleavingExperiment.unmapped_queries` at
    most every UNMAPPED_FLUSH_SECONDS (a process that dies loses at most that long of its count)."""

    def __init__(self) -> None:
        self.pending: dict[int, int] = {}
        self.flushed = 0.0
        self._lock = threading.Lock()

    def add(self, experiment_id: int) -> None:
        now = time.monotonic()
        with self._lock:
            self.pending[experiment_id] = self.pending.get(experiment_id, 0) + 1
            due = now - self.flushed >= UNMAPPED_FLUSH_SECONDS
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self.pending, self.flushed = self.pending, {}, time.monotonic()
        for experiment_id, n in pending.items():
            InterleavingExperiment.objects.filter(pk=experiment_id).update(
                unmapped_queries=F("unmapped_queries") + n
            )


_unmapped = _Unmapped()


def clear_caches() -> None:
    """Forget every memoised list and access decision of this process (tests; after a bulk change)."""
    _lists.clear()
    _usable.clear()
    _tokens.clear()
    _texts.clear()
    _unmapped.pending.clear()


def unmapped_queries(experiment: InterleavingExperiment) -> int:
    """The experiment's unmapped searches so far (this process's not yet added included)."""
    _unmapped.flush()
    experiment.refresh_from_db(fields=["unmapped_queries"])
    return experiment.unmapped_queries


class SearchPathToken(TokenAuthentication):
    """The API's token rule (`labeling.auth.TokenAuthentication`), its answer for a key kept ACCESS_SECONDS
    in the process: the search path asks it on every search, and the database round trip was most of the
    request's time. A wrong key, an inactive user are refused (and asked again) each time."""

    def authenticate_credentials(self, key: str) -> tuple[Any, Any]:
        return _tokens.get(key, functools.partial(super().authenticate_credentials, key))


def usable_experiment(*, user: Any, name: str) -> InterleavingExperiment | None:
    """The experiment `name` if `user` may fetch its lists and log to it (`usable_by`), else None. The
    answer is kept ACCESS_SECONDS in the process: the search path would otherwise spend most of its time
    asking it again."""
    if not user.is_authenticated:
        return None
    return _usable.get(
        (user.pk, name),
        lambda: InterleavingExperiment.objects.usable_by(user).filter(name=name).first(),
    )


def _read_lists(
    collection_id: int, run_ids: tuple[int, int], qid: str, depth: int
) -> dict[int, tuple[str, ...] | None]:
    """Both runs' top `depth` documents for `qid`, in one statement (a second only when neither run has
    the topic: None then for a qid the collection does not have)."""
    rows = (
        RunRow.objects.filter(run_id__in=run_ids, topic__collection_id=collection_id, topic__qid=qid)
        .filter(rank__lte=depth)
        .order_by("run_id", "rank")
        .values_list("run_id", "document__docid")
    )
    found: dict[int, list[str]] = {run_id: [] for run_id in run_ids}
    for run_id, docid in rows:
        found[run_id].append(docid)
    if not any(found.values()) and not Topic.objects.filter(collection_id=collection_id, qid=qid).exists():
        return dict.fromkeys(run_ids)
    return {run_id: tuple(docids) for run_id, docids in found.items()}


def top_lists(experiment: InterleavingExperiment, qid: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The top `length` documents of runs A and B for `qid` (one indexed read, then memoised)."""
    run_ids = (experiment.run_a_id, experiment.run_b_id)
    keys = [(run_id, qid, experiment.length) for run_id in run_ids]
    read: dict[int, tuple[str, ...] | None] = {}

    def one(run_id: int) -> tuple[str, ...] | None:
        if not read:
            read.update(_read_lists(experiment.collection_id, run_ids, qid, experiment.length))
        return read[run_id]

    a, b = (_lists.get(key, functools.partial(one, key[0])) for key in keys)
    if a is None or b is None:
        raise ValidationError({"qid": [f"no topic {qid!r} in the experiment's collection"]})
    return a, b


def _coin(experiment: InterleavingExperiment, user: str, qid: str) -> random.Random:
    """The coins of one (experiment, searcher, query): the same searcher asking the same query sees the
    same list, and the list logged back can be checked against it."""
    digest = hashlib.sha256(f"{experiment.pk}\x00{user}\x00{qid}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))  # noqa: S311 - a fair coin, not a secret


class UnmappedQuery(Exception):
    """A search whose query text is no topic of the experiment's collection (counted)."""

    def __init__(self, experiment: InterleavingExperiment, text: str) -> None:
        self.text, self.normalised = text, clicklogs.normalise_query(text)
        super().__init__(f"no topic of the experiment's collection has the query {self.normalised!r}")


def _query_texts(collection_id: int) -> dict[str, str]:
    topics = list(
        Topic.objects.filter(collection_id=collection_id).order_by("qid").values_list("qid", "query")
    )
    index, _ = clicklogs.text_index(topics)
    return {text: topics[i][0] for text, i in index.items()}


def qid_of_query(*, experiment: InterleavingExperiment, qid: str | None, query: str | None) -> str:
    """The topic a search asks for: `qid` as given, or the topic whose query text is `query` by the click
    logs' rule (`clicklogs.normalise_query`, exact; of topics with the same text the first qid). Exactly
    one of the two; a text no topic has raises `UnmappedQuery` and is counted (`unmapped_queries`)."""
    if query is None:
        return qid or ""
    errors = {}
    if not experiment.active:
        errors["experiment"] = [_inactive(experiment)]
    if qid is not None:
        errors["q"] = ["give qid or q, not both"]
    elif not query.strip() or len(query) > MAX_QUERY_TEXT:
        errors["q"] = [f"a query text of 1 to {MAX_QUERY_TEXT} characters is needed"]
    if errors:
        raise ValidationError(errors)
    found = _texts.get(experiment.collection_id, functools.partial(_query_texts, experiment.collection_id))
    mapped = found.get(clicklogs.normalise_query(query))
    if mapped is None:
        _unmapped.add(experiment.pk)
        raise UnmappedQuery(experiment, query)
    return mapped


def _inactive(experiment: InterleavingExperiment) -> str:
    return f"experiment {experiment.name!r} is not active"


def check_query(experiment: InterleavingExperiment, qid: str, user: str) -> None:
    errors = {}
    if not experiment.active:
        errors["experiment"] = [_inactive(experiment)]
    if not qid or len(qid) > 100:
        errors["qid"] = ["a qid of 1 to 100 characters is needed"]
    if not user or len(user) > 200:
        errors["user"] = ["the searcher's id (1 to 200 characters) is needed"]
    if errors:
        raise ValidationError(errors)


def serve(*, experiment: InterleavingExperiment, qid: str, user: str) -> interleaving.Interleaving:
    """The interleaved list of `experiment` for topic `qid` as searcher `user` sees it (the search path:
    no write, the runs' lists from the process cache)."""
    check_query(experiment, qid, user)
    a, b = top_lists(experiment, qid)
    return interleaving.interleave(
        a,
        b,
        method=experiment.method,  # type: ignore[arg-type]  # a Method choice
        length=experiment.length,
        rng=_coin(experiment, user, qid),
        identical_prefix=experiment.identical_prefix,
    )


@dataclass(frozen=True)
class InterleavedList:
    """The interleaved list of a query for a searcher, as the search path answers it (`interleaved_list`):
    the experiment, the topic (which the front end logs back with the impression), the method, the
    documents in order and the team of each position (A, B, or - for the shared top)."""

    experiment: str
    qid: str
    method: str
    docids: tuple[str, ...]
    teams: tuple[str, ...]


def interleaved_list(*, experiment: InterleavingExperiment, qid: str, user: str) -> dict[str, Any]:
    """`serve`'s list as the search path answers it (`InterleavedList`)."""
    shown = serve(experiment=experiment, qid=qid, user=user)
    body = InterleavedList(
        experiment=experiment.name, qid=qid, method=experiment.method, docids=shown.docids, teams=shown.teams
    )
    # its fields are strings and tuples of strings, immutable: a shallow copy is `asdict`'s answer, without
    # the deep copy of each string that `asdict` makes (some 20 µs for ten documents, on the search path)
    return dict(vars(body))


def forget_access() -> None:
    """Drop this process's memo of who may use which experiment (an experiment changed here)."""
    _usable.clear()
