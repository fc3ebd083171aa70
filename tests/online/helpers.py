"""Shared set-up of the online tests: a judged pool and a click log over it."""

from __future__ import annotations

import json
from pathlib import Path

from online.clicklogs import import_click_log
from online.models import ClickLog
from pooling.models import Pool
from tests.factories import lease_for, make_pool, make_user


def judged_pool(*, grades: dict[str, int], managers=None, rater=None) -> Pool:
    """A pool (two runs over q1, q2) whose items are judged by one rater with `grades` by docid (0 else)."""
    rater = rater or make_user("judge")
    pool = make_pool(raters=[rater], managers=managers)
    from judgements import submission

    while (assignment := lease_for(pool=pool, rater=rater)) is not None:
        grade = grades.get(assignment.item.document.docid, 0)
        submission.submit_label(assignment=assignment.pk, rater=rater, grade=grade)
    return pool


def write_log(tmp_path: Path, pages: list[dict], name: str = "log.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(p) + "\n" for p in pages))
    return str(path)


def pool_log(tmp_path: Path, pool: Pool, pages: list[dict], name: str = "clicks") -> ClickLog:
    return import_click_log(
        collection=pool.collection, name=name, format="jsonl", paths=[write_log(tmp_path, pages)], pool=pool
    )
