"""The object endpoints: collection, item and /status, as kube-apiserver serves custom resources."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response

from runtimes.api import listing, media, patching
from runtimes.api.base import KubeView, respond
from runtimes.api.listoptions import parse_revision
from runtimes.api.options import delete_options
from runtimes.apimachinery import errors
from runtimes.registry import authorization, owner_admission
from runtimes.registry.authorization import WATCH
from runtimes.storage import store


def base_path(rt: Any) -> str:
    """The group-version's path: /api/v1 for the core group, /apis/GROUP/VERSION otherwise."""
    return f"/apis/{rt.api_version}" if rt.group else f"/api/{rt.version}"


def deleted_status(rt: Any, obj: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": {
            "name": obj["metadata"]["name"],
            "group": rt.group,
            "kind": rt.plural,
            "uid": obj["metadata"].get("uid", ""),
        },
    }


class CollectionView(KubeView):
    # A list across projects (no namespace in the URL) is allowed to everyone signed in and
    # holds only the projects each may read (listing.readable_namespaces).
    access = authorization.role(
        {"GET": "list", WATCH: "watch", "POST": "create", "DELETE": "deletecollection"}
    )
    renderings = ("Table", *media.METADATA_RENDERINGS)

    def refuse_unservable(self, request: Request) -> None:
        if request.method == "POST" and self.rt.namespaced and "namespace" not in self.kwargs:
            raise errors.ApiError(
                "MethodNotAllowed",
                "create is not supported on resources of kind "
                f'"{errors.gr(self.rt.plural, self.rt.group)}" at the cluster scope',
                fix=f"Create in a project: POST to {base_path(self.rt)}/namespaces/PROJECT/"
                f"{self.rt.plural} (`kubectl create -n PROJECT -f ...`).",
            )

    def needs_namespace(self, request: Request) -> bool:
        # A list (or watch) in a namespace that doesn't exist is empty, as in kube.
        return request.method != "GET"

    def get(self, request: Request, plural: str, namespace: str | None = None) -> Response:
        return listing.list_response(self, request, namespace)

    def post(self, request: Request, plural: str, namespace: str | None = None) -> Response:
        body = self.body_object(request)
        options, manager = self.write_context(request, "CreateOptions")
        self.require_type_meta(body)
        self.decode_metadata(body)
        self.refuse_repeated(body, options.field_validation)
        self.check_identity(body, namespace)
        if (body.get("metadata") or {}).get("resourceVersion"):
            raise errors.bad_request(
                "resourceVersion should not be set on objects to be created",
                fix="Drop metadata.resourceVersion (and uid) from the manifest, or update the "
                "existing object with `kubectl apply` / `kubectl replace`.",
            )
        result = store.create(
            self.rt,
            namespace,
            body,
            dry_run=options.dry_run,
            field_validation=options.field_validation,
            decoded=self.repeated,
            on_prepared=owner_admission.admission(
                request.user, self.rt, namespace, patching.recorder(self.rt, manager, "")
            ),
        )
        return respond(result.object, 201, result.warnings)

    def delete(self, request: Request, plural: str, namespace: str | None = None) -> Response:
        options = delete_options(request.query_params, request.data)
        selected = listing.select(self, request, namespace)
        gone = []
        for obj in selected.items:
            result = store.delete(
                self.rt,
                obj["metadata"].get("namespace"),
                obj["metadata"]["name"],
                dry_run=options.dry_run,
                propagation=options.propagation,
                orphan_dependents=options.orphan_dependents,
            )
            gone.append(result.object)
        return respond(
            {
                "apiVersion": self.rt.api_version,
                "kind": f"{self.rt.kind}List",
                # As kube: the list's, read before the deletes.
                "metadata": {"resourceVersion": str(selected.revision)},
                "items": gone,
            }
        )


