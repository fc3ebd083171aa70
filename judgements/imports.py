"""Importing earlier labels (qrels) as a rater's judgements."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F

from judgements.labels import revise_judgement
from judgements.lease_ends import end_lease
from judgements.models import (
    Assignment,
    Judgement,
    Judging,
)
from pooling import errors as pooling_errors
from pooling import formats, trec_io
from pooling import imports as pooling_imports
from pooling.job_summary import JobSummary
from pooling.models import Pool, PoolItem


@dataclass
class JudgementImportSummary(JobSummary):
    rows: int = 0
    created: int = 0
    updated: int = 0
    skipped_unpooled: int = 0

    def line(self) -> str:
        return (
            f"judgements: {self.rows} rows, {self.created} created, {self.updated} updated, "
            f"{self.skipped_unpooled} unpooled skipped, {self.seconds:.1f} s"
        )


def import_judgements(
    *,
    pool: Pool,
    path: str | Path,
    rater: User,
    skip_unpooled: bool = False,
    display_name: str | None = None,
) -> JudgementImportSummary:
    """Import earlier labels (qrels format) as `rater`'s judgements, atomically. A negative label (unjudged)
    is skipped; a grade not on the rubric is an error; lines for documents outside the pool are errors
    unless `skip_unpooled`. An existing judgement of this rater is revised (with a revision row)."""
    started = time.monotonic()
    display = display_name or str(path)
    judging = Judging.objects.select_related("rubric").get(pool=pool)
    labels = set(judging.rubric.labels)
    items = {
        (qid, docid): pk
        for pk, qid, docid in PoolItem.objects.filter(pool=pool).values_list(
            "pk", "topic__qid", "document__docid"
        )
    }
    summary = JudgementImportSummary()
    errors: list[str] = []
    log = trec_io.ErrorLog(display)
    try:
        with pooling_imports.reading_limits(), transaction.atomic():
            existing = {j.item_id: j for j in Judgement.objects.filter(item__pool=pool, rater=rater)}
            new: dict[int, int] = {}  # item → grade, judgements to create (a chunk of the file's at a time)

            def create() -> None:
                """The new judgements in one statement each: rows, the items' counts, the leases ended."""
                if not new or errors:  # a file with errors stores nothing: no need to write
                    new.clear()
                    return
                made = Judgement.objects.bulk_create(
                    Judgement(item_id=item, rater=rater, rubric=judging.rubric, grade=grade, imported=True)
                    for item, grade in new.items()
                )
                existing.update((judgement.item_id, judgement) for judgement in made)
                ids = list(new)
                PoolItem.objects.filter(pk__in=ids).update(num_judgements=F("num_judgements") + 1)
                # a lease this rater holds on an item ends: the imported label is their judgement
                for lease in Assignment.objects.select_for_update().filter(item_id__in=ids, rater=rater):
                    end_lease(lease, Assignment.State.DONE)
                summary.created += len(new)
                new.clear()

            for chunk in trec_io.iter_qrels(path, log):
                for qid, docid, rel, line in zip(
                    chunk.qid, chunk.docid, chunk.grade.tolist(), chunk.line.tolist(), strict=True
                ):
                    summary.rows += 1
                    if rel < 0:
                        continue
                    item_id = items.get((qid, docid))
                    if item_id is None:
                        if skip_unpooled:
                            summary.skipped_unpooled += 1
                        elif len(errors) < 50:
                            errors.append(f"{display}:{line}: {qid} {docid} is not in pool {pool.name}")
                        continue
                    if rel not in labels:
                        if len(errors) < 50:
                            errors.append(f"{display}:{line}: grade {rel} is not on the rubric")
                        continue
                    if item_id in new:  # the item again (a duplicate line): created first, then revised
                        create()
                    if item_id in existing:
                        revise_judgement(judgement=existing[item_id], by=rater, grade=rel)
                        summary.updated += 1
                    else:
                        new[item_id] = rel
                create()
            log.raise_if_any()
            if errors:
                raise pooling_errors.ImportFailed(errors)
    except formats.FormatError as exc:
        raise pooling_errors.ImportFailed(errors + [str(e) for e in exc.errors]) from None
    summary.seconds = time.monotonic() - started
    return summary
