"""Importing a crowd file: duplicates by a stated rule, special labels as unrateable, every skipped row
counted by reason, and nothing stored when any row is bad; a row is credited to its worker's own account
only, never to a person's or a model judge's account named as the worker, and a worker keeps that one
account across imports and pools."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command

from judgements import membership
from judgements.crowd_import import CrowdOptionError, import_crowd_judgements
from judgements.judges import create_judge
from judgements.models import CrowdWorker, Judgement
from pooling.errors import ImportFailed
from tests.factories import make_pool, make_user

CROWD = """worker\tqid\tdocid\tlabel\tseconds
w1\tq1\td001\t2\t12.5
w2\tq1\td001\t1\t8
w1\tq1\td002\t-2\t3
w1\tq1\td001\t3\t9
w3\tq1\td003\t0\t4
w1\tq1\tnope\t1\t2
w2\tq2\td010\t-1\t5
"""


@pytest.fixture
def crowd_file(tmp_path):
    path = tmp_path / "crowd.tsv"
    path.write_text(CROWD)
    return path


def make_worker(worker_id: str) -> User:
    """A crowd worker's account, as a crowd import with `create_raters` makes it."""
    return membership.create_worker_account(worker_id=worker_id)


@pytest.fixture
def pool(db):
    make_worker("w1"), make_worker("w2")
    return make_pool(raters=[], name="crowd")


def test_the_last_row_of_a_duplicate_wins_and_every_skip_is_counted(pool, crowd_file):
    summary = import_crowd_judgements(pool=pool, path=crowd_file, skip_unpooled=True)
    assert summary.duplicates == 1 and summary.duplicate_rule == "last"
    assert dict(summary.skipped) == {"negative label": 2, "unpooled": 1, "unknown worker": 1}
    assert summary.rows == 7 and summary.created == 2
    w1 = Judgement.objects.get(rater__username="w1")
    assert (w1.grade, w1.seconds, w1.imported) == (3, 9.0, True)
    assert "2 negative label" in summary.line() and "last wins" in summary.line()


def test_duplicates_can_be_kept_as_revisions(pool, crowd_file):
    summary = import_crowd_judgements(pool=pool, path=crowd_file, skip_unpooled=True, duplicates="revisions")
    assert summary.created == 2 and summary.revised == 1
    w1 = Judgement.objects.get(rater__username="w1")
    assert w1.grade == 3 and w1.revisions.count() == 1


def test_special_labels_become_unrateable_and_new_workers_accounts(pool, crowd_file):
    summary = import_crowd_judgements(
        pool=pool, path=crowd_file, skip_unpooled=True, unrateable_labels=[-2], create_raters=True
    )
    assert summary.unrateable == 1 and summary.raters_created == 1
    broken = Judgement.objects.get(rater__username="w1", item__document__docid="d002")
    assert broken.unrateable and broken.grade is None
    assert dict(summary.skipped) == {"negative label": 1, "unpooled": 1}
    assert not Judgement.objects.get(rater__username="w3").rater.has_usable_password()


def test_a_bad_row_stores_nothing_and_names_its_line(pool, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("worker,qid,docid,label\nw1,q1,d001,2\nw2,q1,d001,high\nw2,q1,d002,7\n")
    with pytest.raises(ImportFailed) as failed:
        import_crowd_judgements(pool=pool, path=path)
    assert "bad.csv:3: label 'high' is not an integer" in str(failed.value)
    assert "bad.csv:4: grade 7 is not on the rubric" in str(failed.value)
    assert not Judgement.objects.exists()
    path.write_text("who,qid,docid,label\nw1,q1,d001,2\n")
    with pytest.raises(ImportFailed, match="lacks the column"):
        import_crowd_judgements(pool=pool, path=path)


def test_the_command_imports_a_crowd_file_and_prints_the_counts(pool, crowd_file):
    out = io.StringIO()
    call_command("import_judgements", "crowd", str(crowd_file), "--crowd", "--skip-unpooled",
                 "--unrateable-labels=-2", "--duplicates", "revisions", stdout=out)  # fmt: skip
    line = out.getvalue()
    assert "kept as revisions" in line and "1 unrateable" in line and "1 unknown worker" in line


def test_a_special_label_off_the_rubric_is_unrateable_and_one_on_it_is_refused(pool, tmp_path):
    path = tmp_path / "special.csv"
    path.write_text("worker,qid,docid,label\nw1,q1,d001,9\nw2,q1,d001,1\n")
    summary = import_crowd_judgements(pool=pool, path=path, unrateable_labels=[9])
    assert summary.unrateable == 1 and Judgement.objects.get(rater__username="w1").unrateable
    with pytest.raises(CrowdOptionError) as refused:
        import_crowd_judgements(pool=pool, path=path, unrateable_labels=[1, 9])
    assert refused.value.field == "unrateable_labels" and "1 is a grade" in str(refused.value)
    with pytest.raises(CommandError, match="unrateable_labels: integers separated by commas"):
        call_command("import_judgements", "crowd", str(path), "--crowd", "--unrateable-labels", "x")
    with pytest.raises(CrowdOptionError, match="duplicates: one of last, revisions"):
        import_crowd_judgements(pool=pool, path=path, duplicates="first")


# ------------------------------------------------------------------------------------------ whose rows


def test_the_command_writes_its_warnings_to_stderr_as_every_command_does(pool, tmp_path):
    make_user("admin", is_staff=True, is_superuser=True)
    path = tmp_path / "clash.csv"
    path.write_text("worker,qid,docid,label\nadmin,q1,d001,2\nw1,q1,d003,0\n")
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "import_judgements", pool.name, str(path), "--crowd", "--create-raters", stdout=out, stderr=err
    )
    assert err.getvalue().splitlines() == [
        "warning: worker 'admin' has the account 'crowd-admin': an account that is not a crowd worker's is "
        "named 'admin'"
    ]
    assert "warning" not in out.getvalue() and out.getvalue().startswith("crowd judgements: 2 rows")


