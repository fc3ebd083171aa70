"""Imports of documents, topics and runs into a collection; the entry point jobs and API calls use.

Imports stream the file through the pure readers of `pooling.formats` and run in one transaction: one bad
line anywhere raises `ImportFailed` (the readers' `FILE:LINE: message` errors) and stores nothing. How a
run file's rows are checked, ranked and written is `pooling.run_ranking`; how an upload is checked before
its job exists, `pooling.upload_checks`.
"""

from __future__ import annotations

import io
import os
import time
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import IO, Any, TypedDict, TypeVar, Unpack

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from pooling import formats, run_ranking
from pooling.errors import ImportFailed, PoolError, format_errors
from pooling.formats.jsonl import holds_non_finite
from pooling.import_summary import (
    DocumentsImportSummary,
    ImportSummary,
    RunImportSummary,
    TopicsImportSummary,
)
from pooling.models import Collection, Document, Pool, Run, Topic

Progress = Callable[[float, str], None]
BATCH = 5000


class FileOptions(TypedDict, total=False):
    """How a documents or topics file is read (`_file_import`): its format (None: guessed from the name),
    the name errors call it by (None: its path) and a progress callback."""

    format: str | None
    display_name: str | None
    progress: Progress | None


class _CountingReader(io.RawIOBase):
    """A binary file that reports how far it has been read, for progress by bytes."""

    def __init__(self, raw: io.BufferedIOBase, size: int, progress: Progress | None, name: str) -> None:
        self.raw = raw
        self.size = max(size, 1)
        self.progress = progress
        self.name = name
        self._last = 0.0

    def close(self) -> None:
        self.raw.close()
        super().close()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self.raw.readinto(buffer)
        if self.progress and n:
            fraction = self.raw.tell() / self.size
            if fraction - self._last >= 0.01:
                self._last = fraction
                self.progress(fraction, "")
        return n or 0


def _open_source(path: str | Path, display_name: str | None, progress: Progress | None) -> IO[bytes]:
    path = Path(path)
    try:
        raw = formats.open_path(path, display_name)  # closed by the caller
    except formats.FormatError as exc:
        raise ImportFailed(format_errors(exc)) from None
    return _CountingReader(raw, os.path.getsize(path), progress, display_name or str(path))  # type: ignore[return-value]  # a RawIOBase: a binary file


def reading_limits() -> AbstractContextManager[formats.Limits]:
    """The limits every import reads its file under: no line longer than IMPORT_MAX_LINE_BYTES."""
    return formats.limits(line_bytes=settings.IMPORT_MAX_LINE_BYTES)


_Summary = TypeVar("_Summary", bound=ImportSummary)


@contextmanager
def _file_import(
    summary: _Summary, path: str | Path, **options: Unpack[FileOptions]
) -> Iterator[tuple[IO[bytes], str | None, _Summary]]:
    """The frame of a documents or topics import: the file opened under the reading limits in one
    transaction, its format (given, or None: the reader guesses it from the name, `formats.format_guess`,
    and says so in its errors), and `summary` (of the import's kind), which the body fills in and which is
    timed on the way out; a reader's FormatError leaves as ImportFailed, and nothing is stored."""
    started = time.monotonic()
    name = options.get("display_name") or str(path)
    fmt = options.get("format") or None
    try:
        with (
            reading_limits(),
            _open_source(path, name, options.get("progress")) as source,
            transaction.atomic(),
        ):
            yield source, fmt, summary
    except formats.FormatError as exc:
        raise ImportFailed(format_errors(exc)) from None
    summary.seconds = time.monotonic() - started


def collection_name_problems(name: str) -> list[str]:
    """Why a new collection may not be named `name` (already trimmed, as a form's field trims it), or
    nothing: not a slug (`Collection.name_problems`), or taken. The one rule the page's form, the API and
    `create_collection` (the command) ask."""
    if problems := Collection.name_problems(name):
        return problems
    if taken := Collection.name_taken_problem(name, exists=f"collection {name!r} already exists"):
        return [taken]
    return []


