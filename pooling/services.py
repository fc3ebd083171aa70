"""Writes for collections, documents, topics and runs. Every caller (CLI, API, admin, tasks) uses these.

Imports stream the file through the pure readers of `pooling.formats` and run in one transaction: one bad
line anywhere raises `ImportFailed` (the readers' `FILE:LINE: message` errors) and stores nothing.
"""

from __future__ import annotations

import hashlib
import io
import os
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np
from django.conf import settings
from django.db import connection, models, transaction
from django.utils import timezone

from pooling import formats, runrows, trec_io
from pooling.models import Collection, Document, Pool, PoolItem, PoolRun, Provenance, Run, RunRow, Topic

Progress = Callable[[float, str], None]
BATCH = 5000


class Refused(Exception):
    """An action was refused and changed nothing; `errors` say why (what a job row records)."""

    @property
    def errors(self) -> list[str]:
        return [str(self)]


class ImportFailed(Refused):
    """An import stored nothing. `errors` are `FILE:LINE: message` strings."""

    def __init__(self, errors: list[str]) -> None:
        self._errors = errors
        shown = errors[:20]
        more = f"\n... and {len(errors) - 20} more" if len(errors) > 20 else ""
        super().__init__("\n".join(shown) + more)

    @property
    def errors(self) -> list[str]:
        return self._errors


@dataclass
class ImportSummary:
    kind: str
    created: int = 0
    updated: int = 0
    rows: int = 0
    topics: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)

    def line(self) -> str:
        parts = [f"{self.kind}: {self.rows} rows"]
        if self.topics:
            parts.append(f"{self.topics} topics")
        if self.created or self.updated:
            parts.append(f"{self.created} created, {self.updated} updated")
        parts.append(f"{self.seconds:.1f} s")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "created": self.created,
            "updated": self.updated,
            "rows": self.rows,
            "topics": self.topics,
            "seconds": round(self.seconds, 3),
        }


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
    if not path.exists():
        raise ImportFailed([f"{display_name or path}: file not found"])
    raw = open(path, "rb")  # noqa: SIM115 - closed by the caller
    return _CountingReader(raw, os.path.getsize(path), progress, display_name or str(path))  # type: ignore[return-value]  # a RawIOBase: a binary file


def reading_limits() -> AbstractContextManager[formats.Limits]:
    """The limits every import reads its file under: no line longer than IMPORT_MAX_LINE_BYTES."""
    return formats.limits(line_bytes=settings.IMPORT_MAX_LINE_BYTES)


def _errors(exc: formats.FormatError) -> list[str]:
    return [str(error) for error in exc.errors]


def _by_line(errors: list[str]) -> list[str]:
    """Errors in file order (the readers' and the importer's own checks interleave)."""

    def line(error: str) -> int:
        parts = error.split(":")
        return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0

    return sorted(errors, key=line)


def create_collection(*, name: str, description: str = "", created_by: Any = None) -> Collection:
    """Create an empty collection whose first manager is `created_by` (None: only admins manage it,
    e.g. from the command line without `--owner`); a duplicate name is refused with ImportFailed."""
    if Collection.objects.filter(name=name).exists():
        raise ImportFailed([f"collection {name!r} already exists"])
    with transaction.atomic():
        collection = Collection.objects.create(name=name, description=description)
        if created_by is not None:
            collection.managers.add(created_by)
    return collection


def import_documents(
    *,
    collection: Collection,
    path: str | Path,
    format: str | None = None,
    display_name: str | None = None,
    progress: Progress | None = None,
) -> ImportSummary:
    """Import documents (JSONL, TSV or TREC SGML, `.gz` too) atomically; an existing docid is updated."""
    started = time.monotonic()
    name = display_name or str(path)
    fmt = format or formats.guess_format(name, "documents")
    summary = ImportSummary(kind="documents")
    existing = dict(Document.objects.filter(collection=collection).values_list("docid", "id"))
    try:
        with reading_limits(), _open_source(path, name, progress) as source, transaction.atomic():
            new: list[Document] = []
            changed: list[Document] = []
            for entry in formats.read_documents(source, format=fmt):
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
    except formats.FormatError as exc:
        raise ImportFailed(_errors(exc)) from None
    summary.seconds = time.monotonic() - started
    return summary


