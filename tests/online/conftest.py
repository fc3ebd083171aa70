"""Fixtures of the online tests."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from judgements import releases
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_collection, make_pool, make_run, make_user
from tests.judgements.test_releases import judge


@pytest.fixture(autouse=True)
def fast_passwords(fast_passwords):
    """The shared fast hasher (tests/conftest.py) for every online test: these are about experiments, not
    logins, and PBKDF2's rounds per account were most of their set-up time."""
    return fast_passwords


@pytest.fixture(autouse=True)
def fresh_interleaving_caches():
    """The search path's per-process memos start empty: a test's ids may be an earlier test's."""
    from online import serving

    serving.clear_caches()
    yield
    serving.clear_caches()


@pytest.fixture
def world(db, manager, rater):
    """A collection `news` of a manager, three runs (two pooled), a judged pool and its release; another
    manager who may not see them."""
    other = make_user("other-manager")
    other.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    collection = make_collection(name="news", managers=[manager])
    runs = [
        make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002", "d003"], "q2": ["d010"]}),
        make_run(collection=collection, name="beta",
                 lists={"q1": ["d003", "d001", "d004"], "q2": ["d011", "d010"]}),
    ]  # fmt: skip
    make_run(collection=collection, name="gamma", lists={"q1": ["d002", "d004"], "q2": ["d010"]})
    pool = make_pool(collection=collection, runs=runs, name="news-pool", managers=[manager], raters=[rater])
    judge(pool, rater, {("q1", "d001"): 2, ("q1", "d002"): 0, ("q1", "d003"): 1, ("q2", "d010"): 1,
                        ("q2", "d011"): 0})  # fmt: skip
    release = releases.create_release(pool=pool)
    return {"collection": collection, "release": release, "other": other, "pool": pool}
