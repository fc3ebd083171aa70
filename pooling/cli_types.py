"""Argument types of the command-line tools (argparse `type=`): a bad value is argparse's clear error
naming the option (`argument --bootstrap: must be at least 1, not 0`), never a traceback from deep inside;
and the output directory an option names (`output_directory`). No Django: `evaluate` reads files without
it (nor pathlib, unless it writes files)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path


def at_least(low: int) -> Callable[[str], int]:
    """An integer of at least `low`."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid integer: {text!r}") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}, not {value}")
        return value

    return parse


#: A seed of a random generator (numpy's take 0 and up).
SEED = at_least(0)


@contextmanager
def output_directory(option: str, value: str, error: Callable[[str], Exception]) -> Iterator[Path]:
    """The directory an option names for a command's files, made if missing (parents too) and checked
    writable before the command does anything (a release is published once made: a bad -o must stop it
    first); a problem is `error(message)` naming the option. If the work done inside fails, the
    directories made here are removed again: a refused command leaves nothing."""
    import os
    from contextlib import suppress
    from pathlib import Path

    where = Path(value)
    made = None  # the first directory this makes: it and those below it are removed on a failure
    for directory in (where, *where.parents):
        if directory.exists() or directory.is_symlink():
            if directory != where and not directory.is_dir():  # a file where a directory would go
                raise error(f"{option} {value}: cannot make the directory ({directory} is not a directory)")
            break
        made = directory
    try:
        where.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise error(f"{option} {value}: not a directory") from None
    except OSError as exc:
        raise error(f"{option} {value}: cannot make the directory ({exc.strerror})") from None
    try:
        if not os.access(where, os.W_OK | os.X_OK):
            raise error(f"{option} {value}: not writable")
        yield where
    except BaseException:
        if made is not None:
            for directory in (where, *where.parents):
                with suppress(OSError):  # one that is no longer empty stays, with those above it
                    directory.rmdir()
                if directory == made:
                    break
        raise