def create_collection(*, name: str, description: str = "", created_by: Any = None) -> Collection:
    """Create an empty collection whose first manager is `created_by` (None: only admins manage it,
    e.g. from the command line without `--owner`); `name`, less the whitespace around it, by the rule of
    `collection_name_problems`, else refused with ImportFailed."""
    name = name.strip()
    if problems := collection_name_problems(name):
        raise ImportFailed(problems)
    with (
        Collection.creating(name, refused=lambda: ImportFailed(collection_name_problems(name), field="name")),
        transaction.atomic(),
    ):
        collection = Collection.objects.create(name=name, description=description)
        if created_by is not None:
            collection.managers.add(created_by)
    return collection


#: The reader takes JSON numbers as the json module does, NaN and Infinity too; the metadata column cannot.
NON_FINITE_METADATA = "metadata holds a number that is not finite (NaN, Infinity or past 1e308)"


def import_documents(
    *, collection: Collection, path: str | Path, **options: Unpack[FileOptions]
) -> DocumentsImportSummary:
    """Import documents (JSONL, TSV or TREC SGML, `.gz` too) atomically; an existing docid is updated. A
    document whose metadata holds NaN or Infinity (which its JSON column cannot store) is refused on its
    line."""
    existing = dict(Document.objects.filter(collection=collection).values_list("docid", "id"))
    with _file_import(DocumentsImportSummary(), path, **options) as (source, fmt, summary):
        new: list[Document] = []
        changed: list[Document] = []
        for entry in formats.read_documents(source, format=fmt):
            if entry.metadata and holds_non_finite(entry.metadata):
                raise ImportFailed([f"{source.name}:{entry.line}: {NON_FINITE_METADATA}"])
            doc = Document(
                collection=collection,
                docid=entry.docid,
                title=entry.title,
                text=entry.text,
                url=entry.url,
                metadata=entry.metadata,
            )
            if entry.docid in existing:
                doc.id = existing[entry.docid]
                changed.append(doc)
            else:
                new.append(doc)
            summary.rows += 1
            if len(new) >= BATCH:
                Document.objects.bulk_create(new)
                summary.created += len(new)
                new.clear()
            if len(changed) >= BATCH:
                Document.objects.bulk_update(changed, ["title", "text", "url", "metadata"])
                summary.updated += len(changed)
                changed.clear()
        Document.objects.bulk_create(new)
        summary.created += len(new)
        Document.objects.bulk_update(changed, ["title", "text", "url", "metadata"], batch_size=BATCH)
        summary.updated += len(changed)
    return summary


def import_topics(
    *, collection: Collection, path: str | Path, **options: Unpack[FileOptions]
) -> TopicsImportSummary:
    """Import topics (TREC, TSV or JSONL) atomically; an existing qid is updated."""
    existing = {t.qid: t for t in Topic.objects.filter(collection=collection)}
    with _file_import(TopicsImportSummary(), path, **options) as (source, fmt, summary):
        for entry in formats.read_topics(source, format=fmt):
            values = {
                "query": entry.query,
                "description": entry.description,
                "narrative": entry.narrative,
                "segments": list(entry.segments),
            }
            topic = existing.get(entry.qid)
            if topic is None:
                Topic.objects.create(collection=collection, qid=entry.qid, **values)
                summary.created += 1
            else:
                Topic.objects.filter(pk=topic.pk).update(**values, updated_at=timezone.now())
                summary.updated += 1
            summary.rows += 1
        summary.topics = summary.rows
    return summary


RUN_NAME_RULE = (
    "a run's name is at most {limit} characters, with no whitespace, ',', '/' or control character, and "
    "is not '.' or '..' (a pool's export lists run names separated by commas; the API puts a run's name "
    "in its URLs)"
)


