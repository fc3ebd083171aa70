"""Importing a crowd's labels: many workers' judgements of a pool from one file, atomically.

The file is CSV or TSV (the header's delimiter decides; ``.gz`` read transparently) with a header naming
the columns ``worker`` (or ``rater``), ``qid`` (or ``topic``), ``docid`` (or ``doc``), ``label`` (or
``grade``) and optionally ``seconds``. Rules, each one counted in the summary:

- **Duplicates** — the same (worker, item) more than once in the file: with ``duplicates="last"`` the last
  row wins and the earlier ones are counted as replaced; with ``"revisions"`` every row is kept, in file
  order, each later one a revision of the worker's judgement (its history shows them all). A worker's
  judgement already in the pool is revised by the file's label either way.
- **Special labels** — a label in ``unrateable_labels`` (e.g. -2 for "broken", or 9 for "cannot judge")
  becomes an unrateable judgement; any other negative label is skipped (counted under ``negative label``).
  A special label may not be a grade of the rubric (refused as a bad option).
- **Workers** — a row is credited only to its worker's account (`CrowdWorker`, read by
  :func:`judgements.membership.worker_accounts`), never to another account whose username is the id. With
  ``create_raters`` a new worker gets one (:func:`judgements.membership.create_worker_account`) named by
  their id, or ``crowd-<id>`` when that name is taken (``raters_renamed``): the ids are the crowd
  platform's, so a clash does not stop a campaign. The worker keeps that account in every later import.
- **Skipped rows** — counted by reason: ``negative label``, ``unpooled`` (with ``skip_unpooled``; otherwise
  an unpooled row is an error), ``unknown worker`` (a worker with no worker account, and no
  ``create_raters`` to make one).
- **Errors** (nothing stored): a missing column, no row after the header, a line the csv module cannot
  read (a field over its limit of 128 KiB), a label that is not an integer, a grade not on the rubric,
  an empty field, seconds that are not a number from 0 to ``labels.MAX_SECONDS`` (``NaN``, ``-5``), and
  with ``create_raters`` a new worker whose id is not a username as it stands
  (:func:`judgements.membership.check_username`: letters, digits and ``@.+-_``, at most 150, not ``.``
  or ``..``); each as ``FILE:LINE: what``, on the worker's first row.

Every caller — the pool's manager page, the API, ``manage.py import_judgements --crowd`` — imports here:
the command calls :func:`import_crowd_judgements` directly, the page and the API start a job
(:func:`start_crowd_import`, the upload checked first so a bad file is refused at once) whose task calls
it with the same options.

A little over 400 lines on purpose: the rules above are one import, each counted in one summary, and most
of the module is this docstring and the per-row checks that say which rule a row broke.
"""

from __future__ import annotations

import csv
import math
import time
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from django.db import transaction
from django.db.models import F

from judgements import membership
from judgements.errors import JudgingError
from judgements.labels import MAX_SECONDS, revise_judgement
from judgements.models import Judgement, Judging
from pooling import errors as pooling_errors
from pooling import formats, upload_checks
from pooling import imports as pooling_imports
from pooling.job_summary import JobSummary
from pooling.models import Job, Pool, PoolItem

COLUMNS = {
    "worker": ("worker", "rater", "worker_id", "workerid"),
    "qid": ("qid", "topic", "topic_id", "topicid"),
    "docid": ("docid", "doc", "document", "doc_id"),
    "label": ("label", "grade", "rel", "relevance"),
    "seconds": ("seconds", "time", "duration"),
}
DUPLICATE_RULES = ("last", "revisions")
#: Rows written between two progress reports.
PROGRESS_EVERY = 2000
#: Workers named in the warnings at most (``raters_renamed`` counts them all).
MAX_WARNINGS = 20
#: The longest ``unrateable_labels`` text an import takes (`parse_labels`).
MAX_LABELS_TEXT = 200


