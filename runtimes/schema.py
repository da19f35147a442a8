"""The TrainingRuntime resource schema: the one source of truth for its fields.

Plain data: each `Field` names a JSON type, a description, and the constraints a schema can say
(enums, defaults, formats, list semantics, required keys). Structural validation, unknown-field
detection, defaulting, the OpenAPI v3 document (so ``kubectl explain`` works) and the console's
field help are all generated from it. Rules that need more than one field live in
``runtimes.validation``. `unknown_fields` and `prune_unknown` serve ``fieldValidation``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

GROUP = "nodus.dev"
VERSION = "v1beta1"
KIND = "TrainingRuntime"
PLURAL = "trainingruntimes"
API_VERSION = f"{GROUP}/{VERSION}"

TASKS = ("SFT", "Pretrain", "DPO", "ORPO", "KTO", "Reward", "GRPO", "Distill", "Evaluate", "Custom")
LAUNCHERS = ("Plain", "Torchrun", "Accelerate", "Deepspeed")
GANG_LAUNCHERS = ("Torchrun", "Accelerate", "Deepspeed")
MODES = ("Train", "Evaluate")
METHODS = ("Full", "LoRA", "QLoRA")
CHECKPOINT_STRATEGIES = ("HFTrainer", "Custom")
INTERCONNECTS = ("Any", "NVLink")
ENVIRONMENT_TASKS = ("", "AttemptAPI")
GPU_COUNTS = (1, 2, 4, 8)
PHASES = ("Pending", "Ready", "Failed")
CONDITION_STATUSES = ("False", "True", "Unknown")
SELECTABLE_FIELDS = ("spec.task", "spec.launcher", "status.phase", "status.managed")


@dataclass(frozen=True)
class Field:
    """One node of the schema. ``type`` is a JSON type, or ``quantity`` (an int-or-string
    Kubernetes quantity), or ``map`` (an object whose keys are free and whose values are
    ``values``)."""

    type: str
    description: str = ""
    properties: Mapping[str, Field] = field(default_factory=dict)
    required: tuple[str, ...] = ()
    items: Field | None = None
    values: Field | None = None
    enum: tuple[Any, ...] = ()
    default: Any = None
    format: str = ""
    min_length: int = 0
    max_length: int | None = None
    min_items: int = 0
    max_items: int | None = None
    minimum: int | float | None = None
    exclusive_minimum: bool = False
    list_type: str = ""  # "set" (unique scalars) or "map" (unique by list_keys)
    list_keys: tuple[str, ...] = ()
    preserve_unknown: bool = False
    component: str = ""  # the OpenAPI component name when the node is shared or well known


def _obj(
    description: str, component: str = "", required: tuple[str, ...] = (), **props: Field
) -> Field:
    return Field("object", description, properties=props, required=required, component=component)


def _str(description: str, **constraints: Any) -> Field:
    return Field("string", description, **constraints)


def _argv(description: str, **constraints: Any) -> Field:
    return Field("array", description, items=_str("One argument."), **constraints)


def _bool(description: str, **constraints: Any) -> Field:
    return Field("boolean", description, **constraints)


def _int(description: str, **constraints: Any) -> Field:
    return Field("integer", description, **constraints)


def _quantity(description: str) -> Field:
    return Field("quantity", description, format="quantity")


def _v1beta1(kind: str) -> str:
    return f"dev.nodus.{VERSION}.{kind}"


def _meta_v1(kind: str) -> str:
    return f"io.k8s.apimachinery.pkg.apis.meta.v1.{kind}"


def _seconds_by_class(description: str) -> Field:
    return Field(
        "map",
        description,
        values=Field("number", "Seconds, greater than zero.", minimum=0, exclusive_minimum=True),
    )


GPU_REQUEST = _obj(
    "GPURequest asks for accelerators. A family such as H100 matches each of its variants and "
    "never another family; a variant id matches its whole family unless exact is true.",
    _v1beta1("GPURequest"),
    ("type", "count"),
    type=Field(
        "array",
        "Type lists 1 to 8 accelerator variant ids (h100-80g-sxm) or families (H100) from the "
        "catalog; any of them may serve the request.",
        items=_str("An accelerator id or family.", min_length=1),
        min_items=1,
        max_items=8,
        list_type="set",
    ),
    count=_int("Count is the number of GPUs per node: 1, 2, 4 or 8.", enum=GPU_COUNTS),
    minMemory=_quantity("MinMemory is the least memory each GPU must have, e.g. 80Gi."),
    interconnect=_str(
        "Interconnect is Any (default) or NVLink, which keeps only offerings whose GPUs talk "
        "over NVLink.",
        enum=INTERCONNECTS,
        default="Any",
    ),
    exact=_bool(
        "Exact pins the listed variant ids instead of matching their families; every entry of "
        "type must then be a variant id."
    ),
)

RESOURCES = _obj(
    "Resources are capacity floors. For GPU work each of cpu, memory and disk is the larger of "
    "the floor and the matched offering's host shape.",
    _v1beta1("Resources"),
    cpu=_quantity("CPU is the least number of vCPUs, e.g. 8 or 500m."),
    memory=_quantity("Memory is the least host memory, e.g. 64Gi."),
    disk=_quantity("Disk is the least ephemeral disk, e.g. 200Gi."),
    nodes=_int(
        "Nodes above 1 asks for a multi-node run (shorthand for a TrainingJob's "
        "spec.distributed.nodes) and needs a gang launcher.",
        minimum=1,
    ),
    gpu=GPU_REQUEST,
)

ENV_VAR = _obj(
    "EnvVar is one environment variable: exactly one of a literal value or a Secret key.",
    _v1beta1("EnvVar"),
    ("name",),
    name=_str("Name matches ^[A-Za-z_][A-Za-z0-9_]*$.", min_length=1, format="env-name"),
    value=_str("Value is the literal value."),
    valueFrom=_obj(
        "ValueFrom names where the value comes from instead of a literal.",
        _v1beta1("EnvVarSource"),
        ("secretKeyRef",),
        secretKeyRef=_obj(
            "SecretKeyRef selects one key of a Secret in the job's project.",
            _v1beta1("SecretKeySelector"),
            ("name", "key"),
            name=_str("Name is the Secret.", min_length=1, format="dns-subdomain"),
            key=_str("Key is the key within the Secret.", min_length=1, format="secret-key"),
        ),
    ),
)

SIDECAR = _obj(
    "Sidecar is a helper container (for example a vLLM rollout server) that starts before the "
    "trainer and stops after it.",
    _v1beta1("Sidecar"),
    ("name",),
    name=_str(
        "Name is a DNS-1123 label, unique among the sidecars.", min_length=1, format="dns-label"
    ),
    image=_str(
        "Image is a digest-pinned image reference; when unset the sidecar runs the job's image.",
        format="image-ref",
    ),
    command=_argv("Command is the sidecar's argv; when unset the image's entrypoint runs."),
    env=Field("array", "Env adds environment variables.", items=ENV_VAR),
    startupTimeout=_str(
        "StartupTimeout bounds how long the sidecar may take to become ready, e.g. 5m.",
        format="duration",
    ),
)

SPEC = _obj(
    "TrainingRuntimeSpec is the contract a TrainingJob compiles against.",
    _v1beta1("TrainingRuntimeSpec"),
    ("image", "task", "command"),
    image=_str(
        "Image is the trainer image pinned by digest: repository[:tag]@sha256:<64 hex>. "
        "Managed runtimes are cosign-verified.",
        min_length=1,
        format="image-ref",
    ),
    task=_str(
        "Task is what the runtime trains: SFT, Pretrain, DPO, ORPO, KTO, Reward, GRPO, Distill, "
        "Evaluate or Custom.",
        min_length=1,
        enum=TASKS,
    ),
    command=_argv("Command is the trainer entrypoint (argv); it may not be empty.", min_items=1),
    launcher=_str(
        "Launcher is Plain (default), Torchrun, Accelerate or Deepspeed; multi-node runs use it "
        "as the gang launcher.",
        enum=LAUNCHERS,
        default="Plain",
    ),
    modes=Field(
        "array",
        "Modes lists what jobs may do with the runtime: Train (default) and/or Evaluate.",
        items=_str("A mode.", enum=MODES),
        min_items=1,
        list_type="set",
        default=["Train"],
    ),
    parameters=Field(
        "object",
        "Parameters is the JSON Schema (2020-12) of a TrainingJob's spec.parameters. Its top "
        "level is an object schema; at most 64 KiB serialized.",
        preserve_unknown=True,
    ),
    requires=_obj(
        "Requires says which inputs a TrainingJob must set.",
        _v1beta1("RuntimeRequirements"),
        data=_bool("Data requires the job to set spec.data."),
        environment=_bool("Environment requires the job to set spec.environment."),
        model=_bool("Model requires the job to set spec.model (default true).", default=True),
        teacher=_bool("Teacher requires the job to set spec.teacher (distillation)."),
    ),
    defaults=_obj(
        "Defaults apply when a TrainingJob leaves the field unset.",
        _v1beta1("RuntimeDefaults"),
        initCommand=_obj(
            "InitCommand is a preflight that runs before the command.",
            _v1beta1("InitCommand"),
            ("command",),
            command=_argv("Command is the preflight's argv.", min_items=1),
            timeout=_str("Timeout bounds the preflight; at most 30m.", format="duration"),
        ),
        parameters=Field(
            "object",
            "Parameters are merged under the TrainingJob's parameters and must validate against "
            "spec.parameters (required properties are not enforced here).",
            preserve_unknown=True,
        ),
        resources=RESOURCES,
        sidecars=Field(
            "array",
            "Sidecars start before the trainer and stop after it.",
            items=SIDECAR,
            list_type="map",
            list_keys=("name",),
        ),
    ),
    presets=Field(
        "array",
        "Presets are the resources measured for a model, method and quantization; each triple "
        "appears once.",
        items=_obj(
            "RuntimePreset is the resources measured for one model, method and quantization.",
            _v1beta1("RuntimePreset"),
            ("model", "method", "resources"),
            model=_str(
                "Model is a Hugging Face repository id, e.g. Qwen/Qwen3-0.6B.",
                min_length=1,
                format="hf-repo",
            ),
            method=_str("Method is Full, LoRA or QLoRA.", min_length=1, enum=METHODS),
            quantization=_str(
                "Quantization is empty or a scheme such as nf4; QLoRA needs one.", format="token"
            ),
            resources=RESOURCES,
        ),
    ),
    estimate=_obj(
        "Estimate holds step and task times measured by the nightly runs, keyed by accelerator "
        "class (h100-80g, rtx-4090-24g …).",
        _v1beta1("RuntimeEstimate"),
        secondsPerStep=_seconds_by_class(
            "SecondsPerStep is for training: a job's expected duration is steps times this, "
            "scaled up when it sets a larger batchSize, gradientAccumulation or "
            "maxCompletionLength than the defaults."
        ),
        secondsPerTask=_seconds_by_class(
            "SecondsPerTask is for evaluation: a job's expected duration is tasks times this."
        ),
    ),
    outputs=Field(
        "array",
        "Outputs are the downloadable results the runtime writes.",
        items=_obj(
            "RuntimeOutput is one downloadable result.",
            _v1beta1("RuntimeOutput"),
            ("name", "path"),
            name=_str(
                "Name is the output's unique name, e.g. adapter.", min_length=1, format="token"
            ),
            path=_str(
                "Path is the absolute path where the trainer writes it.",
                min_length=1,
                format="absolute-path",
            ),
        ),
        list_type="map",
        list_keys=("name",),
    ),
    checkpointing=_obj(
        "Checkpointing configures the state a preempted run resumes from.",
        _v1beta1("RuntimeCheckpointing"),
        path=_str(
            "Path is the absolute state directory (default /nodus/state).",
            format="absolute-path",
            default="/nodus/state",
        ),
        strategy=_str(
            "Strategy is HFTrainer (default) or Custom.",
            enum=CHECKPOINT_STRATEGIES,
            default="HFTrainer",
        ),
    ),
    environmentTasks=_str(
        "EnvironmentTasks is AttemptAPI when this exact image fetches public manifests through "
        "the live attempt; empty means the runtime cannot run environment tasks on a GPU host.",
        enum=ENVIRONMENT_TASKS,
    ),
)

CONDITION = _obj(
    "Condition is one aspect of the object's current state (metav1.Condition).",
    _meta_v1("Condition"),
    ("type", "status", "lastTransitionTime", "reason"),
    type=_str(
        "Type of condition in CamelCase, e.g. Verified.",
        min_length=1,
        max_length=316,
        format="qualified-name",
    ),
    status=_str("Status is True, False or Unknown.", min_length=1, enum=CONDITION_STATUSES),
    observedGeneration=_int(
        "ObservedGeneration is the generation the condition was set for.", minimum=0
    ),
    lastTransitionTime=_str(
        "LastTransitionTime is when the status last changed.", min_length=1, format="date-time"
    ),
    reason=_str(
        "Reason is a CamelCase reason for the last transition.",
        min_length=1,
        max_length=1024,
        format="condition-reason",
    ),
    message=_str("Message is a human-readable explanation.", max_length=32768),
)

STATUS = _obj(
    "TrainingRuntimeStatus is written by the TrainingRuntime controller only.",
    _v1beta1("TrainingRuntimeStatus"),
    phase=_str(
        "Phase is Pending until the image digest (and, for managed runtimes, the signature) is "
        "verified, then Ready, or Failed with a condition saying why.",
        enum=PHASES,
    ),
    conditions=Field(
        "array",
        "Conditions include Verified (reason SignatureVerified for managed runtimes).",
        items=CONDITION,
        list_type="map",
        list_keys=("type",),
    ),
    imageDigest=_str("ImageDigest is the verified image digest.", format="digest"),
    imageUser=_str(
        "ImageUser is the user the verified image's config runs as; root when it names none."
    ),
    managed=_bool(
        "Managed is true exactly for runtimes in project nodus; derived, never set by a client."
    ),
    observedGeneration=_int(
        "ObservedGeneration is the generation this status describes.", minimum=0
    ),
)

OWNER_REFERENCE = _obj(
    "OwnerReference identifies an owning object.",
    _meta_v1("OwnerReference"),
    ("apiVersion", "kind", "name", "uid"),
    apiVersion=_str("API version of the owner."),
    kind=_str("Kind of the owner."),
    name=_str("Name of the owner."),
    uid=_str("UID of the owner."),
    controller=_bool("Controller is true when the owner manages this object."),
    blockOwnerDeletion=_bool("BlockOwnerDeletion keeps the owner until this object is gone."),
)

MANAGED_FIELDS_ENTRY = _obj(
    "ManagedFieldsEntry records which fields one manager set, for server-side apply.",
    _meta_v1("ManagedFieldsEntry"),
    manager=_str("Manager is the name of the workflow that set the fields."),
    operation=_str("Operation is Apply or Update."),
    apiVersion=_str("APIVersion of the fields."),
    time=_str("Time of the last change by this manager.", format="date-time"),
    fieldsType=_str("FieldsType is FieldsV1."),
    fieldsV1=Field("object", "FieldsV1 is the set of fields.", preserve_unknown=True),
    subresource=_str("Subresource the fields were written through, e.g. status."),
)

_STRING_MAP = Field("map", "", values=_str(""))

OBJECT_META = _obj(
    "ObjectMeta is the metadata every persisted object has.",
    _meta_v1("ObjectMeta"),
    name=_str("Name is unique within the project; a DNS-1123 subdomain."),
    generateName=_str("GenerateName is a prefix the server completes into a unique name."),
    namespace=_str("Namespace is the project; a DNS-1123 label."),
    selfLink=_str("Deprecated and never set."),
    uid=_str("UID is the server-generated unique id; it never changes."),
    resourceVersion=_str(
        "ResourceVersion is an opaque version for optimistic concurrency and watch; compare "
        "only for equality."
    ),
    generation=_int("Generation counts changes to the desired state (spec)."),
    creationTimestamp=_str(
        "CreationTimestamp is when the object was created (UTC).", format="date-time"
    ),
    deletionTimestamp=_str("DeletionTimestamp is when deletion was requested.", format="date-time"),
    deletionGracePeriodSeconds=_int("Seconds allowed for graceful deletion."),
    labels=Field(
        "map", "Labels are key/value pairs for selecting objects.", values=_str("A label value.")
    ),
    annotations=Field(
        "map",
        "Annotations are key/value pairs for tools; not for selection.",
        values=_str("An annotation value."),
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
        items=_str("A qualified finalizer name."),
        list_type="set",
    ),
    managedFields=Field(
        "array",
        "ManagedFields records field ownership for server-side apply.",
        items=MANAGED_FIELDS_ENTRY,
    ),
)

TRAINING_RUNTIME = _obj(
    "TrainingRuntime is a signed trainer image plus the contract TrainingJobs compile against: "
    "the launcher, the parameter JSON Schema, the defaults, the resource presets and the "
    "measured step times.",
    _v1beta1(KIND),
    apiVersion=_str(f"APIVersion is {API_VERSION}."),
    kind=_str(f"Kind is {KIND}."),
    metadata=OBJECT_META,
    spec=SPEC,
    status=STATUS,
)


def child_path(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def unknown_fields(value: Any, node: Field = TRAINING_RUNTIME, path: str = "") -> list[str]:
    """Paths the schema does not know, e.g. ``spec.foo`` or ``spec.presets[0].bar``.

    Free-form nodes (``spec.parameters``, ``spec.defaults.parameters``) are never searched.
    Call with ``(spec, SPEC, "spec")`` to check a spec alone.
    """
    found: list[str] = []
    if node.preserve_unknown:
        return found
    if node.type == "object" and isinstance(value, dict):
        for key, item in value.items():
            child = node.properties.get(key)
            if child is None:
                found.append(child_path(path, key))
            else:
                found.extend(unknown_fields(item, child, child_path(path, key)))
    elif node.type == "map" and isinstance(value, dict) and node.values is not None:
        for key, item in value.items():
            found.extend(unknown_fields(item, node.values, f"{path}[{key}]"))
    elif node.type == "array" and isinstance(value, list) and node.items is not None:
        for index, item in enumerate(value):
            found.extend(unknown_fields(item, node.items, f"{path}[{index}]"))
    return found


def prune_unknown(value: Any, node: Field = TRAINING_RUNTIME) -> Any:
    """Drops, in place, every field `unknown_fields` would report; returns `value`."""
    if node.preserve_unknown:
        return value
    if node.type == "object" and isinstance(value, dict):
        for key in [k for k in value if k not in node.properties]:
            del value[key]
        for key, item in value.items():
            prune_unknown(item, node.properties[key])
    elif node.type == "map" and isinstance(value, dict) and node.values is not None:
        for item in value.values():
            prune_unknown(item, node.values)
    elif node.type == "array" and isinstance(value, list) and node.items is not None:
        for item in value:
            prune_unknown(item, node.items)
    return value


_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def path_segments(path: str) -> list[str]:
    """Splits ``spec.presets[0].resources`` into names and bracketed keys (kept as ``[0]``)."""
    return [name if name else f"[{key}]" for name, key in _SEGMENT.findall(path)]


def node_at(path: str, root: Field = TRAINING_RUNTIME) -> Field | None:
    """The schema node for a field path; indices and map keys may be given or left out."""
    node: Field | None = root
    for segment in path_segments(path):
        if node is None:
            return None
        if segment.startswith("["):
            node = node.items if node.type == "array" else node.values
            continue
        while node is not None and node.type == "array":  # "spec.presets.model" skips [i]
            node = node.items
        if node is None or node.type != "object":
            return None
        node = node.properties.get(segment)
    return node


def field_help(path: str) -> str | None:
    """The description of a field for the console, e.g. ``field_help("spec.launcher")``."""
    node = node_at(path)
    return node.description if node is not None else None
