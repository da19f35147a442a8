"""docs/security.md's role matrix is the one the code generates: edit declarations, not tables.

`runtimes.management.rolematrix` renders the matrix by asking `registry.authorization.check`
and `authorize` for each actor; these tests fail when the document's copy differs from what
the code says now, and show that a change to a role reaches the generated tables.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from runtimes.accounts import access
from runtimes.management import rolematrix
from runtimes.storage.models import Role


@pytest.mark.django_db
def test_the_matrix_in_docs_security_is_the_generated_one() -> None:
    written = rolematrix.section_of(rolematrix.DOCUMENT.read_text())
    assert written, f"{rolematrix.DOCUMENT} lost its rolematrix markers"
    assert written == rolematrix.render(), (
        "docs/security.md's role matrix is stale: run `python manage.py rolematrix --write`"
    )


@pytest.mark.django_db
def test_it_follows_the_roles_it_is_generated_from(monkeypatch: pytest.MonkeyPatch) -> None:
    before = rolematrix.render()
    widened = {**access.ROLE_VERBS, Role.VIEWER: access.READ_VERBS | {"create"}}
    monkeypatch.setattr(access, "ROLE_VERBS", widened)
    after = rolematrix.render()
    collection = "`/apis/nodus.dev/v1beta1/namespaces/{namespace}/trainingruntimes` |"
    viewer_cell = [line.split(" | ")[3] for line in after.splitlines() if collection in line]
    assert viewer_cell == ["GET, WATCH, POST"]
    assert before != after


@pytest.mark.django_db
def test_it_leaves_no_account_behind() -> None:
    users = get_user_model().objects.count()
    rolematrix.render()
    assert get_user_model().objects.count() == users
    assert not get_user_model().objects.filter(username__startswith="rolematrix-").exists()


def test_every_route_the_walk_finds_is_declared_once_per_kind() -> None:
    routes = [endpoint.route for endpoint in rolematrix.endpoints() if not endpoint.label]
    assert "/apis/nodus.dev/v1beta1/namespaces/{namespace}/trainingruntimes/{name}/status" in routes
    assert "/apis/nodus.dev/v1beta1/namespaces/{namespace}/accelerators" not in routes
    assert "/ws/console (WebSocket)" in routes
    assert len(routes) == len(set(routes))