def import_topics(
    *,
    collection: Collection,
    path: str | Path,
    format: str | None = None,
    display_name: str | None = None,
    progress: Progress | None = None,
) -> ImportSummary:
    """Import topics (TREC, TSV or JSONL) atomically; an existing qid is updated."""
    started = time.monotonic()
    name = display_name or str(path)
    fmt = format or formats.guess_format(name, "topics")
    summary = ImportSummary(kind="topics")
    existing = {t.qid: t for t in Topic.objects.filter(collection=collection)}
    try:
        with reading_limits(), _open_source(path, name, progress) as source, transaction.atomic():
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
                    Topic.objects.filter(pk=topic.pk).update(**values)
                    summary.updated += 1
                summary.rows += 1
    except formats.FormatError as exc:
        raise ImportFailed(_errors(exc)) from None
    summary.topics = summary.rows
    summary.seconds = time.monotonic() - started
    return summary


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
) -> ImportSummary:
    """Import a TREC run atomically, storing each row with its trec_eval rank (score desc, docid desc).

    The file streams through in contiguous per-topic blocks (COPY on PostgreSQL); memory holds one
    topic's list, the collection's docid map and the set of topics seen (a run whose topics are
    interleaved is gathered by topic in memory instead, see `_write_rows`). A name already taken is refused
    unless `replace`, which swaps the rows of the existing run (pools that use it keep their items).
    Unknown topics are errors unless `skip_unknown_topics` (then one warning with the count); unknown
    documents are errors.
    """
    started = time.monotonic()
    display = display_name or str(path)
    run_name = name or Path(display).name.removesuffix(".gz").rsplit(".", 1)[0]
    summary = ImportSummary(kind="run")
    existing = Run.objects.filter(collection=collection, name=run_name).first()
    if existing and not replace:
        raise ImportFailed([f"{display}: a run named {run_name!r} already exists (use --replace)"])
    skipped: dict[str, int] = {}
    with reading_limits(), transaction.atomic():
        if existing:
            run = existing
            run.description = description or run.description
        else:
            run = Run.objects.create(collection=collection, name=run_name, description=description)
        _write_rows(
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
        run.source_file = Path(display).name
        run.save()
    if skipped:
        summary.warnings.append(
            f"{display}: skipped {sum(skipped.values())} rows of {len(skipped)} topics the collection "
            f"does not know: {', '.join(sorted(skipped)[:10])}{' ...' if len(skipped) > 10 else ''}"
        )
    summary.seconds = time.monotonic() - started
    return summary


def _write_rows(
    *,
    run: Run,
    path: str | Path,
    display: str,
    collection: Collection,
    skip_unknown_topics: bool,
    progress: Progress | None,
    summary: ImportSummary,
    skipped: dict[str, int],
) -> None:
    """Read, check, rank and write the run's rows: sets summary.rows and .topics; raises ImportFailed
    with the errors in line order.

    The file streams through `trec_io.iter_run` in chunks of about a megabyte, parsed by numpy; each
    chunk's complete topic blocks are checked, ranked and written in bulk (the last block waits for the
    next chunk, which may continue it). Memory holds one block of the file, one topic and the collection's
    catalogue. Once an error is found nothing more is written, but the file is read on, so that up to 50
    errors are reported (then reading stops).

    A run whose topics are interleaved (a topic comes back after another one) is noticed at the first
    block that comes back: what was written is rolled back to a savepoint and the file is read again,
    its rows gathered by topic in memory (`trec_io.iter_run_by_topic`) and ranked a few topics at a
    time. The cost is then that of one more read of the file, whatever the order of its lines, and the
    rows stored are the same.
    """
    if not Path(path).exists():
        raise ImportFailed([f"{display}: file not found"])
    topics = dict(Topic.objects.filter(collection=collection).values_list("qid", "id"))
    small = Path(path).stat().st_size <= runrows.TARGETED_BYTES
    catalogue = runrows.DocumentCatalogue(collection, only=runrows.docids_named(path) if small else None)
    on_read = (lambda fraction: progress(fraction, "")) if progress else None

    def rank(chunks: Callable[[trec_io.ErrorLog], Iterable[trec_io.RunChunk]]) -> _Ranker:
        errors = trec_io.ErrorLog(display)
        writer = runrows.RowWriter(run.id)
        ranker = _Ranker(topics, catalogue, errors, skip_unknown_topics, skipped, writer)
        try:
            for chunk in chunks(errors):
                ranker.add(chunk)
            ranker.flush()
            errors.raise_if_any()
        except formats.FormatError as exc:
            writer.abort()
            raise ImportFailed(_errors(exc)) from None
        except BaseException:
            writer.abort()
            raise
        writer.finish()
        return ranker

    try:
        # Most runs are written topic by topic: they stream, one block at a time. The savepoint lets a
        # run whose topics come back later (interleaved) start again from a clean table.
        with transaction.atomic():
            ranker = rank(lambda errors: trec_io.iter_run(path, errors, progress=on_read))
    except _Interleaved:
        skipped.clear()
        ranker = rank(lambda errors: trec_io.iter_run_by_topic(path, errors, progress=on_read))
    summary.rows = sum(ranker.offsets.values())
    if summary.rows == 0:
        raise ImportFailed([f"{display}: no rows to import"])
    summary.topics = len(ranker.offsets)


class _Interleaved(Exception):
    """A topic came back after another topic's rows: the run is read again, gathered by topic."""


_Held = tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


class _Ranker:
    """Turns `trec_io.RunChunk`s into ranked rows: maps qids and docids to ids, finds unknown ones and
    duplicates, sorts each topic block in trec_eval order (score descending, docid descending in byte
    order) and numbers the ranks. The last topic block of a chunk is held back until the next chunk shows
    whether it goes on."""

    def __init__(
        self,
        topics: dict[str, int],
        catalogue: runrows.DocumentCatalogue,
        errors: trec_io.ErrorLog,
        skip_unknown_topics: bool,
        skipped: dict[str, int],
        writer: runrows.RowWriter,
    ) -> None:
        self.topics = topics
        self.writer = writer
        self.catalogue = catalogue
        self.errors = errors
        self.skip_unknown_topics = skip_unknown_topics
        self.skipped = skipped
        self.offsets: dict[int, int] = {}  # topic id -> rows written
        self.seen: set[str] = set()  # the qids of the blocks already ranked
        self.held: _Held | None = None

    def add(self, chunk: trec_io.RunChunk) -> None:
        if not len(chunk.line):
            return
        qids, lengths = list(chunk.qids), chunk.qid_lengths
        docid, docid_hash, score, line = chunk.docid, chunk.docid_hash, chunk.score, chunk.line
        if self.held is not None:
            held_qid, held_docid, held_hash, held_score, held_line = self.held
            self.held = None
            if qids[0] == held_qid:
                lengths = lengths.copy()
                lengths[0] += len(held_line)
            else:
                qids.insert(0, held_qid)
                lengths = np.concatenate([[len(held_line)], lengths])
            docid = np.concatenate([held_docid, docid])
            docid_hash = np.concatenate([held_hash, docid_hash])
            score = np.concatenate([held_score, score])
            line = np.concatenate([held_line, line])
        last = len(line) - int(lengths[-1])
        self.held = (qids[-1], docid[last:].copy(), docid_hash[last:], score[last:], line[last:])
        if len(qids) > 1:
            block = slice(0, last)
            self._blocks(qids[:-1], lengths[:-1], docid[block], docid_hash[block], score[block], line[block])

    def flush(self) -> None:
        if self.held is not None:
            qid, docid, docid_hash, score, line = self.held
            self.held = None
            self._blocks([qid], np.array([len(line)]), docid, docid_hash, score, line)

    def _blocks(
        self,
        qids: list[str],
        lengths: np.ndarray,
        docid: np.ndarray,
        docid_hash: np.ndarray,
        score: np.ndarray,
        line: np.ndarray,
    ) -> None:
        """Check, rank and write complete topic blocks (one entry of `qids` and `lengths` per block).

        Raises `_Interleaved` when a qid had a block already: the caller reads the run again by topic."""
        if len(set(qids)) < len(qids) or not self.seen.isdisjoint(qids):
            raise _Interleaved
        self.seen.update(qids)
        topic_of_block = np.array([self.topics.get(qid, -1) for qid in qids], dtype=np.int64)
        starts = np.cumsum(lengths) - lengths
        for b in np.flatnonzero(topic_of_block < 0).tolist():
            qid, first, n = qids[b], int(starts[b]), int(lengths[b])
            if self.skip_unknown_topics:
                self.skipped[qid] = self.skipped.get(qid, 0) + n
            else:
                message = f"unknown topic {qid!r} (not in the collection; {n} rows from here)"
                self.errors.add(int(line[first]), message)
        keep_block = topic_of_block >= 0
        if not keep_block.all():
            keep = np.repeat(keep_block, lengths)
            qids = [qid for qid, kept in zip(qids, keep_block.tolist(), strict=True) if kept]
            topic_of_block, lengths = topic_of_block[keep_block], lengths[keep_block]
            docid, docid_hash, score, line = docid[keep], docid_hash[keep], score[keep], line[keep]
            starts = np.cumsum(lengths) - lengths
        if not len(lengths):
            return
        position = self.catalogue.positions_of(docid, docid_hash)
        unknown = np.flatnonzero(position < 0)
        for i in unknown[:50].tolist():
            text = docid[i].decode("utf-8", "replace")
            self.errors.add(int(line[i]), f"unknown document {text!r} (not in the collection)")
        self.errors.total += max(0, len(unknown) - 50)
        block = np.repeat(np.arange(len(lengths)), lengths)
        self._duplicates(qids, block, position, line)
        if self.errors.total:
            return  # nothing more is written; the file is still read for its other errors
        # trec_eval order within each block; catalogue positions are in docid byte order.
        order = trec_io.trec_order(block, score, position, len(lengths))
        if order is None:
            order = np.arange(len(block))
        ranks = np.arange(1, len(order) + 1, dtype=np.int64) - np.repeat(starts, lengths)
        for b, topic_id in enumerate(topic_of_block.tolist()):
            self.offsets[topic_id] = int(lengths[b])
        topic = np.repeat(topic_of_block, lengths)
        self.writer.write(topic, self.catalogue.ids[position[order]], ranks, score[order])

    def _duplicates(self, qids: list[str], block: np.ndarray, position: np.ndarray, line: np.ndarray) -> None:
        """Report a docid given twice within a block, on the line of the repeat."""
        known = np.flatnonzero(position >= 0)
        key = block[known].astype(np.int64) * (len(self.catalogue) + 1) + position[known]
        ordered = np.sort(key)
        if not np.any(ordered[1:] == ordered[:-1]):
            return
        order = np.argsort(key, kind="stable")
        same = np.flatnonzero(key[order][1:] == key[order][:-1])
        rows = known[order]
        for k in same[:50].tolist():
            first, repeat = int(rows[k]), int(rows[k + 1])
            docid = self.catalogue.docids[position[first]].decode("utf-8", "replace")
            qid = qids[int(block[first])]
            message = f"duplicate docid {docid!r} for qid {qid!r} (first at line {int(line[first])})"
            self.errors.add(int(line[repeat]), message)
        self.errors.total += max(0, len(same) - 50)


class _RolledBack(Exception):
    pass


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


def check_import(**kwargs: Any) -> list[str] | None:
    """The errors `import_file(**kwargs)` would give, found by running it in a transaction that is then
    rolled back; [] when it would succeed. Nothing changes either way.

    The check reads at most IMPORT_CHECK_MAX_DECOMPRESSED_BYTES of the file's data (decompressed: a small
    gzip file may expand a thousandfold): beyond that it stops and answers None, "not checked", and the
    file is the job's to check, like a file too large to check in a web request."""
    try:
        with (
            formats.limits(total_bytes=settings.IMPORT_CHECK_MAX_DECOMPRESSED_BYTES),
            transaction.atomic(),
        ):
            import_file(**kwargs)
            raise _RolledBack
    except _RolledBack:
        return []
    except formats.SizeLimitReached:
        return None
    except Refused as exc:
        return exc.errors


def delete_run(*, run: Run) -> None:
    """Delete a run and its rows (pools keep the items it contributed that have judgements)."""
    with transaction.atomic():
        run.delete()  # its rows go first, in one statement (Run.delete)


def delete_collection(*, collection: Collection) -> None:
    """Delete a collection with its documents, topics and runs (each run through `delete_run`, so its
    rows go in one statement rather than through the collector's cascade)."""
    with transaction.atomic():
        for run in Run.objects.filter(collection=collection):
            delete_run(run=run)
        collection.delete()


# --------------------------------------------------------------------------------------------- pools


class PoolError(Refused):
    """A pool operation was refused; nothing changed."""


@dataclass
class BuildSummary:
    items_added: int = 0
    provenance_added: int = 0
    items_removed: int = 0
    topics: int = 0
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "items_added": self.items_added,
            "provenance_added": self.provenance_added,
            "items_removed": self.items_removed,
            "topics": self.topics,
            "seconds": round(self.seconds, 3),
        }

    def line(self) -> str:
        return (
            f"pool: {self.items_added} items added, {self.provenance_added} provenance rows, "
            f"{self.items_removed} removed, {self.topics} topics, {self.seconds:.1f} s"
        )


