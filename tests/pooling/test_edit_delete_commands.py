"""The commands beside the manager's pages for what comes after making a pool or a collection:
`edit_pool` (its texts, at any time), `remove_run` (runs out of a pool), `delete_pool` (one nobody
judged), `delete_run` (a run of a collection) and `delete_collection` (one nothing uses). Each calls the
service the page and the API call, says what it did in the page's words, and is refused with the reason,
changing nothing, where those are."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from judgements import adjudication
from pooling.models import Collection, Document, Pool, PoolItem, Run
from tests.factories import make_collection, make_manager, make_pool, make_run, make_user
from tests.judgements.test_releases import judge
from tests.processes import manage_in_a_process

pytestmark = pytest.mark.django_db


def run(command: str, *args: str) -> str:
    out = io.StringIO()
    call_command(command, *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def collection(db: None) -> Collection:
    collection = make_collection(name="news", topics=("q1", "q2"))
    make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002"], "q2": ["d010"]})
    return collection


@pytest.fixture
def pool(collection: Collection) -> Pool:
    return make_pool(collection=collection, runs=list(collection.runs.all()), name="campaign")  # built


# ---------------------------------------------------------------------------------------------- edit_pool


def test_edit_pool_saves_the_texts_given_and_keeps_the_others(pool: Pool, tmp_path: Path) -> None:
    Pool.objects.filter(pk=pool.pk).update(description="first round", instructions="old")
    guide = tmp_path / "guide.md"
    guide.write_text("Grade 2: answers the question.\nGrade 0: off topic.\n", encoding="utf-8")

    assert run("edit_pool", "campaign", "--instructions-file", str(guide)) == (
        "Pool campaign: instructions saved.\n"
    )
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("first round", guide.read_text(encoding="utf-8"))

    assert run("edit_pool", "campaign", "--description", "", "--instructions", "short") == (
        "Pool campaign: description and instructions saved.\n"
    )
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("", "short")


def test_edit_pool_edits_a_judged_pool(pool: Pool) -> None:
    adjudication.set_gold(item=PoolItem.objects.filter(pool=pool)[0], grade=1, by=make_manager("owner"))
    run("edit_pool", "campaign", "--description", "second round")
    assert Pool.objects.get(pk=pool.pk).description == "second round"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --description, --instructions or --instructions-file: nothing to edit"),
        (["--instructions-file", "/nonexistent/guide.md"],
         "--instructions-file /nonexistent/guide.md: no such file"),
    ],
)  # fmt: skip
def test_edit_pool_refuses_with_the_reason_and_changes_nothing(
    pool: Pool, args: list[str], message: str
) -> None:
    with pytest.raises(CommandError, match=message):
        run("edit_pool", "campaign", *args)
    assert Pool.objects.get(pk=pool.pk).description == pool.description


def test_edit_pool_refuses_a_file_that_is_not_text(pool: Pool, tmp_path: Path) -> None:
    binary = tmp_path / "guide.pdf"
    binary.write_bytes(b"%PDF-1.7\xff\xfe")
    with pytest.raises(CommandError, match="not UTF-8 text"):
        run("edit_pool", "campaign", "--instructions-file", str(binary))


def test_edit_pool_holds_the_texts_to_the_rule_a_new_pools_are(pool: Pool, tmp_path: Path) -> None:
    guide = tmp_path / "guide.txt"
    guide.write_text("grade\x00it", encoding="utf-8")  # a NUL, which no new pool's instructions may hold
    with pytest.raises(CommandError, match="instructions: "):
        run("edit_pool", "campaign", "--description", "new", "--instructions-file", str(guide))
    pool.refresh_from_db()
    assert (pool.description, pool.instructions) == ("", "")  # neither saved


# ---------------------------------------------------------------------------------- remove_run, delete_run


@pytest.fixture
def two_runs(collection: Collection) -> Pool:
    """`campaign` on alpha and beta; beta alone brings q1 d005 and q2 d013."""
    make_run(collection=collection, name="beta", lists={"q1": ["d001", "d005"], "q2": ["d013"]})
    return make_pool(collection=collection, runs=list(collection.runs.order_by("name")), name="campaign")


def test_remove_run_takes_runs_out_keeping_judged_items(two_runs: Pool) -> None:
    judge(two_runs, make_user("ray"), {("q1", "d005"): 2})
    judged = PoolItem.objects.get(pool=two_runs, topic__qid="q1", document__docid="d005")

    assert run("remove_run", "campaign", "beta") == (
        "Run beta taken out of pool campaign: 1 unjudged item only it contributed removed; judged items "
        "stay.\n"
    )
    assert list(two_runs.pool_runs.values_list("run__name", flat=True)) == ["alpha"]
    assert PoolItem.objects.filter(pk=judged.pk).exists()
    assert not PoolItem.objects.filter(pool=two_runs, document__docid="d013").exists()


def test_remove_run_refuses_a_run_not_in_the_pool_before_taking_any_out(two_runs: Pool, collection) -> None:
    make_run(collection=collection, name="gamma", lists={"q1": ["d001"]})
    with pytest.raises(CommandError, match="not runs of pool 'campaign': gamma"):
        run("remove_run", "campaign", "beta,gamma")
    assert two_runs.pool_runs.count() == 2


def test_delete_run_takes_it_out_of_its_pools_and_deletes_it(two_runs: Pool) -> None:
    assert run("delete_run", "news", "beta") == "Run beta deleted from collection news.\n"
    assert not Run.objects.filter(name="beta").exists()
    assert list(two_runs.pool_runs.values_list("run__name", flat=True)) == ["alpha"]
    with pytest.raises(CommandError, match="no run named 'beta' in collection 'news'"):
        run("delete_run", "news", "beta")


# -------------------------------------------------------------------------------------------- delete_pool


def test_delete_pool_deletes_one_nobody_judged_and_keeps_its_runs(pool: Pool) -> None:
    items = PoolItem.objects.filter(pool=pool).count()
    assert run("delete_pool", "campaign") == (
        f"Pool campaign deleted with its {items} items; its runs stay in collection news.\n"
    )
    assert not Pool.objects.filter(name="campaign").exists() and Run.objects.filter(name="alpha").exists()


def test_delete_pool_refuses_a_pool_that_holds_peoples_work(pool: Pool) -> None:
    adjudication.set_gold(item=PoolItem.objects.filter(pool=pool)[0], grade=1, by=make_manager("owner"))
    with pytest.raises(CommandError, match="gold labels"):
        run("delete_pool", "campaign")
    assert Pool.objects.filter(name="campaign").exists()


# -------------------------------------------------------------------------------------- delete_collection


def test_delete_collection_deletes_one_nothing_uses(collection: Collection) -> None:
    assert run("delete_collection", "news") == (
        "Collection news deleted with its 20 documents, 2 topics and 1 run.\n"
    )
    assert not Collection.objects.exists() and not Document.objects.exists()


def test_delete_collection_names_the_pool_built_on_it_and_deletes_nothing(pool: Pool) -> None:
    with pytest.raises(CommandError, match="campaign"):
        run("delete_collection", "news")
    assert Collection.objects.filter(name="news").exists()


@pytest.mark.parametrize(
    ("command", "more"),
    [("edit_pool", ["--description", "x"]), ("remove_run", ["alpha"]), ("delete_pool", []),
     ("delete_run", ["alpha"]), ("delete_collection", [])],
)  # fmt: skip
def test_an_unknown_name_is_a_clear_error(db: None, command: str, more: list[str]) -> None:
    with pytest.raises(CommandError, match="no (pool|collection) named 'missing'"):
        run(command, "missing", *more)


def test_a_refusal_exits_non_zero_without_a_traceback_in_a_real_process(tmp_path: Path) -> None:
    manage = manage_in_a_process(tmp_path)
    assert manage("migrate", "--noinput").returncode == 0
    done = manage("delete_collection", "missing")
    assert done.returncode == 1
    assert (
        done.stderr.startswith("CommandError: no collection named 'missing'")
        and "Traceback" not in done.stderr
    )
