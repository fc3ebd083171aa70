"""A release written by two processes (`release_halves`): the bytes and the counts of one process, one
snapshot of the database for both, and a failure of either side fails the release and leaves nothing.

These tests commit (a forked child reads only committed rows), so they are transactional, and they run on
PostgreSQL only: elsewhere a release is always written by one process."""

from __future__ import annotations

import dataclasses
import threading
from pathlib import Path

import pytest
from django.db import connection, transaction

from judgements import release_files, release_halves, releases
from judgements.models import Judgement, Release
from pooling.models import PoolItem
from tests.judgements.test_release_bytes import FILES, build_pool

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="two processes on PostgreSQL only"),
    pytest.mark.django_db(transaction=True),
]


@pytest.fixture
def split(monkeypatch):
    """Split every release (no minimum size), and record each second process started."""
    started: list[release_halves.SecondHalf] = []
    monkeypatch.setattr(release_halves, "MIN_ROWS", 0)
    original = release_halves.SecondHalf.__init__

    def record(self, *args, **kwargs):
        original(self, *args, **kwargs)
        started.append(self)

    monkeypatch.setattr(release_halves.SecondHalf, "__init__", record)
    return started


def written(pool, work: Path, *, policy: str = "majority", explicit: bool = True):
    work.mkdir()
    parsed = releases.check_policy(pool=pool, policy=policy)
    tally = release_files.write_qrels_and_judgements(work, pool=pool, policy=parsed, explicit=explicit)
    return {name: (work / name).read_bytes() for name in FILES}, dataclasses.asdict(tally)


@pytest.mark.parametrize("share", [0.2, 0.5, 0.9])
@pytest.mark.parametrize(("exotic", "required"), [(False, 2), (True, 1)])
def test_two_processes_write_the_bytes_and_counts_of_one(
    tmp_path, split, monkeypatch, settings, share, exotic, required
):
    pool, _ = build_pool(exotic=exotic, required=required)
    monkeypatch.setattr(release_halves, "CHILD_SHARE", share)
    for policy in ("majority", "mean", "rater:alice"):
        for explicit in (True, False):
            name = f"{policy}-{explicit}".replace(":", "_")
            settings.RELEASE_PROCESSES = 1
            one = written(pool, tmp_path / f"one-{name}", policy=policy, explicit=explicit)
            settings.RELEASE_PROCESSES = 2
            two = written(pool, tmp_path / f"two-{name}", policy=policy, explicit=explicit)
            assert two == one, (policy, explicit)
            assert not (tmp_path / f"two-{name}" / release_halves.PART).exists()
    assert len(split) == 6  # every release of two processes was split
    first_qids = {half.first[1] for half in split}
    assert first_qids <= {"q2", "q3"} and first_qids  # whole topics on either side


def test_a_release_of_two_processes_has_the_manifest_of_one(split, settings):
    pool, _ = build_pool(exotic=True, required=1)
    settings.RELEASE_PROCESSES = 1
    one = releases.create_release(pool=pool, policy="majority")
    settings.RELEASE_PROCESSES = 2
    two = releases.create_release(pool=pool, policy="majority")
    assert len(split) == 1
    root = Path(settings.MEDIA_ROOT)
    for name in (*FILES, "manifest.json"):
        assert (root / two.directory / name).read_bytes() == (root / one.directory / name).read_bytes(), name
    assert two.counts == one.counts
    assert sorted(path.name for path in (root / two.directory).iterdir()) == sorted(
        path.name for path in (root / one.directory).iterdir()
    )


def test_both_processes_read_one_snapshot(tmp_path, split, monkeypatch):
    """A change committed after the release began is in neither half, nor in what the manifest reads,
    though the second process reads its topics and the manifest's figures only once it has committed."""
    pool, _ = build_pool()
    monkeypatch.setattr(release_halves, "CHILD_SHARE", 0.9)  # the child writes q2 and q3
    flag = tmp_path / "changed"
    original = release_files.write_files

    def write_files(directory, **kwargs):
        if kwargs["qids"] is not None and kwargs["qids"][0] is not None:  # the child: wait for the change
            for _ in range(500):
                if flag.exists():
                    break
                threading.Event().wait(0.01)
        elif not flag.exists():  # the parent, once the child runs: commit a change on another connection
            change = threading.Thread(target=note_changed, args=(pool, flag))
            change.start()
            change.join()
        return original(directory, **kwargs)

    monkeypatch.setattr(release_files, "write_files", write_files)
    before, counted = written(pool, tmp_path / "during")
    assert flag.exists() and len(split) == 1
    assert b"changed after the snapshot" not in before["judgements.jsonl"]
    assert counted["facts"]["unselected_candidates"] == 0
    monkeypatch.setattr(release_files, "write_files", original)
    after, counted = written(pool, tmp_path / "after")
    assert b"changed after the snapshot" in after["judgements.jsonl"]
    assert counted["facts"]["unselected_candidates"] == 1