class ItemView(KubeView):
    access = authorization.role(
        {"GET": "get", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
    )
    # An apply that finds nothing creates the object (kube's forceAllowCreate), so it needs
    # create as well; checked when the store says the object is missing.
    apply_creates = authorization.role({"PATCH": "create"})
    renderings = ("Table", *media.METADATA_RENDERINGS)
    parser_classes = [
        media.KubeJSONParser,
        media.YAMLParser,
        media.MergePatchParser,
        media.JSONPatchParser,
        media.ApplyPatchParser,
    ]

    @property
    def subresource(self) -> str:
        return self.access.subresource

    @property
    def accepted_media_types(self) -> list[str]:  # type: ignore[override]
        if self.request is not None and self.request.method == "PATCH":
            return list(media.PATCH_TYPES)
        return [media.JSON, media.YAML]

    def _namespace(self, namespace: str | None) -> str:
        return namespace or ""

    def refuse_unservable(self, request: Request) -> None:
        if request.method == "PUT":
            self._check_content_type(request, (media.JSON, media.YAML))
        elif request.method == "PATCH":
            self._check_content_type(request, media.PATCH_TYPES)

    def get(
        self, request: Request, plural: str, name: str, namespace: str | None = None
    ) -> Response:
        wanted = request.query_params.get("resourceVersion", "")
        if wanted:
            # kube: a number, served at that revision or later (waiting, at most 3 s, for a
            # revision ahead of the store); anything else is a 400.
            listing.wait_for_revision(parse_revision(wanted))
        obj = self._get_or_explain(namespace, name)
        return listing.object_response(self, request, obj)

    def _get_or_explain(self, namespace: str | None, name: str) -> dict[str, Any]:
        try:
            return store.get(self.rt, namespace, name)
        except errors.ApiError:
            if namespace is not None:
                store.ensure_namespace(self.rt, namespace)
            raise

    def put(
        self, request: Request, plural: str, name: str, namespace: str | None = None
    ) -> Response:
        body = self.body_object(request)
        options, manager = self.write_context(request, "UpdateOptions")
        self.require_type_meta(body)
        self.decode_metadata(body)
        self.refuse_repeated(body, options.field_validation)
        self.check_identity(body, namespace, name, whole=True)
        self._get_or_explain(namespace, name)
        result = store.update(
            self.rt,
            namespace,
            name,
            body,
            subresource=self.subresource,
            dry_run=options.dry_run,
            field_validation=options.field_validation,
            decoded=self.repeated,
            on_prepared=owner_admission.admission(
                request.user,
                self.rt,
                namespace,
                patching.recorder(self.rt, manager, self.subresource),
            ),
        )
        return self._write_response(result)

    def patch(
        self, request: Request, plural: str, name: str, namespace: str | None = None
    ) -> Response:
        content_type = self._check_content_type(request, media.PATCH_TYPES)
        apply = content_type == media.APPLY_PATCH
        body = request.data
        options, manager = self.write_context(request, "PatchOptions", apply=apply)
        decoding: list[str] = []
        if apply:
            decoding = patching.apply_decoding(self.repeated, options.field_validation)
            if not isinstance(body, dict):
                raise errors.bad_request("an apply patch must be one object (YAML or JSON)")
            self.require_type_meta(body)
            self.check_identity(body, namespace, name)
            change, record = patching.apply_change(
                self.rt, body, manager, bool(options.force), name, self.subresource
            )
            try:
                current = store.get(self.rt, namespace, name)
            except errors.ApiError as exc:
                if exc.reason != "NotFound":
                    raise
                current = None
            if current is None:
                # Apply creates what does not exist yet (kube: forceAllowCreate).
                authorization.check(
                    request.user,
                    self.apply_creates,
                    "PATCH",
                    self._namespace(namespace),
                    name,
                    self.rt,
                )
                applied = change({})
                applied.setdefault("metadata", {}).setdefault("name", name)
                result = store.create(
                    self.rt,
                    namespace,
                    applied,
                    dry_run=options.dry_run,
                    field_validation=options.field_validation,
                    on_prepared=owner_admission.admission(request.user, self.rt, namespace, record),
                )
                return respond(result.object, 201, decoding + result.warnings)
        else:
            change = patching.patch_change(self.rt, content_type, body, name)
            record = patching.recorder(self.rt, manager, self.subresource)
            self._get_or_explain(namespace, name)
        repeated = [] if apply else patching.patch_repeated(content_type, self.repeated)
        requested: dict[str, Any] = {}

        def checked(current: dict[str, Any]) -> dict[str, Any]:
            requested["object"] = change(current)
            if not apply:
                patching.decode_patched_metadata(requested["object"])
                if repeated and options.field_validation == "Strict":
                    unknown = self.rt.strategy.unknown_fields(requested["object"])
                    raise patching.strict_patch_error(
                        requested["object"],
                        [*repeated, *(f'unknown field "{path}"' for path in unknown)],
                    )
            self.check_identity(requested["object"], namespace, name)
            return requested["object"]

        try:
            result = store.mutate(
                self.rt,
                namespace,
                name,
                checked,
                subresource=self.subresource,
                dry_run=options.dry_run,
                field_validation=options.field_validation,
                decoded=repeated,
                on_prepared=owner_admission.admission(request.user, self.rt, namespace, record),
            )
        except store.StrictDecodingError as exc:
            if apply:
                raise
            raise patching.strict_patch_error(requested["object"], exc.problems) from None
        return self._write_response(result, decoding)

    def delete(
        self, request: Request, plural: str, name: str, namespace: str | None = None
    ) -> Response:
        if self.subresource:
            raise errors.ApiError(
                "MethodNotAllowed",
                f'delete is not supported on resources of kind "{self.rt.plural}/{self.subresource}'
                f'.{self.rt.group}"',
            )
        options = delete_options(request.query_params, request.data)
        self._get_or_explain(namespace, name)
        result = store.delete(
            self.rt,
            namespace,
            name,
            uid=options.uid,
            resource_version=options.resource_version,
            dry_run=options.dry_run,
            propagation=options.propagation,
            orphan_dependents=options.orphan_dependents,
        )
        if result.deleted:
            return respond(deleted_status(self.rt, result.object))
        # kube answers 202 to an explicit orphanDependents=false whose object stays (its
        # dependents are deleted in the background); 200 otherwise, for compatibility.
        return respond(result.object, 202 if options.orphan_dependents is False else 200)

    def _write_response(self, result: store.WriteResult, decoding: Sequence[str] = ()) -> Response:
        # An update that removed the last finalizer of an object being deleted deleted it; kube
        # answers with the object as last written, not a Status (kubectl prints `patched`).
        return respond(result.object, 200, [*decoding, *result.warnings])

    def _check_content_type(self, request: Request, allowed: tuple[str, ...]) -> str:
        content_type = (request.content_type or "").split(";", 1)[0].strip().lower()
        if content_type not in allowed:
            from runtimes.api.exceptions import unsupported_media_type

            raise unsupported_media_type(content_type or "(none)", self)
        return content_type


class StatusView(ItemView):
    # DELETE is not served: the item's handler answers 405 for a subresource.
    access = authorization.role(
        {"GET": "get", "PUT": "update", "PATCH": "patch"}, subresource="status"
    )

    def refuse_unservable(self, request: Request) -> None:
        if self.rt.status_strategy is None:
            raise errors.ApiError("NotFound", "the server could not find the requested resource")
        super().refuse_unservable(request)
