"""The commands of pool managers and IR engineers as a user runs them: a bad argument is one clear line and a
non-zero exit, with nothing changed in the database or on disk; `--help` describes every option and its
default; `evaluate` says so when QRELS and RUN are given the other way round."""

from __future__ import annotations

import argparse
import io
import os
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError

from evaluation import cli
from judgements.models import Judge, Judgement, Release
from pooling import errors as pooling_errors
from pooling import imports, pool_build
from pooling.models import Collection, Pool
from tests.factories import make_pool, make_user
from tests.processes import manage_in_a_process

ROOT = Path(__file__).resolve().parents[1]
GOOD = ROOT / "tests" / "data" / "good"

#: The commands of this area, by app.
COMMANDS = [
    ("pooling", "create_collection"), ("pooling", "import_documents"), ("pooling", "import_topics"),
    ("pooling", "import_run"), ("pooling", "create_pool"), ("pooling", "build_pool"),
    ("pooling", "add_runs"), ("pooling", "export_pool"), ("pooling", "edit_pool"), ("pooling", "remove_run"),
    ("pooling", "delete_pool"), ("pooling", "delete_run"), ("pooling", "delete_collection"),
    ("judgements", "add_raters"),
    ("judgements", "import_judgements"), ("judgements", "release_qrels"), ("evaluation", "evaluate"),
    ("evaluation", "create_judge"), ("evaluation", "run_judge"),
]  # fmt: skip

#: Django's own options of every command (described by Django).
DJANGO_OPTIONS = {
    "help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color",
    "skip_checks",
}  # fmt: skip


# ------------------------------------------------------------------------------------------------ --help


@pytest.mark.parametrize(("app", "name"), COMMANDS)
def test_help_describes_every_option_and_states_its_default(app: str, name: str) -> None:
    parser = load_command_class(app, name).create_parser("manage.py", name)
    for action in parser._actions:
        if not action.option_strings or action.dest in DJANGO_OPTIONS:
            continue
        option = action.option_strings[-1]
        assert action.help, f"{name} {option} has no help"
        default = action.default
        if default not in (None, False, "", argparse.SUPPRESS):
            assert "%(default)s" in action.help or str(default) in action.help, (
                f"{name} {option}: its help does not say its default {default!r}"
            )


# ------------------------------------------------------------------------------- names and column limits


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["my news", "a/b", "", "x" * 101])
def test_a_collection_name_a_url_cannot_carry_is_refused(name: str) -> None:
    # The pages and the API address a collection by a slug in its URL; the command once stored any name,
    # leaving a collection that no page could open.
    with pytest.raises(CommandError):
        call_command("create_collection", name, stdout=io.StringIO())
    with pytest.raises(pooling_errors.ImportFailed):
        imports.create_collection(name=name)
    assert not Collection.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["my pool"], "name 'my pool': Enter a valid “slug”"),
        ([""], "a pool needs a name"),
        (["p", "--depth", "3000000000"], "depth: Ensure this value is less than or equal to 2147483647"),
        (["p", "--seed", "3000000000"], "seed: Ensure this value is less than or equal to 2147483647"),
        (["p", "--seed", "-3000000000"], "seed: Ensure this value is greater than or equal to -2147483648"),
        (["p", "--judgements-per-item", "40000"], "judgements per item: Ensure this value is less than"),
        (["p", "--strategy", "mtf", "--budget", "3000000000"], "budget: Ensure this value is less than"),
    ],
)
def test_a_pool_option_its_column_cannot_hold_is_refused_naming_it(options: list[str], message: str) -> None:
    # Each of the numbers was a DataError traceback from PostgreSQL ("integer out of range"); the limits are
    # the columns' own (Django's validators of the model fields, by the database's integer ranges).
    pool = make_pool(name="existing")
    name, *rest = options
    argv = [name, "--collection", pool.collection.name, "--runs", "alpha", "--depth", "2", *rest]
    with pytest.raises(CommandError) as info:
        call_command("create_pool", *argv, stdout=io.StringIO())
    assert message in str(info.value)
    assert list(Pool.objects.values_list("name", flat=True)) == ["existing"]


