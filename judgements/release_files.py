"""What a release writes from one pass over a pool's items: `qrels.txt`, `qrels.unjudged.txt` and
`judgements.jsonl`, and the tallies its manifest reports (counts per state, grades, pairs of grades,
topics, the latest change).

The pass streams (`release_rows.stream_items`): memory does not grow with the number of judgements. Each
item is aggregated once (`aggregation.aggregate`, the one home of the policies, through `Consensus`), its
qrels line goes to its topic's lines (`QrelsFiles`), its judgements become JSON lines
(`release_jsonl.JudgementLines`). A large pool's pass is shared by two processes, each writing whole
topics (`release_halves`)."""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from judgements import aggregation
from judgements.hashed_files import HashedFile
from judgements.models import Adjudication
from judgements.release_jsonl import JudgementLines
from judgements.release_rows import (
    ADJUDICATED_GRADE,
    ADJUDICATED_UNRATEABLE,
    ADJUDICATION,
    DOCID,
    GRADE,
    QID,
    RATER,
    REQUIRED,
    UNRATEABLE,
    stream_items,
)
from judgements.release_topics import is_judged, topic_is_judged
from judgements.release_values import iso, json_text
from pooling.models import Pool

#: Where an explicit release writes the -1 lines of the topics nobody judged (see `QrelsFiles`).
UNJUDGED_TOPICS_FILE = "qrels.unjudged.txt"
#: Lines buffered before they are written (and progress is reported).
FLUSH_LINES = 10000


Pairs = tuple[tuple[int, int], ...]


@dataclass
class Tally:
    """What the pass counted, for the manifest."""

    counts: dict[str, int] = field(
        default_factory=lambda: {"judged": 0, "unrateable": 0, "pending": 0, "ties": 0, "judgements": 0}
    )
    grades: Counter[int] = field(default_factory=Counter)
    # (grade of the earlier rater, grade of the later rater) → number of such pairs: the same confusion
    # matrix as the lists of pairs, in memory that does not grow with the number of judgements.
    pairs: Counter[tuple[int, int]] = field(default_factory=Counter)
    topics: dict[str, int] = field(default_factory=lambda: {"judged": 0, "not_judged": 0})
    lines: dict[str, int] = field(default_factory=lambda: {"qrels.txt": 0, UNJUDGED_TOPICS_FILE: 0})
    # judged items by where their label comes from: "human", or "model:NAME" for an admitted judge's
    sources: Counter[str] = field(default_factory=Counter)
    latest: str = ""  # the latest updated_at of a judgement or decided_at of an adjudication (ISO text)
    # file name → the SHA-256 of what was written to it (`HashedFile`), for the manifest's `files`
    sha256: dict[str, str] = field(default_factory=dict)
    # what the manifest says of the pool, read on the pass's snapshot (`release_manifest.pool_facts`)
    facts: dict[str, Any] | None = None

    def add(self, other: Tally) -> None:
        """Count what `other` counted too (the second process's topics, `release_halves`)."""
        for name in ("counts", "topics", "lines"):
            mine = getattr(self, name)
            for key, value in getattr(other, name).items():
                mine[key] = mine.get(key, 0) + value
        self.grades.update(other.grades)
        self.pairs.update(other.pairs)
        self.sources.update(other.sources)
        self.latest = max(self.latest, other.latest)
        self.facts = other.facts if other.facts is not None else self.facts

    def count(self, result: aggregation.Aggregate, pairs: Pairs, items: int, source: str = "human") -> None:
        """Count `items` items of this consensus and these pairs of grades."""
        if not items:
            return
        self.counts[result.state] += items
        if result.state == "judged":
            self.sources[source] += items
            self.grades[result.grade] += items  # type: ignore[index]  # a judged result has a grade
        if result.tie:
            self.counts["ties"] += items
        for pair in pairs:
            self.pairs[pair] += items