def _run_name_fault(name: str, limit: int) -> str | None:
    if not name:
        return "is empty"
    if name in (".", ".."):  # a URL's path segment that clients resolve away
        return "is a path segment"
    if len(name) > limit:
        return f"is {len(name)} characters long"
    for char in name:
        if char in ",/" or char.isspace() or unicodedata.category(char) == "Cc":
            return f"holds {char!r}"
    return None


def check_run_name(*, name: str | None, file_name: str) -> str:
    """The name of a run imported from the file `file_name`: `name` less the whitespace around it (as a
    form's field trims it), or without one (blank) the file's name less its extension (and ``.gz``, in any
    case: `formats.without_gz`). The one rule of a run's name (every import, whoever calls it: the
    command, the page's and the API's uploads, which check it before a job starts, and the admin's change
    form; none of them has a limit or a trim of its own) is RUN_NAME_RULE; a name outside it is refused with
    PoolError naming the field ``name`` (for a name taken from the file, saying how to give one)."""
    limit = Run._meta.get_field("name").max_length or 200
    given = (name or "").strip()
    chosen = given or formats.without_gz(Path(file_name).name).rsplit(".", 1)[0]
    fault = _run_name_fault(chosen, limit)
    if fault is None:
        return chosen
    shown = chosen if len(chosen) <= 40 else f"{chosen[:40]}…"
    rule = RUN_NAME_RULE.format(limit=limit)
    if given:
        message = f"the run name {shown!r} {fault}: {rule}"
    else:
        message = (
            f"the run name {shown!r}, from the file name {Path(file_name).name!r}, {fault}: {rule}. Give "
            "the run a name (--name, the form's Name, the API's name)"
        )
    raise PoolError(fields={"name": [message]})


def empty_upload(*, file_name: str, field: str) -> str:
    """What refuses an empty uploaded file: its name and the field it was given in (the page's form and the
    API's; a framework's own "The submitted file is empty." leaves one who sent several files guessing)."""
    return (
        f"The file {formats.client_name(file_name)!r} given as {field} is empty (0 bytes): there is nothing "
        "in it to import."
    )


#: What `replace` does to a run already there (`import_run`, `_refresh_pools`), as the form, the API and
#: the command say it.
REPLACE_EFFECT = (
    "replace its rows; each built pool that uses it is brought to the new ranking in the same step: the "
    "items its new top-k brings are added to be judged (and paid for), its unjudged items the new ranking no "
    "longer brings are removed, its judged items are kept; the job's page gives the counts per pool"
)
#: The upload form's and the API's help for `replace`.
REPLACE_HELP = f"A run only: if the collection has a run of that name, {REPLACE_EFFECT}."


def run_name_taken(*, name: str | None, file_name: str) -> str:
    """What refuses a run whose name (`name`, or without one the file's: `check_run_name`) the collection's
    runs already have: the one message of the import, the page's form (beside its Name) and the API."""
    run_name = check_run_name(name=name, file_name=file_name)
    replace = "to replace its rows: --replace, the upload form's Replace, the API's replace"
    if (name or "").strip():
        return f"a run named {run_name!r} already exists ({replace})"
    file = formats.client_name(file_name)
    return (
        f"a run named {run_name!r} already exists: the name is the file's ({file!r}), "
        f"as no name was given ({replace}; to keep both, give the run another name: --name, the form's "
        "Name, the API's name)"
    )


def check_run_name_free(*, collection: Collection, name: str | None, file_name: str, replace: bool) -> None:
    """Refuse, with PoolError naming the field ``name``, a run the import would refuse for its name before
    reading the file: a name outside the rule (`check_run_name`), or one the collection's runs already have
    without `replace` (`run_name_taken`). What the page's form asks before any job starts."""
    run_name = check_run_name(name=name, file_name=file_name)
    if not replace and Run.objects.filter(collection=collection, name=run_name).exists():
        raise PoolError(fields={"name": [run_name_taken(name=name, file_name=file_name)]})


