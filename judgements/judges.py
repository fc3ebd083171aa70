"""Model judges of a pool: creating them, letting them label the pool's items, reading their labels.

A judge (`Judge`) is a rater of kind `model` with an account of its own that cannot log in. Its labels are
`Judgement` rows of kind `model`, written only by `run_judge`; they never count as people's judgements
(`Judgement.objects` is human only, and the items' `num_judgements` is never touched). Whether a judge's
labels may enter a release is decided by its gate (`evaluation.judge_gate.measure_gate`, which needs the
metrics and so lives in the evaluation app); `run_judge` clears a former verdict, since the labels it
was made on are gone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction

from judgements import aggregation, membership
from judgements.errors import JudgingError
from judgements.models import Judge, Judgement, Judging
from pooling.models import Job, Pool, PoolItem

Progress = Callable[[float, str], None]

_NAME = re.compile(r"^[-a-zA-Z0-9_]{1,80}$")


def external_commands() -> dict[str, list[str]]:
    """The external judge programs this installation offers (`EXTERNAL_JUDGES`, set by whoever runs the
    server): name → argv. A manager picks one by name; nobody types a command into a page."""
    return {str(name): [str(part) for part in argv] for name, argv in settings.EXTERNAL_JUDGES.items()}


# The list-level routes of the judges API (`evaluation.judge_api`), where a judge's name goes: a judge of such
# a name could be made and never reached.
RESERVED_NAMES = frozenset({"threshold"})


def create_judge(
    *,
    pool: Pool,
    name: str,
    method: str,
    command: Sequence[str] | None = None,
    program: str | None = None,
    seed: int = 0,
    folds: int = 5,
    timeout_seconds: float = 30.0,
    retries: int = 1,
    by: User | None = None,
) -> Judge:
    """Make a model judge for `pool`: `method` is `learned`, or `external` with `program` (a name of
    `external_commands()`) or `command` (an argv, for the command line and tests only). JudgingError
    naming what is wrong; nothing is stored then."""
    if not _NAME.match(name or ""):
        raise JudgingError("name: letters, digits, '-' and '_' only, at most 80")
    if name in RESERVED_NAMES:
        raise JudgingError(f"name: {name!r} is the name of an API route (/api/pools/<pool>/judges/{name}/)")
    if method not in Judge.Method.values:
        raise JudgingError(f"method: one of {', '.join(Judge.Method.values)}")
    if not Judging.objects.filter(pool=pool).exists():
        raise JudgingError("this pool has no judging set-up (rubric, raters)")
    argv: list[str] = []
    if method == Judge.Method.EXTERNAL:
        if program is not None:
            offered = external_commands()
            if program not in offered:
                raise JudgingError(
                    f"program: {program!r} is not one of {sorted(offered) or 'none configured'}"
                )
            argv = offered[program]
        elif command:
            argv = [str(part) for part in command]
        else:
            raise JudgingError("program: an external judge needs a program")
    if not 2 <= folds <= 20:
        raise JudgingError("folds: between 2 and 20")
    if not 0 <= seed < 2**31:  # numpy's seeds are not negative; the column is a 32-bit integer
        raise JudgingError("seed: between 0 and 2,147,483,647")
    if not 0 < timeout_seconds <= 600:
        raise JudgingError("timeout_seconds: more than 0, at most 600")
    if not 0 <= retries <= 10:
        raise JudgingError("retries: between 0 and 10")
    if Judge.objects.filter(pool=pool, name=name).exists():
        raise JudgingError(f"name: this pool already has a judge {name!r}")
    with transaction.atomic():
        # Named for its pool and name, numbered where an account (a person's, a crowd worker's) has that
        # name already: the judge never shares an account, and its creation never fails on the name.
        username = membership.unused_username(membership.numbered_names(f"judge-{pool.pk}-{name}"))
        user = User(username=username, is_active=False)
        user.set_unusable_password()
        user.save()
        return Judge.objects.create(
            pool=pool,
            name=name,
            method=method,
            user=user,
            command=argv,
            seed=seed,
            folds=folds,
            timeout_seconds=timeout_seconds,
            retries=retries,
            created_by=by,
        )


def human_grades(*, pool: Pool) -> dict[int, int]:
    """item id → the people's consensus grade (majority, as releases aggregate by default) of every item
    people judged; pending and unrateable items are absent. Through `releases.current_qrels`, the one
    reader of a pool's labels."""
    from judgements.releases import current_qrels

    qrels = current_qrels(pool=pool, policy="majority")
    items = PoolItem.objects.filter(pool=pool, selected=True).values_list(
        "id", "topic__qid", "document__docid"
    )
    return {
        item_id: qrels[qid][docid]
        for item_id, qid, docid in items.iterator(chunk_size=20000)
        if qrels.get(qid, {}).get(docid, -1) >= 0
    }


