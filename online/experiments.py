"""Interleaving experiments: create one and compute the preference (serving the interleaved list for a
query, the search path, is `online.serving`; logging back what the searcher was shown and clicked,
`online.impressions`). The rules
(how lists are merged, how clicks are credited, the statistics) are `online.interleaving`'s; this module
feeds it stored runs.

Refusals are Django ``ValidationError``s keyed by the field at fault: the API answers them 400 naming the
field, the commands print them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import transaction

from online import archive, interleaving, preference, serving
from online.experiment_models import (
    InterleavedImpression,
    InterleavingExperiment,
    InterleavingResult,
)
from online.models import ClickLog
from pooling.models import Collection, Run, Topic, column_problems

MAX_LENGTH = 100


# The names the API's router puts where an interleaving experiment's name goes (`/api/interleaving/<name>/`):
# the list-level actions of `online.experiment_api.InterleavingViewSet`. An experiment of such a name could
# be created and never reached.
RESERVED_NAMES = frozenset({"power"})


def create_experiment(
    *,
    name: str,
    collection: Collection,
    run_a: str,
    run_b: str,
    method: str = "team_draft",
    length: int = interleaving.DEFAULT_LENGTH,
    identical_prefix: bool = True,
    clients: Sequence[User | str] = (),
    description: str = "",
    created_by: User | None = None,
) -> InterleavingExperiment:
    """A new interleaving experiment of runs `run_a` and `run_b` (names in `collection`), served to the
    API accounts `clients` (accounts, or their usernames: one that no account has is refused on `clients`
    with the other fields' refusals, by `_accounts`, for every caller); refused (a ValidationError by field)
    having stored nothing."""
    errors: dict[str, list[str]] = {}
    accounts, unknown = _accounts(clients)
    if unknown:
        errors["clients"] = unknown
    # the model field's own rules (a slug: it goes in URLs; its length), for every caller
    if messages := column_problems(InterleavingExperiment, "name", name):
        errors["name"] = messages
    if name in RESERVED_NAMES:
        errors["name"] = [f"{name!r} is the name of an API route (/api/interleaving/{name}/)"]
    elif InterleavingExperiment.objects.filter(name=name).exists():
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
        experiment.clients.set(accounts)
    return experiment


def _accounts(clients: Sequence[User | str]) -> tuple[list[User], list[str]]:
    """The accounts `clients` stands for (an account as it is, a username looked up), and the refusal's
    message when some username is no account's (none: an empty list). The one check of an experiment's
    clients: `create_experiment` and `update_experiment` make it, for the pages, the API and the commands."""
    names = [c for c in clients if isinstance(c, str)]
    found = list(get_user_model().objects.filter(username__in=names)) if names else []
    missing = sorted(set(names) - {u.username for u in found})
    if missing:
        return [], [f"no user named {', '.join(map(repr, missing))}"]
    return [c for c in clients if not isinstance(c, str)] + found, []


def update_experiment(
    *,
    experiment: InterleavingExperiment,
    active: bool | None = None,
    clients: Sequence[User | str] | None = None,
    description: str | None = None,
) -> InterleavingExperiment:
    """Switch an experiment on or off, set its clients (accounts or usernames, checked as
    `create_experiment` checks them) or its description (what is given); refused on `clients`, changing
    nothing, for a username no account has. The search path of other processes sees it within
    ACCESS_SECONDS (this process at once)."""
    if clients is not None:
        clients, unknown = _accounts(clients)
        if unknown:
            raise ValidationError({"clients": unknown})
    with transaction.atomic():
        if active is not None:
            experiment.active = active
        if description is not None:
            experiment.description = description
        experiment.save(update_fields=["active", "description"])
        if clients is not None:
            experiment.clients.set(clients)
    serving.forget_access()
    return experiment


def compute_result(
    *, experiment: InterleavingExperiment, resamples: int = 2000, level: float = 0.95, seed: int = 0
) -> InterleavingResult:
    """The preference over every impression logged so far, stored as a new result (see
    `preference.summarise`: Δ_AB, its user-clustered interval, the sign test, per query)."""
    rows = InterleavedImpression.objects.filter(experiment=experiment).values_list("user", "qid", "outcome")
    summary = preference.summarise(
        (
            preference.Impression(user, qid, outcome)  # type: ignore[arg-type]  # an Outcome choice
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
    naming the log. Pages without a position of team `team_a` or `team_b` are not this experiment's (not
    interleaved, or another experiment's teams) and are left out. A balanced experiment is
    refused: its logged impressions are credited by the runs' ranks (`credit_balanced`), not by teams, and
    crediting its pages by teams would be another rule under its name."""
    if experiment.method != "team_draft":
        raise ValidationError(
            {
                "click_log": [
                    f"a click log's pages are credited by their teams (team draft); a {experiment.method} "
                    "experiment's are credited by the runs' ranks: log its impressions back instead"
                ]
            }
        )
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
        # a page of this experiment has a position of its team A or B; another experiment's pages (other
        # team codes) are neither its ties nor its impressions without a click
        ours = (team == code_a) | (team == code_b)
        interleaved = np.bincount(page, weights=ours, minlength=len(lengths)) > 0
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
    summary = preference.summarise_codes(
        np.concatenate(users), np.concatenate(queries), np.concatenate(outcomes), query_names,
        resamples=resamples, level=level, seed=seed,
    )  # fmt: skip
    return _store(experiment, summary, level, source=f"click log {log.collection.name}/{log.name}")


def _store(
    experiment: InterleavingExperiment, summary: preference.Summary, level: float, *, source: str
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


@dataclass(frozen=True)
class ResultBody:
    """A stored interleaving result as the API, the pages and the command show it: the preference the
    clicks show (Δ_AB > 0 prefers A). The one declaration of that answer (its serializer reads it)."""

    id: int
    experiment: str
    a: str
    b: str
    method: str
    wins_a: int
    wins_b: int
    ties: int
    no_clicks: int
    impressions: int
    users: int
    delta_ab: float | None
    interval: list[float] | None  # the bootstrap interval of Δ_AB [low, high]
    level: float
    p_value: float
    preferred: str  # the preferred run's name, or `neither`
    per_query: dict[str, Any]
    source: str
    computed_at: str  # ISO 8601


def result_dict(result: InterleavingResult) -> dict[str, Any]:
    """A stored result as the API and the pages show it."""
    return asdict(result_body(result))


def result_source(result: InterleavingResult) -> str:
    """What a result was computed from, as the answers name it."""
    return result.source or "impressions logged back"


def result_body(result: InterleavingResult) -> ResultBody:
    experiment = result.experiment
    return ResultBody(
        id=result.pk,
        experiment=experiment.name,
        a=experiment.run_a.name,
        b=experiment.run_b.name,
        method=experiment.method,
        wins_a=result.wins_a,
        wins_b=result.wins_b,
        ties=result.ties,
        no_clicks=result.no_clicks,
        impressions=result.wins_a + result.wins_b + result.ties + result.no_clicks,
        users=result.users,
        delta_ab=result.delta_ab,
        interval=[result.low, result.high] if result.low is not None and result.high is not None else None,
        level=result.level,
        p_value=result.p_value,
        preferred=_preferred(result),
        per_query=result.per_query,
        source=result_source(result),
        computed_at=result.computed_at.isoformat(),
    )


@dataclass(frozen=True)
class ExperimentBody:
    """An interleaving experiment as the API answers it, with its latest result (null before the first)."""

    name: str
    collection: str
    a: str
    b: str
    method: str
    length: int
    identical_prefix: bool
    active: bool
    description: str
    clients: list[str]
    impressions: int
    unmapped_queries: int
    result: ResultBody | None


def experiment_dict(experiment: InterleavingExperiment) -> dict[str, Any]:
    latest = experiment.results.first()
    return asdict(
        ExperimentBody(
            name=experiment.name,
            collection=experiment.collection.name,
            a=experiment.run_a.name,
            b=experiment.run_b.name,
            method=experiment.method,
            length=experiment.length,
            identical_prefix=experiment.identical_prefix,
            active=experiment.active,
            description=experiment.description,
            clients=sorted(experiment.clients.values_list("username", flat=True)),
            impressions=experiment.impressions.count(),
            unmapped_queries=serving.unmapped_queries(experiment),
            result=result_body(latest) if latest else None,
        )
    )


def _preferred(result: InterleavingResult) -> str:
    """The run a result prefers (`preference.preferred`), by name."""
    side = preference.preferred(result.delta_ab)
    experiment = result.experiment
    return {"A": experiment.run_a.name, "B": experiment.run_b.name}.get(side, side)
