"""The judging commands: `import_judgements` (qrels as one rater's judgements, atomic, FILE:LINE errors)
and `add_raters` (pool membership, creating users and the judging setup when asked)."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError

from judgements import membership, rubrics
from judgements.management.commands.import_judgements import Command as ImportCommand
from judgements.models import Judgement, JudgementRevision, Judging
from pooling.models import PoolItem
from tests.factories import make_pool, make_user

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("fast_passwords")]

# The default factory pool: q1 → d001…d006, q2 → d010…d013; d019 is in the collection, not in the pool.
GOOD = """# earlier labels
q1 0 d001 3
q1 0 d002 0
q2 0 d010 2
q2 0 d011 -1
"""


@pytest.fixture
def pool(rater):
    return make_pool(name="legacy", raters=[rater])


@pytest.fixture
def nist(db):
    return make_user("nist")


def write(tmp_path: Path, text: str, name: str = "labels.qrels") -> str:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def run(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def stored(rater) -> list[tuple[str, str, int | None]]:
    return sorted(
        Judgement.objects.filter(rater=rater).values_list(
            "item__topic__qid", "item__document__docid", "grade"
        )
    )


# ----------------------------------------------------------------------------------- import_judgements


def test_it_imports_a_good_qrels_file_as_the_raters_judgements(pool, nist, tmp_path):
    out = run("import_judgements", "legacy", write(tmp_path, GOOD), "--rater", "nist")
    assert "judgements: 4 rows, 3 created, 0 updated, 0 unpooled skipped" in out
    assert stored(nist) == [("q1", "d001", 3), ("q1", "d002", 0), ("q2", "d010", 2)]
    assert set(Judgement.objects.values_list("imported", flat=True)) == {True}
    item = PoolItem.objects.get(pool=pool, topic__qid="q1", document__docid="d001")
    assert item.num_judgements == 1


def test_it_reads_gzipped_qrels(pool, nist, tmp_path):
    path = tmp_path / "labels.qrels.gz"
    path.write_bytes(gzip.compress(GOOD.encode()))
    assert "3 created" in run("import_judgements", "legacy", str(path), "--rater", "nist")


def test_it_revises_earlier_imported_labels_on_a_second_import(pool, nist, tmp_path):
    run("import_judgements", "legacy", write(tmp_path, GOOD), "--rater", "nist")
    out = run(
        "import_judgements", "legacy", write(tmp_path, "q1 0 d001 1\n", "again.qrels"), "--rater", "nist"
    )
    assert "1 rows, 0 created, 1 updated" in out
    assert ("q1", "d001", 1) in stored(nist)
    revision = JudgementRevision.objects.get()
    assert (revision.old_grade, revision.new_grade, revision.changed_by) == (3, 1, nist)


def test_it_refuses_unpooled_documents_and_stores_nothing(pool, nist, tmp_path):
    path = write(tmp_path, GOOD + "q1 0 d019 1\nq9 0 d001 1\n")
    with pytest.raises(CommandError) as failure:
        run("import_judgements", "legacy", path, "--rater", "nist")
    message = str(failure.value)
    assert message.startswith("nothing imported:")
    assert f"{path}:6: q1 d019 is not in pool legacy" in message
    assert f"{path}:7: q9 d001 is not in pool legacy" in message
    assert not Judgement.objects.exists()
    assert not PoolItem.objects.filter(num_judgements__gt=0).exists()


def test_it_skips_unpooled_documents_when_asked(pool, nist, tmp_path):
    path = write(tmp_path, GOOD + "q1 0 d019 1\n")
    out = run("import_judgements", "legacy", path, "--rater", "nist", "--skip-unpooled")
    assert "5 rows, 3 created, 0 updated, 1 unpooled skipped" in out
    assert len(stored(nist)) == 3


def test_it_refuses_a_grade_off_the_rubric_and_stores_nothing(pool, nist, tmp_path):
    path = write(tmp_path, "q1 0 d001 3\nq1 0 d002 7\n")
    with pytest.raises(CommandError, match=rf"{path}:2: grade 7 is not on the rubric"):
        run("import_judgements", "legacy", path, "--rater", "nist")
    assert not Judgement.objects.exists()


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ("q1 0 d001 3\nq1 0 d002\n", 2, "expected 4 fields"),
        ("q1 0 d001 3\nq1 0 d002 1.0\n", 2, "is not an integer"),
        ("q1 0 d001 3\nq1 0 d002 2\nq1 0 d001 1\n", 3, "duplicate judgement for qid 'q1', docid 'd001'"),
    ],
)
def test_it_refuses_a_bad_file_with_file_line_message_and_stores_nothing(
    pool, nist, tmp_path, text, line, message
):
    path = write(tmp_path, text)
    with pytest.raises(CommandError) as failure:
        run("import_judgements", "legacy", path, "--rater", "nist")
    assert f"{path}:{line}: " in str(failure.value) and message in str(failure.value)
    assert not Judgement.objects.exists()


def test_it_exits_non_zero_with_the_errors_on_stderr(pool, nist, tmp_path, capsys, monkeypatch):
    path = write(tmp_path, "q1 0 d001 x\n")
    # run_from_argv closes every connection when it ends, which would end the test's transaction too
    monkeypatch.setattr("django.db.connections.close_all", lambda: None)
    with pytest.raises(SystemExit) as exit_:
        ImportCommand().run_from_argv(["manage.py", "import_judgements", "legacy", path, "--rater", "nist"])
    assert exit_.value.code == 1
    assert f"{path}:1: relevance 'x' is not an integer" in capsys.readouterr().err
    assert not Judgement.objects.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere", "FILE", "--rater", "nist"], "no pool named 'nowhere'"),
        (["legacy", "FILE", "--rater", "ghost"], "no user named 'ghost'"),
        (["legacy", "/no/such/file.qrels", "--rater", "nist"], "/no/such/file.qrels: file not found"),
    ],
)
def test_it_names_what_is_missing(pool, nist, tmp_path, args, message):
    args = [write(tmp_path, GOOD) if arg == "FILE" else arg for arg in args]
    with pytest.raises(CommandError, match=message):
        run("import_judgements", *args)


def test_it_refuses_a_pool_without_judging(nist, tmp_path):
    pool = make_pool(name="bare")
    Judging.objects.filter(pool=pool).delete()
    with pytest.raises(CommandError, match="no judging set up"):
        run("import_judgements", "bare", write(tmp_path, GOOD), "--rater", "nist")


# -------------------------------------------------------------------------------------------- add_raters


def test_it_adds_existing_users_as_raters(pool, rater, second_rater, outsider):
    out = run("add_raters", "legacy", "rater, rater2,outsider")
    assert "2 rater(s) added, 1 already raters, 3 in all" in out
    assert set(Judging.objects.get(pool=pool).raters.values_list("username", flat=True)) == {
        "rater", "rater2", "outsider",
    }  # fmt: skip


def test_it_sets_up_judging_with_the_default_rubric_when_missing(rater):
    pool = make_pool(name="fresh")
    Judging.objects.filter(pool=pool).delete()
    out = run("add_raters", "fresh", "rater")
    judging = Judging.objects.get(pool=pool)
    assert judging.rubric == rubrics.default_rubric() and "rubric relevance-4 v1" in out
    assert list(judging.raters.all()) == [rater]


def test_it_keeps_the_pools_adjudication_gap(pool, second_rater):
    membership.setup_judging(pool=pool, adjudication_gap=3)
    run("add_raters", "legacy", "rater2")
    assert Judging.objects.get(pool=pool).adjudication_gap == 3


def test_it_creates_users_with_the_password_from_a_file(pool, tmp_path):
    secret = write(tmp_path, "correct-horse-battery-9\nignored\n", "password.txt")
    out = run("add_raters", "legacy", "ann,bob", "--create", "--password-file", secret)
    assert "created users: ann, bob" in out
    for name in ("ann", "bob"):
        user = User.objects.get(username=name)
        assert user.check_password("correct-horse-battery-9")
        assert Judging.objects.filter(pool=pool, raters=user).exists()


def test_it_creates_users_without_a_usable_password_when_no_file_is_given(pool):
    out = run("add_raters", "legacy", "cy", "--create")
    assert "no usable password" in out
    assert not User.objects.get(username="cy").has_usable_password()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere", "rater"], "no pool named 'nowhere'"),
        (["legacy", "ghost,phantom"], "no user named 'ghost', 'phantom' \\(--create to create them\\)"),
        (["legacy", " , "], "name at least one user"),
        (["legacy", "ann", "--password-file", "F"], "--password-file goes with --create"),
        (["legacy", "ann", "--create", "--password-file", "/no/such/file"], "/no/such/file: No such file"),
        (["legacy", "ann", "--create", "--password-file", "WEAK"], "password refused for 'ann'"),
    ],
)
def test_it_refuses_bad_add_raters_requests_and_creates_nobody(pool, tmp_path, args, message):
    files = {
        "F": write(tmp_path, "long-enough-pass-77\n", "f.txt"),
        "WEAK": write(tmp_path, "123\n", "weak.txt"),
    }
    with pytest.raises(CommandError, match=message):
        run("add_raters", *[files.get(arg, arg) for arg in args])
    assert not User.objects.filter(username__in=["ann", "ghost", "phantom"]).exists()


def test_it_writes_new_judgements_in_a_few_statements_whatever_the_lines(pool, nist, rater, tmp_path):
    """New judgements are written a chunk at a time (their rows, the items' counts, the rater's leases
    ended), not four statements a line: 5,000 lines took 12 s, 100,000 some 4 minutes. The queries do not
    grow with the lines; the counts and the lease the import ends are as one line at a time left them."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from judgements.models import Assignment
    from tests.factories import lease_for

    lease = lease_for(pool=pool, rater=rater)  # a live lease, before the imports leave nothing to lease
    assert lease is not None
    membership.setup_judging(pool=pool, raters=[make_user("archive")])
    items = list(PoolItem.objects.filter(pool=pool).values_list("topic__qid", "document__docid"))
    queries = []
    for name, lines in (("nist", items[:2]), ("archive", items)):
        text = "".join(f"{qid} 0 {docid} 1\n" for qid, docid in lines)
        with CaptureQueriesContext(connection) as captured:
            run("import_judgements", "legacy", write(tmp_path, text, f"{name}.qrels"), "--rater", name)
        queries.append(len(captured))
    assert queries[1] == queries[0], queries  # 2 lines or all 10: the same statements
    counts = dict(PoolItem.objects.filter(pool=pool).values_list("document__docid", "num_judgements"))
    assert counts == {docid: 1 + (i < 2) for i, (_, docid) in enumerate(items)}
    # a rater's live lease on an item of their file ends with the import, its item's lease given back
    text = "".join(f"{qid} 0 {docid} 2\n" for qid, docid in items)
    run("import_judgements", "legacy", write(tmp_path, text, "rater.qrels"), "--rater", rater.username)
    lease.refresh_from_db()
    assert lease.state == Assignment.State.DONE
    assert PoolItem.objects.get(pk=lease.item_id).active_leases == 0
    assert Judgement.objects.filter(rater=rater, imported=True, grade=2).count() == len(items)
