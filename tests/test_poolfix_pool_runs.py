"""A run that leaves its pools or changes under them: deleting a run takes it out of every pool that uses it,
replacing a run's rows brings the built pools that use it to the new rows, and the add-runs preview of an
adaptive pool counts the candidates that adding really adds.

The expected pools are recounted here from the run files, independently of the importer and the pool
statements: each topic's list in trec_eval order (score descending, ties by docid descending in byte order),
its first k documents, their union over the runs, and for each run what it contributed and what only it did.
"""

from __future__ import annotations

import random
import threading
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from judgements import progress
from judgements.models import Assignment, Judgement
from pooling import deletion, imports, pool_build, pool_reads, stats
from pooling.models import Collection, Pool, PoolItem, Provenance, Run
from tests.conftest import client_for, require_services
from tests.factories import every_manager, make_collection
from tests.pooling.test_pools import expected_pool, stored_pool

pytestmark = pytest.mark.django_db

Key = tuple[str, str]  # qid, docid
Lines = list[tuple[str, str, float]]  # qid, docid, score
QIDS = ("q1", "q2", "q3")
DEPTH = 4


# ------------------------------------------------------------------------------------------- helpers


def random_run(seed: int, *, size: int = 8) -> Lines:
    """`size` documents of d000-d029 per topic with scores from a few values (many ties), in a shuffled
    line order (the importer ranks them, not the file)."""
    rng = random.Random(seed)
    lines = [
        (qid, f"d{n:03d}", rng.choice([0.5, 1.0, 1.5, 2.0]))
        for qid in QIDS
        for n in rng.sample(range(30), size)
    ]
    rng.shuffle(lines)
    return lines


def write_run(directory: Path, name: str, lines: Lines) -> Path:
    path = directory / f"{name}-{len(list(directory.iterdir()))}.txt"
    path.write_text("".join(f"{q} Q0 {d} 0 {s!r} {name}\n" for q, d, s in lines), encoding="utf-8")
    return path


def import_file(collection: Collection, name: str, path: Path, **options: Any) -> Run:
    imports.import_run(collection=collection, path=path, name=name, **options)
    return Run.objects.get(collection=collection, name=name)


def depth_union(runs: dict[str, Lines], k: int = DEPTH) -> dict[Key, set[tuple[str, int]]]:
    """Each (qid, docid) in the depth-k union of `runs`, with the (run, rank) that put it there, recounted
    from the files' lines (`test_pools.expected_pool`, over every topic they hold)."""
    return expected_pool(runs, k, {qid for lines in runs.values() for qid, _, _ in lines})


stored = stored_pool  # the pool as stored: every item with its provenance (empty: kept for its judgement)


def contributions(union: dict[Key, set[tuple[str, int]]]) -> dict[str, tuple[int, int]]:
    """Per run: the items it contributed and those only it did, from the recount."""
    out: dict[str, list[int]] = {}
    for sources in union.values():
        for name, _ in sources:
            counts = out.setdefault(name, [0, 0])
            counts[0] += 1
            counts[1] += len(sources) == 1
    return {name: (n, unique) for name, (n, unique) in out.items()}


def make_built_pool(collection: Collection, runs: list[Run], **options: Any) -> Pool:
    pool = pool_build.create_pool(
        name=f"{collection.name}-{'-'.join(run.name for run in runs)}-{options.get('strategy', 'depth')}",
        collection=collection,
        runs=runs,
        depth=DEPTH,
        **options,
    )
    pool.managers.set(every_manager())
    pool_build.build_pool(pool=pool)
    pool.refresh_from_db()
    return pool


def judge(pool: Pool, key: Key, rater: Any) -> PoolItem:
    """One judgement on the item `key` of `pool` (as the crowd import stores one: the row and the count)."""
    from judgements import membership

    membership.setup_judging(pool=pool, raters=[rater])
    item = item_of(pool, key)
    Judgement.objects.create(item=item, rater=rater, rubric=pool.judging.rubric, grade=1)
    PoolItem.objects.filter(pk=item.pk).update(num_judgements=1)
    return item


def item_of(pool: Pool, key: Key) -> PoolItem:
    return PoolItem.objects.get(pool=pool, topic__qid=key[0], document__docid=key[1])


def only_from(union: dict[Key, set[tuple[str, int]]], name: str) -> list[Key]:
    return sorted(key for key, sources in union.items() if {run for run, _ in sources} == {name})