def test_it_never_credits_a_persons_or_a_model_judges_account_named_as_a_worker(pool, tmp_path):
    admin = make_user("admin", is_staff=True, is_superuser=True)
    taken = make_user("crowd-admin")  # a person has the first name the worker's account would take, too
    judge = create_judge(pool=pool, name="learner", method="learned")
    robot = judge.user.username
    path = tmp_path / "clash.csv"
    path.write_text(f"worker,qid,docid,label\nadmin,q1,d001,2\n{robot},q1,d002,1\nw1,q1,d003,0\n")
    people = [admin, taken, judge.user]
    summary = import_crowd_judgements(pool=pool, path=path)  # no accounts made: theirs are no workers'
    assert dict(summary.skipped) == {"unknown worker": 2} and summary.created == 1
    assert not Judgement.all_kinds.filter(rater__in=people).exists()
    summary = import_crowd_judgements(pool=pool, path=path, create_raters=True)
    assert summary.raters_created == 2 and summary.created == 2 and summary.revised == 1
    assert summary.raters_renamed == 2 and "(2 under another name than their id)" in summary.line()
    assert summary.warnings == [
        "worker 'admin' has the account 'crowd-admin-2': an account that is not a crowd worker's is named "
        "'admin'",
        f"worker {robot!r} has the account 'crowd-{robot}': an account that is not a crowd worker's is named "
        f"{robot!r}",
    ]
    assert not Judgement.all_kinds.filter(rater__in=people).exists()
    assert set(Judgement.objects.values_list("rater__username", flat=True)) == {
        "crowd-admin-2",
        f"crowd-{robot}",
        "w1",
    }
    assert (
        admin.has_usable_password() and not User.objects.get(username="crowd-admin-2").has_usable_password()
    )


def test_it_keeps_a_workers_one_account_across_imports_and_pools(pool, tmp_path):
    make_user("admin")
    elsewhere = make_pool(raters=[], name="crowd-two")
    path = tmp_path / "crowd.csv"
    path.write_text("worker,qid,docid,label\nadmin,q1,d001,2\nw9,q1,d002,1\n")
    first = import_crowd_judgements(pool=pool, path=path, create_raters=True)
    again = import_crowd_judgements(pool=pool, path=path, create_raters=True)
    other = import_crowd_judgements(pool=elsewhere, path=path, create_raters=True)
    assert (first.raters_created, again.raters_created, other.raters_created) == (2, 0, 0)
    assert (again.revised, other.created) == (2, 2)
    accounts = Judgement.objects.values_list("rater__username", flat=True).distinct()
    assert sorted(accounts) == ["crowd-admin", "w9"]  # one each, in both pools
    assert dict(CrowdWorker.objects.values_list("worker_id", "user__username")) == {
        "w1": "w1",
        "w2": "w2",
        "admin": "crowd-admin",
        "w9": "w9",
    }


def test_it_marks_the_accounts_earlier_imports_made_and_no_persons(db):
    """The migration's marking of accounts made before workers were marked (0012)."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("judgements.migrations.0012_crowd_worker_accounts")
    pool = make_pool(raters=[], name="old")
    item = pool.items.first()

    def account(name, *, password=None, imported=True):
        user = User.objects.create_user(name, password=password)  # no password: unusable, as imports made
        Judgement.objects.create(
            item=item, rater=user, rubric=pool.judging.rubric, grade=1, imported=imported
        )
        return user

    account("old-worker")
    account("person", password="pass-word-123")  # they can log in
    account("judged-here", imported=False)  # judged on the judging page
    membership.setup_judging(pool=pool, raters=[account("made-as-rater")])  # add_raters --create
    User.objects.create_user("no-judgement")
    migration.mark_earlier_workers(apps, None)
    assert dict(CrowdWorker.objects.values_list("worker_id", "user__username")) == {
        "old-worker": "old-worker"
    }
