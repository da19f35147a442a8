"""/healthz, /livez and /readyz: kube-apiserver's answers, checks that really fail, exclusions."""

from __future__ import annotations

import json
import sys
import types
from typing import Any

import pytest
from django.test import Client

from runtimes.api import health
from runtimes.registry.kinds import lookup
from runtimes.storage import store
from tests.support.api import runtime_manifest
from tests.support.ports import free_port

pytestmark = pytest.mark.django_db


def test_it_answers_livez_with_ok() -> None:
    response = Client().get("/livez")
    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"].startswith("text/plain")


def test_it_answers_healthz_with_ok_to_anyone_as_kube_still_does() -> None:
    response = Client().get("/healthz")
    assert response.status_code == 200
    assert response.content == b"ok"
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert Client().get("/healthz/ping").content == b"ok"
    missing = Client().get("/healthz/database")  # a readiness check, not one of its own
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"


def test_it_lists_every_readiness_check_when_verbose() -> None:
    response = Client().get("/readyz?verbose")
    assert response.status_code == 200
    lines = response.content.decode().splitlines()
    assert lines == [f"[+]{name} ok" for name in health.READYZ_CHECKS] + ["readyz check passed"]
    assert {"database", "channel-layer", "hub-lag"} <= set(health.READYZ_CHECKS)


def test_it_fails_readyz_while_the_worker_pool_is_degraded(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under `serve --workers N` the supervisor writes the pool's state for its workers."""
    from runtimes.api.supervisor import POOL_FILE

    pool = tmp_path / "workers.json"
    monkeypatch.setenv(POOL_FILE, str(pool))
    pool.write_text(json.dumps({"asked": 3, "live": 2, "pids": [11, 12]}))
    degraded = Client().get("/readyz?verbose")
    assert degraded.status_code == 500
    assert "[-]workers failed: reason withheld" in degraded.content.decode()
    pool.write_text(json.dumps({"asked": 3, "live": 3, "pids": [11, 12, 13]}))
    whole = Client().get("/readyz?verbose")
    assert whole.status_code == 200
    assert "[+]workers ok" in whole.content.decode()


def test_it_fails_readyz_when_the_channel_layer_is_unreachable(
    settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(health, "CHECK_TIMEOUT_SECONDS", 1.0)
    # A Redis URL nothing listens on: the worker could not hear other workers' revisions.
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": [f"redis://127.0.0.1:{free_port()}/0"]},
        }
    }
    response = Client().get("/readyz")
    assert response.status_code == 500
    body = response.content.decode()
    assert "[-]channel-layer failed: reason withheld" in body
    assert "[+]database ok" in body
    assert body.endswith("readyz check failed\n")
    # /livez (and /healthz) do not depend on other services: the process itself is fine.
    assert Client().get("/livez").status_code == 200
    assert Client().get("/healthz").status_code == 200


def test_it_fails_readyz_when_the_hub_lags_behind_the_log(
    actors: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    rt = lookup("trainingruntimes")
    store.create(rt, "demo", runtime_manifest("a"))
    store.create(rt, "demo", runtime_manifest("b"))
    seen = store.current_revision() - 2
    monkeypatch.setitem(
        sys.modules, "runtimes.watch.hub", types.SimpleNamespace(last_revision=lambda: seen)
    )
    monkeypatch.setattr(health, "MAX_HUB_LAG", 1)
    assert health.hub_lag() == 2
    response = Client().get("/readyz?verbose")
    assert response.status_code == 500
    assert "[-]hub-lag failed: reason withheld" in response.content.decode()
    monkeypatch.setattr(health, "MAX_HUB_LAG", 2)
    assert Client().get("/readyz").status_code == 200


def test_it_withholds_the_reason_and_honours_exclude(monkeypatch: pytest.MonkeyPatch) -> None:
    async def broken() -> None:
        raise RuntimeError("secret-host:5432 refused")

    monkeypatch.setitem(health.READYZ_CHECKS, "broken", broken)
    failed = Client().get("/readyz")
    assert failed.status_code == 500
    assert b"[-]broken failed: reason withheld" in failed.content
    assert b"secret-host" not in failed.content
    excluded = Client().get("/readyz?verbose&exclude=broken&exclude=nosuch")
    assert excluded.status_code == 200
    body = excluded.content.decode()
    assert "[+]broken excluded: ok" in body
    assert 'no matches for "nosuch"' in body


def test_it_answers_one_check_by_name() -> None:
    assert Client().get("/readyz/database").content == b"ok"
    assert Client().get("/livez/ping").content == b"ok"
    missing = Client().get("/readyz/etcd")
    assert missing.status_code == 404
    assert missing.json()["reason"] == "NotFound"


def test_it_registers_extra_readiness_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "READYZ_CHECKS", dict(health.READYZ_CHECKS))

    async def leader_lease() -> None:
        raise health.CheckFailed("no lease")

    health.register_readiness_check("leader-lease", leader_lease)
    response = Client().get("/readyz/leader-lease")
    assert response.status_code == 500
    assert response.content == b"[-]leader-lease failed: reason withheld\n"
