"""Deletes cascade through Django's collector: run rows, pool items and provenance carry no database
foreign-key constraints, so nothing but the collector removes what hangs off a deleted row."""

from __future__ import annotations

import pytest

from pooling.models import Document, Pool, PoolItem, Provenance, Run, RunRow, Topic
from tests.factories import make_pool

pytestmark = pytest.mark.django_db


def test_it_deletes_a_pools_items_and_their_provenance_with_the_pool() -> None:
    pool = make_pool()
    other = make_pool(collection=pool.collection, runs=list(Run.objects.all()))
    mine = PoolItem.objects.filter(pool=pool).count()
    assert mine > 0 and Provenance.objects.filter(item__pool=pool).count() >= mine
    kept_items = PoolItem.objects.filter(pool=other).count()
    kept_provenance = Provenance.objects.filter(item__pool=other).count()

    Pool.objects.filter(pk=pool.pk).delete()

    assert PoolItem.objects.count() == kept_items
    assert Provenance.objects.count() == kept_provenance
    assert not PoolItem.objects.filter(pool_id=pool.pk).exists()


def test_it_deletes_a_runs_rows_and_provenance_with_the_run() -> None:
    pool = make_pool()
    alpha = Run.objects.get(name="alpha")
    assert RunRow.objects.filter(run=alpha).exists()
    assert Provenance.objects.filter(run=alpha).exists()
    beta_rows = RunRow.objects.exclude(run=alpha).count()

    alpha.delete()

    assert RunRow.objects.count() == beta_rows
    assert not RunRow.objects.filter(run_id=alpha.pk).exists()
    assert not Provenance.objects.filter(run_id=alpha.pk).exists()
    assert Provenance.objects.filter(item__pool=pool).exists()  # beta's stay


def test_it_deletes_a_documents_items_rows_and_provenance_with_the_document() -> None:
    pool = make_pool()
    document = Document.objects.get(collection=pool.collection, docid="d003")  # pooled by both runs
    item = PoolItem.objects.get(pool=pool, document=document)
    assert Provenance.objects.filter(item=item).count() == 2
    items = PoolItem.objects.count()

    document.delete()

    assert not PoolItem.objects.filter(document_id=document.pk).exists()
    assert not Provenance.objects.filter(item_id=item.pk).exists()
    assert not RunRow.objects.filter(document_id=document.pk).exists()
    assert PoolItem.objects.count() == items - 1


def test_it_deletes_a_topics_items_and_rows_with_the_topic() -> None:
    pool = make_pool()
    topic = Topic.objects.get(collection=pool.collection, qid="q2")
    assert PoolItem.objects.filter(topic=topic).exists()

    topic.delete()

    assert not PoolItem.objects.filter(topic_id=topic.pk).exists()
    assert not RunRow.objects.filter(topic_id=topic.pk).exists()
    assert not Provenance.objects.filter(item__topic_id=topic.pk).exists()
    assert PoolItem.objects.filter(pool=pool).exists()  # q1's stay