def model_grades(*, judge: Judge) -> dict[int, int]:
    """item id → the judge's grade, for every item it labelled."""
    rows = Judgement.all_kinds.filter(rater=judge.user_id, kind=Judge.Kind.MODEL, grade__isnull=False)
    return {
        item_id: int(grade) for item_id, grade in rows.values_list("item_id", "grade") if grade is not None
    }


def _items(pool: Pool) -> Iterator[PoolItem]:
    return (
        PoolItem.objects.filter(pool=pool, selected=True)
        .select_related("topic", "document")
        .order_by("topic__qid", "document__docid")
        .iterator(chunk_size=2000)
    )


def _learned(judge: Judge, items: list[PoolItem], people: dict[int, int], report: Progress) -> dict[int, int]:
    from judgements import learned

    def texts(item: PoolItem) -> learned.PairTexts:
        topic = item.topic
        return learned.PairTexts(topic.query, topic.description, topic.narrative, item.document.full_text)

    labelled = [item for item in items if item.pk in people]
    unlabelled = [item for item in items if item.pk not in people]
    report(0.1, f"features of {len(items)} items")
    grades = learned.learned_grades(
        learned.pair_features([texts(item) for item in labelled]),
        [people[item.pk] for item in labelled],
        learned.pair_features([texts(item) for item in unlabelled]),
        k=judge.folds,
        seed=judge.seed,
    )
    out = {item.pk: int(g) for item, g in zip(labelled, grades.held_out.tolist(), strict=True) if g >= 0}
    out.update(
        {item.pk: int(g) for item, g in zip(unlabelled, grades.unlabelled.tolist(), strict=True) if g >= 0}
    )
    judge.run_counts = {
        "items": len(items),
        "trained_on": len(labelled),
        "folds": judge.folds,
        "graded": len(out),
    }
    return out


def _external(judge: Judge, items: list[PoolItem], report: Progress) -> dict[int, int]:
    from judgements import external

    rubric = Judging.objects.select_related("rubric").get(pool=judge.pool).rubric
    scale = [
        {"value": value, "label": label, "description": text}
        for value, label, text in rubric.grades.order_by("value").values_list("value", "label", "description")
    ]
    requests = (
        external.JudgeRequest(
            id=str(item.pk),
            topic={
                "qid": item.topic.qid,
                "query": item.topic.query,
                "description": item.topic.description,
                "narrative": item.topic.narrative,
            },
            document={"docid": item.document.docid, "title": item.document.title, "text": item.document.text},
            rubric=scale,
        )
        for item in items
    )
    try:
        outcome = external.run_external(
            judge.command,
            requests,
            labels=rubric.labels,
            timeout=judge.timeout_seconds,
            retries=judge.retries,
            total=len(items),
            progress=lambda done, total: report(done / max(total, 1), f"{done} of {total} items asked"),
        )
    except OSError as exc:
        raise JudgingError(f"the judge's program could not be started: {exc}") from None
    judge.run_counts = {"items": len(items), **outcome.counts, "errors": outcome.errors}
    return {int(request_id): grade for request_id, grade in outcome.grades.items()}


