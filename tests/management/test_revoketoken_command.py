"""`manage.py revoketoken`: revokes by user and name (or all), and the API stops accepting them."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from runtimes.accounts.tokens import create_token
from tests.support.api import ApiClient

pytestmark = pytest.mark.django_db

VERSION_PATH = "/apis/nodus.dev/v1beta1/namespaces/demo/trainingruntimes"


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("revoketoken", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_revoking_by_name_stops_that_token_and_leaves_the_others(actors: Any) -> None:
    _row, old = create_token(actors["alice"], "controller")
    _row, kept = create_token(actors["alice"], "laptop")
    assert ApiClient(old).get(VERSION_PATH).status_code == 200

    assert run("--user", "alice", "--name", "controller") == "revoked 1 token(s) of alice\n"

    assert ApiClient(old).get(VERSION_PATH).status_code == 401
    assert ApiClient(kept).get(VERSION_PATH).status_code == 200
    listing = run("--user", "alice", "--list").splitlines()
    states = {line.split("\t")[0]: line.split("\t")[2] for line in listing}
    assert states["laptop"] == "live"
    assert states["controller"].startswith("revoked ")


def test_all_revokes_every_live_token(actors: Any) -> None:
    tokens = [create_token(actors["bob"], f"t{n}")[1] for n in range(3)]
    assert run("--user", "bob", "--all") == "revoked 3 token(s) of bob\n"
    assert {ApiClient(token).get(VERSION_PATH).status_code for token in tokens} == {401}


def test_an_unknown_name_or_user_is_an_error_naming_what_exists(actors: Any) -> None:
    create_token(actors["alice"], "laptop")
    with pytest.raises(CommandError, match=r"no live token named 'nope'; live tokens: laptop"):
        run("--user", "alice", "--name", "nope")
    with pytest.raises(CommandError, match="no user 'nobody'"):
        run("--user", "nobody", "--all")
    run("--user", "alice", "--all")
    with pytest.raises(CommandError, match="no live tokens; live tokens: none"):
        run("--user", "alice", "--all")
