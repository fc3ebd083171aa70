"""Numbers the commands take are checked as they are read: a bad one is argparse's error naming the
option, before any work (each of these was once a ValueError traceback from deep inside)."""

from __future__ import annotations

import argparse

import pytest
from django.core.management import CommandError, call_command

from pooling.cli_types import SEED, at_least


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["agreement", "p", "--bootstrap", "0"], "argument --bootstrap: must be at least 1, not 0"),
        (["agreement", "p", "--seed", "-1"], "argument --seed: must be at least 0, not -1"),
        (["agreement", "p", "--seed", "one"], "argument --seed: invalid integer: 'one'"),
        (
            ["interleaving_result", "x", "--resamples", "-5"],
            "argument --resamples: must be at least 1, not -5",
        ),
        (
            ["evaluate", "q.txt", "r.txt", "--noise-floor", "--seed", "-1"],
            "argument --seed: must be at least 0",
        ),
    ],
)
def test_a_bad_number_is_refused_naming_its_option(argv: list[str], message: str) -> None:
    with pytest.raises(CommandError) as info:
        call_command(*argv)
    assert message in str(info.value)


def test_the_types_read_integers_from_a_floor() -> None:
    assert at_least(1)("3") == 3 and SEED("0") == 0
    for parse, text in ((at_least(1), "0"), (SEED, "-1"), (SEED, "1.5")):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(text)
