"""Checking an upload before its job exists: the import run in a transaction that is then rolled back
(`rehearse`), within a read limit, so that a small bad file is refused at once with its errors by line and
nothing is stored; a larger file is its job's to check."""

from __future__ import annotations

from collections.abc import Callable

from django.conf import settings
from django.db import transaction

from pooling import formats
from pooling.errors import ImportFailed, Refused
from pooling.models import Job


class _RolledBack(Exception):
    pass


def rolled_back(work: Callable[[], object]) -> None:
    """Run `work()` in a transaction that is then rolled back, so that it changes nothing; what it raises
    goes to the caller. Every import checked before its job starts runs in it, through `rehearsed`.
    """
    try:
        with transaction.atomic():
            work()
            raise _RolledBack
    except _RolledBack:
        pass


def rehearse(work: Callable[[], object]) -> list[str] | None:
    """The errors `work()` (an import) would give, found by running it in a transaction that is then
    rolled back (`rolled_back`); [] when it would succeed. Nothing changes either way. Every upload that is
    checked before its job starts (a collection's files, a pool's crowd labels) is checked here.

    The check reads at most IMPORT_CHECK_MAX_DECOMPRESSED_BYTES of the file's data (decompressed: a small
    gzip file may expand a thousandfold): beyond that it stops and answers None, "not checked", and the
    file is the job's to check, like a file too large to check in a web request."""
    try:
        checked = rehearsed(work)
    except Refused as exc:
        return exc.errors
    return [] if checked else None


def rehearsed(work: Callable[[], object]) -> bool:
    """Run `work()` (an import) in a transaction that is then rolled back (`rolled_back`), reading at most
    IMPORT_CHECK_MAX_DECOMPRESSED_BYTES of its files' data: True when it ran through, False when it
    stopped at that limit (not checked: the job checks the file). What it raises goes to the caller
    (`rehearse` turns a refusal into its errors; a click log's check, `online.jobs.start_click_import`,
    lets it through)."""
    try:
        with formats.limits(total_bytes=settings.IMPORT_CHECK_MAX_DECOMPRESSED_BYTES):
            rolled_back(work)
    except formats.SizeLimitReached:
        return False
    return True


def refuse_failing_upload(*, job: Job, size: int, work: Callable[[], object]) -> None:
    """Refuse an upload before its job exists if it would fail: a file of up to IMPORT_CHECK_MAX_BYTES is
    imported by `work` under `rehearse`; on errors the file stored for the (unsaved) `job` is deleted and
    `ImportFailed` carries them, by line. A larger file is its job's to check. The `start_*` services of
    a collection's files (`pooling.jobs.start_import`) and of a pool's crowd labels call it."""
    if size > settings.IMPORT_CHECK_MAX_BYTES:
        return
    errors = rehearse(work)
    if errors:
        job.upload.delete(save=False)
        raise ImportFailed(errors)
