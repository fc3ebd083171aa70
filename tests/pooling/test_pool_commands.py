"""The pool commands end to end: create_pool (every option), build_pool, add_runs, export_pool, and their
refusals (a CommandError in process; a non-zero exit without a traceback in a real process)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from pooling import pool_build, pool_reads
from pooling.models import Collection, Pool, PoolItem, PoolRun, Provenance, Run
from tests.factories import make_collection, make_run
from tests.processes import manage_in_a_process

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
GOOD = ROOT / "tests" / "data" / "good"


def run(command: str, *args: str, **options: Any) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command(command, *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def collection(db: None) -> Collection:
    collection = make_collection(name="news", topics=("q1", "q2"))
    make_run(
        collection=collection,
        name="alpha",
        lists={"q1": ["d001", "d002", "d003", "d004"], "q2": ["d010", "d011", "d012"]},
    )
    make_run(
        collection=collection,
        name="beta",
        lists={"q1": ["d003", "d005", "d001", "d006"], "q2": ["d013", "d010"]},
    )
    make_run(collection=collection, name="gamma", lists={"q1": ["d007", "d001"], "q2": ["d014"]})
    return collection  # fmt: skip


def test_it_creates_a_pool_with_every_option_and_prints_its_estimate(collection: Collection) -> None:
    out, _ = run(
        "create_pool", "campaign", "--collection", "news", "--runs", "alpha,beta", "--depth", "3",
        "--strategy", "bandit-thompson", "--budget", "3", "--seed", "11", "--judgements-per-item", "3",
        "--double-judge-fraction", "0.5", "--relevance-level", "2", "--price", "1.25", "--topics", "head",
        "--description", "second round",
    )  # fmt: skip
    pool = Pool.objects.get(name="campaign")
    assert (pool.collection, pool.strategy, pool.depth, pool.budget, pool.seed) == (
        collection, "bandit-thompson", 3, 3, 11,
    )  # fmt: skip
    assert (pool.judgements_per_item, pool.double_judge_fraction, pool.relevance_level) == (3, 0.5, 2)
    assert (float(pool.price_per_judgement), pool.segment, pool.description) == (1.25, "head", "second round")
    assert sorted(PoolRun.objects.filter(pool=pool).values_list("run__name", flat=True)) == ["alpha", "beta"]
    assert pool.status == "draft" and not PoolItem.objects.filter(pool=pool).exists()
    # head = q2: 4 candidates (d010 d011 d012 d013), budget 3, 1 + 2 x 0.5 = 2 judgements each.
    assert pool_reads.estimate_pool(pool=pool) == {"candidates": 4, "items": 3, "judgements": 6, "cost": 7.5}
    assert out == (
        "created pool campaign: 3 items, 6 judgements, estimated cost 7.50 "
        "(build it with build_pool campaign)\n"
    )
    # built, its 4 candidates are said to be candidates, of which the budget's 3 are judged (not "4 items")
    err = io.StringIO()
    call_command("build_pool", "campaign", stdout=io.StringIO(), stderr=err)
    assert err.getvalue().splitlines()[-1] == (
        "warning: an adaptive pool (bandit (Thompson sampling)): the 4 items added are its depth-3 "
        "candidates, of which at most 3 (its budget) are selected for judging, one by one as judgements "
        "arrive"
    )


def test_it_builds_adds_runs_and_exports(collection: Collection, tmp_path: Path) -> None:
    run("create_pool", "campaign", "--collection", "news", "--runs", "alpha,beta", "--depth", "3")
    out, _ = run("build_pool", "campaign")
    assert out.startswith("pool: 8 items added, 11 provenance rows, 0 removed, 2 topics, ")
    again, _ = run("build_pool", "campaign")
    assert again.startswith("pool: 0 items added, 0 provenance rows, 0 removed, 2 topics, ")

    out, _ = run("add_runs", "campaign", "gamma")
    assert out.startswith("pool: 2 items added, 3 provenance rows, 0 removed, 2 topics, ")  # q1/d007, q2/d014
    pool = Pool.objects.get(name="campaign")
    assert Provenance.objects.filter(item__pool=pool, run__name="gamma").count() == 3

    target = tmp_path / "campaign.tsv"
    out, err = run("export_pool", "campaign", "-o", str(target))
    assert err == f"wrote 10 items to {target}\n"
    assert target.read_text(encoding="utf-8") == (
        "q1\td001\talpha,beta,gamma\n"
        "q1\td002\talpha\n"
        "q1\td003\talpha,beta\n"
        "q1\td005\tbeta\n"
        "q1\td007\tgamma\n"
        "q2\td010\talpha,beta\n"
        "q2\td011\talpha\n"
        "q2\td012\talpha\n"
        "q2\td013\tbeta\n"
        "q2\td014\tgamma\n"
    )
    stdout = io.StringIO()
    pool_reads.export_pool(pool=pool, out=stdout)
    assert stdout.getvalue() == target.read_text(encoding="utf-8")


def test_it_exports_to_standard_output(collection: Collection, capsys: Any) -> None:
    run("create_pool", "small", "--collection", "news", "--runs", "gamma", "--depth", "1")
    run("build_pool", "small")
    call_command("export_pool", "small")
    assert capsys.readouterr().out == "q1\td007\tgamma\nq2\td014\tgamma\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["create_pool", "p", "--collection", "news", "--runs", "alpha,nope", "--depth", "3"],
         "no run named 'nope' in collection 'news'"),
        (["create_pool", "p", "--collection", "news", "--runs", "alpha", "--depth", "3", "--strategy", "mtf"],
         "strategy 'mtf' needs a judgement budget"),
        (["create_pool", "p", "--collection", "news", "--runs", "alpha", "--depth", "3", "--budget", "5"],
         "a depth-k pool judges every pooled item: a budget is for the adaptive strategies"),
        (["create_pool", "p", "--collection", "nowhere", "--runs", "alpha", "--depth", "3"],
         "no collection named 'nowhere'"),
        (["create_pool", "p", "--collection", "news", "--runs", "alpha", "--depth", "0"],
         "depth must be at least 1"),
        (["create_pool", "p", "--collection", "news", "--runs", "alpha", "--depth", "3", "--topics", "nope"],
         "no topic of collection 'news' has segment 'nope'"),
        (["create_pool", "p", "--collection", "news", "--runs", "alpha", "--depth", "3",
          "--relevance-level", "-2"], "relevance level must be between 1 and 32,767"),  # IntegrityError once
        (["create_pool", "p", "--collection", "news", "--runs", "alpha", "--depth", "3", "--price", "1e7"],
         "price per judgement must be at least 0 and under 1,000,000"),
        (["build_pool", "missing"], "no pool named 'missing'"),
        (["add_runs", "missing", "alpha"], "no pool named 'missing'"),
        (["export_pool", "missing"], "no pool named 'missing'"),
    ],
)  # fmt: skip
def test_it_refuses_bad_commands_with_a_command_error(
    collection: Collection, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError) as info:
        run(*args)
    assert message in str(info.value)
    assert not Pool.objects.exists()


def test_export_refuses_a_file_it_cannot_write_with_a_command_error(collection: Collection, tmp_path) -> None:
    run("create_pool", "campaign", "--collection", "news", "--runs", "alpha", "--depth", "3")
    for target, reason in [
        (tmp_path / "nowhere" / "x.tsv", "No such file or directory"),
        (tmp_path, "Is a directory"),
    ]:
        with pytest.raises(CommandError) as info:
            run("export_pool", "campaign", "-o", str(target))
        assert str(info.value) == f"-o {target}: cannot write ({reason})"


def test_it_refuses_to_add_an_unknown_run(collection: Collection) -> None:
    run("create_pool", "campaign", "--collection", "news", "--runs", "alpha", "--depth", "3")
    with pytest.raises(CommandError, match="no run named 'nope' in collection 'news'"):
        run("add_runs", "campaign", "beta,nope")
    assert list(PoolRun.objects.values_list("run__name", flat=True)) == ["alpha"]


def test_it_refuses_a_duplicate_pool_name(collection: Collection) -> None:
    run("create_pool", "campaign", "--collection", "news", "--runs", "alpha", "--depth", "3")
    with pytest.raises(CommandError, match="a pool named 'campaign' already exists"):
        run("create_pool", "campaign", "--collection", "news", "--runs", "beta", "--depth", "3")
    with pytest.raises(CommandError, match="a pool named 'CAMPAIGN' already exists as 'campaign'"):
        run("create_pool", "CAMPAIGN", "--collection", "news", "--runs", "beta", "--depth", "3")
    assert list(Pool.objects.values_list("name", flat=True)) == ["campaign"]


def test_it_refuses_to_build_a_pool_without_runs(collection: Collection) -> None:
    run("create_pool", "campaign", "--collection", "news", "--runs", "alpha", "--depth", "3")
    pool_build.remove_run(pool=Pool.objects.get(name="campaign"), run=Run.objects.get(name="alpha"))
    with pytest.raises(CommandError, match="pool 'campaign' has no runs"):
        run("build_pool", "campaign")


@pytest.mark.parametrize(
    "argv",
    [
        ["build_pool", "missing"],
        ["create_pool", "p", "--collection", "news", "--runs", "nope", "--depth", "3"],
        ["create_pool", "p", "--collection", "news", "--runs", "alpha", "--depth", "3", "--strategy", "mtf"],
    ],
)
def test_it_exits_non_zero_from_the_command_line(
    collection: Collection, argv: list[str], capsys: Any, monkeypatch: Any
) -> None:
    # run_from_argv closes every connection when it ends; the test's transaction must survive it.
    monkeypatch.setattr("django.db.connections.close_all", lambda: None)
    command = load_command_class("pooling", argv[0])
    with pytest.raises(SystemExit) as info:
        command.run_from_argv(["manage.py", *argv])
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("CommandError: ") and "Traceback" not in err


def test_it_exits_non_zero_without_a_traceback_in_a_real_process(tmp_path: Path) -> None:
    manage = manage_in_a_process(tmp_path)
    run_file = tmp_path / "bm25.txt"
    run_file.write_text("301 Q0 d01 1 2.0 bm25\n301 Q0 d02 2 1.0 bm25\n302 Q0 d05 1 3.0 bm25\n")

    args: tuple[str, ...]
    for args in (
        ("migrate", "--noinput", "-v0"),
        ("create_collection", "news"),
        ("import_documents", "news", str(GOOD / "docs.jsonl")),
        ("import_topics", "news", str(GOOD / "topics.jsonl")),
        ("import_run", "news", str(run_file)),
    ):
        done = manage(*args)
        assert done.returncode == 0, done.stderr

    for args, message in (
        (("create_pool", "p", "--collection", "news", "--runs", "bm25,nope", "--depth", "2"), "no run named"),
        (("create_pool", "p", "--collection", "news", "--runs", "bm25", "--depth", "2", "--strategy",
          "bandit-maxmean"), "needs a judgement budget"),
        (("build_pool", "missing"), "no pool named 'missing'"),
    ):  # fmt: skip
        done = manage(*args)
        assert done.returncode != 0
        assert "Traceback" not in done.stderr
        assert message in done.stderr

    done = manage("create_pool", "p", "--collection", "news", "--runs", "bm25", "--depth", "2")
    assert done.returncode == 0 and "3 items" in done.stdout
    assert manage("build_pool", "p").returncode == 0
    done = manage("export_pool", "p")
    assert done.returncode == 0
    assert done.stdout == "301\td01\tbm25\n301\td02\tbm25\n302\td05\tbm25\n"
