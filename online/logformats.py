"""Pure, streaming readers for click logs (no Django). They share the house's file handling and error
semantics (`pooling.formats`: `FILE:LINE: message`, every bad line reported, `FormatError` raised after
the last entry, `.gz` read transparently); the caller consumes inside one transaction, so one bad line
stores nothing.

Three formats, each yielding `Page`s (one result list shown once) or `CountRow`s:

**Impressions JSONL** (ours), one page per line::

    {"session": "s1", "user": "u1", "qid": "301" | "query": "text", "ranker": "bm25",
     "docids": ["d3", "d1", ...], "clicks": [1, 3], "dwell": [12.5, 3.0], "teams": ["A", "B", ...]}

`docids` in shown order (position 1 first); `clicks` are 1-based positions; `dwell` (optional) one
finite, non-negative number of seconds per click; `teams` (optional, interleaved pages) one team name
per position, at most `MAX_TEAMS` names in the whole log. `session` defaults to the line; `user` to the
session. A logger (`ranker`, the counts' sixth field, UBI's) is at most `MAX_LOGGER_LENGTH` characters.

**Pre-aggregated counts** (from a warehouse): `qid docid position impressions clicks [logger]`,
whitespace separated, `#` comments and blank lines skipped; 0 ≤ clicks ≤ impressions, and the impressions
of the whole file add up to at most `MAX_COUNT` (what the count columns hold).

Every format shows positions 1 to `MAX_POSITION` (`position_problem`, the one rule): a deeper one is an
error on its line.

**OpenSearch UBI 1.x**: an export of `ubi_queries` and one of `ubi_events`, JSONL or NDJSON (a bulk or
scroll export's `{"_id": ..., "_source": {...}}` wrapper is unwrapped; `_id` is the event id). A query
(`query_id`, `user_query`, `client_id`, `timestamp`, `query_response_hit_ids`, `query_attributes`) is one
page: the hits shown, in order; a query without hit ids takes its shown list from its `impression`
events (`event_attributes.position.ordinal`). Click events (`action_name` `click` or `click_through` by
default) carry `event_attributes.object.object_id` and `event_attributes.position.ordinal` (an integer,
or `{"index": n}` as in the 1.0 JSON schema); ordinals are 1-based unless `ordinal_base=0` is given.
The join streams through an on-disk SQLite scratch file, so memory does not grow with the log
(`online.ubi`). Other actions (`hover`, `add_to_cart`, ...) are counted and ignored, as are events
without a query_id.
The query's logger is `query_attributes.ranker` (or `.experiment`), else `application`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pooling.formats import (
    Source,
    _id_problem,
    _Invalid,
    _json_id,
    _json_parsed,
    _json_type,
    _Reader,
)

#: Deepest position a page may show (the import packs a position into its keys as 0..MAX_POSITION-1).
MAX_POSITION = 1000
#: Most impressions (and so clicks) a log may count in all: a count column's bound (PositiveBigIntegerField)
#: and numpy's int64, which the import sums in.
MAX_COUNT = 2**63 - 1
#: The longest logger (ranker) name, in characters: the column `online.models.ClickCount.logger`.
MAX_LOGGER_LENGTH = 200
#: Most team names the pages of one log may use: the archive keeps a position's team in one signed byte
#: (0 for none, else 1 + the team's index).
MAX_TEAMS = 127
CLICK_ACTIONS = ("click", "click_through")
_WHITESPACE = re.compile(r"\s")
IMPRESSION_ACTIONS = ("impression",)


@dataclass(slots=True)
class Page:
    """One result list shown once. `query` is a qid when `by_qid`, else query text as logged."""

    line: int
    session: str
    user: str
    query: str
    by_qid: bool
    logger: str
    shown: list[str]
    clicks: list[int]
    dwell: list[float] | None = None
    teams: list[str] | None = None


@dataclass(slots=True)
class CountRow:
    line: int
    qid: str
    docid: str
    position: int
    impressions: int
    clicks: int
    logger: str = ""


@dataclass
class UbiStats:
    """What the UBI reader skipped, for the import's report."""

    events: int = 0
    ignored_actions: dict[str, int] = field(default_factory=dict)
    without_query: int = 0
    # queries with clicks but no shown list (no hit ids, no impression events): left out, and how many clicks
    unshown_queries: int = 0
    unshown_clicks: int = 0


