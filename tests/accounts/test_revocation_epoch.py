"""The revocation epoch (runtimes.accounts.revocation): an access change moves the stored epoch
in its own transaction, and a process that reads the stored epoch moves its own when another
process moved it."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import transaction
from django.db.models import F

from runtimes.accounts import revocation
from runtimes.accounts.tokens import create_token, revoke
from runtimes.storage.models import AccessEpoch, Membership

pytestmark = pytest.mark.django_db


def test_revoking_a_token_moves_the_stored_epoch_and_this_processs_after_the_commit(
    actors: Any,
) -> None:
    row, _token = create_token(actors["alice"], "laptop")
    stored, local = revocation.stored(), revocation.current()
    with transaction.atomic():
        revoke(row)
        assert revocation.current() == local  # not before the commit
    assert revocation.stored() == (stored or 0) + 1
    assert revocation.current() > local


def test_a_change_rolled_back_moves_nothing(actors: Any) -> None:
    stored = revocation.stored()
    binding = Membership.objects.get(user=actors["bob"], project_id="demo")

    def fail_after_deleting() -> None:
        with transaction.atomic():
            binding.delete()
            raise RuntimeError("the change fails")

    with pytest.raises(RuntimeError):
        fail_after_deleting()
    assert revocation.stored() == stored


def test_a_new_token_or_role_binding_announces_nothing(actors: Any) -> None:
    stored = revocation.stored()
    create_token(actors["bob"], "ci")
    Membership.objects.create(user=actors["charlie"], project_id="demo", role="viewer")
    assert revocation.stored() == stored


def test_the_reader_moves_this_processs_epoch_when_another_process_moved_the_stored_one() -> None:
    reader = revocation.StoredEpochReader()
    reader.read()  # the first read only learns where the stored epoch stands
    local = revocation.current()
    reader.read()
    assert revocation.current() == local
    # What another process's announce leaves behind: the stored row moved, no signal here.
    AccessEpoch.objects.filter(pk=1).update(value=F("value") + 1)
    reader.read()
    assert revocation.current() == local + 1
