"""A new rater's username follows Django's own rules (the username field's validators: letters, digits and
@.+-_, at most 150), in one place that every way of making an account goes through: the judging page, the
`add_raters --create` command and a crowd import's new workers (command, API, page). A refused name says
which field and why, and creates nothing. And the manager's rater page works for every rater who judged,
an odd but valid name or one with a '/' stored before the rule (its exclude and restore buttons too)."""

from __future__ import annotations

import io
import re
from html import unescape
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urljoin

import pytest
from django.contrib.auth.models import Group, User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client
from django.urls import reverse

from judgements import membership
from judgements.crowd_import import import_crowd_judgements
from judgements.models import CrowdWorker, Judgement, Judging, RaterExclusion
from pooling.errors import ImportFailed
from pooling.models import Job
from pooling.permissions import MANAGERS_GROUP
from tests.conftest import client_for
from tests.factories import make_pool, make_user
from tests.judgements.test_releases import judge

pytestmark = pytest.mark.usefixtures("fast_passwords")

BAD_NAMES = ["<b>x</b>", "a/b", "sp ace", "tab\tbed", "comma,name", "x" * 151]
ODD_NAME = "ü.日本-x@y"


@pytest.fixture
def owner(db: None) -> User:
    user = make_user("owner")
    user.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    return user


@pytest.fixture
def pool(owner: User) -> Any:
    return make_pool(name="names", managers=[owner])