def import_run(
    *,
    collection: Collection,
    path: str | Path,
    name: str | None = None,
    description: str = "",
    replace: bool = False,
    skip_unknown_topics: bool = False,
    display_name: str | None = None,
    progress: Progress | None = None,
) -> RunImportSummary:
    """Import a TREC run atomically, storing each row with its trec_eval rank (score desc, docid desc).

    The file streams through in contiguous per-topic blocks (COPY on PostgreSQL); memory holds one
    topic's list, the collection's docid map and the set of topics seen (a run whose topics are
    interleaved is gathered by topic in memory instead, see `run_ranking.write_rows`). A name already
    taken is refused unless `replace`, which swaps the rows of the existing run and, in the same
    transaction, brings every built pool that uses it to what the new rows give (`_refresh_pools`).
    Unknown topics are errors unless `skip_unknown_topics` (then one warning with the count); unknown
    documents are errors. A name outside the rule of `check_run_name` (given, or the file's) is refused
    (PoolError, naming the field) before the file is read.
    """
    started = time.monotonic()
    display = display_name or str(path)
    run_name = check_run_name(name=name, file_name=display)
    summary = RunImportSummary()
    existing = Run.objects.filter(collection=collection, name=run_name).first()
    if existing and not replace:
        raise ImportFailed([f"{display}: {run_name_taken(name=name, file_name=display)}"])
    skipped: dict[str, int] = {}
    with reading_limits(), transaction.atomic():
        if existing:
            run = existing
            run.description = description or run.description
        else:
            run = Run.objects.create(collection=collection, name=run_name, description=description)
        run_ranking.write_rows(
            run=run,
            path=path,
            display=display,
            collection=collection,
            skip_unknown_topics=skip_unknown_topics,
            progress=progress,
            summary=summary,
            skipped=skipped,
        )
        run.num_rows = summary.rows
        run.num_topics = summary.topics
        run.source_file = formats.client_name(display)
        run.save()
        if existing:
            summary.warnings.extend(_refresh_pools(run=run))
    if skipped:
        summary.warnings.append(
            f"{display}: skipped {sum(skipped.values())} rows of {len(skipped)} topics the collection "
            f"does not know: {', '.join(sorted(skipped)[:10])}{' ...' if len(skipped) > 10 else ''}"
        )
    summary.seconds = time.monotonic() - started
    return summary


def _refresh_pools(*, run: Run) -> list[str]:
    """After `run`'s rows were replaced: each built pool that uses it brought to its new rows
    (`pool_build.refresh_run`, which keeps judged items); a line per pool, for the import's warnings."""
    from pooling.pool_build import refresh_run  # pool_build imports this module (Progress)

    lines = []
    for pool in Pool.objects.filter(pool_runs__run=run, status=Pool.Status.BUILT).order_by("pk"):
        done = refresh_run(pool=pool, run=run)
        lines.append(
            f"pool {pool.name!r} uses run {run.name!r}: brought to its new rows ({done.items_added:,} items "
            f"added, {done.items_removed:,} unjudged items removed; judged items are kept)"
        )
    return lines


def import_file(
    *,
    kind: str,
    collection: Collection,
    path: str | Path,
    display_name: str | None = None,
    params: dict[str, Any] | None = None,
    progress: Progress | None = None,
) -> ImportSummary:
    """Import a file of documents, topics or a run, with the options a job or an API call carries."""
    params = params or {}
    common: dict[str, Any] = {
        "collection": collection,
        "path": path,
        "display_name": display_name,
        "progress": progress,
    }
    if kind == "documents":
        return import_documents(format=params.get("format"), **common)
    if kind == "topics":
        return import_topics(format=params.get("format"), **common)
    if kind == "run":
        return import_run(
            name=params.get("name") or None,
            description=params.get("description", ""),
            replace=bool(params.get("replace")),
            skip_unknown_topics=bool(params.get("skip_unknown_topics")),
            **common,
        )
    raise ImportFailed([f"unknown import kind {kind!r}"])