def assert_counts_agree(pool: Pool, union: dict[Key, set[tuple[str, int]]], kept: int) -> None:
    """The pool's figures (statistics, the estimate before a build) against the recount: `union`'s items
    with their provenance, plus `kept` judged items (one judgement each) that no run contributes any more."""
    pool.refresh_from_db()
    totals = stats.judgement_totals(pool)
    assert (totals["items"], totals["selected"]) == (len(union) + kept, len(union) + kept)
    assert totals["judgements_required"] == len(union) + kept  # one judgement per item
    assert totals["cost"] == float(len(union) + kept)
    assert stats.kept_items(pool) == kept
    # the judging page's and the dashboard's bar (on PostgreSQL, the tally the item triggers keep)
    share = progress.pool_share(pool_id=pool.pk)
    assert (share["need"], share["done"]) == (len(union) + kept, kept)
    assert pool_reads.estimate_pool(pool=pool)["candidates"] == len(union)
    got = {c.run: (c.contributed, c.unique) for c in stats.run_contributions(pool)}
    assert got == contributions(union)


# ------------------------------------------------------------------------------- deleting a run


def test_it_takes_a_deleted_run_out_of_every_pool_that_uses_it_keeping_judged_items(
    tmp_path: Path, manager: Any, rater: Any
) -> None:
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    lines = {name: random_run(seed) for seed, name in enumerate(("alpha", "beta", "gamma"), 11)}
    runs = {
        name: import_file(collection, name, write_run(tmp_path, name, rows)) for name, rows in lines.items()
    }
    with_beta = make_built_pool(collection, [runs["alpha"], runs["beta"]])
    with_gamma = make_built_pool(collection, [runs["alpha"], runs["gamma"]])
    without = make_built_pool(collection, [runs["beta"], runs["gamma"]])
    before = {pool.pk: stored(pool) for pool in (with_beta, with_gamma, without)}
    assert before[with_beta.pk] == depth_union({n: lines[n] for n in ("alpha", "beta")})
    # in the second pool, one item only alpha contributed is judged; in the first, one is leased
    alpha_alone = only_from(depth_union({n: lines[n] for n in ("alpha", "gamma")}), "alpha")
    judged = judge(with_gamma, alpha_alone[0], rater)
    leased = item_of(with_beta, only_from(before[with_beta.pk], "alpha")[0])
    Assignment.objects.create(
        item=leased, pool=with_beta, rater=rater, expires_at=timezone.now() + timedelta(minutes=5)
    )

    response = client_for(manager).delete(f"/api/runs/{runs['alpha'].pk}/")

    assert response.status_code == 204
    assert not Run.objects.filter(pk=runs["alpha"].pk).exists()
    assert not Provenance.objects.filter(run_id=runs["alpha"].pk).exists()
    beta_only = depth_union({"beta": lines["beta"]})
    assert stored(with_beta) == beta_only  # alpha's unjudged items gone, the leased one too
    assert not PoolItem.objects.filter(pk=leased.pk).exists()
    assert_counts_agree(with_beta, beta_only, kept=0)
    gamma_only = depth_union({"gamma": lines["gamma"]})
    assert stored(with_gamma) == {**gamma_only, alpha_alone[0]: set()}  # the judged item stays
    assert PoolItem.objects.get(pk=judged.pk).num_judgements == 1
    assert_counts_agree(with_gamma, gamma_only, kept=1)
    assert stored(without) == before[without.pk]  # a pool without the run is as it was


def test_deleting_a_run_takes_it_out_of_a_pool_that_is_not_built(tmp_path: Path, manager: Any) -> None:
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    alpha = import_file(collection, "alpha", write_run(tmp_path, "alpha", random_run(1)))
    beta = import_file(collection, "beta", write_run(tmp_path, "beta", random_run(2)))
    draft = pool_build.create_pool(name="draft", collection=collection, runs=[alpha, beta], depth=DEPTH)

    deletion.delete_run(run=alpha)

    assert list(draft.pool_runs.values_list("run__name", flat=True)) == ["beta"]
    assert not PoolItem.objects.filter(pool=draft).exists()


# ------------------------------------------------------------------------------- replacing a run


