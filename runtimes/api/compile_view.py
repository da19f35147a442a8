"""The `compile` subresource: POST a TrainingJob draft, get back what would run, where, how long.

Nothing is stored: compiling is a read of the runtime plus pure catalog logic
(`runtimes.catalog.compile`), so the caller needs only `get` on the runtime. A draft that does not
fit the runtime answers 422 Invalid whose causes point into the draft (`parameters.epochs`,
`model`), as a TrainingJob create would.
"""

from __future__ import annotations

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.api.base import KubeView, respond
from runtimes.apimachinery import errors
from runtimes.catalog.accelerators import catalog
from runtimes.catalog.compile import compile_job
from runtimes.registry import authorization
from runtimes.storage import store

# The draft is the spec of a TrainingJob-to-be; errors name that kind, as its create would.
DRAFT_KIND = "TrainingJob"


class CompileView(KubeView):
    # Compiling reads the runtime and stores nothing: `get` is what it needs.
    access = authorization.role({"POST": "get"})

    def refuse_unservable(self, request: Request) -> None:
        if request.method == "POST" and self.rt.plural != "trainingruntimes":
            # Another kind has no such subresource: NotFound naming the object, as kube's.
            raise errors.not_found(self.rt.plural, self.rt.group, self.kwargs.get("name", ""))

    def post(self, request: Request, plural: str, namespace: str, name: str) -> Response:
        draft = self.body_object(request)
        try:
            runtime = store.get(self.rt, namespace, name)
        except errors.ApiError:
            store.ensure_namespace(self.rt, namespace)
            raise
        outcome = compile_job(runtime, draft, catalog())
        if isinstance(outcome, list):
            raise errors.invalid(DRAFT_KIND, self.rt.group, str(draft.get("name") or ""), outcome)
        result: dict[str, Any] = {
            "apiVersion": self.rt.api_version,
            "kind": "CompileResult",
            **outcome.as_dict(),
        }
        return respond(result, 200, list(outcome.warnings))