@pytest.mark.django_db
def test_the_service_states_the_column_limits_for_every_caller() -> None:
    pool = make_pool(name="existing")
    problems = pool_build.pool_problems(
        collection=pool.collection, name="a b", depth=2**31, seed=2**31, judgements_per_item=2**15
    )
    assert set(problems) == {"name", "depth", "seed", "judgements_per_item"}
    assert pool_build.pool_problems(collection=pool.collection, name="fine-name", depth=2**31 - 1) == {}


# ---------------------------------------------------------------------------------------- create_judge


@pytest.mark.django_db
@pytest.mark.parametrize("command", ["'unclosed quote", "judge.py \\"])
def test_a_judge_command_line_the_shell_could_not_split_is_refused(command: str) -> None:
    # shlex's ValueError ("No closing quotation") was a traceback.
    pool = make_pool(name="p")
    with pytest.raises(CommandError) as info:
        call_command("create_judge", pool.name, "j", "--command", command, stdout=io.StringIO())
    assert str(info.value).startswith(f"--command {command!r}: No ")
    assert not Judge.objects.exists()


# ----------------------------------------------------------------------------------- import_judgements


@pytest.fixture
def judging_pool(db: None, tmp_path: Path) -> tuple[Pool, Path, Path]:
    alice = make_user("alice")
    pool = make_pool(name="p", raters=[alice])
    qrels = tmp_path / "earlier.qrels"
    qrels.write_text("q1 0 d001 2\nq1 0 d002 0\n")
    crowd = tmp_path / "crowd.tsv"
    crowd.write_text("worker\tqid\tdocid\tlabel\nw1\tq1\td001\t2\nw1\tq1\td001\t1\n")
    return pool, qrels, crowd


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--duplicates", "revisions"], "--duplicates goes with --crowd"),
        (["--unrateable-labels=-2"], "--unrateable-labels goes with --crowd"),
        (["--create-raters"], "--create-raters goes with --crowd"),
        (["--duplicates", "last", "--create-raters"], "--duplicates, --create-raters go with --crowd"),
    ],
)
def test_a_crowd_option_on_a_qrels_file_is_refused_not_ignored(
    judging_pool: tuple[Pool, Path, Path], extra: list[str], message: str
) -> None:
    pool, qrels, _ = judging_pool
    with pytest.raises(CommandError) as info:
        call_command(
            "import_judgements", pool.name, str(qrels), "--rater", "alice", *extra, stdout=io.StringIO()
        )
    assert message in str(info.value)
    assert not Judgement.objects.exists()


def test_a_rater_named_for_a_crowd_file_is_refused_not_ignored(judging_pool: tuple[Pool, Path, Path]) -> None:
    pool, _, crowd = judging_pool
    with pytest.raises(CommandError) as info:
        call_command(
            "import_judgements", pool.name, str(crowd), "--crowd", "--create-raters", "--rater", "alice",
            stdout=io.StringIO(),
        )  # fmt: skip
    assert "--rater is for a qrels file" in str(info.value)
    assert not Judgement.objects.exists()
    out = io.StringIO()  # without it, the same file imports
    call_command("import_judgements", pool.name, str(crowd), "--crowd", "--create-raters", stdout=out)
    assert "1 created" in out.getvalue() and Judgement.objects.count() == 1


# ---------------------------------------------------------------------------------------- release_qrels


def test_a_refused_release_leaves_no_output_directory_behind(
    judging_pool: tuple[Pool, Path, Path], tmp_path: Path, media_root: Path
) -> None:
    pool, _, _ = judging_pool
    new = tmp_path / "out" / "release"
    with pytest.raises(CommandError, match="unknown aggregation policy"):
        call_command("release_qrels", pool.name, "--policy", "bogus", "-o", str(new), stdout=io.StringIO())
    assert not (tmp_path / "out").exists()
    kept = tmp_path / "kept"  # a directory that was there stays
    kept.mkdir()
    with pytest.raises(CommandError):
        call_command("release_qrels", pool.name, "--policy", "bogus", "-o", str(kept), stdout=io.StringIO())
    assert kept.is_dir()
    assert not Release.objects.exists()
    out = io.StringIO()
    call_command("release_qrels", pool.name, "-o", str(new), stdout=out)
    assert sorted(path.name for path in new.iterdir()) == [
        "judgements.jsonl", "manifest.json", "qrels.txt", "qrels.unjudged.txt",
    ]  # fmt: skip


