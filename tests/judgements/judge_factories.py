"""A small judged campaign for the model-judge tests: two topics whose relevant documents speak of the
topic's subject, every item judged by two raters who mostly agree."""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from django.contrib.auth.models import User

from judgements.imports import import_judgements
from judgements.judges import create_judge, human_grades
from judgements.models import Judge
from pooling.models import Document, Pool, PoolItem, Topic
from tests.factories import make_collection, make_pool, make_run

PROGRAMS = Path(__file__).parent / "judge_programs"
SUBJECTS = {
    "q1": ("apple orchard", "apple orchard harvest cider"),
    "q2": ("engine repair", "engine piston garage repair"),
}
FILLER = "the city council report said this year that people"


def truth(docid: str) -> int:
    return 2 if int(docid[1:]) % 3 == 0 else 0


def make_judged_pool(
    *, raters: Sequence[User], managers: Sequence[User], disagree_every: int = 7, unjudged_every: int = 0
) -> Pool:
    """40 items (20 per topic), each judged by both `raters`: the first grades the truth, the second
    grades 1 instead on every `disagree_every`-th item, so the raters' own kappa is high but below 1.
    With `unjudged_every`, every such item is left unjudged by both."""
    collection = make_collection(docs=40, topics=("q1", "q2"), managers=managers)
    for qid, (query, _words) in SUBJECTS.items():
        Topic.objects.filter(collection=collection, qid=qid).update(query=query, description=f"about {query}")
    for doc in Document.objects.filter(collection=collection):
        qid = "q1" if int(doc.docid[1:]) < 20 else "q2"
        n = int(doc.docid[1:])
        subject = SUBJECTS[qid][1].split()
        doc.text = f"{FILLER} " + (" ".join(subject[: 2 + n % 3]) if truth(doc.docid) else "nothing here")
        doc.save(update_fields=["text"])
    lists = {"q1": [f"d{i:03d}" for i in range(20)], "q2": [f"d{i:03d}" for i in range(20, 40)]}
    runs = [
        make_run(collection=collection, name="alpha", lists=lists),
        make_run(collection=collection, name="beta", lists={q: list(reversed(d)) for q, d in lists.items()}),
        make_run(collection=collection, name="gamma", lists={q: d[1::2] + d[::2] for q, d in lists.items()}),
    ]
    pool = make_pool(
        collection=collection, runs=runs, depth=20, judgements_per_item=2, raters=raters, managers=managers
    )
    with tempfile.TemporaryDirectory() as directory:  # the labels come in as imported qrels (fast)
        for index, rater in enumerate(raters):
            path = Path(directory) / f"{rater.username}.qrels"
            lines = []
            for n, (qid, docid) in enumerate((q, d) for q, docs in lists.items() for d in docs):
                if unjudged_every and n % unjudged_every == 0:
                    continue
                grade = 1 if index == 1 and n % disagree_every == 0 else truth(docid)
                lines.append(f"{qid} 0 {docid} {grade}\n")
            path.write_text("".join(lines))
            import_judgements(pool=pool, path=path, rater=rater)
    return pool


def copy_judge(pool: Pool, tmp_path: Path, name: str = "copier") -> Judge:
    """An external judge that answers the people's consensus grade of every item they judged, and the
    truth of the others."""
    people = human_grades(pool=pool)
    known = {
        f"{qid}/{docid}": people.get(pk, truth(docid))
        for pk, qid, docid in PoolItem.objects.filter(pool=pool).values_list(
            "pk", "topic__qid", "document__docid"
        )
    }
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(known))
    return create_judge(
        pool=pool,
        name=name,
        method="external",
        command=[sys.executable, str(PROGRAMS / "copy_judge.py"), str(path)],
    )


def random_judge(pool: Pool, name: str = "dice") -> Judge:
    return create_judge(
        pool=pool,
        name=name,
        method="external",
        command=[sys.executable, str(PROGRAMS / "random_judge.py"), "5"],
    )