def create_pool(
    *,
    name: str,
    collection: Collection,
    runs: Iterable[Run],
    strategy: str = "depth",
    depth: int = 10,
    budget: int | None = None,
    seed: int = 0,
    judgements_per_item: int = 1,
    double_judge_fraction: float | None = None,
    relevance_level: int = 1,
    segment: str = "",
    price_per_judgement: float = 1.0,
    description: str = "",
    instructions: str = "",
    created_by: Any = None,
) -> Pool:
    """Configure a pool (not yet built). Validates every parameter; nothing is stored on an error.

    `description` is for managers (it may name runs); raters see `instructions`. `created_by` becomes
    the pool's first manager (None: only admins manage it until one is added)."""
    runs = list(runs)
    problems: list[str] = []
    if Pool.objects.filter(name=name).exists():
        problems.append(f"a pool named {name!r} already exists")
    if strategy not in Pool.Strategy.values:
        problems.append(f"unknown strategy {strategy!r}; choose from {', '.join(Pool.Strategy.values)}")
    if depth < 1:
        problems.append("depth must be at least 1")
    if strategy != Pool.Strategy.DEPTH and not budget:
        problems.append(f"strategy {strategy!r} needs a judgement budget (--budget)")
    if budget is not None and budget < 1:
        problems.append("budget must be at least 1")
    if judgements_per_item < 1:
        problems.append("judgements per item must be at least 1")
    if double_judge_fraction is not None and not 0.0 <= double_judge_fraction <= 1.0:
        problems.append("double_judge_fraction must be between 0 and 1")
    if not runs:
        problems.append("a pool needs at least one run")
    foreign = [run.name for run in runs if run.collection_id != collection.id]
    if foreign:
        problems.append(f"runs not in collection {collection.name!r}: {', '.join(foreign)}")
    if segment and not Topic.objects.filter(collection=collection).in_segment(segment):
        problems.append(f"no topic of collection {collection.name!r} has segment {segment!r}")
    if problems:
        raise PoolError("; ".join(problems))
    with transaction.atomic():
        pool = Pool.objects.create(
            name=name,
            description=description,
            instructions=instructions,
            collection=collection,
            strategy=strategy,
            depth=depth,
            budget=budget,
            seed=seed,
            judgements_per_item=judgements_per_item,
            double_judge_fraction=double_judge_fraction,
            relevance_level=relevance_level,
            segment=segment,
            price_per_judgement=price_per_judgement,
        )
        PoolRun.objects.bulk_create(PoolRun(pool=pool, run=run) for run in runs)
        if created_by is not None:
            pool.managers.add(created_by)
    return pool


