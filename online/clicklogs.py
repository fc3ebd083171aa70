"""Importing click logs (over 500 lines: the checks of the arguments, the per-page loop, the table of
cells and the store are one flow, kept together so that the hot loop's shape is visible): one service,
`import_click_log`, for every caller (command, API job, demo, benchmark), and its checks of the
arguments, `check_click_log`, which the upload's job starter applies before it stores a file. Atomic: any
bad line raises `ImportFailed` and nothing is stored (rows or archive).

Memory stays flat: pages are aggregated a chunk at a time with numpy into the sorted table of distinct
cells (logger, topic, document, position), and each chunk's pages are appended to the impression
archive (`online.archive`) on disk. What grows is the number of distinct cells and distinct queries,
not the number of impressions.

Queries map to topics by qid, or (a page that logs query text) by exact normalised text: Unicode NFKC,
case-folded, runs of whitespace collapsed (`normalise_query`). An unmapped query is recorded as a
`QueryMapping` without a topic, with its impressions, and reported in the log's counts and warnings.
An impression is one document shown at one position, in every format and every count (a cell's, a
query's, the log's `impressions` and `unmapped_impressions`): a page of 3 results is 3 impressions, as
the counts format's rows would give them.
A page is one result list shown once, and the log's `pages` counts those whose query maps to a topic, in
every format that has pages (`PAGED_FORMATS`); the counts format has none, so its `pages` is unknown
(None, never its rows: those are its own count, `rows`).
Object ids map to docids: the document whose docid is the object id, or (with `object_field`) whose
metadata[object_field] is; a shown object that is no document of the collection is left out of the
counts, its position still taken by it, and reported (warned, and counted: its impressions
`unknown_impressions`, its clicks `unknown_clicks`, the distinct such objects `unknown_objects`).
"""

from __future__ import annotations

import contextlib
import operator
import shutil
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any
from zlib import crc32

import numpy as np
from django.conf import settings
from django.db import IntegrityError, connection, models, transaction

from online import archive
from online.logformats import MAX_POSITION, CountRow, Page, UbiStats, read_counts, read_impressions
from online.models import ClickCount, ClickLog, QueryMapping
from online.ubi import read_ubi
from pooling.errors import ImportFailed, Refused
from pooling.formats import FormatError, client_name
from pooling.imports import _open_source, reading_limits
from pooling.models import Collection, Document, Pool, Topic, column_problems

CHUNK_PAGES = 10_000
#: Most distinct loggers (ranker names) one log may have: the archive keeps a page's logger in an int16.
MAX_LOGGERS = 2**15 - 1
#: The cells of a log are counted under one int64 key (`_Importer.key`: logger, topic, document and
#: position packed): a log whose loggers × topics × documents × positions reach this is refused, where the
#: keys would wrap and merge cells silently.
KEY_SPACE = 2**63
#: Most distinct unknown objects (shown, no document of the collection) an import names and counts.
UNKNOWN_NAMES = 100_000
#: How many files each format takes (UBI: the queries export, then the events export).
FILES = {"jsonl": 1, "counts": 1, "ubi": 2}
#: The formats whose logs know their result pages (`pages`); a pre-aggregated counts file does not.
PAGED_FORMATS = frozenset({"jsonl", "ubi"})
_CLICKS = operator.attrgetter("clicks")

Progress = Callable[[float, str], None]