# ------------------------------------------------------------------------------------------ export_pool


@pytest.mark.django_db
def test_export_to_a_reader_that_stops_early_ends_quietly() -> None:
    # `export_pool NAME | head -1`: the reader closes the pipe; that was a BrokenPipeError traceback.
    pool = make_pool(name="p")
    read_end, write_end = os.pipe()
    os.close(read_end)
    out = os.fdopen(write_end, "w", buffering=1)  # line-buffered: the first line meets the closed pipe
    try:
        with pytest.raises(SystemExit) as info:
            call_command("export_pool", pool.name, stdout=out)
        assert info.value.code == 1
        out.write("the descriptor now writes to /dev/null\n")
    finally:
        out.close()


# ---------------------------------------------------------------------------------------------- evaluate


@pytest.mark.parametrize(
    ("order", "kind"), [(("run", "qrels"), "a run"), (("qrels", "qrels"), "a qrels file")]
)
def test_evaluate_says_in_one_line_that_qrels_and_run_are_the_other_way_round(
    tmp_path: Path, capsys: Any, order: tuple[str, str], kind: str
) -> None:
    files = {"qrels": str(GOOD / "qrels.txt"), "run": str(GOOD / "run_a.txt")}
    assert cli.main([files[order[0]], files[order[1]]]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"evaluate: {files[order[0]] if order[0] == 'run' else files[order[1]]}:")
    assert f"this is {kind}; the order is evaluate QRELS RUN [RUN ...]" in lines[0]


def test_evaluate_keeps_listing_the_errors_of_a_file_of_the_right_kind(tmp_path: Path, capsys: Any) -> None:
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("301 0 d01 1\n301 0 d02 1\n" + "301 0 d03 1 extra 2\n" * 2)
    assert cli.main([str(qrels), str(GOOD / "run_a.txt")]) == 1
    err = capsys.readouterr().err
    assert f"{qrels}:3: expected 4 fields 'qid iter docid rel', found 6\n{qrels}:4:" in err
    assert "this is" not in err


# -------------------------------------------------------------------------------- a real process, exit codes


def test_the_refusals_are_one_line_and_a_non_zero_exit_in_a_real_process(tmp_path: Path) -> None:
    manage = manage_in_a_process(tmp_path / "data")

    for args in (
        ("migrate", "--noinput", "-v0"),
        ("create_collection", "news"),
        ("import_documents", "news", str(GOOD / "docs.jsonl")),
        ("import_topics", "news", str(GOOD / "topics.jsonl")),
        ("import_run", "news", str(GOOD / "run_a.txt"), "--name", "bm25"),
        ("create_pool", "p", "--collection", "news", "--runs", "bm25", "--depth", "3"),
        ("build_pool", "p"),
        ("add_raters", "p", "alice", "--create"),
    ):
        done = manage(*args)
        assert done.returncode == 0, done.stderr

    out = tmp_path / "release"
    refusals: list[tuple[tuple[str, ...], str]] = [
        (("create_collection", "my news"), "CommandError: name 'my news': Enter a valid “slug”"),
        (("create_pool", "my pool", "--collection", "news", "--runs", "bm25", "--depth", "3"),
         "CommandError: name 'my pool': Enter a valid “slug”"),
        (("create_judge", "p", "j", "--command", "'x"),
         "CommandError: --command \"'x\": No closing quotation"),
        (("import_judgements", "p", str(GOOD / "qrels.txt"), "--rater", "alice", "--duplicates", "revisions"),
         "CommandError: --duplicates goes with --crowd (options of a crowd file)"),
        (("release_qrels", "p", "--policy", "bogus", "-o", str(out)),
         "CommandError: unknown aggregation policy"),
        (("evaluate", str(GOOD / "run_a.txt"), str(GOOD / "qrels.txt")), "evaluate: "),
    ]  # fmt: skip
    for refused, message in refusals:
        done = manage(*refused)
        assert done.returncode == 1, (refused, done.stderr)
        assert "Traceback" not in done.stderr
        assert len(done.stderr.splitlines()) == 1, done.stderr
        assert done.stderr.startswith(message), done.stderr
    assert not out.exists()
    done = manage("export_pool", "p")  # nothing refused above changed the pool
    assert done.returncode == 0 and done.stdout.count("\n") == 9, done.stdout
