"""Schema nodes for Kubernetes' own meta/v1 kinds: ObjectMeta and Condition.

Described in our words, with the fields kube-apiserver publishes, so that unknown-field checks,
the OpenAPI document and ``kubectl explain metadata`` agree with a real cluster.
"""

from __future__ import annotations

from runtimes.apimachinery.schema_nodes import Field, boolean, integer, obj, string

CONDITION_STATUSES = ("False", "True", "Unknown")


def _meta_v1(kind: str) -> str:
    return f"io.k8s.apimachinery.pkg.apis.meta.v1.{kind}"


CONDITION = obj(
    "Condition is one aspect of the object's current state (metav1.Condition).",
    _meta_v1("Condition"),
    ("type", "status", "lastTransitionTime", "reason"),
    type=string(
        "Type of condition in CamelCase, e.g. Verified.",
        min_length=1,
        max_length=316,
        format="qualified-name",
    ),
    status=string("Status is True, False or Unknown.", min_length=1, enum=CONDITION_STATUSES),
    observedGeneration=integer(
        "ObservedGeneration is the generation the condition was set for.", minimum=0
    ),
    lastTransitionTime=string(
        "LastTransitionTime is when the status last changed.", min_length=1, format="date-time"
    ),
    reason=string(
        "Reason is a CamelCase reason for the last transition.",
        min_length=1,
        max_length=1024,
        format="condition-reason",
    ),
    message=string("Message is a human-readable explanation.", max_length=32768),
)

OWNER_REFERENCE = obj(
    "OwnerReference identifies an owning object.",
    _meta_v1("OwnerReference"),
    ("apiVersion", "kind", "name", "uid"),
    apiVersion=string("API version of the owner."),
    kind=string("Kind of the owner."),
    name=string("Name of the owner."),
    uid=string("UID of the owner."),
    controller=boolean("Controller is true when the owner manages this object."),
    blockOwnerDeletion=boolean("BlockOwnerDeletion keeps the owner until this object is gone."),
)

MANAGED_FIELDS_ENTRY = obj(
    "ManagedFieldsEntry records which fields one manager set, for server-side apply.",
    _meta_v1("ManagedFieldsEntry"),
    manager=string("Manager is the name of the workflow that set the fields."),
    operation=string("Operation is Apply or Update."),
    apiVersion=string("APIVersion of the fields."),
    time=string("Time of the last change by this manager.", format="date-time"),
    fieldsType=string("FieldsType is FieldsV1."),
    fieldsV1=Field("object", "FieldsV1 is the set of fields.", preserve_unknown=True),
    subresource=string("Subresource the fields were written through, e.g. status."),
)


OBJECT_META = obj(
    "ObjectMeta is the metadata every persisted object has.",
    _meta_v1("ObjectMeta"),
    name=string("Name is unique within the project; a DNS-1123 subdomain."),
    generateName=string("GenerateName is a prefix the server completes into a unique name."),
    namespace=string("Namespace is the project; a DNS-1123 label."),
    selfLink=string("Deprecated and never set."),
    uid=string("UID is the server-generated unique id; it never changes."),
    resourceVersion=string(
        "ResourceVersion is an opaque version for optimistic concurrency and watch; compare "
        "only for equality."
    ),
    generation=integer("Generation counts changes to the desired state (spec)."),
    creationTimestamp=string(
        "CreationTimestamp is when the object was created (UTC).", format="date-time"
    ),
    deletionTimestamp=string(
        "DeletionTimestamp is when deletion was requested.", format="date-time"
    ),
    deletionGracePeriodSeconds=integer("Seconds allowed for graceful deletion."),
    labels=Field(
        "map", "Labels are key/value pairs for selecting objects.", values=string("A label value.")
    ),
    annotations=Field(
        "map",
        "Annotations are key/value pairs for tools; not for selection.",
        values=string("An annotation value."),
    ),
    ownerReferences=Field(
        "array",
        "OwnerReferences list the objects this one depends on.",
        items=OWNER_REFERENCE,
        list_type="map",
        list_keys=("uid",),
    ),
    finalizers=Field(
        "array",
        "Finalizers must all be removed before the object is deleted.",
        items=string("A qualified finalizer name."),
        list_type="set",
    ),
    managedFields=Field(
        "array",
        "ManagedFields records field ownership for server-side apply.",
        items=MANAGED_FIELDS_ENTRY,
        list_type="atomic",
    ),
)
