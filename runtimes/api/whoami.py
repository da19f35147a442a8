"""SelfSubjectReview: `kubectl auth whoami` asks who the server takes the caller to be.

`POST /apis/authentication.k8s.io/v1/selfsubjectreviews` answers with the caller's user info as
the API authenticated it: the username, the account's id, and groups. Every signed-in caller is
in `system:authenticated` (kube's group for the same); platform admins are also in
`nodus:platform-admins`, and the controller's service account in `system:serviceaccounts` and
`system:serviceaccounts:nodus`. Roles in projects are not groups here: `kubectl auth can-i`
(`access_review`) answers what they allow. The review's body carries nothing to decide on, so
it is not read (kubectl sends it as protobuf).
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.accounts.access import is_controller, is_platform_admin
from runtimes.api.base import KubeView, respond
from runtimes.registry import authorization

GROUP = "authentication.k8s.io"
VERSION = "v1"
API_VERSION = f"{GROUP}/{VERSION}"
KIND = "SelfSubjectReview"
PLURAL = "selfsubjectreviews"


def user_info(user: Any) -> dict[str, Any]:
    groups = ["system:authenticated"]
    if is_platform_admin(user):
        groups.append("nodus:platform-admins")
    if is_controller(user):
        groups += ["system:serviceaccounts", "system:serviceaccounts:nodus"]
    return {"username": user.get_username(), "uid": str(user.pk), "groups": groups}


class SelfSubjectReviewView(KubeView):
    access = authorization.signed_in("callers ask who they themselves are")

    def post(self, request: Request) -> Response:
        answer = {
            "kind": KIND,
            "apiVersion": API_VERSION,
            "metadata": {"creationTimestamp": None},
            "status": {"userInfo": user_info(request.user)},
        }
        return respond(answer, 201)