class Outcome:
    """The consensus of the items that share a vote key (`Consensus`), what their lines start with, and
    how many items of the pass had it since it was last counted into the tally."""

    __slots__ = ("result", "pairs", "judged", "qrels_grade", "grade", "head", "count")

    def __init__(self, result: aggregation.Aggregate, pairs: Pairs) -> None:
        self.result = result
        self.pairs = pairs
        self.qrels_grade = result.qrels_grade  # the item's qrels grade (-1 unless judged)
        self.judged = is_judged(self.qrels_grade)
        self.grade = str(self.qrels_grade)  # as its line writes it
        self.head = f'{{"consensus": {json_text(result.state)}, "created_at": '  # its judgements' lines
        self.count = 0


class Consensus:
    """`aggregation.aggregate` of an item under the release's policy, with the item's pairs of grades
    (every earlier-rater, later-rater pair of graded votes, for the agreement summary), from the item's
    text fields and rows (`stream_items(text=True)`).

    Results are remembered by what they depend on: `required`, whether and how the item is adjudicated,
    the votes in rater order and (for `rater:NAME`) which vote is NAME's, (for a model policy) who gave
    each. Raters are distinct (one judgement per rater and item) and the grades integers, so a remembered
    result is exactly what `aggregate` returns for the item. Each call counts its item on the `Outcome`;
    `settle` adds the counts to the tally (at most MEMO outcomes are kept: memory stays flat)."""

    MEMO = 4096

    def __init__(self, policy: aggregation.Policy, tally: Tally) -> None:
        self.policy = policy
        self.tally = tally
        self.memo: dict[tuple[Any, ...], Outcome] = {}
        self.rater = policy.rater if policy.kind == "rater" else None
        self.model = policy.kind in aggregation.MODEL_POLICIES  # a model weighs who voted

    def __call__(self, fields: list[str], rows: list[list[str]]) -> Outcome:
        if self.rater is not None:
            mine = self.rater
            votes = tuple([r[GRADE] + r[UNRATEABLE] + ("*" if r[RATER] == mine else "") for r in rows])
        elif self.model:
            votes = tuple([r[RATER] + ":" + r[GRADE] + r[UNRATEABLE] for r in rows])
        else:
            votes = tuple([r[GRADE] + r[UNRATEABLE] for r in rows])
        key = (fields[REQUIRED], fields[ADJUDICATION] == "", fields[ADJUDICATED_GRADE],
               fields[ADJUDICATED_UNRATEABLE], votes)  # fmt: skip
        outcome = self.memo.get(key)
        if outcome is None:
            if len(self.memo) >= self.MEMO:
                self.settle()
            outcome = self.memo[key] = self.decide(fields, rows)
        outcome.count += 1
        return outcome

    def decide(self, fields: list[str], rows: list[list[str]]) -> Outcome:
        grades = [None if row[UNRATEABLE] == "t" or not row[GRADE] else int(row[GRADE]) for row in rows]
        adjudicated: Any = None
        if fields[ADJUDICATION]:
            if fields[ADJUDICATED_UNRATEABLE] == "t":
                adjudicated = "unrateable"
            elif fields[ADJUDICATED_GRADE]:
                adjudicated = int(fields[ADJUDICATED_GRADE])
        result = aggregation.aggregate(
            [(int(row[RATER]), grade) for row, grade in zip(rows, grades, strict=True)],
            policy=self.policy,
            required=int(fields[REQUIRED]),
            adjudicated=adjudicated,
        )
        graded = [g for g in grades if g is not None]
        pairs = tuple((graded[x], graded[y]) for x in range(len(graded)) for y in range(x + 1, len(graded)))
        return Outcome(result, pairs)

    def settle(self) -> None:
        """Count the remembered outcomes' items into the tally, and forget them."""
        for outcome in self.memo.values():
            self.tally.count(outcome.result, outcome.pairs, outcome.count)
        self.memo.clear()


