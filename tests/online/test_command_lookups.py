"""The online app's commands (and create_judge) name what they could not find, and change nothing: they
look up a collection, a pool and a click log the way every other command does."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from online.models import ClickLabelSet, PropensityEstimate, TrackedExperiment


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["click_labels", "999"], "no click log 999"),
        (["estimate_propensity", "999"], "no click log 999"),
        (
            ["track_experiment", "t", "--collection", "nowhere", "--release", "1", "--baseline", "a",
             "--treatment", "b"],
            "no collection named 'nowhere'",
        ),
        (["tracker_report", "--collection", "nowhere"], "no collection named 'nowhere'"),
        (["create_interleaving", "x", "--collection", "nowhere", "--a", "a", "--b", "b"],
         "no collection named 'nowhere'"),
        (["create_judge", "nowhere", "j", "--learned"], "no pool named 'nowhere'"),
    ],
)  # fmt: skip
def test_it_names_what_it_could_not_find_and_stores_nothing(argv, message):
    with pytest.raises(CommandError, match=message):
        call_command(*argv, stdout=io.StringIO(), stderr=io.StringIO())
    assert not PropensityEstimate.objects.exists()
    assert not ClickLabelSet.objects.exists()
    assert not TrackedExperiment.objects.exists()
