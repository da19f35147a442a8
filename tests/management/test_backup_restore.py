"""`manage.py backup` while a client keeps writing, `manage.py restore` into an empty data
directory, and a server on the restored store: every object at the snapshot's revision, as the
original server lists it at that revision; resource versions that go on past the old server's;
410 for a watch from before; and a restore that refuses a data directory already in use.
"""

from __future__ import annotations

import re
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support import liveserver, services
from tests.support.api import runtime_manifest
from tests.support.liveserver import PYTHON, REPO, LiveServer
from tests.support.manage import manage, manage_in

COLLECTION = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    yield from liveserver.serve("nodus-backup-")


class Writer:
    """Creates runtimes one after another, and relabels the first, until stopped."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.acknowledged: list[int] = []  # the resourceVersion of every acknowledged write
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        number = 0
        while not self.stop.is_set():
            number += 1
            made = self.client.post(COLLECTION, json=runtime_manifest(f"b-{number}"))
            assert made.status_code == 201, made.text
            self.acknowledged.append(int(made.json()["metadata"]["resourceVersion"]))
            patch = {"metadata": {"labels": {"round": str(number)}}}
            changed = self.client.patch(
                f"{COLLECTION}/b-1",
                json=patch,
                headers={"Content-Type": "application/merge-patch+json"},
            )
            assert changed.status_code == 200, changed.text
            self.acknowledged.append(int(changed.json()["metadata"]["resourceVersion"]))

    def finish(self) -> None:
        self.stop.set()
        self.thread.join(60)


def restore_in(data_dir: Path, backup: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(PYTHON), str(REPO / "manage.py"), "restore", str(backup)],
        cwd=REPO,
        env=liveserver.server_environment(data_dir),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def items_by_name(answer: httpx.Response) -> dict[str, dict[str, object]]:
    assert answer.status_code == 200, answer.text
    return {item["metadata"]["name"]: item for item in answer.json()["items"]}


def test_a_backup_taken_under_writes_restores_every_object_at_its_revision(
    server: LiveServer, tmp_path: Path
) -> None:
    restored_dir = tmp_path / "restored"
    restored_dir.mkdir()
    round_trip(server, tmp_path / "nodus.backup", restored_dir)


@pytest.mark.services
def test_a_postgresql_backup_restores_every_object_at_its_revision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with (
        services.temp_database("nodus_backup") as source,
        services.temp_database("nodus_restore") as target,
    ):
        source_dir, restored_dir = tmp_path / "source", tmp_path / "restored"
        urls = {source_dir: source, restored_dir: target}
        plain = liveserver.server_environment

        def environment(data_dir: Path) -> dict[str, str]:
            return {**plain(data_dir), "DATABASE_URL": urls[data_dir]}

        monkeypatch.setattr(liveserver, "server_environment", environment)
        for folder in urls:
            folder.mkdir()
        original = liveserver.start(source_dir, liveserver.prepare(source_dir))
        try:
            round_trip(original, tmp_path / "nodus.backup", restored_dir)
        finally:
            liveserver.stop(original)


def round_trip(server: LiveServer, backup: Path, restored_dir: Path) -> None:
    """Backs `server` up under writes, restores into `restored_dir`'s store and checks it."""
    with server.client("alice") as alice:
        writer = Writer(alice)
        try:
            while len(writer.acknowledged) < 20:
                time.sleep(0.05)
            manage(server, "backup", str(backup))
            during = len(writer.acknowledged)
            while len(writer.acknowledged) < during + 10:  # and writes go on after it
                time.sleep(0.05)
        finally:
            writer.finish()
        assert backup.stat().st_mode & 0o077 == 0  # it holds password hashes

        done = restore_in(restored_dir, backup)
        assert done.returncode == 0, done.stderr
        continues_from = int(re.findall(r"continue from (\d+)", done.stdout)[0])
        restored = liveserver.start(restored_dir, server.tokens)
        try:
            with restored.client("alice") as again:
                listed = again.get(COLLECTION)
                objects = items_by_name(listed)
                snapshot = max(int(o["metadata"]["resourceVersion"]) for o in objects.values())  # type: ignore[index]
                # Every object, with its uid, labels and revision, as the original server lists
                # the store at the snapshot's revision.
                original = alice.get(
                    COLLECTION,
                    params={"resourceVersion": str(snapshot), "resourceVersionMatch": "Exact"},
                )
                assert objects == items_by_name(original)
                # The snapshot is one moment of the writes: everything acknowledged up to it and
                # nothing after it, taken while they went on.
                assert any(rv > snapshot for rv in writer.acknowledged)
                assert {f"b-{n}" for n in range(1, 11)} <= set(objects)
                # Resource versions go on past anything the old server handed out.
                assert int(listed.json()["metadata"]["resourceVersion"]) == continues_from
                assert continues_from > max(writer.acknowledged)
                made = again.post(COLLECTION, json=runtime_manifest("after-restore"))
                assert made.status_code == 201, made.text
                assert int(made.json()["metadata"]["resourceVersion"]) > continues_from
                # A watch from before the restore gets 410 and must re-list.
                old = again.get(COLLECTION, params={"watch": "1", "resourceVersion": str(snapshot)})
                assert '"code":410' in old.text.replace(" ", "")
        finally:
            liveserver.stop(restored)

    # A second restore into the data directory now in use is refused, and changes nothing.
    refused = restore_in(restored_dir, backup)
    assert refused.returncode != 0
    assert "is not empty" in refused.stderr
    assert "after-restore" in manage_in(
        restored_dir,
        "shell",
        "-c",
        "from runtimes.storage.models import StoredObject\n"
        "print(list(StoredObject.objects.values_list('name', flat=True)))",
    )


def test_restore_refuses_what_is_not_a_backup_and_changes_nothing(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    text = tmp_path / "notes.txt"
    text.write_text("not a database")
    foreign = tmp_path / "other.sqlite3"
    sqlite3.connect(foreign).execute("CREATE TABLE t (x)").connection.commit()
    for given, says in (
        (tmp_path / "missing.backup", "no such backup file"),
        (text, "is not a SQLite backup"),
        (foreign, "not a nodus backup"),
    ):
        refused = restore_in(data, given)
        assert refused.returncode != 0
        assert says in refused.stderr
    database = data / "nodus.sqlite3"
    assert not database.exists() or database.stat().st_size == 0