def browser(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def accounts() -> set[str]:
    return set(User.objects.values_list("username", flat=True))


# ------------------------------------------------------------------------------------------- the one rule


@pytest.mark.parametrize("name", BAD_NAMES)
def test_it_refuses_a_name_djangos_username_field_refuses_naming_the_field(db: None, name: str) -> None:
    before = accounts()
    with pytest.raises(membership.AccountRefused) as refused:
        membership.create_rater_account(username=name, password=None)
    assert refused.value.field == "username"
    assert str(refused.value).startswith("username ") and "refused" in str(refused.value)
    assert accounts() == before


def test_it_says_what_a_username_may_hold_and_how_long_it_may_be(db: None) -> None:
    with pytest.raises(membership.AccountRefused, match=r"letters, numbers, and @/\./\+/-/_"):
        membership.check_username("a/b")
    with pytest.raises(membership.AccountRefused, match="at most 150 characters"):
        membership.check_username("x" * 151)
    with pytest.raises(membership.AccountRefused, match="a username is needed"):
        membership.check_username("  ")


def test_it_takes_an_odd_but_valid_name_stripped_and_normalised_as_django_stores_it(db: None) -> None:
    assert membership.check_username(f" {ODD_NAME} ") == ODD_NAME
    assert membership.check_username("x" * 150) == "x" * 150
    assert membership.check_username("ＡＢ") == "AB"  # NFKC, as create_user and the login form do
    user = membership.create_rater_account(username=ODD_NAME, password=None)
    assert user.username == ODD_NAME and not user.has_usable_password()


@pytest.mark.parametrize("name", [".", "..", " .. "])
def test_it_refuses_a_name_no_url_path_can_carry(pool: Any, owner: User, name: str) -> None:
    before = accounts()
    with pytest.raises(membership.AccountRefused, match=r"refused: a URL cannot carry it") as refused:
        membership.create_rater_account(username=name, password=None)
    assert refused.value.field == "username"
    assert membership.check_username("...") == "..."  # not a dot segment: a path holds it
    url = reverse("judging-setup:judging", kwargs={"name": "names"})
    answer = browser(owner).post(url, {"action": "create", "username": name, "password": "a-long-pass-9"})
    assert (
        answer.status_code == 200 and "a URL cannot carry it" in answer.context["new"].errors["username"][0]
    )
    with pytest.raises(CommandError, match="a URL cannot carry it"):
        call_command("add_raters", "names", name, "--create", stdout=io.StringIO())
    assert accounts() == before


def test_a_crowd_import_refuses_a_new_worker_named_dot_dot_on_its_line(pool: Any, tmp_path: Path) -> None:
    path = crowd_file(tmp_path, "worker,qid,docid,label\nw1,q1,d001,1\n..,q1,d002,2\n", "dots.csv")
    with pytest.raises(ImportFailed) as failed:
        import_crowd_judgements(pool=pool, path=path, create_raters=True, display_name="dots.csv")
    assert [e.split(" (")[0] for e in failed.value.errors] == [
        "dots.csv:3: worker '..' cannot have an account"
    ]
    assert not Judgement.objects.exists() and not User.objects.filter(username="w1").exists()


# ------------------------------------------------------------------------------------------ the page


@pytest.mark.parametrize("name", ["<b>x</b>", "a/b", "sp ace"])
def test_the_judging_page_refuses_a_bad_name_beside_its_field_and_creates_nothing(
    pool: Any, owner: User, name: str
) -> None:
    before = accounts()
    url = reverse("judging-setup:judging", kwargs={"name": "names"})
    answer = browser(owner).post(url, {"action": "create", "username": name, "password": "a-long-pass-9"})
    assert answer.status_code == 200
    errors = answer.context["new"].errors["username"]
    assert len(errors) == 1 and errors[0].startswith(f"username {name!r} refused: Enter a valid username")
    assert "Enter a valid username" in answer.content.decode()
    assert accounts() == before and not Judging.objects.get(pool=pool).raters.exists()


def test_the_judging_page_creates_an_odd_but_valid_name_who_can_log_in(pool: Any, owner: User) -> None:
    url = reverse("judging-setup:judging", kwargs={"name": "names"})
    answer = browser(owner).post(url, {"action": "create", "username": ODD_NAME, "password": "a-long-pass-9"})
    assert answer.status_code == 302
    assert Judging.objects.get(pool=pool).raters.get().username == ODD_NAME
    assert Client().login(username=ODD_NAME, password="a-long-pass-9")


# -------------------------------------------------------------------------------------- add_raters


@pytest.mark.parametrize("name", ["<b>x</b>", "a/b", "sp ace", "x" * 151])
def test_add_raters_refuses_a_bad_name_and_creates_nobody(pool: Any, name: str) -> None:
    before = accounts()
    with pytest.raises(CommandError, match=r"^username '.*' refused: Ensure|^username '.*' refused: Enter"):
        call_command("add_raters", "names", f"ann,{name}", "--create", stdout=io.StringIO())
    assert accounts() == before  # ann, made before the bad name, is undone too
    assert not Judging.objects.get(pool=pool).raters.exists()


def test_add_raters_creates_an_odd_but_valid_name(pool: Any) -> None:
    out = io.StringIO()
    call_command("add_raters", "names", ODD_NAME, "--create", stdout=out)
    assert f"created users: {ODD_NAME}" in out.getvalue()
    assert Judging.objects.get(pool=pool).raters.get().username == ODD_NAME


# -------------------------------------------------------------------------------------- crowd imports

CROWD = "worker\tqid\tdocid\tlabel\nA1B2.c@d-e_f+g\tq1\td001\t2\nw 2\tq1\td002\t1\nw 2\tq1\td003\t1\n"
CROWD_WRONG_ROW_FIRST = "worker,qid,docid,label\nx/y,q1,nope,1\nx/y,q1,d001,1\n"


def crowd_file(tmp_path: Path, text: str = CROWD, name: str = "crowd.tsv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_crowd_import_refuses_a_new_worker_whose_id_is_no_username_on_its_line(
    pool: Any, tmp_path: Path
) -> None:
    before = accounts()
    with pytest.raises(ImportFailed) as failed:
        import_crowd_judgements(
            pool=pool, path=crowd_file(tmp_path), create_raters=True, display_name="crowd.tsv"
        )
    assert failed.value.errors == [
        "crowd.tsv:3: worker 'w 2' cannot have an account (create_raters): username 'w 2' refused: Enter a "
        "valid username. This value may contain only letters, numbers, and @/./+/-/_ characters."
    ]  # its first row only; the valid worker of line 2 is no error, and not created either
    assert accounts() == before and not Judgement.objects.exists()
    # the worker's first kept row is the one named (an unpooled row is skipped before)
    with pytest.raises(ImportFailed, match=r"crowd.csv:3: worker 'x/y' cannot have an account"):
        import_crowd_judgements(
            pool=pool, path=crowd_file(tmp_path, CROWD_WRONG_ROW_FIRST, "crowd.csv"),
            create_raters=True, skip_unpooled=True,
        )  # fmt: skip
    # a worker id that Django would store otherwise is refused too: the next import could not find it
    with pytest.raises(ImportFailed, match="worker 'ＡＢ' cannot have an account .* stored as 'AB'"):
        import_crowd_judgements(
            pool=pool, path=crowd_file(tmp_path, "worker,qid,docid,label\nＡＢ,q1,d001,1\n", "wide.csv"),
            create_raters=True,
        )  # fmt: skip
    assert accounts() == before and not Judgement.objects.exists()


def test_a_crowd_import_makes_accounts_for_valid_worker_ids_and_finds_them_again(
    pool: Any, tmp_path: Path
) -> None:
    text = "worker,qid,docid,label\nA1B2.c@d-e_f+g,q1,d001,2\n" + f"{ODD_NAME},q1,d002,1\n"
    path = crowd_file(tmp_path, text, "good.csv")
    summary = import_crowd_judgements(pool=pool, path=path, create_raters=True)
    assert summary.raters_created == 2 and summary.created == 2
    assert {"A1B2.c@d-e_f+g", ODD_NAME} <= accounts()
    again = import_crowd_judgements(pool=pool, path=path, create_raters=True)
    assert again.raters_created == 0 and again.revised == 2


def test_a_crowd_import_finds_an_old_account_by_its_id_and_skips_an_unknown_bad_worker_without_create(
    pool: Any, tmp_path: Path
) -> None:
    old = User.objects.create(username="w 2")  # a worker's, stored before the rule: found by its id
    CrowdWorker.objects.create(worker_id="w 2", user=old)
    summary = import_crowd_judgements(pool=pool, path=crowd_file(tmp_path), create_raters=True)
    assert summary.raters_created == 1 and summary.created == 3
    text = "worker,qid,docid,label\nno/such,q1,d001,2\n"
    summary = import_crowd_judgements(pool=pool, path=crowd_file(tmp_path, text, "unknown.csv"))
    assert dict(summary.skipped) == {"unknown worker": 1}


def test_the_import_command_refuses_a_bad_worker_id_with_its_line(pool: Any, tmp_path: Path) -> None:
    before = accounts()
    with pytest.raises(CommandError, match="crowd.tsv:3: worker 'w 2' cannot have an account"):
        call_command(
            "import_judgements", "names", str(crowd_file(tmp_path)), "--crowd", "--create-raters",
            stdout=io.StringIO(),
        )  # fmt: skip
    assert accounts() == before and not Judgement.objects.exists()


def test_the_crowd_api_and_page_refuse_a_bad_worker_id_with_a_400_and_its_line(
    pool: Any, owner: User, django_capture_on_commit_callbacks: Any
) -> None:
    before = accounts()
    with django_capture_on_commit_callbacks(execute=True):
        answer = client_for(owner).post(
            "/api/judging/names/crowd-imports/",
            {"file": SimpleUploadedFile("crowd.tsv", CROWD.encode()), "create_raters": "true"},
            format="multipart",
        )
        page = browser(owner).post(
            "/manage/pools/names/crowd/",
            {"file": SimpleUploadedFile("crowd.tsv", CROWD.encode()), "duplicates": "last",
             "create_raters": "on"},
        )  # fmt: skip
    assert answer.status_code == 400
    assert [line.split(" cannot")[0] for line in answer.json()["file"]] == ["crowd.tsv:3: worker 'w 2'"]
    assert (
        page.status_code == 400 and "crowd.tsv:3: worker &#x27;w 2&#x27; cannot have" in page.content.decode()
    )
    assert accounts() == before and not Judgement.objects.exists() and not Job.objects.exists()


# ---------------------------------------------------------------------------------- the rater page


def buttons(html: str) -> dict[str, dict[str, str]]:
    """The rater page's exclude / restore forms by rater id: their action and hidden fields."""
    found = {}
    for action, fields in re.findall(r'<form method="post" action="([^"]+)">(.*?)</form>', html, re.S):
        hidden = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)">', fields))
        if "rater" in hidden:
            found[hidden["rater"]] = {
                "action": unescape(action),
                **{k: unescape(v) for k, v in hidden.items()},
            }
    return found


