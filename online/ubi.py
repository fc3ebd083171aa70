"""The OpenSearch User Behavior Insights (UBI 1.x) reader: an export of `ubi_queries` and one of
`ubi_events`, JSONL or NDJSON, joined into `Page`s (see `online.logformats` for the format's rules and
the error semantics every reader shares). Pure: no Django.

The join streams through an on-disk SQLite scratch file (queries keyed by query_id, events with a unique
event id), so memory does not grow with the log; duplicates and dangling query ids are found by the same
keys.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

from online.logformats import (
    CLICK_ACTIONS,
    IMPRESSION_ACTIONS,
    Page,
    UbiStats,
    _ids,
    _position,
    logger_problem,
)
from pooling.formats import (
    FormatError,
    LineError,
    Source,
    _Invalid,
    _json_id,
    _json_parsed,
    _json_type,
    _Reader,
)


def _unwrap(obj: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    if isinstance(obj.get("_source"), dict):
        raw_id = obj.get("_id")
        return obj["_source"], str(raw_id) if raw_id is not None else None
    raw_id = obj.get("event_id", obj.get("id"))
    return obj, str(raw_id) if raw_id is not None else None


def _ordinal(attributes: Any, base: int) -> int | None:
    position = attributes.get("position") if isinstance(attributes, dict) else None
    if not isinstance(position, dict) or position.get("ordinal") is None:
        return None
    ordinal = position["ordinal"]
    if isinstance(ordinal, dict):
        ordinal = ordinal.get("index")
    if isinstance(ordinal, bool) or not isinstance(ordinal, int):
        raise _Invalid(f"event_attributes.position.ordinal {ordinal!r} is not an integer")
    return ordinal + (1 - base)


def _object_id(attributes: Any) -> str | None:
    obj = attributes.get("object") if isinstance(attributes, dict) else None
    if not isinstance(obj, dict) or obj.get("object_id") is None:
        return None
    value = obj["object_id"]
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise _Invalid(
            f"event_attributes.object.object_id must be a string or an integer, found {_json_type(value)}"
        )
    return str(value)


def read_ubi(
    queries: Source,
    events: Source,
    *,
    click_actions: tuple[str, ...] = CLICK_ACTIONS,
    ordinal_base: int = 1,
    stats: UbiStats | None = None,
    max_errors: int = 50,
    scratch_dir: str | None = None,
) -> Iterator[Page]:
    """The pages of a UBI `ubi_queries` + `ubi_events` export pair (see the module docstring)."""
    stats = stats if stats is not None else UbiStats()
    fd, scratch = tempfile.mkstemp(suffix=".sqlite3", dir=scratch_dir)
    os.close(fd)
    db = sqlite3.connect(scratch)
    try:
        yield from _ubi_pages(db, queries, events, click_actions, ordinal_base, stats, max_errors)
    finally:
        db.close()
        os.unlink(scratch)


def _ubi_pages(
    db: sqlite3.Connection,
    queries: Source,
    events: Source,
    click_actions: tuple[str, ...],
    ordinal_base: int,
    stats: UbiStats,
    max_errors: int,
) -> Iterator[Page]:
    db.executescript(
        """
        PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
        CREATE TABLE q (id TEXT PRIMARY KEY, line INT, query TEXT, by_qid INT, client TEXT, logger TEXT,
                        hits TEXT);
        CREATE TABLE e (eid TEXT UNIQUE, line INT, qid TEXT, click INT, object TEXT, position INT,
                        session TEXT);
        """
    )
    qreader = _Reader(queries, max_errors)
    _load(db, qreader, "q", "query_id", _query_row)
    ereader = _Reader(events, max_errors)

    def event_row(lineno: int, raw: dict[str, Any]) -> tuple[Any, ...] | None:
        stats.events += 1
        return _event_row(db, lineno, raw, click_actions, ordinal_base, stats)

    _load(db, ereader, "e", "event id", event_row)
    if not qreader.errors and qreader.entries == 0:
        qreader.finish("queries")
    errors: list[LineError] = qreader.errors + ereader.errors
    if errors:
        raise FormatError(errors)
    db.execute("CREATE INDEX e_q ON e (qid, click, position)")
    yield from _assemble(db, qreader.path, ereader.path, stats)


def _load(
    db: sqlite3.Connection,
    reader: _Reader,
    table: str,
    key: str,
    row_of: Callable[[int, dict[str, Any]], tuple[Any, ...] | None],
) -> None:
    """Store in `table` the row `row_of` makes of each object of `reader`'s file (None: passed over); a
    bad object, or one whose key (the row's first value, unique in `table`) came before, is an error on its
    line."""
    for lineno, row in _json_parsed(reader, row_of):
        if row is None:
            continue
        try:
            db.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
        except sqlite3.IntegrityError:
            reader.error(lineno, f"{key} {row[0]!r} appears twice")
            continue
        reader.entries += 1


def _query_row(lineno: int, raw: dict[str, Any]) -> tuple[Any, ...]:
    """A `q` row: the query's id, line, text (its qid when it names one), whether by qid, client, logger
    and the hits it showed (JSON)."""
    obj, _ = _unwrap(raw)
    query_id = _json_id(obj, ("query_id",), "query_id")
    raw_attributes = obj.get("query_attributes")
    attributes: dict[str, Any] = raw_attributes if isinstance(raw_attributes, dict) else {}
    qid = attributes.get("qid")
    text = obj.get("user_query")
    if qid is None and (not isinstance(text, str) or not text.strip()):
        raise _Invalid(f"query {query_id!r} has no user_query")
    hits = obj.get("query_response_hit_ids")
    shown = _ids(hits, "query_response_hit_ids") if hits else None
    logger = str(attributes.get("ranker") or attributes.get("experiment") or obj.get("application") or "")
    problem = logger_problem(logger)
    if problem:
        raise _Invalid(problem)
    return (
        query_id,
        lineno,
        str(qid) if qid is not None else text,
        qid is not None,
        str(obj.get("client_id") or ""),
        logger,
        json.dumps(shown) if shown else None,
    )


def _event_row(
    db: sqlite3.Connection,
    lineno: int,
    raw: dict[str, Any],
    click_actions: tuple[str, ...],
    ordinal_base: int,
    stats: UbiStats,
) -> tuple[Any, ...] | None:
    """An `e` row (event id, line, query id, click or not, object, position, session), checked against
    its query's row in `q`; None for an action that is neither a click nor an impression, and for an
    event of no query (both counted in `stats`)."""
    obj, event_id = _unwrap(raw)
    action = obj.get("action_name")
    if not isinstance(action, str) or not action:
        raise _Invalid("missing required field 'action_name'")
    is_click = action in click_actions
    if not is_click and action not in IMPRESSION_ACTIONS:
        stats.ignored_actions[action] = stats.ignored_actions.get(action, 0) + 1
        return None
    if obj.get("query_id") in (None, ""):
        stats.without_query += 1
        return None
    query_id = _json_id(obj, ("query_id",), "query_id")
    row = db.execute("SELECT hits FROM q WHERE id = ?", (query_id,)).fetchone()
    if row is None:
        raise _Invalid(f"event's query_id {query_id!r} has no query in the queries file")
    event_attributes = obj.get("event_attributes")
    object_id = _object_id(event_attributes)
    position = _ordinal(event_attributes, ordinal_base)
    shown = json.loads(row[0]) if row[0] else None
    if position is None and object_id is not None and shown is not None and object_id in shown:
        position = shown.index(object_id) + 1
    if position is None:
        raise _Invalid(f"{action} event has no event_attributes.position.ordinal")
    _position(position, len(shown) if shown else None, action)
    if shown is not None and object_id is not None and shown[position - 1] != object_id:
        raise _Invalid(
            f"{action} on object {object_id!r} at position {position}, "
            f"but the query showed {shown[position - 1]!r} there"
        )
    if object_id is None and not is_click:
        raise _Invalid("impression event has no event_attributes.object.object_id")
    session = obj.get("session_id") or obj.get("client_id") or query_id
    return (event_id, lineno, query_id, is_click, object_id, position, str(session))


def _assemble(
    db: sqlite3.Connection, qpath: str, epath: str, stats: UbiStats | None = None
) -> Iterator[Page]:
    """The pages of the loaded queries, in the order of the queries file; a query without hit ids takes its
    page from its impression events (`_impressed`). A query whose only events are clicks shows nothing one
    knows of: it is left out and counted in `stats` (the import warns of it)."""
    stats = stats if stats is not None else UbiStats()
    errors: list[LineError] = []
    cursor = db.execute("SELECT id, line, query, by_qid, client, logger, hits FROM q ORDER BY line")
    lookup = db.cursor()
    for query_id, line, query, by_qid, client, logger, hits in cursor:
        events = lookup.execute(
            "SELECT line, click, object, position, session FROM e WHERE qid = ? ORDER BY position, line",
            (query_id,),
        ).fetchall()
        if hits:
            shown = json.loads(hits)
        elif any(not click for _, click, *_ in events):
            shown = _impressed(query_id, line, events, qpath, epath, errors)
            if shown is None:
                continue  # refused: `errors` say why
        else:  # a query nobody saw the results of; or one they clicked, but what they saw is not known
            clicked = {pos for _, click, _, pos, _ in events if click}
            if clicked:
                stats.unshown_queries += 1
                stats.unshown_clicks += len(clicked)
            continue
        clicks: list[int] = []
        for event_line, click, obj, pos, _ in events:
            if not click:
                continue
            if pos > len(shown):
                errors.append(
                    LineError(
                        epath,
                        event_line,
                        f"click on position {pos}, but only {len(shown)} results were shown",
                    )
                )
            elif obj is not None and shown[pos - 1] != obj:
                errors.append(
                    LineError(
                        epath,
                        event_line,
                        f"click on object {obj!r} at position {pos}, but {shown[pos - 1]!r} was shown there",
                    )
                )
            elif pos not in clicks:
                clicks.append(pos)
        session = next((s for *_, s in events), None) or client or query_id
        yield Page(line, session, client or session, query, bool(by_qid), logger, shown, sorted(clicks))
    if errors:
        raise FormatError(errors)


def _impressed(
    query_id: str, line: int, events: list[Any], qpath: str, epath: str, errors: list[LineError]
) -> list[str] | None:
    """The page a query's impression events show (`events` in order of position, then line), held to the
    rules of every page: one document per position (an impression logged twice is one), each document at
    one position, no position left out above the deepest. None when they break a rule (`errors` say which,
    on the event's line or the query's)."""
    by_position: dict[int, str] = {}
    at: dict[str, int] = {}
    broken = False
    for event_line, click, obj, pos, _ in events:
        if click:
            continue
        if by_position.get(pos, obj) != obj:
            message = (
                f"impression of {obj!r} at position {pos}, but the page showed {by_position[pos]!r} there"
            )
        elif at.get(obj, pos) != pos:
            message = (
                f"impression of {obj!r} at position {pos}, but the page showed it at position {at[obj]} too"
            )
        else:
            by_position[pos] = obj
            at[obj] = pos
            continue
        errors.append(LineError(epath, event_line, message))
        broken = True
    if broken:
        return None
    top = max(by_position)
    missing = next((p for p in range(1, top + 1) if p not in by_position), None)
    if missing is not None:
        errors.append(LineError(qpath, line, f"query {query_id!r}: no impression at position {missing}"))
        return None
    return [by_position[p] for p in range(1, top + 1)]
