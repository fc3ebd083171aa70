"""Interleaving experiments: create one, serve its interleaved list for a query (the search path), log
what the searcher was shown and clicked, and compute the preference. The rules (how lists are merged,
how clicks are credited, the statistics) are `online.interleaving`'s; this module feeds it stored runs.

Refusals are Django ``ValidationError``s keyed by the field at fault: the API answers them 400 naming the
field, the commands print them.
"""

from __future__ import annotations

import functools
import hashlib
import random
import threading
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import numpy as np
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F

from labeling.auth import TokenAuthentication
from online import archive, clicklogs, interleaving
from online.experiment_models import InterleavedImpression, InterleavingExperiment, InterleavingResult
from online.models import ClickLog
from pooling.models import Collection, Run, RunRow, Topic

MAX_LENGTH = 100
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


def create_experiment(
    *,
    name: str,
    collection: Collection,
    run_a: str,
    run_b: str,
    method: str = "team_draft",
    length: int = interleaving.DEFAULT_LENGTH,
    identical_prefix: bool = True,
    clients: Sequence[User] = (),
    description: str = "",
    created_by: User | None = None,
) -> InterleavingExperiment:
    """A new interleaving experiment of runs `run_a` and `run_b` (names in `collection`)."""
    errors: dict[str, list[str]] = {}
    if InterleavingExperiment.objects.filter(name=name).exists():
        errors["name"] = [f"an interleaving experiment named {name!r} exists already"]
    runs = {r.name: r for r in Run.objects.filter(collection=collection, name__in=[run_a, run_b])}
    for field, run in (("run_a", run_a), ("run_b", run_b)):
        if run not in runs:
            errors[field] = [f"collection {collection.name!r} has no run named {run!r}"]
    if run_a == run_b:
        errors["run_b"] = ["run_b must differ from run_a"]
    if method not in interleaving.METHODS:
        errors["method"] = [f"method must be one of {', '.join(interleaving.METHODS)}"]
    if not 1 <= length <= MAX_LENGTH:
        errors["length"] = [f"length must be between 1 and {MAX_LENGTH}"]
    if errors:
        raise ValidationError(errors)
    with transaction.atomic():
        experiment = InterleavingExperiment.objects.create(
            name=name,
            collection=collection,
            run_a=runs[run_a],
            run_b=runs[run_b],
            method=method,
            length=length,
            identical_prefix=identical_prefix,
            description=description,
            created_by=created_by,
        )
        experiment.clients.set(clients)
    return experiment


def update_experiment(
    *,
    experiment: InterleavingExperiment,
    active: bool | None = None,
    clients: Sequence[User] | None = None,
    description: str | None = None,
) -> InterleavingExperiment:
    """Switch an experiment on or off, set its clients or its description (what is given). The search
    path of other processes sees it within ACCESS_SECONDS (this process at once)."""
    with transaction.atomic():
        if active is not None:
            experiment.active = active
        if description is not None:
            experiment.description = description
        experiment.save(update_fields=["active", "description"])
        if clients is not None:
            experiment.clients.set(clients)
    _usable.clear()
    return experiment


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


def _check_query(experiment: InterleavingExperiment, qid: str, user: str) -> None:
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
    _check_query(experiment, qid, user)
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
class Shown:
    """What a front end logs back for one impression (see `log_impressions`)."""

    qid: str
    user: str
    docids: Sequence[str]
    teams: Sequence[str] | str
    clicks: Sequence[int]
    session: str = ""


def _checked(experiment: InterleavingExperiment, shown: Shown) -> InterleavedImpression:
    _check_query(experiment, shown.qid, shown.user)
    served = serve(experiment=experiment, qid=shown.qid, user=shown.user)
    if list(shown.docids) != list(served.docids):
        raise ValidationError({"docids": ["not the list served to this searcher for this query"]})
    if list(shown.teams) != list(served.teams):
        raise ValidationError({"teams": ["not the teams served to this searcher for this query"]})
    if len(shown.session) > 200:
        raise ValidationError({"session": ["at most 200 characters"]})
    try:
        outcome = served.credit(shown.clicks)
    except ValueError as exc:
        raise ValidationError({"clicks": [str(exc)]}) from None
    return InterleavedImpression(
        experiment=experiment,
        qid=shown.qid,
        user=shown.user,
        session=shown.session,
        docids=list(served.docids),
        teams="".join(served.teams),
        clicks=sorted(set(shown.clicks)),
        outcome=outcome,
    )


def log_impressions(
    *, experiment: InterleavingExperiment, shown: Iterable[Shown]
) -> list[InterleavedImpression]:
    """Store what searchers were shown and clicked, each with its credited outcome, all or nothing. Each
    list and its teams must be the ones `serve` gives that searcher for that query (a front end that logs
    something else would credit the wrong ranker): refused otherwise, naming the field."""
    rows = [_checked(experiment, one) for one in shown]
    with transaction.atomic():
        return InterleavedImpression.objects.bulk_create(rows, batch_size=2000)


def log_impression(*, experiment: InterleavingExperiment, **shown: Any) -> InterleavedImpression:
    """One impression (`log_impressions` of one `Shown(**shown)`)."""
    (row,) = log_impressions(experiment=experiment, shown=[Shown(**shown)])
    return row