def _blind_key_sql(pool: Pool) -> tuple[str, list[Any]]:
    """SQL for the keyed hash of a docid (60 bits of MD5(key || docid)), for the blind order."""
    key = f"{settings.BLIND_ORDER_KEY}:{pool.pk}:"
    if connection.vendor == "postgresql":
        return "('x' || substr(md5(%s || d.docid), 1, 15))::bit(60)::bigint", [key]
    connection.ensure_connection()
    connection.connection.create_function("blind_key", 2, _blind_key_python, deterministic=True)
    return "blind_key(%s, d.docid)", [key]


def _blind_key_python(key: str, docid: str) -> int:
    return int(hashlib.md5((key + docid).encode(), usedforsecurity=False).hexdigest()[:15], 16)


def _topic_filter(pool: Pool) -> tuple[str, list[Any]]:
    if not pool.segment:
        return "", []
    ids = [topic.id for topic in pool.topics()]
    return f" AND rr.topic_id IN ({', '.join(['%s'] * len(ids))})", ids


def _add_items(*, pool: Pool, run_ids: list[int]) -> tuple[int, int]:
    """Insert the depth-k union of `run_ids` into the pool, with provenance, in two set-based statements.

    Existing items are kept as they are (ON CONFLICT DO NOTHING), so re-running is harmless and adding a
    run adds only documents not yet pooled, plus its provenance on the ones already there. Rows go in in
    the order of the unique indexes: on PostgreSQL that makes the index maintenance, most of the cost,
    about a fifth cheaper (benchmarks/pool.py).
    """
    if not run_ids:
        return 0, 0
    item = PoolItem._meta.db_table
    prov = Provenance._meta.db_table
    rows = RunRow._meta.db_table
    doc = Document._meta.db_table
    runs_sql = ", ".join(["%s"] * len(run_ids))
    topics_sql, topic_ids = _topic_filter(pool)
    blind_sql, blind_params = _blind_key_sql(pool)
    fraction = pool.double_judge_fraction
    if fraction is None or pool.judgements_per_item == 1:
        required_sql, required_params = "%s", [pool.judgements_per_item]
    else:
        # The blind key is a keyed hash: a pseudo-random, reproducible draw of the double-judged fraction.
        required_sql = "CASE WHEN ((k.bk / 7) %% 1000000) < %s THEN %s ELSE 1 END"
        required_params = [int(fraction * 1_000_000), pool.judgements_per_item]
    now = timezone.now()
    with connection.cursor() as cursor:
        cursor.execute(
            f"""
            INSERT INTO {item} (pool_id, topic_id, document_id, blind_key, required_judgements,
                                num_judgements, active_leases, gold, selected, added_at)
            SELECT %s, k.topic_id, k.document_id, k.bk, {required_sql}, 0, 0, false, %s, %s
            FROM (
                SELECT c.topic_id, c.document_id, {blind_sql} AS bk
                FROM (SELECT DISTINCT rr.topic_id, rr.document_id FROM {rows} rr
                      WHERE rr.run_id IN ({runs_sql}) AND rr.rank <= %s{topics_sql}) c
                JOIN {doc} d ON d.id = c.document_id
            ) k
            WHERE true
            ORDER BY k.topic_id, k.document_id
            ON CONFLICT (pool_id, topic_id, document_id) DO NOTHING
            """,
            [pool.pk, *required_params, not pool.adaptive, now, *blind_params, *run_ids, pool.depth,
             *topic_ids],
        )  # fmt: skip
        items_added = cursor.rowcount
        cursor.execute(
            f"""
            INSERT INTO {prov} (item_id, run_id, rank)
            SELECT pi.id, rr.run_id, rr.rank
            FROM {rows} rr
            JOIN {item} pi
              ON pi.pool_id = %s AND pi.topic_id = rr.topic_id AND pi.document_id = rr.document_id
            WHERE rr.run_id IN ({runs_sql}) AND rr.rank <= %s{topics_sql}
            ORDER BY pi.id, rr.run_id
            ON CONFLICT (item_id, run_id) DO NOTHING
            """,
            [pool.pk, *run_ids, pool.depth, *topic_ids],
        )
        provenance_added = cursor.rowcount
    return max(items_added, 0), max(provenance_added, 0)


