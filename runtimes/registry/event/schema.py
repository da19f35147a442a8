"""core/v1 Events: the kind's names, kube's length limits and its selectable fields.

Events have no declared schema of fields here: the recorder writes kube's core/v1 shape, and
`strategy` checks it as kube's `ValidateEvent` does.
"""

from __future__ import annotations

API_VERSION = "v1"
KIND = "Event"
PLURAL = "events"
EVENTS_GROUP = "events.k8s.io"
# events.k8s.io/v1's field labels and the core ones they are (kube's field label conversion
# for the events group; its own spellings only, as kube accepts).
V1_FIELD_LABELS = {
    "regarding.kind": "involvedObject.kind",
    "regarding.namespace": "involvedObject.namespace",
    "regarding.name": "involvedObject.name",
    "regarding.uid": "involvedObject.uid",
    "regarding.apiVersion": "involvedObject.apiVersion",
    "regarding.resourceVersion": "involvedObject.resourceVersion",
    "regarding.fieldPath": "involvedObject.fieldPath",
    "reportingController": "reportingComponent",
    "reason": "reason",
    "type": "type",
    "metadata.name": "metadata.name",
    "metadata.namespace": "metadata.namespace",
}
# core/v1 field -> events.k8s.io/v1 field (kube's Convert_core_Event_To_v1_Event).
V1_FIELDS = {
    "involvedObject": "regarding",
    "related": "related",
    "message": "note",
    "source": "deprecatedSource",
    "firstTimestamp": "deprecatedFirstTimestamp",
    "lastTimestamp": "deprecatedLastTimestamp",
    "count": "deprecatedCount",
    "reportingComponent": "reportingController",
    "reportingInstance": "reportingInstance",
    "eventTime": "eventTime",
    "series": "series",
    "action": "action",
    "reason": "reason",
    "type": "type",
}


TYPES = ("Normal", "Warning")
# kube's validation: reason and action at most 128 characters, the message at most 1 KiB for
# events.k8s.io (core/v1 keeps what it is given; the recorder clips to the same bound).
MAX_REASON = 128
MAX_MESSAGE = 1024
# kube's EventToSelectableFields, besides metadata.name and metadata.namespace; `source`
# (source.component) is not a path and is not offered.
SELECTABLE_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "type",
)