class QrelsFiles:
    """`qrels.txt` and `qrels.unjudged.txt`, fed item by item in qrels order.

    One topic's lines wait until the topic ends: they go to `qrels.txt` if the topic is judged
    (`release_topics.topic_is_judged` of its items' qrels grades: the rule every score reads too), else
    to `qrels.unjudged.txt` (on a topic whose every line is -1 trec_eval aborts and pytrec_eval scores 0
    or crashes). With `explicit`, pending and unrateable items are written with grade -1; without, they
    are left out (and a topic with no judged item has no line)."""

    def __init__(self, qrels: HashedFile, unjudged: HashedFile, *, explicit: bool, tally: Tally) -> None:
        self.files = {"qrels.txt": qrels, UNJUDGED_TOPICS_FILE: unjudged}
        self.explicit = explicit
        self.tally = tally
        self.pending: dict[str, list[str]] = {"qrels.txt": [], UNJUDGED_TOPICS_FILE: []}
        self.topic: list[str] = []
        self.grades: list[int] = []  # the qrels grades of the topic's items
        self.qid: str | None = None
        self.waiting = 0  # lines in `pending`

    def add_line(self, qid: str, docid: str, outcome: Outcome) -> None:
        """The line of an item whose consensus is `outcome`."""
        if qid != self.qid:
            self.end_topic()
            self.qid = qid
        self.grades.append(outcome.qrels_grade)
        if outcome.judged or self.explicit:
            self.topic.append(f"{qid} 0 {docid} {outcome.grade}\n")

    def end_topic(self) -> None:
        if self.qid is None:
            return
        judged = topic_is_judged(self.grades)
        self.grades.clear()
        name = "qrels.txt" if judged else UNJUDGED_TOPICS_FILE
        self.tally.topics["judged" if judged else "not_judged"] += 1
        self.pending[name].extend(self.topic)
        self.tally.lines[name] += len(self.topic)
        self.waiting += len(self.topic)
        self.topic.clear()

    def buffered(self) -> int:
        return self.waiting

    def flush(self) -> None:
        for name, lines in self.pending.items():
            self.files[name].write("".join(lines))
            lines.clear()
        self.waiting = 0

    def close(self) -> None:
        self.end_topic()
        self.flush()


def write_qrels_and_judgements(
    work: Path,
    *,
    pool: Pool,
    policy: aggregation.Policy,
    explicit: bool,
    progress: Any = None,
    fill: Any = None,
) -> Tally:
    """Select the pool's items with their judgements (qrels order, streamed), aggregate each under
    `policy`, and write `qrels.txt`, `qrels.unjudged.txt` and `judgements.jsonl` into `work`, in one pass
    over one snapshot of the database. Returns what it counted.

    A large pool on PostgreSQL is written in two processes (`release_halves`): the topics from a split
    qid on by a second process, reading the same snapshot, into files of its own that are appended to
    these; the bytes are those one process writes.

    With `fill` (`judges.ModelFill` of an admitted judge) an item people have not judged (pending) that
    the judge labelled is judged with the judge's grade (`ModelFill.grade_for`), and its label is a line
    of `judgements.jsonl` whose `source` is the judge's (`model:NAME`); every people's line has `source`
    `human`.

    Every line is encoded in Python (`release_jsonl.JudgementLines`), on every database: the text of a
    line has this one home. (A PostgreSQL path that built the lines in SQL was tried: it used less Python
    CPU but was no faster in wall time, and it wrote the line's rule a second time.)"""
    from judgements import release_halves
    from judgements.release_manifest import pool_facts

    tally = Tally()
    part = functools.partial(write_files, pool=pool, policy=policy, explicit=explicit, fill=fill)

    def later_topics(directory: Path, *, tally: Tally, qids: Any) -> dict[str, str]:
        """The second process's part: its topics, then the manifest's reads while the first still writes."""
        written = part(directory, tally=tally, qids=qids, hashed=False)
        tally.facts = pool_facts(pool=pool)
        return written

    with transaction.atomic(), release_halves.second_half(work, pool=pool, write=later_topics) as second:
        tally.sha256 = part(
            work, tally=tally, progress=progress, qids=second.first, items=second.items, then=second.append
        )
        if tally.facts is None:  # one process: read after the pass, on the same snapshot
            tally.facts = pool_facts(pool=pool)
        adjudicated = Adjudication.objects.filter(item__pool=pool).order_by("-decided_at").first()
        if adjudicated:
            tally.latest = max(tally.latest, iso(adjudicated.decided_at) or "")
    return tally