def test_replacing_a_run_brings_the_built_pools_that_use_it_to_its_new_rows(
    tmp_path: Path, manager: Any, rater: Any
) -> None:
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    old, new, beta = random_run(21), random_run(22), random_run(23)
    alpha = import_file(collection, "alpha", write_run(tmp_path, "alpha", old))
    import_file(collection, "beta", write_run(tmp_path, "beta", beta))
    runs = list(Run.objects.filter(collection=collection))
    pool = make_built_pool(collection, runs)
    draft = pool_build.create_pool(name="not-built", collection=collection, runs=runs, depth=DEPTH)
    before = depth_union({"alpha": old, "beta": beta})
    assert stored(pool) == before
    after = depth_union({"alpha": new, "beta": beta})
    # judged: an item only the old rows gave; leased: one both the old and the new rows give
    gone = [key for key in only_from(before, "alpha") if key not in after]
    judged = judge(pool, gone[0], rater)
    both = next(key for key in sorted(before) if key in after)
    leased = item_of(pool, both)
    lease = Assignment.objects.create(
        item=leased, pool=pool, rater=rater, expires_at=timezone.now() + timedelta(minutes=5)
    )

    summary = imports.import_run(
        collection=collection, path=write_run(tmp_path, "alpha", new), name="alpha", replace=True
    )

    assert Run.objects.get(collection=collection, name="alpha").pk == alpha.pk
    assert stored(pool) == {**after, gone[0]: set()}
    assert PoolItem.objects.get(pk=judged.pk).num_judgements == 1
    assert Assignment.objects.filter(pk=lease.pk, item_id=leased.pk).exists()  # the same item, still leased
    assert_counts_agree(pool, after, kept=1)
    assert [line for line in summary.warnings if repr(pool.name) in line]  # the import says so
    # Rebuild finds nothing to add, and the counts still agree
    assert pool_build.build_pool(pool=pool).items_added == 0
    assert_counts_agree(pool, after, kept=1)
    contributed, _ = contributions(after)["alpha"]
    assert contributed <= DEPTH * len(QIDS)
    # a pool not built yet has nothing to bring up to date: its build reads the new rows
    assert not PoolItem.objects.filter(pool=draft).exists()
    pool_build.build_pool(pool=draft)
    assert stored(draft) == after


def test_replacing_a_run_keeps_an_adaptive_pools_new_candidates_unselected(
    tmp_path: Path, manager: Any
) -> None:
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    old, new = random_run(31), random_run(32)
    alpha = import_file(collection, "alpha", write_run(tmp_path, "alpha", old))
    pool = make_built_pool(collection, [alpha], strategy="mtf", budget=3)
    assert not PoolItem.objects.filter(pool=pool, selected=True).exists()

    imports.import_run(
        collection=collection, path=write_run(tmp_path, "alpha", new), name="alpha", replace=True
    )

    assert stored(pool) == depth_union({"alpha": new})
    assert not PoolItem.objects.filter(pool=pool, selected=True).exists()


# ------------------------------------------------------------------------- the add-runs preview


def test_the_add_runs_preview_of_an_adaptive_pool_counts_its_new_candidates_and_an_unchanged_budget(
    tmp_path: Path, manager: Any
) -> None:
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    alpha_lines, beta_lines = random_run(41), random_run(42)
    alpha = import_file(collection, "alpha", write_run(tmp_path, "alpha", alpha_lines))
    beta = import_file(collection, "beta", write_run(tmp_path, "beta", beta_lines))
    pool = make_built_pool(collection, [alpha], strategy="mtf", budget=5, price_per_judgement=2)
    new = set(depth_union({"alpha": alpha_lines, "beta": beta_lines})) - set(
        depth_union({"alpha": alpha_lines})
    )
    assert new and PoolItem.objects.filter(pool=pool).count() >= 5  # its budget
    required = stats.judgement_totals(pool)["judgements_required"]
    page = Client()
    page.force_login(manager)

    preview = page.get(reverse("setup:add-runs-preview", kwargs={"name": pool.name}), {"runs": [beta.pk]})

    assert preview.status_code == 200
    assert preview.context["added"] == {"runs": ["beta"], "items": len(new), "judgements": 0, "cost": 0.0}
    shown = preview.content.decode()
    assert "New items (candidates)" in shown and f'<td class="num items">{len(new)}</td>' in shown
    assert "Judgement budget" in shown and "5 (unchanged)" in shown
    # what the job then does: those candidates, and the same judgements required
    assert pool_build.add_runs(pool=pool, runs=[beta]).items_added == len(new)
    assert stats.judgement_totals(pool)["judgements_required"] == required


def test_the_add_runs_preview_of_an_adaptive_pool_below_its_budget_counts_the_judgements_it_gains(
    tmp_path: Path, manager: Any
) -> None:
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    alpha_lines, beta_lines = random_run(51), random_run(52)
    alpha = import_file(collection, "alpha", write_run(tmp_path, "alpha", alpha_lines))
    beta = import_file(collection, "beta", write_run(tmp_path, "beta", beta_lines))
    pool = make_built_pool(collection, [alpha], strategy="mtf", budget=100)
    before, after = (
        len(depth_union({"alpha": alpha_lines})),
        len(depth_union({"alpha": alpha_lines, "beta": beta_lines})),
    )

    added = pool_reads.estimate_added_runs(pool=pool, runs=[beta])

    assert added == {
        "runs": ["beta"],
        "items": after - before,
        "judgements": after - before,
        "cost": after - before,
    }