def press(client: Client, form: dict[str, str]) -> Any:
    """Post a page's form as a browser would: to its action resolved as a URL (dot segments removed)."""
    url = urljoin("http://testserver/manage/pools/names/", form["action"]).removeprefix("http://testserver")
    return client.post(url, {k: v for k, v in form.items() if k != "action"})


@pytest.mark.filterwarnings("ignore:Glyph .* missing from font")  # the chart's font has no CJK
def test_the_rater_page_works_for_an_odd_name_and_one_with_a_slash(pool: Any, owner: User) -> None:
    odd = membership.create_rater_account(username=ODD_NAME, password=None)
    slashed = User.objects.create(username="a/b")  # older than the rule (or an admin's): it may exist
    membership.setup_judging(pool=pool, raters=[odd, slashed])
    judge(pool, odd, {("q1", "d001"): 3, ("q1", "d002"): 0})
    judge(pool, slashed, {("q1", "d001"): 0, ("q1", "d002"): 0})
    client = browser(owner)
    page = client.get("/manage/pools/names/")
    assert page.status_code == 200
    html = page.content.decode()
    assert ODD_NAME in html and "a/b" in html
    assert press(client, buttons(html)[str(slashed.pk)]).status_code == 302
    assert RaterExclusion.objects.get(restored_at__isnull=True).rater == slashed
    restore = buttons(client.get("/manage/pools/names/").content.decode())[str(slashed.pk)]
    assert restore["action"] == "/manage/pools/names/raters/restore/"
    assert press(client, restore).status_code == 302
    assert not RaterExclusion.objects.filter(restored_at__isnull=True).exists()
    # the routes with the username in the path still work for the names a path holds
    exclude = reverse("judging-manage:exclude-rater", kwargs={"pool": "names", "username": "a/b"})
    assert exclude == "/manage/pools/names/raters/a/b/exclude/"
    assert client.post(exclude, {"reason": "constant"}).status_code == 302
    assert RaterExclusion.objects.get(restored_at__isnull=True).rater == slashed
    odd_exclude = reverse("judging-manage:exclude-rater", kwargs={"pool": "names", "username": ODD_NAME})
    assert client.post(odd_exclude).status_code == 302
    assert RaterExclusion.objects.filter(restored_at__isnull=True).count() == 2