def write_files(
    directory: Path,
    *,
    pool: Pool,
    policy: aggregation.Policy,
    explicit: bool,
    fill: Any,
    tally: Tally,
    progress: Any = None,
    qids: Any = None,
    items: int | None = None,
    then: Any = None,
    hashed: bool = True,
) -> dict[str, str]:
    """`write_qrels_and_judgements`' files in `directory`, of the topics in the range `qids` (see
    `release_rows.stream_items`; None: all; `items` of them, for the progress), counted into `tally`;
    then, with the files still open, `then(files, tally)` (`release_halves.SecondHalf.append`). Returns
    each file's SHA-256 ("" each with `hashed=False`: the second process's parts, hashed as they are
    appended)."""
    with (
        HashedFile(directory / "qrels.txt", hashed=hashed) as qrels_file,
        HashedFile(directory / "judgements.jsonl", hashed=hashed) as jsonl,
        HashedFile(directory / UNJUDGED_TOPICS_FILE, hashed=hashed) as unjudged_file,
    ):
        qrels = QrelsFiles(qrels_file, unjudged_file, explicit=explicit, tally=tally)
        _write_lines(
            qrels, jsonl, pool=pool, policy=policy, tally=tally, progress=progress, fill=fill, qids=qids,
            items=items,
        )  # fmt: skip
        qrels.close()
        files = [qrels_file, jsonl, unjudged_file]
        if then is not None:
            then({file.name: file for file in files}, tally)
    return {file.name: file.hexdigest() for file in files}


def _write_lines(
    qrels: QrelsFiles,
    jsonl: HashedFile,
    *,
    pool: Pool,
    policy: aggregation.Policy,
    tally: Tally,
    progress: Any,
    fill: Any = None,
    qids: Any = None,
    items: int | None = None,
) -> None:
    """The pass of `write_files`: every row read, aggregated and encoded here."""
    from pooling.models import PoolItem

    if items is None and progress:
        items = PoolItem.objects.filter(pool=pool, selected=True).count()
    total = max(items or 0, 1)
    consensus = Consensus(policy, tally)
    with contextlib.closing(stream_items(pool=pool, text=True, qids=qids)) as stream:
        judgements = JudgementLines(pool=pool, tally=tally)
        add_qrels, add_judgements, lines = qrels.add_line, judgements.add, judgements.lines
        for done, (fields, rows) in enumerate(stream, 1):
            outcome = consensus(fields, rows)
            if fill is not None and not outcome.judged:
                grade = fill.grade_for(fields[QID], fields[DOCID], outcome.result)
                if grade is not None:  # counted as the judge's, not as pending
                    outcome.count -= 1
                    filled = aggregation.Aggregate("judged", grade)
                    tally.count(filled, outcome.pairs, 1, source=fill.source)
                    judgements.add_model(fields, fill.source, grade)
                    outcome = Outcome(filled, outcome.pairs)
            add_qrels(fields[QID], fields[DOCID], outcome)
            if rows:
                add_judgements(fields, outcome.head, rows)
            if len(lines) >= FLUSH_LINES or qrels.waiting >= FLUSH_LINES:
                qrels.flush()
                jsonl.write("".join(lines))
                lines.clear()
                if progress:
                    progress(done / total, f"{done} items")
        jsonl.write("".join(lines))
    consensus.settle()
