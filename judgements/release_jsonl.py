"""The lines of a release's `judgements.jsonl` (`JudgementLines`): one judgement a line, as
`json.dumps(..., sort_keys=True, ensure_ascii=False)` writes it, encoded from the text fields of
`release_rows.stream_items(text=True)` without building a dict per judgement."""

from __future__ import annotations

import functools
import hashlib
import json
from typing import TYPE_CHECKING, Any

from django.conf import settings

from judgements.release_rows import (
    CREATED,
    DOCID,
    FACETS,
    GRADE,
    IMPORTED,
    NOTE,
    QID,
    RATER,
    UNRATEABLE,
    UPDATED,
    seconds_text,
)
from judgements.release_values import json_text, json_value
from pooling.models import Pool

if TYPE_CHECKING:  # release_files imports this module
    from judgements.release_files import Tally


class JudgementLines:
    """The lines of `judgements.jsonl`: each is `json.dumps({...}, sort_keys=True, ensure_ascii=False)`
    of one judgement (rater pseudonymised), written out key by key in sorted order with the same
    separators and value texts (the common types inline, anything else through `json_text`)."""

    def __init__(self, *, pool: Pool, tally: Tally) -> None:
        self.secret = f"{settings.SECRET_KEY}:{pool.pk}:".encode()
        self.tally = tally
        self.lines: list[str] = []
        self.dumps = functools.partial(json.dumps, sort_keys=True, ensure_ascii=False)
        self.raters: dict[Any, str] = {}  # rater id -> the JSON text of their pseudonym
        self.facets: dict[str, str] = {}  # facets text -> its JSON (few distinct ones)
        self.states = {True: json_text("unrateable"), False: json_text("graded")}
        self.qid: Any = None  # the last item's qid, and its part of the line
        self.qid_json = ""

    def pseudonym(self, rater_id: Any) -> str:
        """A rater's name in a release: stable within the pool, unguessable without SECRET_KEY."""
        return "rater-" + hashlib.sha256(self.secret + str(rater_id).encode()).hexdigest()[:10]

    def add(self, fields: list[str], head: str, rows: list[list[str]]) -> None:
        """The lines of an item's judgements (`stream_items(text=True)`: its fields and rows), each starting
        with `head` (its consensus, `Outcome.head`)."""
        tally = self.tally
        tally.counts["judgements"] += len(rows)
        encode = json.encoder.encode_basestring
        raters, facets_json, states = self.raters, self.facets, self.states
        latest = tally.latest
        docid = f', "docid": {encode(fields[DOCID])}, "facets": '
        if fields[QID] != self.qid:
            self.qid = fields[QID]
            self.qid_json = f', "qid": {encode(self.qid)}, "rater": '
        qid = self.qid_json
        append = self.lines.append
        for row in rows:
            created, updated = row[CREATED], row[UPDATED]
            if updated > latest:  # max(latest, updated); "" (NULL) is never greater
                latest = updated
            rater = raters.get(row[RATER])
            if rater is None:
                rater = raters[row[RATER]] = json_text(self.pseudonym(row[RATER]))
            raw = row[FACETS]
            facets = facets_json.get(raw)
            if facets is None:
                facets = self.dumps(json_value(raw))
                if len(facets_json) < 1000:
                    facets_json[raw] = facets
            unrateable = row[UNRATEABLE] == "t"
            append(
                f"{head}{encode(created) if created else 'null'}"
                f"{docid}{facets}"
                f', "grade": {"null" if unrateable or not row[GRADE] else row[GRADE]}'
                f', "imported": {"true" if row[IMPORTED] == "t" else "false"}'
                f', "note": {encode(row[NOTE])}'
                f"{qid}{rater}"
                f', "seconds": {seconds_text(row)}'
                f', "source": "human"'
                f', "state": {states[unrateable]}'
                f', "updated_at": {encode(updated) if updated else "null"}}}\n'
            )
        tally.latest = latest

    def add_model(self, fields: list[str], source: str, grade: int) -> None:
        """The line of a model's label that fills an item nobody judged (no rater, no times)."""
        self.tally.counts["judgements"] += 1
        self.lines.append(
            f'{{"consensus": "judged", "created_at": null, "docid": {json_text(fields[DOCID])}'
            f', "facets": {{}}, "grade": {int(grade)}, "imported": false, "note": ""'
            f', "qid": {json_text(fields[QID])}'
            f', "rater": {json_text(source)}, "seconds": 0.0, "source": {json_text(source)}'
            f', "state": "graded", "updated_at": null}}\n'
        )