def build_pool(*, pool: Pool, progress: Progress | None = None) -> BuildSummary:
    """Build (or complete) the pool from all its runs: set-based SQL, idempotent, atomic.

    Depth pools select every item for judging. Adaptive pools store the depth-k candidates with their
    provenance, unselected: the strategy selects them one by one as judgements arrive (`select_next`).
    """
    started = time.monotonic()
    run_ids = list(pool.pool_runs.values_list("run_id", flat=True))
    if not run_ids:
        raise PoolError(f"pool {pool.name!r} has no runs")
    summary = BuildSummary()
    Pool.objects.filter(pk=pool.pk).update(status=Pool.Status.BUILDING)
    try:
        with transaction.atomic():
            for index, chunk in enumerate(_chunks(run_ids, BUILD_RUNS)):
                items, provenance = _add_items(pool=pool, run_ids=chunk)
                summary.items_added += items
                summary.provenance_added += provenance
                if progress:
                    done = min((index + 1) * BUILD_RUNS, len(run_ids)) / len(run_ids)
                    progress(done, f"{summary.items_added} items")
            pool.status = Pool.Status.BUILT
            pool.built_at = timezone.now()
            pool.save(update_fields=["status", "built_at"])
    except Exception:
        Pool.objects.filter(pk=pool.pk).update(status=Pool.Status.FAILED)
        raise
    summary.topics = PoolItem.objects.filter(pool=pool).values("topic_id").distinct().count()
    summary.seconds = time.monotonic() - started
    return summary