@pytest.mark.parametrize("name", ["..", ".", "line\nbreak"])
def test_it_excludes_and_restores_a_rater_whose_name_no_url_path_can_hold_from_the_page(
    pool: Any, owner: User, name: str
) -> None:
    odd = User.objects.create(username=name)  # older than the rule (or an admin's): it may exist
    membership.setup_judging(pool=pool, raters=[odd])
    judge(pool, odd, {("q1", "d001"): 3})
    client = browser(owner)
    page = client.get("/manage/pools/names/")
    assert page.status_code == 200
    exclude = buttons(page.content.decode())[str(odd.pk)]
    assert exclude["action"] == "/manage/pools/names/raters/exclude/"
    assert press(client, exclude).status_code == 302
    assert RaterExclusion.objects.get(restored_at__isnull=True).rater == odd
    restore = buttons(client.get("/manage/pools/names/").content.decode())[str(odd.pk)]
    assert press(client, restore).status_code == 302
    assert not RaterExclusion.objects.filter(restored_at__isnull=True).exists()


def test_it_answers_404_for_a_rater_outside_the_pool_by_id_and_by_name(pool: Any, owner: User) -> None:
    elsewhere = make_pool(name="elsewhere", managers=[owner])
    stranger = User.objects.create(username="..")
    judge(elsewhere, stranger, {("q1", "d001"): 1})  # judged in another pool of the same manager
    client = browser(owner)
    for data in ({"rater": str(stranger.pk)}, {"rater": "999999"}, {"rater": "x"}, {}):
        for url in ("/manage/pools/names/raters/exclude/", "/manage/pools/names/raters/restore/"):
            assert client.post(url, data).status_code == 404
    assert client.post("/manage/pools/names/raters/../exclude/").status_code == 404
    assert client.post("/manage/pools/names/raters/owner/exclude/").status_code == 404  # no judgement here
    assert not RaterExclusion.objects.exists()


def query(path: str, **params: str) -> str:
    return f"{path}?{urlencode(params)}"


def test_it_removes_and_restores_a_rater_whose_name_no_url_path_can_hold_through_the_api(
    pool: Any, owner: User
) -> None:
    dots, slashed = User.objects.create(username=".."), User.objects.create(username="a/b")
    membership.setup_judging(pool=pool, raters=[dots, slashed])
    judge(pool, dots, {("q1", "d001"): 3})
    api = client_for(owner)
    assert api.post("/api/rater-quality/names/exclusions/", {"rater": ".."}, format="json").status_code == 201
    answer = api.delete(query("/api/rater-quality/names/exclusions/", rater=".."))
    assert answer.status_code == 200 and answer.json()["rater"] == ".." and not answer.json()["active"]
    assert api.delete(query("/api/rater-quality/names/exclusions/", rater="..")).status_code == 400  # not now
    assert (
        api.delete(query("/api/rater-quality/names/exclusions/", rater="a/b")).status_code == 404
    )  # judged nothing
    assert api.delete("/api/judging/names/raters/a%2Fb/").status_code == 404  # a path cannot carry it
    assert api.delete(query("/api/judging/names/raters/", username="a/b")).status_code == 204
    assert api.delete(query("/api/judging/names/raters/", username="..")).status_code == 204
    assert not Judging.objects.get(pool=pool).raters.exists()
    assert (
        api.delete(query("/api/judging/names/raters/", username="..")).status_code == 404
    )  # not a rater now
    assert api.delete(query("/api/judging/names/raters/", username="owner")).status_code == 404
    assert api.delete("/api/judging/names/raters/rater-of-nothing/").status_code == 404


def test_only_the_pools_managers_may_remove_or_restore_by_name_in_the_query(pool: Any, owner: User) -> None:
    dots = User.objects.create(username="..")
    membership.setup_judging(pool=pool, raters=[dots])
    judge(pool, dots, {("q1", "d001"): 3})
    other = make_user("other")
    other.groups.add(Group.objects.get_or_create(name=MANAGERS_GROUP)[0])
    for user, code in ((None, 401), (dots, 403), (other, 404)):
        api = client_for(user)
        assert api.delete(query("/api/judging/names/raters/", username="..")).status_code == code
        assert api.delete(query("/api/rater-quality/names/exclusions/", rater="..")).status_code == code
    assert Judging.objects.get(pool=pool).raters.get() == dots
