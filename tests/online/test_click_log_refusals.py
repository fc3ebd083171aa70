"""A click log's name, pool and files are checked by the one import service before it touches anything,
whoever calls it (command, API, job): a bad one is a clear error, nothing outside the log's own archive
folder is ever removed, and no upload is left behind."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from online import clicklogs
from online.clicklogs import import_click_log
from online.models import ClickCount, ClickLog
from pooling.errors import Refused
from pooling.models import Job
from tests.conftest import client_for
from tests.factories import make_collection, make_pool

pytestmark = pytest.mark.django_db

PAGE = {"session": "s1", "qid": "q1", "docids": ["d001", "d002"], "clicks": [1]}


def write_log(tmp_path: Path, name: str = "log.jsonl") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(PAGE) + "\n")
    return str(path)


def keepsake(folder: Path) -> Path:
    """A file in `folder` (made) that no import may remove."""
    folder.mkdir(parents=True, exist_ok=True)
    kept = folder / "keep.txt"
    kept.write_text("precious")
    return kept


def run(*argv: str) -> str:
    out = io.StringIO()
    call_command(*argv, stdout=out, stderr=io.StringIO())
    return out.getvalue()


@pytest.mark.parametrize("name", ["..", "../../releases", "./demo-clicks", "a/b", "", "x y", "a" * 101])
def test_it_refuses_a_name_that_is_not_a_slug_and_removes_nothing(tmp_path, name) -> None:
    collection = make_collection(name="pydocs")
    media = Path(settings.MEDIA_ROOT)
    logs = media / "clicklogs" / str(collection.pk)
    kept = [
        keepsake(media / "clicklogs"),  # what `..` names
        keepsake(media / "releases"),  # what `../../releases` names
        keepsake(logs / "demo-clicks"),  # another log's archive, what `./demo-clicks` names
    ]
    with pytest.raises(CommandError, match="name"):
        run("import_clicks", "pydocs", write_log(tmp_path), "--name", name)
    assert all(path.read_text() == "precious" for path in kept)
    assert not ClickLog.objects.exists()


def test_the_service_itself_refuses_a_name_that_is_not_a_slug(tmp_path) -> None:
    collection = make_collection()
    with pytest.raises(Refused) as caught:
        import_click_log(collection=collection, name="../x", format="jsonl", paths=[write_log(tmp_path)])
    assert caught.value.field == "name" and "slug" in str(caught.value)


def test_it_never_follows_a_leftover_folder_out_of_the_collections_archive(tmp_path) -> None:
    """A leftover is only removed when it is a folder strictly inside the collection's clicklogs folder: a
    link there to anywhere else (another log's archive, or outside MEDIA_ROOT) is refused, not followed."""
    collection = make_collection()
    logs = Path(settings.MEDIA_ROOT) / "clicklogs" / str(collection.pk)
    elsewhere = keepsake(tmp_path / "elsewhere")
    logs.mkdir(parents=True)
    (logs / "week1").symlink_to(elsewhere.parent, target_is_directory=True)
    with pytest.raises(Refused, match="not inside") as refused:
        import_click_log(collection=collection, name="week1", format="jsonl", paths=[write_log(tmp_path)])
    assert elsewhere.read_text() == "precious" and not ClickLog.objects.exists()
    assert str(settings.MEDIA_ROOT) not in str(refused.value)  # a refusal the API shows: no server path


def test_it_removes_a_real_leftover_of_an_earlier_attempt(tmp_path) -> None:
    collection = make_collection()
    leftover = keepsake(Path(settings.MEDIA_ROOT) / "clicklogs" / str(collection.pk) / "week1")
    log = import_click_log(collection=collection, name="week1", format="jsonl", paths=[write_log(tmp_path)])
    assert not leftover.exists() and (Path(settings.MEDIA_ROOT) / log.archive_dir).is_dir()


def test_a_failed_import_leaves_the_archive_of_the_log_it_collided_with(tmp_path) -> None:
    """An attempt refused because the name is taken removes nothing: that folder is the other log's."""
    collection = make_collection()
    log = import_click_log(collection=collection, name="week1", format="jsonl", paths=[write_log(tmp_path)])
    archive = Path(settings.MEDIA_ROOT) / log.archive_dir
    before = sorted(p.name for p in archive.iterdir())
    with pytest.raises(Refused, match="already has a click log"):
        import_click_log(collection=collection, name="week1", format="jsonl", paths=[write_log(tmp_path)])
    assert sorted(p.name for p in archive.iterdir()) == before


def test_it_refuses_a_pool_of_another_collection_from_the_command(tmp_path) -> None:
    make_collection(name="pydocs")
    other = make_collection(name="other")
    make_pool(collection=make_collection(name="third"), name="pydocs-pool")
    with pytest.raises(CommandError, match="pool pydocs-pool is not a pool of collection other"):
        run("import_clicks", "other", write_log(tmp_path), "--name", "w", "--pool", "pydocs-pool")
    assert not ClickLog.objects.filter(collection=other).exists()


def test_the_service_itself_refuses_a_pool_of_another_collection(tmp_path) -> None:
    pool = make_pool(collection=make_collection(), name="elsewhere")
    with pytest.raises(Refused) as caught:
        import_click_log(
            collection=make_collection(), name="w", format="jsonl", paths=[write_log(tmp_path)], pool=pool
        )
    assert caught.value.field == "pool"
    assert not ClickLog.objects.exists() and not ClickCount.objects.exists()


def test_it_refuses_a_directory_for_a_file(tmp_path) -> None:
    make_collection(name="pydocs")
    folder = tmp_path / "some" / "directory"
    folder.mkdir(parents=True)
    with pytest.raises(CommandError, match=f"{folder}: is a directory, not a file"):
        run("import_clicks", "pydocs", str(folder), "--name", "x")
    assert not ClickLog.objects.exists()
    assert not (Path(settings.MEDIA_ROOT) / "clicklogs").exists() or not any(
        (Path(settings.MEDIA_ROOT) / "clicklogs").rglob("*")
    )


def uploads() -> list[Path]:
    folder = Path(settings.MEDIA_ROOT) / "uploads" / "clicks"
    return [p for p in folder.rglob("*") if p.is_file()] if folder.exists() else []


def post(manager, **fields):
    collection = make_collection(managers=[manager])
    data = {
        "collection": collection.name,
        "name": "w",
        "format": "jsonl",
        "file": SimpleUploadedFile("clicks.jsonl", (json.dumps(PAGE) + "\n").encode()),
        **fields,
    }
    return client_for(manager).post("/api/click-logs/", data, format="multipart")


def test_an_upload_is_removed_whatever_stops_its_check(manager, monkeypatch) -> None:
    def broken(**_: object) -> ClickLog:
        raise RuntimeError("the disk went away")

    monkeypatch.setattr(clicklogs, "import_click_log", broken)
    with pytest.raises(RuntimeError):
        post(manager)
    assert uploads() == [] and not Job.objects.exists()


def test_the_api_refuses_a_bad_name_before_storing_the_upload(manager) -> None:
    answer = post(manager, name="../x")
    assert answer.status_code == 400 and "name" in answer.json()
    assert uploads() == [] and not Job.objects.exists()