#: Runs per set-based insert in build_pool: each statement re-joins the items already in, so fewer,
#: larger statements are cheaper (progress is reported after each).
BUILD_RUNS = 50


def _chunks(values: list[int], size: int) -> Iterator[list[int]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def add_runs(*, pool: Pool, runs: Iterable[Run], progress: Progress | None = None) -> BuildSummary:
    """Add runs to a pool. A built pool gains only documents not already pooled; nothing judged changes."""
    started = time.monotonic()
    runs = list(runs)
    foreign = [run.name for run in runs if run.collection_id != pool.collection_id]
    if foreign:
        raise PoolError(f"runs not in collection {pool.collection.name!r}: {', '.join(foreign)}")
    summary = BuildSummary()
    with transaction.atomic():
        present = set(pool.pool_runs.values_list("run_id", flat=True))
        new = [run for run in runs if run.id not in present]
        PoolRun.objects.bulk_create(PoolRun(pool=pool, run=run) for run in new)
        if pool.status == Pool.Status.BUILT:
            items, provenance = _add_items(pool=pool, run_ids=[run.id for run in new])
            summary.items_added, summary.provenance_added = items, provenance
    if progress:
        progress(1.0, f"{summary.items_added} items added")
    summary.topics = PoolItem.objects.filter(pool=pool).values("topic_id").distinct().count()
    summary.seconds = time.monotonic() - started
    return summary


def remove_run(*, pool: Pool, run: Run) -> BuildSummary:
    """Take a run out of a pool: its provenance goes, and the items only it contributed go too — unless
    they have a judgement (those stay, judged evidence is never thrown away)."""
    summary = BuildSummary()
    with transaction.atomic():
        PoolRun.objects.filter(pool=pool, run=run).delete()
        Provenance.objects.filter(item__pool=pool, run=run).delete()
        # Locked (and on PostgreSQL re-checked) so a judgement committing meanwhile keeps its item.
        orphans = PoolItem.objects.select_for_update(of=("self",)).filter(
            pool=pool, num_judgements=0, provenance__isnull=True
        )
        _, deleted = PoolItem.objects.filter(pk__in=list(orphans.values_list("pk", flat=True))).delete()
        # delete() also counts the rows it cascades to (leases...): report the items only.
        summary.items_removed = deleted.get(PoolItem._meta.label, 0)
    return summary


@transaction.atomic
def set_judgement_plan(*, pool: Pool, judgements_per_item: int, double_judge_fraction: float | None) -> Pool:
    """Change how many judgements an item needs (`judgements_per_item`) and for which fraction of the
    items (`double_judge_fraction`, the agreement sample; None: every item). Only before the pool is
    built: a built pool's items already carry their required judgements, which raters are working to."""
    locked = Pool.objects.select_for_update().get(pk=pool.pk)
    problems = []
    if locked.status in (Pool.Status.BUILT, Pool.Status.BUILDING):
        problems.append(
            f"pool {pool.name!r} is {locked.status}: its items already say how many judgements each needs"
        )
    if judgements_per_item < 1:
        problems.append("judgements per item must be at least 1")
    if double_judge_fraction is not None and not 0.0 <= double_judge_fraction <= 1.0:
        problems.append("double_judge_fraction must be between 0 and 1")
    if problems:
        raise PoolError("; ".join(problems))
    locked.judgements_per_item = judgements_per_item
    locked.double_judge_fraction = double_judge_fraction
    locked.save(update_fields=["judgements_per_item", "double_judge_fraction"])
    pool.judgements_per_item, pool.double_judge_fraction = judgements_per_item, double_judge_fraction
    return locked


def estimate_pool(
    *, pool: Pool, runs: Iterable[Run] | None = None, per_topic: bool = False
) -> dict[str, Any]:
    """Size and cost of a pool before it is built: distinct (topic, document) pairs within depth k.

    `pool` may be an unsaved `Pool` holding the parameters a form is about to pass to `create_pool`, with
    `runs` the runs it would get (default: the pool's runs): the page's preview and the CLI's printed
    estimate are then the same numbers. Adaptive pools judge at most `budget` of the candidates; an item
    needs `judgements_per_item` judgements, or, with `double_judge_fraction`, that many for the fraction
    of the items and one for the others. `per_topic` adds `topics`: the candidates of each topic
    (`[{"qid", "items"}]`, topics without any left out)."""
    rows = RunRow._meta.db_table
    if runs is None:
        run_ids = list(pool.pool_runs.values_list("run_id", flat=True))
    else:
        run_ids = [run.pk for run in runs]
    empty: dict[str, Any] = {"candidates": 0, "items": 0, "judgements": 0, "cost": 0.0}
    if per_topic:
        empty["topics"] = []
    if not run_ids:
        return empty
    runs_sql = ", ".join(["%s"] * len(run_ids))
    topics_sql, topic_ids = _topic_filter(pool)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT c.topic_id, COUNT(*) FROM (SELECT DISTINCT rr.topic_id, rr.document_id FROM {rows} rr "
            f"WHERE rr.run_id IN ({runs_sql}) AND rr.rank <= %s{topics_sql}) c GROUP BY c.topic_id",
            [*run_ids, pool.depth, *topic_ids],
        )
        by_topic = {int(topic_id): int(count) for topic_id, count in cursor.fetchall()}
    candidates = sum(by_topic.values())
    items = min(candidates, pool.budget) if pool.adaptive and pool.budget else candidates
    per_item: float = pool.judgements_per_item
    if pool.double_judge_fraction is not None:
        per_item = 1 + (pool.judgements_per_item - 1) * pool.double_judge_fraction
    judgements = round(items * per_item)
    estimate: dict[str, Any] = {
        "candidates": candidates,
        "items": items,
        "judgements": judgements,
        "cost": round(judgements * float(pool.price_per_judgement), 2),
    }
    if per_topic:
        qids = dict(Topic.objects.filter(pk__in=by_topic).values_list("pk", "qid"))
        estimate["topics"] = sorted(
            ({"qid": qids[pk], "items": count} for pk, count in by_topic.items()), key=lambda t: t["qid"]
        )
    return estimate


def estimate_added_runs(*, pool: Pool, runs: Iterable[Run]) -> dict[str, Any]:
    """What adding `runs` to `pool` brings: the items (and their judgements and cost) that the depth-k
    lists of the pool's runs together with `runs` have beyond those of the pool's runs alone — the
    difference of two `estimate_pool` figures, so the same rule as the pool's own estimate."""
    current = list(Run.objects.filter(pk__in=pool.pool_runs.values("run_id")))
    present = {run.pk for run in current}
    new = [run for run in runs if run.pk not in present]
    before = estimate_pool(pool=pool, runs=current)
    after = estimate_pool(pool=pool, runs=[*current, *new])
    return {
        "runs": [run.name for run in new],
        "items": after["items"] - before["items"],
        "judgements": after["judgements"] - before["judgements"],
        "cost": round(after["cost"] - before["cost"], 2),
    }


def export_pool(*, pool: Pool, out: IO[str]) -> int:
    """Write `qid<TAB>docid<TAB>run,run,...` (run names sorted), one line per item, sorted by qid then
    docid in byte order. Streams; returns the number of lines."""
    from django.db.models.functions import Collate

    collation = "C" if connection.vendor == "postgresql" else "BINARY"
    # From the items, not the provenance: an item kept for its judgement after its only run was removed
    # has no provenance and still gets its line (with an empty run list).
    rows = (
        PoolItem.objects.filter(pool=pool)
        .annotate(q=Collate("topic__qid", collation), d=Collate("document__docid", collation))
        .order_by("q", "d", "id")
        .values_list("id", "q", "d", "provenance__run__name")
    )
    lines = 0
    current: int | None = None
    key: tuple[str, str] = ("", "")
    names: list[str] = []
    for item_id, qid, docid, run_name in rows.iterator(chunk_size=10000):
        if item_id != current:
            if current is not None:
                out.write(f"{key[0]}\t{key[1]}\t{','.join(sorted(names))}\n")
                lines += 1
            current, key, names = item_id, (qid, docid), []
        if run_name is not None:
            names.append(run_name)
    if current is not None:
        out.write(f"{key[0]}\t{key[1]}\t{','.join(sorted(names))}\n")
        lines += 1
    return lines


def select_next(*, pool: Pool, topic: Topic, outcomes: dict[str, int | None]) -> PoolItem | None:
    """In an adaptive pool, let the strategy choose the next candidate of `topic` to judge.

    The topic's chooser is rebuilt from its runs' ranked candidates and replayed over the items selected so
    far, in selection order, with their `outcomes` (docid → consensus grade, None = unrateable), so the
    choice is a pure function of the seed and the judgements. Returns the newly selected item, or None when
    the topic's share of the budget is spent or every candidate is selected. The caller only asks once the
    items already selected for the topic are judged.
    """
    from pooling import strategies

    candidates = (
        Provenance.objects.filter(item__pool=pool, item__topic=topic)
        .order_by("run__name", "rank")
        .values_list("run__name", "item__document__docid")
    )
    ranked: dict[str, list[str]] = {}
    for run_name, docid in candidates:
        ranked.setdefault(run_name, []).append(docid)
    if not ranked:
        return None
    capacities = dict(
        PoolItem.objects.filter(pool=pool)
        .values("topic__qid")
        .annotate(n=models.Count("id"))
        .values_list("topic__qid", "n")
    )
    share = strategies.allocate_budget(pool.budget or 0, capacities).get(topic.qid, 0)
    chosen = list(
        PoolItem.objects.filter(pool=pool, topic=topic, selected=True)
        .order_by("selected_order")
        .values_list("document__docid", flat=True)
    )
    if len(chosen) >= share:
        return None
    chooser = strategies.make_chooser(
        pool.strategy,
        ranked,
        depth=pool.depth,
        seed=strategies.topic_seed(pool.seed, topic.qid),
        relevance_level=pool.relevance_level,
    )
    for docid in chosen:
        if chooser.next_document() is None:
            break
        chooser.record(docid, outcomes.get(docid))
    next_docid = chooser.next_document()
    if next_docid is None:
        return None
    item = PoolItem.objects.select_for_update().get(pool=pool, topic=topic, document__docid=next_docid)
    if not item.selected:
        item.selected = True
        item.selected_order = len(chosen) + 1
        item.save(update_fields=["selected", "selected_order"])
    return item