class CrowdOptionError(JudgingError):
    """An option of a crowd import is wrong (`field` names it: the API's 400, the form's field); nothing
    was read or stored."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}", field=field)


def parse_labels(text: str) -> list[int]:
    """The special labels of ``--unrateable-labels`` / the form's and API's ``unrateable_labels``:
    integers separated by commas (``-2,9``), at most ``MAX_LABELS_TEXT`` characters (leading and trailing
    spaces aside); CrowdOptionError otherwise. The one check of the option for the command, the form and
    the API."""
    if len(text.strip()) > MAX_LABELS_TEXT:
        raise CrowdOptionError(
            "unrateable_labels", f"at most {MAX_LABELS_TEXT} characters, not {len(text.strip())}"
        )
    try:
        return sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError:
        raise CrowdOptionError(
            "unrateable_labels", f"integers separated by commas are expected, not {text!r}"
        ) from None


def check_options(*, pool: Pool, duplicates: str, unrateable_labels: Collection[int]) -> Judging:
    """The pool's judging set-up, once the options of an import into it are known to be good:
    CrowdOptionError naming the option otherwise (a duplicate rule that is not one, a special label that
    is a grade of the rubric); JudgingError for a pool without a judging set-up."""
    if duplicates not in DUPLICATE_RULES:
        raise CrowdOptionError(
            "duplicates", f"one of {', '.join(DUPLICATE_RULES)} is expected, not {duplicates!r}"
        )
    judging = Judging.objects.select_related("rubric").filter(pool=pool).first()
    if judging is None:
        raise JudgingError(f"pool {pool.name} has no judging set-up (rubric, raters)")
    on_rubric = sorted(set(unrateable_labels) & set(judging.rubric.labels))
    if on_rubric:
        raise CrowdOptionError(
            "unrateable_labels",
            f"{', '.join(map(str, on_rubric))} {'is a grade' if len(on_rubric) == 1 else 'are grades'} "
            f"of the rubric {judging.rubric.name!r}, not a special label",
        )
    return judging


@dataclass
class CrowdImportSummary(JobSummary):
    rows: int = 0
    created: int = 0
    revised: int = 0
    unrateable: int = 0
    duplicates: int = 0
    duplicate_rule: str = "last"
    raters_created: int = 0
    raters_renamed: int = 0  # new workers whose account is not named by their id (see the warnings)
    skipped: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        skipped = ", ".join(f"{n} {reason}" for reason, n in sorted(self.skipped.items())) or "none"
        return (
            f"crowd judgements: {self.rows} rows, {self.created} created, {self.revised} revised, "
            f"{self.unrateable} unrateable, {self.duplicates} duplicate (worker, item) rows "
            f"({'last wins' if self.duplicate_rule == 'last' else 'kept as revisions'}), "
            f"{self.raters_created} raters created{self._renamed()}; skipped: {skipped}; {self.seconds:.1f} s"
        )

    def _renamed(self) -> str:
        return f" ({self.raters_renamed} under another name than their id)" if self.raters_renamed else ""


def _header(display: str, number: int, fields: list[str]) -> dict[str, int]:
    names = [f.strip().lower() for f in fields]
    found: dict[str, int] = {}
    for column, aliases in COLUMNS.items():
        for alias in aliases:
            if alias in names:
                found[column] = names.index(alias)
                break
    missing = [c for c in ("worker", "qid", "docid", "label") if c not in found]
    if missing:
        raise pooling_errors.ImportFailed(
            [f"{display}:{number}: the header lacks the column(s) {', '.join(missing)}"]
        )
    return found


def _rows(
    path: str | Path, display: str, errors: list[str]
) -> list[tuple[int, str, str, str, int, float | None]]:
    """(line, worker, qid, docid, label, seconds) of every good row; problems appended to `errors`. The file
    is opened as `display` (`formats.open_path`), so the reader's own errors name the upload, not the path
    the server stored it at."""
    try:
        source = formats.open_path(path, display)
    except formats.FormatError as exc:
        errors.extend(str(error) for error in exc.errors)
        return []
    with source:
        return _read_rows(source, display, errors)


def _read_rows(
    source: IO[bytes], display: str, errors: list[str]
) -> list[tuple[int, str, str, str, int, float | None]]:
    problems: list[formats.LineError] = []
    lines = formats.open_lines(source, errors=problems, max_errors=50)
    out: list[tuple[int, str, str, str, int, float | None]] = []
    columns: dict[str, int] | None = None
    delimiter = "\t"
    for number, text in lines:
        if not text.strip():
            continue
        if columns is None:
            if problems:  # the header line itself could not be read (not UTF-8): not the next line
                errors.extend(f"{p}; it would be the header line, nothing else can be read" for p in problems)
                return []
            delimiter = "\t" if "\t" in text else ","
        try:
            fields = next(csv.reader([text], delimiter=delimiter))
        except csv.Error as exc:  # a field over the csv module's limit (128 KiB) in a line within ours
            errors.append(f"{display}:{number}: cannot be read as CSV: {exc}")
            if columns is None:
                break  # without its header, no line can be read
            continue
        if columns is None:
            columns = _header(display, number, fields)
            continue
        try:
            worker, qid, docid, label = (
                fields[columns[c]].strip() for c in ("worker", "qid", "docid", "label")
            )
        except IndexError:
            errors.append(f"{display}:{number}: {len(fields)} fields, fewer than the header's")
            continue
        if not (worker and qid and docid):
            errors.append(f"{display}:{number}: an empty worker, qid or docid")
            continue
        try:
            grade = int(label)
        except ValueError:
            errors.append(f"{display}:{number}: label {label!r} is not an integer")
            continue
        seconds = None
        if "seconds" in columns and columns["seconds"] < len(fields) and fields[columns["seconds"]].strip():
            seconds = _seconds(fields[columns["seconds"]])
            if seconds is None:
                errors.append(
                    f"{display}:{number}: seconds {fields[columns['seconds']]!r} is not a number "
                    f"from 0 to {MAX_SECONDS:g}"
                )
                continue
        out.append((number, worker, qid, docid, grade, seconds))
    errors.extend(str(p) for p in problems)
    if columns is None and not errors:
        errors.append(f"{display}: empty file (a header line is needed)")
    elif not out and not errors:
        errors.append(f"{display}: no rows found (only a header)")
    return out


def _seconds(text: str) -> float | None:
    """The seconds a row reports, if a finite number from 0 to the longest time a judgement may report
    (`labels.MAX_SECONDS`); None otherwise."""
    try:
        seconds = float(text)
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and 0 <= seconds <= MAX_SECONDS else None


def _account_problem(worker: str) -> str | None:
    """Why a new worker can have no account (None if they can): `membership.check_worker_id`."""
    try:
        membership.check_worker_id(worker)
    except membership.AccountRefused as exc:
        return f"worker {worker!r} cannot have an account (create_raters): {exc}"
    return None


def import_crowd_judgements(
    *,
    pool: Pool,
    path: str | Path,
    duplicates: str = "last",
    unrateable_labels: Collection[int] = (),
    skip_unpooled: bool = False,
    create_raters: bool = False,
    display_name: str | None = None,
    progress: pooling_imports.Progress | None = None,
) -> CrowdImportSummary:
    """Import a crowd file (see the module docstring) as its workers' judgements of `pool`, in one
    transaction: any error stores nothing (`ImportFailed` with every error by line; CrowdOptionError for a
    bad option, before the file is read). `progress(fraction, message)` is told how far it got."""
    judging = check_options(pool=pool, duplicates=duplicates, unrateable_labels=unrateable_labels)
    started = time.monotonic()
    display = display_name or str(path)
    grades = set(judging.rubric.labels)
    special = set(unrateable_labels)
    summary = CrowdImportSummary(duplicate_rule=duplicates)
    errors: list[str] = []
    with pooling_imports.reading_limits():
        rows = _rows(path, display, errors)
    if progress:
        progress(0.2, f"read {len(rows):,} rows of {display}")
    items = {
        (q, d): pk
        for pk, q, d in PoolItem.objects.filter(pool=pool).values_list("pk", "topic__qid", "document__docid")
    }
    last_row: dict[tuple[str, int], int] = {}
    kept: list[tuple[str, int, int, float | None]] = []
    workers = {worker for _, worker, *_ in rows}
    # the workers whose id needs no check: every one without create_raters, else those with an account
    checked = set(membership.worker_accounts(workers)) if create_raters else workers
    for number, worker, qid, docid, label, seconds in rows:
        summary.rows += 1
        if label < 0 and label not in special:
            summary.skipped["negative label"] += 1
            continue
        if label not in grades and label not in special:
            errors.append(f"{display}:{number}: grade {label} is not on the rubric")
            continue
        item = items.get((qid, docid))
        if item is None:
            if skip_unpooled:
                summary.skipped["unpooled"] += 1
            else:
                errors.append(f"{display}:{number}: {qid} {docid} is not in pool {pool.name}")
            continue
        if worker not in checked:  # a new worker's account, made below: its name checked on its first row
            checked.add(worker)
            problem = _account_problem(worker)
            if problem:
                errors.append(f"{display}:{number}: {problem}")
                continue
        if (worker, item) in last_row:
            summary.duplicates += 1
        last_row[(worker, item)] = len(kept)
        kept.append((worker, item, label, seconds))
    if errors:
        raise pooling_errors.ImportFailed(errors[:200])
    if duplicates == "last":
        kept = [row for k, row in enumerate(kept) if last_row[(row[0], row[1])] == k]
    with transaction.atomic():
        users = membership.worker_accounts({w for w, *_ in kept})
        for worker in sorted({w for w, *_ in kept} - set(users)):
            if not create_raters:
                continue
            users[worker] = membership.create_worker_account(worker_id=worker)
            summary.raters_created += 1
            if users[worker].username != worker:
                summary.raters_renamed += 1
                if summary.raters_renamed <= MAX_WARNINGS:
                    summary.warnings.append(
                        f"worker {worker!r} has the account {users[worker].username!r}: an account that is "
                        f"not a crowd worker's is named {worker!r}"
                    )
        existing = {
            (j.rater_id, j.item_id): j
            for j in Judgement.objects.filter(item__pool=pool, rater__in=list(users.values()))
        }
        for done, (worker, item, label, seconds) in enumerate(kept):
            if progress and done % PROGRESS_EVERY == 0:
                progress(0.3 + 0.7 * done / len(kept), f"stored {done:,} of {len(kept):,} judgements")
            found_user = users.get(worker)
            if found_user is None:
                summary.skipped["unknown worker"] += 1
                continue
            user = found_user
            unrateable = label in special
            grade = None if unrateable else label
            summary.unrateable += int(unrateable)
            found = existing.get((user.pk, item))
            if found is not None:
                existing[(user.pk, item)] = revise_judgement(
                    judgement=found, by=user, grade=grade, unrateable=unrateable
                )
                summary.revised += 1
                continue
            existing[(user.pk, item)] = Judgement.objects.create(
                item_id=item, rater=user, rubric=judging.rubric, grade=grade, unrateable=unrateable,
                seconds=seconds or 0.0, imported=True,
            )  # fmt: skip
            PoolItem.objects.filter(pk=item).update(num_judgements=F("num_judgements") + 1)
            summary.created += 1
    summary.seconds = time.monotonic() - started
    return summary


def start_crowd_import(
    *,
    pool: Pool,
    upload: Any,
    duplicates: str = "last",
    unrateable_labels: Collection[int] = (),
    skip_unpooled: bool = False,
    create_raters: bool = False,
    user: Any = None,
) -> Job:
    """Store an uploaded crowd file and start the job importing it into `pool` with these options (the
    pool's manager page and the API; the task calls :func:`import_crowd_judgements`).

    Refused before any job exists: a bad option (CrowdOptionError, naming it), and a file up to
    IMPORT_CHECK_MAX_BYTES that would fail — it is first imported in a transaction that is rolled back
    (`pooling.upload_checks.refuse_failing_upload`), so `ImportFailed` carries its errors by line and
    nothing is stored (no job, no file). A larger file is checked by its job."""
    from pooling import jobs

    check_options(pool=pool, duplicates=duplicates, unrateable_labels=unrateable_labels)
    params: dict[str, Any] = {
        "pool": pool.pk,
        "name": pool.name,
        "duplicates": duplicates,
        "unrateable_labels": sorted(set(unrateable_labels)),
        "skip_unpooled": bool(skip_unpooled),
        "create_raters": bool(create_raters),
    }
    name = formats.client_name(upload.name)
    job = Job(kind=Job.Kind.JUDGEMENTS, params=params, upload_name=name)
    job.upload.save(name, upload, save=False)
    upload_checks.refuse_failing_upload(job=job, size=upload.size, work=lambda: import_job_file(job))
    return jobs.start_job(
        kind=Job.Kind.JUDGEMENTS, params=params, user=user, upload=job.upload.name or "", upload_name=name
    )


def import_job_file(job: Job, progress: pooling_imports.Progress | None = None) -> CrowdImportSummary:
    """Import the crowd file of `job` with the options in its parameters (what its task runs)."""
    params = job.params
    return import_crowd_judgements(
        pool=Pool.objects.get(pk=params["pool"]),
        path=job.upload.path,
        duplicates=params.get("duplicates", "last"),
        unrateable_labels=[int(label) for label in params.get("unrateable_labels", [])],
        skip_unpooled=bool(params.get("skip_unpooled")),
        create_raters=bool(params.get("create_raters")),
        display_name=job.upload_name or job.upload.name,
        progress=progress,
    )