def normalise_query(text: str) -> str:
    """The form queries are matched in: NFKC, case-folded, whitespace runs collapsed, trimmed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def text_index(topics: Sequence[tuple[str, str]]) -> tuple[dict[str, int], list[str]]:
    """How query text maps to topics: `normalise_query` of each topic's query → its index in `topics`
    ((qid, query) pairs in qid order); of topics with the same text the first maps, with a warning."""
    by_text: dict[str, int] = {}
    warnings: list[str] = []
    for i, (qid, query) in enumerate(topics):
        key = normalise_query(query)
        if key in by_text:
            first = topics[by_text[key]][0]
            warnings.append(
                f"topics {first} and {qid} have the same query text; text {key!r} maps to {first}"
            )
            continue
        by_text[key] = i
    return by_text, warnings


class _Cells:
    """The sorted table of distinct cells, merged a chunk at a time: a chunk's keys are sorted and summed
    per distinct key, looked up in the table (a binary search each, in order) and added in place; only
    cells new to the table make it grow (a merge), which after the first chunks is rare. (np.unique and
    np.union1d hash: an order of magnitude slower than a sort here.)"""

    def __init__(self) -> None:
        self.keys = np.zeros(0, dtype=np.int64)
        self.impressions = np.zeros(0, dtype=np.int64)
        self.clicks = np.zeros(0, dtype=np.int64)

    def add(self, keys: np.ndarray, impressions: np.ndarray | None, clicks: np.ndarray) -> None:
        """Add `keys` (not necessarily distinct) with their impressions (None: one each) and clicks."""
        if not len(keys):
            return
        order = np.argsort(keys)
        keys = keys[order]
        starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
        distinct = keys[starts]
        if impressions is None:
            impressions_of = np.diff(np.append(starts, len(keys)))
        else:
            impressions_of = np.add.reduceat(np.asarray(impressions, dtype=np.int64)[order], starts)
        clicks_of = np.add.reduceat(np.asarray(clicks, dtype=np.int64)[order], starts)
        index = np.searchsorted(self.keys, distinct)
        found = index < len(self.keys)
        found[found] = self.keys[index[found]] == distinct[found]
        if not found.all():
            merged = np.concatenate([self.keys, distinct[~found]])
            merged.sort()
            at = np.searchsorted(merged, self.keys)
            grown_imp = np.zeros(len(merged), dtype=np.int64)
            grown_clk = np.zeros(len(merged), dtype=np.int64)
            grown_imp[at] = self.impressions
            grown_clk[at] = self.clicks
            self.keys, self.impressions, self.clicks = merged, grown_imp, grown_clk
            index = np.searchsorted(merged, distinct)
        self.impressions[index] += impressions_of
        self.clicks[index] += clicks_of


class _Importer:
    def __init__(self, log: ClickLog, object_field: str) -> None:
        self.log = log
        topics = list(
            Topic.objects.filter(collection=log.collection_id)
            .order_by("qid")
            .values_list("pk", "qid", "query")
        )
        self.topic_pks = np.array([pk for pk, _, _ in topics] or [0], dtype=np.int64)
        self.by_qid = {qid: i for i, (_, qid, _) in enumerate(topics)}
        self.by_text, self.warnings = text_index([(qid, query) for _, qid, query in topics])
        docs = Document.objects.filter(collection=log.collection_id).order_by("pk")
        if object_field:
            pairs = [
                (pk, str((meta or {}).get(object_field, "")))
                for pk, meta in docs.values_list("pk", "metadata")
            ]
        else:
            pairs = list(docs.values_list("pk", "docid"))
        self.doc_pks = np.array([pk for pk, _ in pairs] or [0], dtype=np.int64)
        self.docs = {name: i for i, (_, name) in enumerate(pairs) if name}
        self.loggers: dict[str, int] = {}
        self.teams: dict[str, int] = {}
        self.queries: dict[str, list[Any]] = {}  # query -> [topic index or -1, by, impressions, clicks]
        self.cells = _Cells()
        self.n_topics = max(len(topics), 1)
        self.n_docs = max(len(pairs), 1)
        # result pages whose query maps to a topic; None where the format has no pages (module docstring)
        self.pages: int | None = 0 if log.format in PAGED_FORMATS else None
        self.rows = self.clicks = 0  # rows: of a counts file, every one read
        # shown objects that are no document of the collection: their impressions and clicks, and the
        # distinct objects (their names, up to UNKNOWN_NAMES: a log of another collection's documents
        # would otherwise hold them all)
        self.unknown_impressions = self.unknown_clicks = 0
        self.unknown_names: set[str] = set()

    def topic_of(self, query: str, by_qid: bool) -> int:
        entry = self.queries.get(query)
        if entry is None:
            if by_qid:
                index, by = self.by_qid.get(query, -1), QueryMapping.By.QID
            else:
                index, by = self.by_text.get(normalise_query(query), -1), QueryMapping.By.TEXT
            entry = self.queries[query] = [index, by if index >= 0 else QueryMapping.By.NONE, 0, 0]
        return int(entry[0])

    def logger_index(self, name: str) -> int:
        index = self.loggers.get(name)
        if index is None:
            if len(self.loggers) >= MAX_LOGGERS:
                raise ImportFailed(
                    [f"{self.log.source_file}: more than {MAX_LOGGERS:,} loggers (ranker names) in one log"]
                )
            most = KEY_SPACE // (self.n_topics * self.n_docs * MAX_POSITION)  # loggers the keys can hold
            if len(self.loggers) >= most:
                raise ImportFailed(
                    [
                        f"{self.log.source_file}: more than {most:,} loggers (ranker names) in one log of a "
                        f"collection of {self.n_topics:,} topics and {self.n_docs:,} documents (its cells "
                        "could not be counted apart): split the log by logger"
                    ]
                )
            index = self.loggers[name] = len(self.loggers)
        return index

    def key(self, logger: Any, topic: Any, doc: Any, position: Any) -> Any:
        # a position is 1..MAX_POSITION: the readers refuse any other (`logformats.position_problem`)
        return ((logger * self.n_topics + topic) * self.n_docs + doc) * MAX_POSITION + (position - 1)

    def add_pages(self, pages: list[Page], writer: archive.Writer | None) -> None:
        p_topic: list[int] = []
        p_logger: list[str] = []
        p_session: list[str] = []
        p_user: list[str] = []
        p_len: list[int] = []
        p_clicks: list[int] = []
        c_name: list[str] = []
        c_click: list[int] = []
        team_runs: list[tuple[int, list[int]]] = []  # (page, team codes) of interleaved pages only
        teams, queries = self.teams, self.queries
        # The per-page loop is the import's cost: plain dict look-ups and list appends, no calls; names
        # become indices a chunk at a time below (C-level maps).
        for page in pages:
            shown = page.shown
            n = len(shown)
            entry = queries.get(page.query)
            if entry is None:
                self.topic_of(page.query, page.by_qid)
                entry = queries[page.query]
            clicks = page.clicks
            entry[2] += n  # impressions: documents shown, as a counts row's (one rule for every format)
            entry[3] += len(clicks)
            topic = entry[0]
            if topic < 0:
                continue
            if page.teams is not None:
                team_runs.append((len(p_len), [teams.setdefault(t, len(teams) + 1) for t in page.teams]))
            p_topic.append(topic)
            p_logger.append(page.logger)
            p_session.append(page.session)
            p_user.append(page.user)
            p_len.append(n)
            p_clicks.append(len(clicks))
            c_name.extend(shown)
            c_click.extend(clicks)
        self.clicks += sum(map(len, map(_CLICKS, pages)))
        if not p_topic:
            return
        assert self.pages is not None  # pages come from a paged format's reader only
        self.pages += len(p_topic)
        for name in dict.fromkeys(p_logger):  # indices in order of first appearance
            self.logger_index(name)
        found = list(map(self.docs.get, c_name))
        doc = np.array(self._unknown(c_name, found) if None in found else found, dtype=np.int64)
        session_list = list(map(crc32, map(str.encode, p_session)))
        session = np.array(session_list, dtype=np.uint32)
        user = (
            session
            if all(map(operator.is_, p_user, p_session))
            else np.array(list(map(crc32, map(str.encode, p_user))), dtype=np.uint32)
        )
        lengths = np.array(p_len, dtype=np.int64)
        offset = int(lengths.sum())
        first = np.cumsum(lengths) - lengths
        starts = np.repeat(first, lengths)
        position = np.arange(offset, dtype=np.int64) - starts + 1
        team = np.zeros(offset, dtype=np.int8)
        for page_index, codes in team_runs:
            team[first[page_index] : first[page_index] + len(codes)] = codes
        clicked = np.zeros(offset, dtype=bool)
        clicked[np.repeat(first, p_clicks) + np.array(c_click, dtype=np.int64) - 1] = True
        logger_page = np.array(list(map(self.loggers.__getitem__, p_logger)), dtype=np.int64)
        topic_a = np.repeat(np.array(p_topic, dtype=np.int64), lengths)
        logger_a = np.repeat(logger_page, lengths)
        known = doc >= 0
        if not known.all():
            self.unknown_clicks += int(clicked[~known].sum())
        keys = self.key(logger_a[known], topic_a[known], doc[known], position[known])
        self.cells.add(keys, None, clicked[known])
        if writer is not None:
            writer.append(
                topic=np.array(p_topic, dtype=np.int32),
                logger=logger_page.astype(np.int16),
                session=session,
                user=user,
                length=lengths.astype(np.int32),
                doc=doc.astype(np.int32),
                click=clicked,
                team=team,
            )

    def _unknown(self, shown: list[str], indices: Sequence[int | None]) -> list[int]:
        """-1 for the shown objects that are no document of the collection, counted for the report."""
        out = []
        for name, index in zip(shown, indices, strict=True):
            if index is None:
                self.unknown_impressions += 1
                if len(self.unknown_names) < UNKNOWN_NAMES:
                    self.unknown_names.add(name)
                out.append(-1)
            else:
                out.append(index)
        return out

    def add_counts(self, rows: list[CountRow]) -> None:
        keys, imp, clk = [], [], []
        for row in rows:
            topic = self.topic_of(row.qid, True)
            entry = self.queries[row.qid]
            entry[2] += row.impressions
            entry[3] += row.clicks
            self.clicks += row.clicks
            if topic < 0:
                continue
            doc = self.docs.get(row.docid, -1)
            if doc < 0:
                self.unknown_impressions += row.impressions
                self.unknown_clicks += row.clicks
                if len(self.unknown_names) < UNKNOWN_NAMES:
                    self.unknown_names.add(row.docid)
                continue
            keys.append(
                int(
                    self.key(
                        np.int64(self.logger_index(row.logger)),
                        np.int64(topic),
                        np.int64(doc),
                        np.int64(row.position),
                    )
                )
            )
            imp.append(row.impressions)
            clk.append(row.clicks)
        self.rows += len(rows)
        if keys:
            self.cells.add(np.array(keys, dtype=np.int64), np.array(imp), np.array(clk))


def _chunks(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def check_click_log(*, collection: Collection, name: str, format: str, pool: Pool | None = None) -> None:
    """Refuse (`Refused`, its `field` the argument at fault) what no import of a click log may take: a name
    that is not a slug (the model's own field rules: the name is a folder of MEDIA_ROOT/clicklogs/), or
    one the collection's logs already have; an unknown format; a pool of another collection. Checked by
    `import_click_log` before it touches anything, and by the upload's job starter before it stores a file.
    """
    if messages := column_problems(ClickLog, "name", name):
        raise Refused(f"name {name!r}: {' '.join(messages)}", field="name")
    if ClickLog.objects.filter(collection=collection, name=name).exists():
        raise _name_taken(collection, name)
    if format not in FILES:
        raise Refused(f"unknown click log format {format!r}; expected jsonl, counts or ubi", field="format")
    if pool is not None and pool.collection_id != collection.pk:
        raise Refused(f"pool {pool.name} is not a pool of collection {collection.name}", field="pool")


def _name_taken(collection: Collection, name: str) -> Refused:
    return Refused(f"collection {collection.name} already has a click log named {name!r}", field="name")


def import_click_log(
    *,
    collection: Collection,
    name: str,
    format: str,
    paths: list[str],
    display_names: list[str] | None = None,
    pool: Pool | None = None,
    user: Any = None,
    object_field: str = "",
    ordinal_base: int = 1,
    progress: Progress | None = None,
) -> ClickLog:
    """Import a click log into `collection` as log `name` (unique in the collection) and return it.

    `format` is "jsonl" (one file), "counts" (one file) or "ubi" (two files: queries, then events).
    Raises `ImportFailed` (FILE:LINE errors, or a file that cannot be read) or `Refused` (a bad argument:
    `check_click_log`); nothing is stored then, and no file outside the log's own archive folder is
    touched.
    """
    check_click_log(collection=collection, name=name, format=format, pool=pool)
    if len(paths) != FILES[format]:
        raise Refused(f"format {format} takes {FILES[format]} file(s), got {len(paths)}")
    names = display_names or [str(p) for p in paths]
    for path, shown in zip(paths, names, strict=True):  # each can be opened, before anything is written
        _open_source(path, shown, None).close()
    state: dict[str, Any] = {"fraction": 0.0, "message": ""}

    def report(fraction: float, message: str) -> None:
        # the byte counter gives fractions, the importer messages: each keeps the other's last value
        if fraction >= 0:
            state["fraction"] = fraction
        if message:
            state["message"] = message
        if progress is not None:
            progress(float(state["fraction"]), str(state["message"]))

    archive_dir = "" if format == "counts" else f"clicklogs/{collection.pk}/{name}"
    root = _archive_root(collection, name) if archive_dir else None
    # progress by bytes of the (last) file read; UBI reads queries then events
    last = len(paths) - 1

    def opened(i: int) -> Any:
        scale = (lambda f, m: report(0.85 * (i + f) / len(paths), m)) if progress else None
        try:
            return _open_source(paths[i], names[i], scale)
        except OSError as exc:
            raise ImportFailed([f"{names[i]}: cannot be read ({exc.strerror})"]) from None

    owned = False  # whether the archive folder is this attempt's to write and to remove
    try:
        with reading_limits(), transaction.atomic():
            try:
                log = ClickLog.objects.create(
                    collection=collection,
                    pool=pool,
                    name=name,
                    format=format,
                    source_file=", ".join(client_name(shown) for shown in names),
                    archive_dir=archive_dir,
                    created_by=user if getattr(user, "is_authenticated", False) else None,
                )
            except IntegrityError:  # another import of this name committed since the check
                raise _name_taken(collection, name) from None
            # The name's row holds out any other import of the name until this transaction ends, so what
            # is in its folder now is a leftover of an earlier failed attempt.
            owned = True
            _discard(root)
            importer = _Importer(log, object_field)
            ubi = UbiStats()
            if format == "counts":
                for rows in _chunks(read_counts(opened(0)), CHUNK_PAGES):
                    importer.add_counts(rows)
                    report(-1, f"{importer.rows:,} rows read")
            else:
                pages = (
                    read_impressions(opened(0))
                    if format == "jsonl"
                    else read_ubi(opened(0), opened(last), stats=ubi, ordinal_base=ordinal_base)
                )
                assert root is not None
                with archive.Writer(root) as writer:
                    for chunk in _chunks(pages, CHUNK_PAGES):
                        importer.add_pages(chunk, writer)
                        report(-1, f"{importer.pages:,} pages read")
                    writer.finish(
                        topic_pks=importer.topic_pks,
                        doc_pks=importer.doc_pks,
                        loggers=list(importer.loggers),
                        teams=list(importer.teams),
                    )
            report(0.9, "storing counts")
            _store(log, importer, ubi)
    except FormatError as exc:
        if owned:
            _discard(root)
        raise ImportFailed([str(e) for e in exc.errors]) from None
    except BaseException:
        if owned:
            _discard(root)
        raise
    report(1.0, f"imported {summary(log)}")
    return log


def _archive_root(collection: Collection, name: str) -> Path:
    """The archive folder of `collection`'s log `name`: a folder strictly inside the collection's
    clicklogs folder, checked once more here (the name is a slug: `check_click_log`) because a leftover
    there is removed: `Refused` when it would be anywhere else, or a link to anywhere."""
    base = (Path(settings.MEDIA_ROOT) / "clicklogs" / str(collection.pk)).resolve()
    root = base / name
    if root.parent != base or root.resolve() != root:
        raise Refused(
            f"the archive folder of click log {name!r} is not inside its collection's click-log folder "
            "(a link to elsewhere): nothing imported",
            field="name",
        )
    return root


def summary(log: ClickLog) -> str:
    """What an import of `log` read, as the command and the job's progress say it: its pages (whose query
    maps to a topic), or for a format without pages (counts) its rows, never as pages."""
    counts = log.counts
    if counts.get("pages") is None:
        return f"{counts.get('rows', 0):,} rows (pages unknown: a {log.format} log has none)"
    return f"{counts['pages']:,} pages"


def insert_rows(model: type[models.Model], columns: Sequence[str], rows: Iterable[tuple[Any, ...]]) -> None:
    """Rows into `model`'s table in one COPY on PostgreSQL, executemany elsewhere, for the writers that
    have checked every value themselves (the click counts, the click labels): the ORM's per-object work
    (a third of an import) is skipped."""
    table = model._meta.db_table
    names = ", ".join(columns)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            with cursor.cursor.copy(f"COPY {table} ({names}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            marks = ", ".join(["%s"] * len(columns))
            cursor.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks})", list(rows))


def _discard(root: Path | None) -> None:
    """Remove the archive folder `root` (an `_archive_root`) if there is one, and its collection's
    click-log folder if that is left empty (a failed first import of a collection leaves no folder)."""
    if root is None:
        return
    if root.is_dir() and not root.is_symlink():
        shutil.rmtree(root, ignore_errors=True)
    with contextlib.suppress(OSError):  # not empty (another log's archive), or already gone
        root.parent.rmdir()


def _store(log: ClickLog, importer: _Importer, ubi: UbiStats) -> None:
    cells = importer.cells
    keys = cells.keys
    position = keys % MAX_POSITION + 1
    rest = keys // MAX_POSITION
    doc = rest % importer.n_docs
    rest //= importer.n_docs
    topic = rest % importer.n_topics
    logger = rest // importer.n_topics
    logger_names = list(importer.loggers)
    rows = zip(
        [log.pk] * len(keys),
        [logger_names[i] for i in logger.tolist()],
        importer.topic_pks[topic].tolist(),
        importer.doc_pks[doc].tolist(),
        position.tolist(),
        cells.impressions.tolist(),
        cells.clicks.tolist(),
        strict=True,
    )
    columns = ("log_id", "logger", "topic_id", "document_id", "position", "impressions", "clicks")
    insert_rows(ClickCount, columns, rows)
    QueryMapping.objects.bulk_create(
        QueryMapping(
            log=log,
            query=query[:10000],
            topic_id=int(importer.topic_pks[index]) if index >= 0 else None,
            mapped_by=by,
            impressions=imp,
            clicks=clk,
        )
        for query, (index, by, imp, clk) in importer.queries.items()
    )
    unmapped = [(q, e[2]) for q, e in importer.queries.items() if e[0] < 0]
    warnings = list(importer.warnings)
    if unmapped:
        shown = ", ".join(f"{q!r} ({n})" for q, n in sorted(unmapped, key=lambda x: -x[1])[:10])
        warnings.append(
            f"{len(unmapped)} queries map to no topic, {sum(n for _, n in unmapped):,} impressions: {shown}"
        )
    if importer.unknown_impressions:
        objects = len(importer.unknown_names)
        many = "at least " if objects >= UNKNOWN_NAMES else ""
        names = ", ".join(sorted(importer.unknown_names)[:20])
        warnings.append(
            f"{importer.unknown_impressions:,} impressions ({importer.unknown_clicks:,} clicks) of {many}"
            f"{objects:,} unknown objects, no document of the collection, left out of the counts "
            f"(e.g. {names})"
        )
    if ubi.ignored_actions:
        warnings.append(
            "UBI events of other actions ignored: "
            + ", ".join(f"{a} ({n})" for a, n in sorted(ubi.ignored_actions.items()))
        )
    if ubi.without_query:
        warnings.append(f"{ubi.without_query} UBI events without a query_id ignored")
    if ubi.unshown_queries:
        warnings.append(
            f"{ubi.unshown_queries} UBI queries with {ubi.unshown_clicks} clicks left out: they have neither "
            "query_response_hit_ids nor impression events, so what was shown is not known"
        )
    log.counts = {
        "pages": importer.pages,  # None for a format without pages (counts): unknown, not 0
        **({} if importer.pages is not None else {"rows": importer.rows}),
        "impressions": int(cells.impressions.sum()),
        "clicks": int(cells.clicks.sum()),
        "cells": len(keys),
        "queries": len(importer.queries),
        "unmapped_queries": len(unmapped),
        "unmapped_impressions": sum(n for _, n in unmapped),
        "unknown_objects": len(importer.unknown_names),  # distinct (at most UNKNOWN_NAMES)
        "unknown_impressions": importer.unknown_impressions,
        "unknown_clicks": importer.unknown_clicks,
        "loggers": logger_names,
    }
    log.max_position = int(position.max()) if len(position) else 0
    log.warnings = warnings
    log.save(update_fields=["counts", "max_position", "warnings"])
