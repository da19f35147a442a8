"""What every object of ours shares: its JSON type, the API group and version we serve, and
which of its metadata fields the server owns."""

from __future__ import annotations

from typing import Any

# An object as the API carries it: decoded JSON, keyed by field name.
Obj = dict[str, Any]

GROUP = "nodus.dev"
VERSION = "v1beta1"
API_VERSION = f"{GROUP}/{VERSION}"

# ObjectMeta fields only the server writes: kube's ObjectMeta marks them "Populated by the
# system. Read-only." (apimachinery pkg/apis/meta/v1/types.go). A client's value is never
# taken as its intent: server-side apply ignores them (as fieldmanager's stripMeta does) and
# the console's editor leaves them out. The order is the one `KEPT_ON_UPDATE` restores them in.
SERVER_SET_METADATA = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
    "resourceVersion",
    "selfLink",
    "managedFields",
)

# What a create drops from the request before setting its own values: kube's rest.BeforeCreate
# and FillObjectMetaSystemFields, plus the storage versioner's PrepareObjectForStorage.
# managedFields is not the store's: the field manager (kube's fieldmanager, our
# managedfields module) rewrites it once the store has prepared the object.
RESET_ON_CREATE = tuple(key for key in SERVER_SET_METADATA if key != "managedFields")

# What an update copies from the stored object over the request (or drops, where the stored
# object has none): the identity in the URL plus kube's rest.BeforeUpdate. selfLink is never
# set, so a request's value is left alone; managedFields again is the field manager's.
KEPT_ON_UPDATE = (
    "name",
    "namespace",
    *(key for key in SERVER_SET_METADATA if key not in ("selfLink", "managedFields")),
)

# Server-set fields an update may not change: a differing value is refused (422 "field is
# immutable"), as kube's ValidateObjectMetaUpdate does with ValidateImmutableField; the rest of
# KEPT_ON_UPDATE is restored silently instead. creationTimestamp is among the rest: kube's
# rest.BeforeUpdate copies the stored one over the request's before validating.
IMMUTABLE_METADATA = ("uid",)

# The fields of metav1.Preconditions: what a delete may require of the stored object.
PRECONDITION_FIELDS = ("uid", "resourceVersion")