def run_judge(*, judge: Judge, progress: Progress | None = None) -> dict[str, Any]:
    """Let `judge` label every selected item of its pool, replacing its former labels, and return the
    counts (also kept in `judge.run_counts`). A learned judge trains on the people's consensus grades
    and gives each of those items the grade of a model that did not train on it; an external judge asks
    its program. The gate's verdict is cleared (measure it again). Atomic: labels are replaced at once."""
    report = progress or (lambda fraction, message: None)
    rubric = Judging.objects.select_related("rubric").get(pool=judge.pool).rubric
    items = list(_items(judge.pool))
    if judge.method == Judge.Method.LEARNED:
        grades = _learned(judge, items, human_grades(pool=judge.pool), report)
    else:
        grades = _external(judge, items, report)
    report(0.95, f"storing {len(grades)} labels")
    with transaction.atomic():
        Judgement.all_kinds.filter(rater=judge.user_id).delete()
        Judgement.all_kinds.bulk_create(
            (
                Judgement(
                    item_id=item_id, rater_id=judge.user_id, rubric=rubric, grade=grade, kind=Judge.Kind.MODEL
                )
                for item_id, grade in sorted(grades.items())
            ),
            batch_size=5000,
        )
        judge.gate, judge.admitted = {}, False
        judge.save(update_fields=["run_counts", "gate", "admitted"])
    return dict(judge.run_counts)


def start_judge_run(*, judge: Judge, user: Any = None) -> Job:
    """Start the job that runs `judge` and then measures its gate (`evaluation.tasks.run_judge`)."""
    from pooling import jobs

    return jobs.start_job(
        kind=Job.Kind.JUDGE, params={"pool": judge.pool_id, "judge": judge.pk, "name": judge.name}, user=user
    )


def admitted_judge(*, pool: Pool, name: str) -> Judge:
    """The pool's judge `name` if its gate admitted it; JudgingError (naming `judge`) otherwise: only an
    admitted judge's labels may fill a release or a report."""
    judge = Judge.objects.filter(pool=pool, name=name).first()
    if judge is None:
        raise JudgingError(f"judge: this pool has no judge {name!r}")
    if not judge.admitted:
        reason = (judge.gate or {}).get("reason") or "its gate was not measured since its last run"
        raise JudgingError(f"judge: {name!r} is not admitted ({reason})")
    return judge


@dataclass(frozen=True)
class ModelFill:
    """What a release or a report takes from an admitted judge: its labels by (qid, docid), its source name
    as the release writes it (`model:NAME`), and the gate figures the manifest carries."""

    source: str
    labels: dict[tuple[str, str], int]
    gate: dict[str, Any]

    def grade_for(self, qid: str, docid: str, consensus: aggregation.Aggregate) -> int | None:
        """The judge's grade for the item (qid, docid) whose people's `consensus` is `consensus`, or None
        when it takes none: the one rule of which items a judge fills, for a release
        (`release_files.write_qrels_and_judgements`) and the current labels a report scores
        (`releases.current_labels`). Only a pending item (people have not judged it) takes the judge's
        grade: people's grades are never replaced, and neither is an item people judged unrateable."""
        if consensus.state != aggregation.PENDING:
            return None
        return self.labels.get((qid, docid))


def model_fill(*, pool: Pool, name: str) -> ModelFill:
    """The labels of the pool's admitted judge `name` for a release or a report to fill the items people
    left pending with (`ModelFill.grade_for`; JudgingError, naming `judge`, if it is not admitted)."""
    judge = admitted_judge(pool=pool, name=name)
    rows = Judgement.all_kinds.filter(rater=judge.user_id, kind=Judge.Kind.MODEL, grade__isnull=False)
    labels = {
        (qid, docid): int(grade)
        for qid, docid, grade in rows.values_list("item__topic__qid", "item__document__docid", "grade")
        if grade is not None
    }
    figures = {key: judge.gate.get(key) for key in GATE_FIGURES}
    gate = {"judge": judge.name, "method": judge.method, "admitted": judge.admitted, **figures}
    return ModelFill(source=f"model:{judge.name}", labels=labels, gate=gate)


#: The gate's figures a release's manifest carries.
GATE_FIGURES = (
    "items", "kappa", "kappa_quadratic", "alpha_ordinal", "confusion", "human_kappa", "threshold",
    "threshold_source", "ranking", "reason", "measured_at",
)  # fmt: skip
