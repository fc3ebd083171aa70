"""Releases filled from an admitted model judge: every label's source, counts by source, the gate figures."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from evaluation.judge_gate import measure_gate
from judgements import releases
from judgements.errors import JudgingError
from judgements.judges import run_judge
from pooling.models import Pool
from tests.conftest import client_for
from tests.judgements.judge_factories import copy_judge, make_judged_pool, random_judge


def files(release: Any) -> dict[str, str]:
    root = Path(settings.MEDIA_ROOT) / release.directory
    return {name: (root / name).read_text() for name in ("qrels.txt", "judgements.jsonl", "manifest.json")}


@pytest.fixture
def pool(db: None, rater: Any, second_rater: Any, manager: Any, tmp_path: Path) -> Pool:
    pool = make_judged_pool(raters=[rater, second_rater], managers=[manager], unjudged_every=4)
    for judge in (copy_judge(pool, tmp_path), random_judge(pool)):
        run_judge(judge=judge)
        measure_gate(judge=judge)
    return pool


def test_it_fills_only_the_unjudged_items_from_an_admitted_judge_and_says_so(pool: Pool) -> None:
    plain = files(releases.create_release(pool=pool))
    filled_release = releases.create_release(pool=pool, judge="copier")
    filled = files(filled_release)
    plain_qrels = {" ".join(line.split()[::2][:2]): line for line in plain["qrels.txt"].splitlines()}
    filled_lines = filled["qrels.txt"].splitlines()
    assert sum(line.endswith(" -1") for line in plain["qrels.txt"].splitlines()) == 10
    assert not any(line.endswith(" -1") for line in filled_lines) and len(filled_lines) == 40
    for line in filled_lines:  # the people's grades are never replaced
        old = plain_qrels[" ".join(line.split()[::2][:2])]
        assert old == line or old.endswith(" -1")
    rows = [json.loads(line) for line in filled["judgements.jsonl"].splitlines()]
    model = [row for row in rows if row["source"] != "human"]
    assert len(model) == 10 and {row["source"] for row in model} == {"model:copier"}
    assert all(row["rater"] == "model:copier" and row["consensus"] == "judged" for row in model)
    assert all(row["source"] == "human" for row in map(json.loads, plain["judgements.jsonl"].splitlines()))
    manifest = json.loads(filled["manifest.json"])
    assert manifest["counts"]["sources"] == {"human": 30, "model:copier": 10}
    assert manifest["counts"]["pending"] == 0 and manifest["counts"]["judged"] == 40
    gate = manifest["model_judge"]
    assert gate["judge"] == "copier" and gate["admitted"] and gate["kappa"] == 1.0
    assert gate["reason"].startswith("Admitted") and "confusion" in gate and "kendall_tau" in gate["ranking"]
    assert json.loads(plain["manifest.json"])["model_judge"] is None
    assert json.loads(plain["manifest.json"])["counts"]["sources"] == {"human": 30}
    assert files(releases.create_release(pool=pool, judge="copier")) == filled  # reproducible


def test_it_refuses_a_judge_the_gate_did_not_admit(pool: Pool, manager: Any) -> None:
    with pytest.raises(JudgingError, match="not admitted"):
        releases.create_release(pool=pool, judge="dice")
    with pytest.raises(JudgingError, match="no judge"):
        releases.start_release(pool=pool, judge="nobody")
    answer = client_for(manager).post("/api/releases/", {"pool": pool.name, "judge": "dice"})
    assert answer.status_code == 400 and "judge" in answer.json()


def test_it_offers_only_admitted_judges_on_the_releases_page(
    pool: Pool, manager: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django.test import Client

    from judgements.models import Release

    client = Client()
    client.force_login(manager)
    page = client.get(f"/campaigns/{pool.name}/releases/").content.decode()
    assert 'value="copier"' in page and 'value="dice"' not in page
    with django_capture_on_commit_callbacks(execute=True):
        made = client.post(f"/campaigns/{pool.name}/releases/new/", {"policy": "majority", "judge": "copier"})
    assert made.status_code == 302
    release = Release.objects.filter(pool=pool).latest("id")
    assert release.manifest["counts"]["sources"] == {"human": 30, "model:copier": 10}
