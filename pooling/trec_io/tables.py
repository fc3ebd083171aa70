"""Runs and qrels held as arrays (``RunTable``, ``QrelsTable``; what they share is ``_Rows``), built from a
file by ``pooling.trec_io.readers`` or from pytrec_eval's nested dicts (``from_dict``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

from pooling.trec_io.keys import _row_keys


def _as_bytes_array(values: list[bytes]) -> np.ndarray:
    if not values:
        return np.zeros(0, dtype="S1")
    return np.array(values, dtype=np.bytes_)


@dataclass(eq=False)
class _Rows:
    """What a ``RunTable`` and a ``QrelsTable`` share: rows of (topic code, docid) and one value each
    (``_values``), the file they were read from, the key of each row and its file line, both computed
    when first asked. The subclass adds the value column after ``docid``; the rest is by keyword."""

    topic_ids: list[str]
    topic: np.ndarray
    docid: np.ndarray
    source: str = field(default="<dict>", kw_only=True)
    _key: np.ndarray | None = field(default=None, repr=False, kw_only=True)
    _lines: Callable[[], np.ndarray] | np.ndarray | None = field(default=None, repr=False, kw_only=True)

    def _values(self) -> np.ndarray:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self._values())

    @property
    def line(self) -> np.ndarray:
        """The file line of each row (read from a file), computed when first asked; -1 otherwise."""
        if self._lines is None:
            return np.full(len(self), -1, dtype=np.int64)
        if not isinstance(self._lines, np.ndarray):
            self._lines = self._lines()
        return self._lines

    @property
    def key(self) -> np.ndarray:
        """uint64 hash of each row's (qid, docid); equal pairs have equal keys, in a run as in qrels (see
        ``hash_bytes``)."""
        if self._key is None:
            self._key = _row_keys(self.topic_ids, self.topic, self.docid)
        return self._key

    def _to_dict(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {t: {} for t in self.topic_ids}
        for code, docid, value in zip(
            self.topic.tolist(), self.docid.tolist(), self._values().tolist(), strict=True
        ):
            out[self.topic_ids[code]][docid.decode("utf-8")] = value
        return out


_V = TypeVar("_V")


def _nested_rows(
    nested: Mapping[str, Mapping[str, Any]], check: Callable[[str, str, Any], _V], *, empty_topics: bool
) -> tuple[list[str], np.ndarray, np.ndarray, list[_V]]:
    """The columns of ``{qid: {docid: value}}`` (pytrec_eval's layout), in its order: the qids, each row's
    topic code and docid (UTF-8 bytes), and the value ``check(qid, docid, value)`` gives (a ValueError for
    a bad one). A topic without documents is kept only with ``empty_topics``."""
    topic_ids: list[str] = []
    codes: list[int] = []
    docids: list[bytes] = []
    values: list[_V] = []
    for qid, docs in nested.items():
        if not docs and not empty_topics:
            continue
        code = len(topic_ids)
        topic_ids.append(str(qid))
        for docid, value in docs.items():
            values.append(check(qid, docid, value))
            codes.append(code)
            docids.append(str(docid).encode("utf-8"))
    return topic_ids, np.array(codes, dtype=np.intp), _as_bytes_array(docids), values


def _finite_score(qid: str, docid: str, score: Any) -> float:
    value = float(score)
    if not math.isfinite(value):
        raise ValueError(f"score {score!r} of qid {qid!r}, docid {docid!r} is not a finite number")
    return value


def _integer_grade(qid: str, docid: str, grade: Any) -> int:
    if isinstance(grade, bool) or int(grade) != grade:
        raise ValueError(f"grade {grade!r} of qid {qid!r}, docid {docid!r} is not an integer")
    return int(grade)


@dataclass(eq=False)
class RunTable(_Rows):
    """A run held as arrays, one row per (qid, docid, score).

    ``topic_ids[topic[i]]`` is the qid of row i, ``docid[i]`` its docid as UTF-8 bytes and ``score[i]`` its
    score. Rows are in file order. ``name`` is the run tag (sixth field of the first row) or the name given;
    ``last_tag`` is the last row's run tag, read from a file (trec_eval keeps the run_id of the last line it
    parses and prints it on its ``runid`` line), or '' for a table not read from a file.
    """

    score: np.ndarray
    name: str = ""
    last_tag: str = field(default="", kw_only=True)

    def _values(self) -> np.ndarray:
        return self.score

    @classmethod
    def from_dict(cls, run: Mapping[str, Mapping[str, float]], *, name: str = "") -> RunTable:
        """Build from ``{qid: {docid: score}}`` (pytrec_eval's layout). A non-finite score is a ValueError."""
        if isinstance(run, RunTable):
            return run
        topic_ids, topic, docid, scores = _nested_rows(run, _finite_score, empty_topics=True)
        return cls(topic_ids, topic, docid, np.array(scores, dtype=np.float64), name=name)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}``, every topic of the table included."""
        return self._to_dict()


@dataclass(eq=False)
class QrelsTable(_Rows):
    """Qrels held as arrays, one row per judged (qid, docid): ``grade[i]`` is the integer label.

    A negative grade means "in the pool but not judged" (trec_eval's convention): such a document is not
    judged, neither relevant nor non-relevant.
    """

    grade: np.ndarray

    def _values(self) -> np.ndarray:
        return self.grade

    @classmethod
    def from_dict(cls, qrels: Mapping[str, Mapping[str, int]]) -> QrelsTable:
        """Build from ``{qid: {docid: grade}}``. A grade that is not an integer is a ValueError."""
        if isinstance(qrels, QrelsTable):
            return qrels
        # a qrels file cannot hold a topic without lines: neither does the table
        topic_ids, topic, docid, grades = _nested_rows(qrels, _integer_grade, empty_topics=False)
        return cls(topic_ids, topic, docid, np.array(grades, dtype=np.int64))

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{qid: {docid: grade}}``, every topic of the table included."""
        return self._to_dict()