def note_changed(pool, flag: Path) -> None:
    try:
        with transaction.atomic():
            judgement = (
                Judgement.objects.filter(item__pool=pool, item__topic__qid="q2").order_by("pk").first()
            )
            assert judgement is not None
            Judgement.objects.filter(pk=judgement.pk).update(note="changed after the snapshot")
            # and what the manifest reads (`release_manifest.pool_facts`, in the second process)
            PoolItem.objects.filter(pk=PoolItem.objects.filter(pool=pool).earliest("pk").pk).update(
                selected=False
            )
        flag.write_text("committed")
    finally:
        connection.close()


def test_a_failing_second_process_fails_the_release_and_leaves_nothing(split, monkeypatch, settings):
    pool, _ = build_pool()
    original = release_files.write_files

    def write_files(directory, **kwargs):
        if kwargs["qids"] is not None and kwargs["qids"][0] is not None:
            raise ValueError("the child broke")
        return original(directory, **kwargs)

    monkeypatch.setattr(release_files, "write_files", write_files)
    with pytest.raises(RuntimeError, match="second process of the release failed.*the child broke"):
        releases.create_release(pool=pool, policy="majority")
    assert not Release.objects.exists()
    assert list((Path(settings.MEDIA_ROOT) / "releases" / pool.name).iterdir()) == []


def test_a_failing_first_process_ends_the_second_and_leaves_nothing(split, monkeypatch, settings):
    pool, _ = build_pool()
    original = release_files.write_files
    children: list[int] = []

    def write_files(directory, **kwargs):
        if kwargs["qids"] is not None and kwargs["qids"][0] is not None:
            threading.Event().wait(60)  # the child would take long: the parent must not wait for it
            return original(directory, **kwargs)
        children.extend(half.pid for half in split)
        raise ValueError("the parent broke")

    monkeypatch.setattr(release_files, "write_files", write_files)
    with pytest.raises(ValueError, match="the parent broke"):
        releases.create_release(pool=pool, policy="majority")
    assert children and all(half.pid is None for half in split)  # killed and reaped
    assert not Release.objects.exists()
    assert list((Path(settings.MEDIA_ROOT) / "releases" / pool.name).iterdir()) == []


def test_one_process_inside_an_enclosing_transaction_or_below_the_minimum(split, monkeypatch, tmp_path):
    pool, _ = build_pool()
    with transaction.atomic():  # an enclosing transaction's rows would be missing from a child's snapshot
        inside, _ = written(pool, tmp_path / "inside")
    monkeypatch.setattr(release_halves, "MIN_ROWS", 10**9)
    small, _ = written(pool, tmp_path / "small")
    assert split == []
    monkeypatch.setattr(release_halves, "MIN_ROWS", 0)
    assert written(pool, tmp_path / "split")[0] == inside == small
    assert len(split) == 1


@pytest.mark.django_db(transaction=False)
def test_the_second_process_ends_with_the_first():
    """`_die_with`: a child whose parent is killed is ended by the kernel, not left writing for nobody."""
    import os
    import signal
    import time

    read, write = os.pipe()
    parent = os.fork()
    if parent == 0:  # the first process: fork the second, tell its pid, wait to be killed
        try:
            me = os.getpid()
            child = os.fork()
            if child == 0:
                release_halves._die_with(me)
                time.sleep(30)
                os._exit(0)
            os.write(write, f"{child}\n".encode())
            time.sleep(30)
        finally:
            os._exit(0)
    os.close(write)
    child = int(os.read(read, 100).decode())
    os.kill(parent, signal.SIGKILL)
    os.waitpid(parent, 0)
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and _alive(child):
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    """Whether the process runs (a zombie waiting to be reaped does not)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ")[1][0] not in "ZX"
    except FileNotFoundError:
        return False


def test_one_process_reads_the_manifests_figures_on_the_snapshot_of_its_pass(tmp_path, settings, monkeypatch):
    """With one process too (`one_snapshot`): a change committed after the pass is not in the figures the
    manifest reads after it."""
    from judgements import release_manifest

    pool, _ = build_pool()
    settings.RELEASE_PROCESSES = 1
    original = release_manifest.pool_facts
    flag = tmp_path / "changed"

    def pool_facts(*, pool):
        change = threading.Thread(target=note_changed, args=(pool, flag))
        change.start()
        change.join()
        return original(pool=pool)

    monkeypatch.setattr(release_manifest, "pool_facts", pool_facts)
    _, counted = written(pool, tmp_path / "one")
    assert flag.exists()
    assert counted["facts"]["unselected_candidates"] == 0
    assert original(pool=pool)["unselected_candidates"] == 1
