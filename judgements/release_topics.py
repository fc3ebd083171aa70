"""Which topics of a qrels are judged: the platform's one rule for topics nobody judged (pure: no Django).

A qrels line is a judgement when its grade is >= 0. A negative grade (-1, what a release and the current
labels write for a pending or unrateable item) is a document in the pool that nobody judged: neither
relevant nor non-relevant. A topic is *judged* when at least one of its lines is a judgement; any other
topic (only negative lines, or no line at all) is one nobody judged. That is not a topic judged
irrelevant: it is left out of every mean and named apart, never scored 0 (trec_eval would score it 0, or
abort). A topic whose judged documents are all non-relevant *is* judged.

Every form of the rule calls this module: the release's per-topic pass (`release_files.QrelsFiles`: a
topic's lines go to `qrels.txt` or to `qrels.unjudged.txt`), `evaluation.metrics.split_judged` (the
reports), `evaluation.metrics.evaluate(skip_unjudged_topics=True)` (the `evaluate` command, the online
tracker) and `evaluation.resample` (the noise floor's label variants). It lives in the judging app, the
first of them in the apps' order (pooling → judgements → evaluation → online), so that all can import it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import overload

import numpy as np

#: The lowest grade that is a judgement.
LOWEST_JUDGED_GRADE = 0


@overload
def is_judged(grade: int) -> bool: ...
@overload
def is_judged(grade: np.ndarray) -> np.ndarray: ...
def is_judged(grade: int | np.ndarray) -> bool | np.ndarray:
    """Whether a qrels grade is a judgement (elementwise for an array of grades)."""
    return grade >= LOWEST_JUDGED_GRADE


def topic_is_judged(grades: Iterable[int]) -> bool:
    """Whether a topic with these qrels grades (one per line, in any order) is judged: one of them is a
    judgement. No grade at all: not judged."""
    return any(is_judged(int(grade)) for grade in grades)


def judged_topics(topic: np.ndarray, grade: np.ndarray, n_topics: int) -> np.ndarray:
    """Per topic 0..n_topics-1, whether it is judged (`topic_is_judged`), from every qrels line's topic
    index and grade (two arrays of one length); a topic with no line is not judged."""
    topic = np.asarray(topic, dtype=np.intp)
    return np.bincount(topic[is_judged(np.asarray(grade))], minlength=n_topics) > 0
