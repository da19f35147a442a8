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


def name_required() -> errors.ApiError:
    """kube's answer to an update or patch of a collection (handlers/namer.go errEmptyName)."""
    return errors.bad_request(
        "name must be provided",
        fix="Send the update or patch to the object's own path, .../NAME (`kubectl replace`, "
        "`kubectl patch tr NAME`).",
    )


def patch_or_body_types(request: Request | None) -> list[str]:
    """The media types a request's body may be in: a patch's three, or JSON and YAML."""
    if request is not None and request.method == "PATCH":
        return list(media.PATCH_TYPES)
    return [media.JSON, media.YAML]


def check_content_type(request: Request, allowed: tuple[str, ...], view: KubeView) -> str:
    content_type = (request.content_type or "").split(";", 1)[0].strip().lower()
    if content_type not in allowed:
        from runtimes.api.exceptions import unsupported_media_type

        raise unsupported_media_type(content_type or "(none)", view)
    return content_type


def create(view: KubeView, request: Request, namespace: str | None) -> Response:
    """A create from the body, as kube's create handler makes it: the object is named by its
    body (or generateName) wherever it is posted, a collection or an object's own path."""
    body = view.body_object(request)
    options, manager = view.write_context(request, "CreateOptions")
    view.require_type_meta(body)
    view.decode_metadata(body)
    view.refuse_repeated(body, options.field_validation)
    view.check_identity(body, namespace)
    if (body.get("metadata") or {}).get("resourceVersion"):
        raise errors.bad_request(
            "resourceVersion should not be set on objects to be created",
            fix="Drop metadata.resourceVersion (and uid) from the manifest, or update the "
            "existing object with `kubectl apply` / `kubectl replace`.",
        )
    result = store.create(
        view.rt,
        namespace,
        body,
        dry_run=options.dry_run,
        field_validation=options.field_validation,
        decoded=view.repeated,
        on_prepared=owner_admission.admission(
            request.user, view.rt, namespace, patching.recorder(view.rt, manager, "")
        ),
    )
    return respond(result.object, 201, result.warnings)


class CollectionView(KubeView):
    # A list across projects (no namespace in the URL) is allowed to everyone signed in and
    # holds only the projects each may read (listing.readable_namespaces). PUT and PATCH name
    # no object: kube's handlers answer them 400 once the caller may update (or patch).
    access = authorization.role(
        {
            "GET": "list",
            WATCH: "watch",
            "POST": "create",
            "PUT": "update",
            "PATCH": "patch",
            "DELETE": "deletecollection",
        }
    )
    renderings = ("Table", *media.METADATA_RENDERINGS)

    @property
    def accepted_media_types(self) -> list[str]:  # type: ignore[override]
        return patch_or_body_types(self.request)

    def check_media_type(self, request: Request) -> None:
        if request.method == "PATCH":
            check_content_type(request, media.PATCH_TYPES, self)

    def needs_namespace(self, request: Request) -> bool:
        # A list (or watch) in a namespace that doesn't exist is empty, as in kube; a PUT or
        # PATCH here is refused for the missing name wherever it is sent.
        return request.method not in ("GET", "PUT", "PATCH")

    def across_namespaces(self, request: Request) -> bool:
        # list and watch: kube's possiblyAcrossAllNamespacesVerbs
        return request.method in ("GET", "HEAD")

    def get(self, request: Request, plural: str, namespace: str | None = None) -> Response:
        return listing.list_response(self, request, namespace)

    def post(self, request: Request, plural: str, namespace: str | None = None) -> Response:
        return create(self, request, namespace)

    def put(self, request: Request, plural: str, namespace: str | None = None) -> Response:
        raise name_required()

    def patch(self, request: Request, plural: str, namespace: str | None = None) -> Response:
        raise name_required()

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
    # A POST to an object's path creates from the body, as a custom resource's handler does.
    access = authorization.role(
        {"GET": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
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
        return patch_or_body_types(self.request)

    def _namespace(self, namespace: str | None) -> str:
        return namespace or ""

    def check_media_type(self, request: Request) -> None:
        if request.method == "PUT":
            check_content_type(request, (media.JSON, media.YAML), self)
        elif request.method == "PATCH":
            check_content_type(request, media.PATCH_TYPES, self)

    def get(
        self, request: Request, plural: str, name: str, namespace: str | None = None
    ) -> Response:
        wanted = request.query_params.get("resourceVersion", "")
        at_least = None  # unset: the latest (a consistent read)
        if wanted:
            # kube: a number, served at that revision or later (waiting, at most 3 s, for a
            # revision ahead of the store); anything else is a 400.
            at_least = parse_revision(wanted)
            listing.wait_for_revision(at_least)
        cached = listing.cached_object(self.rt, namespace, name, at_least)
        found = cached if cached is not None else self._get_or_explain(namespace, name)
        return listing.object_response(self, request, found)

    def _get_or_explain(self, namespace: str | None, name: str) -> dict[str, Any]:
        try:
            return store.get(self.rt, namespace, name)
        except errors.ApiError:
            if namespace is not None:
                store.ensure_namespace(self.rt, namespace)
            raise

    def post(
        self, request: Request, plural: str, name: str, namespace: str | None = None
    ) -> Response:
        # kube's create handler reads the name off the URL only for admission; the object is
        # the body's, so a body naming another object creates that one. Its body is a whole
        # object, never one of the patches this view also parses.
        check_content_type(request, (media.JSON, media.YAML), self)
        return create(self, request, namespace)

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
        content_type = check_content_type(request, media.PATCH_TYPES, self)
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
            raise self.not_supported("delete")
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

    def not_supported(self, verb: str) -> errors.ApiError:
        """kube's 405 for a verb a subresource does not serve; it names the resource alone."""
        return errors.method_not_supported(
            self.rt.plural,
            self.rt.group,
            verb,
            fix=f"Write {self.subresource} with PUT or PATCH; create and delete the object "
            "itself at its own path.",
        )

    def _write_response(self, result: store.WriteResult, decoding: Sequence[str] = ()) -> Response:
        # An update that removed the last finalizer of an object being deleted deleted it; kube
        # answers with the object as last written, not a Status (kubectl prints `patched`).
        return respond(result.object, 200, [*decoding, *result.warnings])


class StatusView(ItemView):
    # POST and DELETE are not served: 405, as a custom resource's status handler answers.
    access = authorization.role(
        {"GET": "get", "PUT": "update", "PATCH": "patch"}, subresource="status"
    )

    def post(
        self, request: Request, plural: str, name: str, namespace: str | None = None
    ) -> Response:
        raise self.not_supported("create")

    def refuse_unservable(self, request: Request) -> None:
        if self.rt.status_strategy is None:
            # A kind without the subresource: kube's CRD handler answers the object NotFound.
            raise errors.not_found(self.rt.plural, self.rt.group, self.kwargs.get("name", ""))


class UnknownSubresourceView(KubeView):
    """A subresource the kind does not have, by any method: kube's CRD handler answers
    NotFound naming the object (`trainingruntimes.nodus.dev "a" not found`), once the caller
    may read it."""

    access = authorization.role("get")

    def refuse_unservable(self, request: Request) -> None:
        if self.rt.namespaced and "namespace" not in self.kwargs:
            raise errors.path_not_found()  # a namespaced kind's object has no cluster path

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        raise errors.not_found(self.rt.plural, self.rt.group, kwargs["name"])