def test_the_add_runs_preview_does_not_count_again_an_item_kept_for_its_judgement(
    tmp_path: Path, manager: Any, rater: Any
) -> None:
    """A run taken out leaves its judged items behind; added back, it brings only what is not an item any
    more: the preview says the number the job then adds, and the judgements that adds."""
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    alpha_lines, beta_lines = random_run(61), random_run(62)
    alpha = import_file(collection, "alpha", write_run(tmp_path, "alpha", alpha_lines))
    beta = import_file(collection, "beta", write_run(tmp_path, "beta", beta_lines))
    pool = make_built_pool(collection, [alpha, beta], price_per_judgement=2)
    union = depth_union({"alpha": alpha_lines, "beta": beta_lines})
    kept = only_from(union, "beta")[0]
    judge(pool, kept, rater)
    pool_build.remove_run(pool=pool, run=beta)
    assert PoolItem.objects.filter(pool=pool, document__docid=kept[1], topic__qid=kept[0]).exists()
    required = stats.judgement_totals(pool)["judgements_required"]

    added = pool_reads.estimate_added_runs(pool=pool, runs=[beta])

    gained = len(only_from(union, "beta")) - 1  # all that only beta brought, but the item kept
    assert added == {"runs": ["beta"], "items": gained, "judgements": gained, "cost": 2.0 * gained}
    assert pool_build.add_runs(pool=pool, runs=[beta]).items_added == gained
    assert stats.judgement_totals(pool)["judgements_required"] == required + added["judgements"]


@pytest.mark.django_db(transaction=True)
def test_replacing_a_run_while_a_pool_is_built_from_its_old_rows_brings_the_pool_to_the_new_ones(
    tmp_path: Path, manager: Any, monkeypatch: Any
) -> None:
    """PostgreSQL, a connection each: a build has read the run's old rows, and not committed, when the run's
    rows are replaced. The import's swap of the run's partition waits for the build (which read it) to
    commit; the pool is built by then, and the import brings it to the new rows. Neither order leaves a
    pool on rows that are gone: a build that has not read the rows yet reads the new ones."""
    require_services()
    collection = make_collection(docs=30, topics=QIDS, managers=[manager])
    old, new = random_run(71), random_run(72)
    alpha = import_file(collection, "alpha", write_run(tmp_path, "alpha", old))
    pool = pool_build.create_pool(name="racing", collection=collection, runs=[alpha], depth=DEPTH)
    read, go = threading.Event(), threading.Event()
    real_add_items = pool_build._add_items

    def add_items_then_wait(**kwargs: Any) -> tuple[int, int]:
        added = real_add_items(**kwargs)
        read.set()  # the old rows are read and their items inserted; the build has not committed
        go.wait(timeout=60)
        return added

    monkeypatch.setattr(pool_build, "_add_items", add_items_then_wait)
    failures: list[BaseException] = []

    def in_a_thread(work: Any) -> threading.Thread:
        def target() -> None:
            try:
                work()
            except BaseException as exc:  # noqa: BLE001 - reported by the main thread
                failures.append(exc)
            finally:
                connection.close()

        thread = threading.Thread(target=target)
        thread.start()
        return thread

    build = in_a_thread(lambda: pool_build.build_pool(pool=Pool.objects.get(pk=pool.pk)))
    assert read.wait(timeout=60)
    monkeypatch.setattr(pool_build, "_add_items", real_add_items)  # the import's own refresh
    path = write_run(tmp_path, "alpha", new)
    replace = in_a_thread(
        lambda: imports.import_run(collection=collection, path=path, name="alpha", replace=True)
    )
    waiting_for_a_lock(seconds=30)  # the import, on the run's rows the build has read
    go.set()
    for thread in (build, replace):
        thread.join(timeout=60)

    assert not failures, failures[:3]
    assert Pool.objects.get(pk=pool.pk).status == Pool.Status.BUILT
    assert stored(pool) == depth_union({"alpha": new})


def waiting_for_a_lock(*, seconds: float) -> None:
    """Return once another connection of the test database waits for a lock (PostgreSQL)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
            if cursor.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError(f"no connection waited for a lock within {seconds} s")


def test_the_form_the_api_and_the_command_say_what_replacing_a_run_does_to_the_pools_that_use_it() -> None:
    """Replacing a run brings each built pool that uses it to the new ranking (above): its new items are
    added to be judged and paid for. The upload form said the pools "keep their items"; all three now give
    `imports.REPLACE_EFFECT`, which names what is added, removed and kept."""
    from pooling.api import ImportSerializer
    from pooling.forms import UploadForm
    from pooling.management.commands.import_run import Command

    effect = imports.REPLACE_EFFECT
    assert all(word in effect for word in ("added", "removed", "judged items are kept"))
    assert effect in str(UploadForm.base_fields["replace"].help_text)
    assert effect in str(ImportSerializer().fields["replace"].help_text)
    parser = Command().create_parser("manage.py", "import_run")
    assert any(
        effect in (action.help or "") for action in parser._actions if "--replace" in action.option_strings
    )