def position_problem(position: int) -> str | None:
    """What is wrong with a 1-based `position` of a page (None: nothing); every format's one rule."""
    if position < 1:
        return f"position {position} must be 1 or more (positions are 1-based)"
    if position > MAX_POSITION:
        return f"position {position} is too deep (positions are at most {MAX_POSITION})"
    return None


def logger_problem(logger: str) -> str | None:
    """What is wrong with a logger (ranker) name (None: nothing); every format's one rule."""
    if len(logger) > MAX_LOGGER_LENGTH:
        return f"logger {logger[:40]!r}… is {len(logger):,} characters long (at most {MAX_LOGGER_LENGTH})"
    return None


def _ids(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not value:
        raise _Invalid(f"field {what!r} must be a non-empty array of ids")
    if len(value) > MAX_POSITION:
        raise _Invalid(f"field {what!r} shows {len(value)} results: {position_problem(MAX_POSITION + 1)}")
    # the common case in one pass of C-level checks: distinct non-empty strings without whitespace
    try:
        joined = "".join(value)  # a TypeError unless every item is a string
    except TypeError:
        joined = None
    if (
        joined is not None
        and "" not in value
        and len(set(value)) == len(value)
        and not _WHITESPACE.search(joined)
    ):
        return value
    out = []
    for item in value:
        if isinstance(item, int) and not isinstance(item, bool):
            item = str(item)
        if not isinstance(item, str):
            raise _Invalid(f"field {what!r} must hold strings, found {_json_type(item)}")
        problem = _id_problem(item, "id")
        if problem:
            raise _Invalid(f"field {what!r}: {problem}")
        out.append(item)
    if len(set(out)) != len(out):
        raise _Invalid(f"field {what!r} shows the same id twice")
    return out


def _position(value: Any, shown: int | None, what: str = "click") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _Invalid(f"{what} position {value!r} is not an integer")
    if value >= 1 and shown is not None and value > shown:
        raise _Invalid(f"{what} on position {value}, but only {shown} results were shown")
    problem = position_problem(value)
    if problem:
        raise _Invalid(f"{what} {problem}")
    return value


def _clicks(raw: Any, shown: int) -> list[int]:
    if raw.__class__ is list and not raw:
        return raw
    # the common case in C-level checks: integers (not booleans) within the page, each once
    if (
        raw.__class__ is list
        and set(map(type, raw)) == _INT
        and min(raw) >= 1
        and max(raw) <= shown
        and (len(raw) == 1 or len(set(raw)) == len(raw))
    ):
        return raw
    if not isinstance(raw, list):
        raise _Invalid("field 'clicks' must be an array of positions")
    clicks = [_position(p, shown) for p in raw]
    if len(set(clicks)) != len(clicks):
        raise _Invalid("field 'clicks' names the same position twice")
    return clicks


_INT = {int}


def _page(lineno: int, obj: dict[str, Any]) -> Page:
    shown = _ids(obj.get("docids"), "docids")
    qid = obj.get("qid")
    if qid is not None:
        if qid.__class__ is str and qid and not _WHITESPACE.search(qid):
            query, by_qid = qid, True  # the common case of `_json_id`
        else:
            query, by_qid = _json_id(obj, ("qid",), "qid"), True
    else:
        text = obj.get("query")
        if not isinstance(text, str) or not text.strip():
            raise _Invalid("missing required field 'qid' (or 'query' text)")
        query, by_qid = text, False
    clicks = _clicks(obj.get("clicks", []), len(shown))
    dwell = None
    if obj.get("dwell") is not None:
        raw = obj["dwell"]
        if not isinstance(raw, list) or len(raw) != len(clicks):
            raise _Invalid("field 'dwell' must be an array with one number per click")
        dwell = []
        for value in raw:
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                raise _Invalid(f"dwell {value!r} is not a finite number of seconds")
            if value < 0:
                raise _Invalid(f"dwell {value!r} is negative")
            dwell.append(float(value))
    teams = None
    if obj.get("teams") is not None:
        raw = obj["teams"]
        if (
            not isinstance(raw, list)
            or len(raw) != len(shown)
            or not all(isinstance(t, str) and t for t in raw)
        ):
            raise _Invalid("field 'teams' must be an array of team names, one per shown position")
        teams = raw
    session = obj.get("session")
    if session.__class__ is not str:
        session = str(session) if session is not None else f"line-{lineno}"
    user = obj.get("user")
    if user is None:
        user = session
    elif user.__class__ is not str:
        user = str(user)
    logger = obj.get("ranker")
    if logger is not None and not isinstance(logger, str):
        raise _Invalid(f"field 'ranker' must be a string, found {_json_type(logger)}")
    problem = logger_problem(logger) if logger else None
    if problem:
        raise _Invalid(problem)
    return Page(
        lineno,
        session,
        user,
        query,
        by_qid,
        logger or "",
        shown,
        clicks,
        dwell,
        teams,
    )


def read_impressions(source: Source, *, max_errors: int = 50) -> Iterator[Page]:
    """The pages of an impressions JSONL file."""
    reader = _Reader(source, max_errors)
    teams: set[str] = set()
    for lineno, page in _json_parsed(reader, _page):
        if page.teams is not None and not teams.issuperset(page.teams):
            if len(teams | set(page.teams)) > MAX_TEAMS:
                reader.error(lineno, f"more than {MAX_TEAMS} team names in one log")
                continue
            teams.update(page.teams)
        reader.entries += 1
        yield page
    reader.finish("impressions")


def _count_problem(impressions: int, clicks: int, total: int) -> str | None:
    """What is wrong with a counts row's numbers, `total` the impressions of the rows before it."""
    if impressions < 0 or clicks < 0:
        return "impressions and clicks may not be negative"
    if impressions > MAX_COUNT:
        return f"impressions {impressions} is more than a count can hold (at most {MAX_COUNT})"
    if clicks > impressions:
        return f"{clicks} clicks but only {impressions} impressions"
    if total + impressions > MAX_COUNT:
        return f"impressions add up to more than a log can count (at most {MAX_COUNT} in all)"
    return None


def read_counts(source: Source, *, max_errors: int = 50) -> Iterator[CountRow]:
    """The rows of a pre-aggregated counts file (a (qid, docid, position, logger) twice is an error, and so
    are impressions past `MAX_COUNT`, on one line or added up)."""
    reader = _Reader(source, max_errors)
    seen: set[tuple[str, str, int, str]] = set()
    total = 0  # impressions of the rows so far
    for lineno, line in reader.lines():
        fields = line.split()
        if not fields or fields[0].startswith("#"):
            continue
        reader.content = True
        if len(fields) not in (5, 6):
            reader.error(
                lineno, f"expected 5 fields (qid docid position impressions clicks), found {len(fields)}"
            )
            continue
        qid, docid = fields[0], fields[1]
        try:
            position, impressions, clicks = (int(v) for v in fields[2:5])
        except ValueError:
            reader.error(lineno, "position, impressions and clicks must be integers")
            continue
        logger = fields[5] if len(fields) == 6 else ""
        problem = (
            position_problem(position) or logger_problem(logger) or _count_problem(impressions, clicks, total)
        )
        if not problem and (qid, docid, position, logger) in seen:
            problem = f"{qid} {docid} at position {position} given twice"
        if problem:
            reader.error(lineno, problem)
            continue
        total += impressions
        seen.add((qid, docid, position, logger))
        reader.entries += 1
        yield CountRow(lineno, qid, docid, position, impressions, clicks, logger)
    reader.finish("counts")
