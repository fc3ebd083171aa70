"""The admin of interleaving and tracked experiments: staff see only their collections' experiments, add
and edit none, and switch an experiment on or off through the service."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, Permission
from django.core.exceptions import ValidationError
from django.test import Client

from online import experiments, serving
from online.experiment_models import InterleavingExperiment
from pooling.permissions import MANAGERS_GROUP
from tests.factories import make_collection, make_pool, make_run, make_user


def staff(name: str):
    user = make_user(name, is_staff=True)
    user.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="online"))
    client = Client()
    client.force_login(user)
    return user, client


@pytest.fixture
def world(db):
    mine, _ = staff("mine")
    theirs, _ = staff("theirs")
    for user, name in ((mine, "news"), (theirs, "sports")):
        collection = make_collection(name=name, managers=[user])
        make_run(collection=collection, name="alpha", lists={"q1": ["d001", "d002"]})
        make_run(collection=collection, name="beta", lists={"q1": ["d002", "d001"]})
        experiments.create_experiment(name=f"{name}-ab", collection=collection, run_a="alpha", run_b="beta")


def test_it_lists_only_the_experiments_of_the_collections_one_manages(world):
    _, client = staff("mine2")
    InterleavingExperiment.objects.get(name="news-ab").collection.managers.add(
        client.session["_auth_user_id"]
    )
    text = client.get("/admin/online/interleavingexperiment/").content.decode()
    assert "news-ab" in text and "sports-ab" not in text
    other = InterleavingExperiment.objects.get(name="sports-ab")
    assert client.get(f"/admin/online/interleavingexperiment/{other.pk}/change/").status_code == 302
    assert client.get("/admin/online/interleavingexperiment/add/").status_code == 403


def test_it_switches_an_experiment_off_through_the_service(world):
    _, client = staff("mine3")
    mine = InterleavingExperiment.objects.get(name="news-ab")
    mine.collection.managers.add(client.session["_auth_user_id"])
    assert serving.usable_experiment(user=mine.collection.managers.first(), name="news-ab") is not None
    response = client.post(
        "/admin/online/interleavingexperiment/",
        {"action": "deactivate", "_selected_action": [mine.pk]},
    )
    assert response.status_code == 302
    mine.refresh_from_db()
    assert not mine.active  # and the search path's memo was cleared: it serves nothing at once
    usable = serving.usable_experiment(user=mine.collection.managers.first(), name="news-ab")
    assert usable is not None and not usable.active
    with pytest.raises(ValidationError):
        serving.serve(experiment=usable, qid="q1", user="u1")


def test_a_reader_of_the_collection_switches_nothing_off(world):
    # A pool of theirs on the collection lets them read its experiments, not change them (an audit found
    # the admin's action switching another manager's experiment off).
    reader, client = staff("reader")
    mine = InterleavingExperiment.objects.get(name="news-ab")
    make_pool(
        collection=mine.collection, runs=list(mine.collection.runs.all()), name="readers", managers=[reader]
    )
    assert "news-ab" in client.get("/admin/online/interleavingexperiment/").content.decode()
    response = client.post(
        "/admin/online/interleavingexperiment/", {"action": "deactivate", "_selected_action": [mine.pk]}
    )
    assert response.status_code == 302
    mine.refresh_from_db()
    assert mine.active