def compute_result(
    *, experiment: InterleavingExperiment, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> InterleavingResult:
    """The preference over every impression logged so far, stored as a new result (see
    `interleaving.summarise`: Δ_AB, its user-clustered interval, the sign test, per query)."""
    rows = InterleavedImpression.objects.filter(experiment=experiment).values_list("user", "qid", "outcome")
    summary = interleaving.summarise(
        (
            interleaving.Impression(user, qid, outcome)  # type: ignore[arg-type]  # an Outcome choice
            for user, qid, outcome in rows.iterator(chunk_size=20000)
        ),
        resamples=resamples,
        level=level,
        seed=seed,
    )
    return _store(experiment, summary, level, source="")


def compute_result_from_click_log(
    *,
    experiment: InterleavingExperiment,
    log: ClickLog,
    team_a: str = "A",
    team_b: str = "B",
    resamples: int = 2000,
    level: float = 0.95,
    seed: int = 0,
) -> InterleavingResult:
    """The preference over the interleaved pages of an imported click log (its impression archive, the
    team of each position as logged: `team_a` is the experiment's run A, `team_b` its run B, any other
    team name none), credited by the same rules as logged impressions (`credit_team_draft`'s, vectorised
    here over the archive's arrays: one point per clicked position to its team), stored as a new result
    naming the log. Pages without teams are not interleaved and are left out."""
    if log.collection_id != experiment.collection_id:
        raise ValidationError({"click_log": ["the click log is of another collection"]})
    if not log.archive_dir:
        raise ValidationError({"click_log": ["the log has no impressions (pre-aggregated counts)"]})
    info = archive.meta(log.archive_dir)
    names = list(info["teams"])
    if team_a not in names or team_b not in names:
        raise ValidationError({"click_log": [f"the log's pages have no teams {team_a!r} and {team_b!r}"]})
    code_a, code_b = names.index(team_a) + 1, names.index(team_b) + 1
    qid_of = dict(Topic.objects.filter(pk__in=info["topic_pks"].tolist()).values_list("pk", "qid"))
    query_names = [qid_of[int(pk)] for pk in info["topic_pks"]]
    users, queries, outcomes = [], [], []
    for chunk in archive.chunks(log.archive_dir):
        lengths = chunk["length"].astype(np.int64)
        page = np.repeat(np.arange(len(lengths)), lengths)
        team, click = chunk["team"].astype(np.int64), chunk["click"].astype(bool)
        interleaved = np.bincount(page, weights=team > 0, minlength=len(lengths)) > 0
        points_a = np.bincount(page, weights=click & (team == code_a), minlength=len(lengths))
        points_b = np.bincount(page, weights=click & (team == code_b), minlength=len(lengths))
        clicked = np.bincount(page, weights=click, minlength=len(lengths)) > 0
        outcome = np.where(points_a > points_b, 0, np.where(points_b > points_a, 1, 2))
        outcome = np.where(clicked, outcome, 3)
        users.append(chunk["user"][interleaved].astype(np.int64))
        queries.append(chunk["topic"][interleaved].astype(np.int64))
        outcomes.append(outcome[interleaved])
    if not outcomes or not sum(len(o) for o in outcomes):
        raise ValidationError({"click_log": ["the log has no interleaved page"]})
    summary = interleaving.summarise_codes(
        np.concatenate(users), np.concatenate(queries), np.concatenate(outcomes), query_names,
        resamples=resamples, level=level, seed=seed,
    )  # fmt: skip
    return _store(experiment, summary, level, source=f"click log {log.collection.name}/{log.name}")


def _store(
    experiment: InterleavingExperiment, summary: interleaving.Summary, level: float, *, source: str
) -> InterleavingResult:
    counts = summary.counts
    per_query = {
        qid: {
            "A": c.a,
            "B": c.b,
            "ties": c.ties,
            "none": c.none,
            "delta_ab": c.delta_ab,
            "p_value": c.p_value,
        }
        for qid, c in summary.per_query.items()
    }
    return InterleavingResult.objects.create(
        experiment=experiment,
        wins_a=counts.a,
        wins_b=counts.b,
        ties=counts.ties,
        no_clicks=counts.none,
        users=summary.users,
        delta_ab=summary.delta_ab,
        low=summary.interval[0] if summary.interval else None,
        high=summary.interval[1] if summary.interval else None,
        level=level,
        p_value=summary.p_value,
        per_query=per_query,
        source=source,
    )


def result_dict(result: InterleavingResult) -> dict[str, Any]:
    """A stored result as the API and the pages show it."""
    experiment = result.experiment
    return {
        "id": result.pk,
        "experiment": experiment.name,
        "a": experiment.run_a.name,
        "b": experiment.run_b.name,
        "method": experiment.method,
        "wins_a": result.wins_a,
        "wins_b": result.wins_b,
        "ties": result.ties,
        "no_clicks": result.no_clicks,
        "impressions": result.wins_a + result.wins_b + result.ties + result.no_clicks,
        "users": result.users,
        "delta_ab": result.delta_ab,
        "interval": [result.low, result.high] if result.low is not None else None,
        "level": result.level,
        "p_value": result.p_value,
        "preferred": _preferred(result),
        "per_query": result.per_query,
        "source": result.source or "impressions logged back",
        "computed_at": result.computed_at.isoformat(),
    }


def _preferred(result: InterleavingResult) -> str:
    if result.delta_ab is None or result.delta_ab == 0:
        return "neither"
    return result.experiment.run_a.name if result.delta_ab > 0 else result.experiment.run_b.name
