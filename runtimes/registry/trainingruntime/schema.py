"""The TrainingRuntime resource schema: the one source of truth for its fields.

Plain data: each `Field` names a JSON type, a description, and the constraints a schema can say
(enums, defaults, formats, list semantics, required keys). Structural validation, unknown-field
detection, defaulting, the OpenAPI v3 document (so ``kubectl explain`` works) and the console's
field help are all generated from it. Rules that need more than one field live in
``runtimes.registry.trainingruntime.validation``. `unknown_fields` and `prune_unknown` serve
``fieldValidation``.
"""

from __future__ import annotations

from typing import Any

from runtimes.apimachinery import schema_nodes
from runtimes.apimachinery.meta import API_VERSION, VERSION
from runtimes.apimachinery.meta_schema import CONDITION, CONDITION_STATUSES, OBJECT_META
from runtimes.apimachinery.schema_nodes import (
    Field,
    argv,
    boolean,
    child_path,
    integer,
    obj,
    path_segments,
    quantity,
    string,
)
from runtimes.registry.fragments import init_command, sidecars

KIND = "TrainingRuntime"
PLURAL = "trainingruntimes"

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
SELECTABLE_FIELDS = ("spec.task", "spec.launcher", "status.phase", "status.managed")


def _v1beta1(kind: str) -> str:
    return f"dev.nodus.{VERSION}.{kind}"


def _seconds_by_class(description: str) -> Field:
    return Field(
        "map",
        description,
        values=Field("number", "Seconds, greater than zero.", minimum=0, exclusive_minimum=True),
    )


GPU_REQUEST = obj(
    "GPURequest asks for accelerators. A family such as H100 matches each of its variants and "
    "never another family; a variant id matches its whole family unless exact is true.",
    _v1beta1("GPURequest"),
    ("type", "count"),
    type=Field(
        "array",
        "Type lists 1 to 8 accelerator variant ids (h100-80g-sxm) or families (H100) from the "
        "catalog; any of them may serve the request.",
        items=string("An accelerator id or family.", min_length=1),
        min_items=1,
        max_items=8,
        list_type="set",
    ),
    count=integer("Count is the number of GPUs per node: 1, 2, 4 or 8.", enum=GPU_COUNTS),
    minMemory=quantity("MinMemory is the least memory each GPU must have, e.g. 80Gi."),
    interconnect=string(
        "Interconnect is Any (default) or NVLink, which keeps only offerings whose GPUs talk "
        "over NVLink.",
        enum=INTERCONNECTS,
        default="Any",
    ),
    exact=boolean(
        "Exact pins the listed variant ids instead of matching their families; every entry of "
        "type must then be a variant id."
    ),
)

RESOURCES = obj(
    "Resources are capacity floors. For GPU work each of cpu, memory and disk is the larger of "
    "the floor and the matched offering's host shape.",
    _v1beta1("Resources"),
    cpu=quantity("CPU is the least number of vCPUs, e.g. 8 or 500m."),
    memory=quantity("Memory is the least host memory, e.g. 64Gi."),
    disk=quantity("Disk is the least ephemeral disk, e.g. 200Gi."),
    nodes=integer(
        "Nodes above 1 asks for a multi-node run (shorthand for a TrainingJob's "
        "spec.distributed.nodes) and needs a gang launcher.",
        minimum=1,
    ),
    gpu=GPU_REQUEST,
)

SPEC = obj(
    "TrainingRuntimeSpec is the contract a TrainingJob compiles against.",
    _v1beta1("TrainingRuntimeSpec"),
    ("image", "task", "command"),
    image=string(
        "Image is the trainer image pinned by digest: repository[:tag]@sha256:<64 hex>. "
        "Managed runtimes are cosign-verified.",
        min_length=1,
        format="image-ref",
    ),
    task=string(
        "Task is what the runtime trains: SFT, Pretrain, DPO, ORPO, KTO, Reward, GRPO, Distill, "
        "Evaluate or Custom.",
        min_length=1,
        enum=TASKS,
    ),
    command=argv("Command is the trainer entrypoint (argv); it may not be empty.", min_items=1),
    launcher=string(
        "Launcher is Plain (default), Torchrun, Accelerate or Deepspeed; multi-node runs use it "
        "as the gang launcher.",
        enum=LAUNCHERS,
        default="Plain",
    ),
    modes=Field(
        "array",
        "Modes lists what jobs may do with the runtime: Train (default) and/or Evaluate.",
        items=string("A mode.", enum=MODES),
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
    requires=obj(
        "Requires says which inputs a TrainingJob must set.",
        _v1beta1("RuntimeRequirements"),
        data=boolean("Data requires the job to set spec.data."),
        environment=boolean("Environment requires the job to set spec.environment."),
        model=boolean("Model requires the job to set spec.model (default true).", default=True),
        teacher=boolean("Teacher requires the job to set spec.teacher (distillation)."),
    ),
    defaults=obj(
        "Defaults apply when a TrainingJob leaves the field unset.",
        _v1beta1("RuntimeDefaults"),
        initCommand=init_command(
            "InitCommand is a preflight that runs before the command.", "InitCommand"
        ),
        parameters=Field(
            "object",
            "Parameters are merged under the TrainingJob's parameters and must validate against "
            "spec.parameters (required properties are not enforced here).",
            preserve_unknown=True,
        ),
        resources=RESOURCES,
        sidecars=sidecars("Sidecars start before the trainer and stop after it."),
    ),
    presets=Field(
        "array",
        "Presets are the resources measured for a model, method and quantization; each triple "
        "appears once.",
        items=obj(
            "RuntimePreset is the resources measured for one model, method and quantization.",
            _v1beta1("RuntimePreset"),
            ("model", "method", "resources"),
            model=string(
                "Model is a Hugging Face repository id, e.g. Qwen/Qwen3-0.6B.",
                min_length=1,
                format="hf-repo",
            ),
            method=string("Method is Full, LoRA or QLoRA.", min_length=1, enum=METHODS),
            quantization=string(
                "Quantization is empty or a scheme such as nf4; QLoRA needs one.", format="token"
            ),
            resources=RESOURCES,
        ),
        # Atomic: its key would be (model, method, quantization), and quantization is optional
        # without a default, which a map-list key may not be. Server-side apply owns it whole.
        list_type="atomic",
    ),
    estimate=obj(
        "Estimate holds step and task times measured by the nightly runs, keyed by accelerator "
        "class (h100-80g, rtx-4090 …).",
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
        items=obj(
            "RuntimeOutput is one downloadable result.",
            _v1beta1("RuntimeOutput"),
            ("name", "path"),
            name=string(
                "Name is the output's unique name, e.g. adapter.", min_length=1, format="token"
            ),
            path=string(
                "Path is the absolute path where the trainer writes it.",
                min_length=1,
                format="absolute-path",
            ),
        ),
        list_type="map",
        list_keys=("name",),
    ),
    checkpointing=obj(
        "Checkpointing configures the state a preempted run resumes from.",
        _v1beta1("RuntimeCheckpointing"),
        path=string(
            "Path is the absolute state directory (default /nodus/state).",
            format="absolute-path",
            default="/nodus/state",
        ),
        strategy=string(
            "Strategy is HFTrainer (default) or Custom.",
            enum=CHECKPOINT_STRATEGIES,
            default="HFTrainer",
        ),
    ),
    environmentTasks=string(
        "EnvironmentTasks is AttemptAPI when this exact image fetches public manifests through "
        "the live attempt; empty means the runtime cannot run environment tasks on a GPU host.",
        enum=ENVIRONMENT_TASKS,
    ),
)

STATUS = obj(
    "TrainingRuntimeStatus is written by the TrainingRuntime controller only.",
    _v1beta1("TrainingRuntimeStatus"),
    phase=string(
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
    imageDigest=string("ImageDigest is the verified image digest.", format="digest"),
    imageUser=string(
        "ImageUser is the user the verified image's config runs as; root when it names none."
    ),
    managed=boolean(
        "Managed is true exactly for runtimes in project nodus; derived, never set by a client."
    ),
    observedGeneration=integer(
        "ObservedGeneration is the generation this status describes.", minimum=0
    ),
)

TRAINING_RUNTIME = obj(
    "TrainingRuntime is a signed trainer image plus the contract TrainingJobs compile against: "
    "the launcher, the parameter JSON Schema, the defaults, the resource presets and the "
    "measured step times.",
    _v1beta1(KIND),
    apiVersion=string(f"APIVersion is {API_VERSION}."),
    kind=string(f"Kind is {KIND}."),
    metadata=OBJECT_META,
    spec=SPEC,
    status=STATUS,
)


def unknown_fields(value: Any, node: Field = TRAINING_RUNTIME, path: str = "") -> list[str]:
    """Paths the schema does not know, e.g. ``spec.foo`` or ``spec.presets[0].bar``.

    Free-form nodes (``spec.parameters``, ``spec.defaults.parameters``) are never searched.
    Call with ``(spec, SPEC, "spec")`` to check a spec alone.
    """
    return schema_nodes.unknown_fields(value, node, path)


def prune_unknown(value: Any, node: Field = TRAINING_RUNTIME) -> Any:
    """Drops, in place, every field `unknown_fields` would report; returns `value`."""
    return schema_nodes.prune_unknown(value, node)


def node_at(path: str, root: Field = TRAINING_RUNTIME) -> Field | None:
    """The schema node for a field path; indices and map keys may be given or left out."""
    return schema_nodes.node_at(path, root)


def field_help(path: str) -> str | None:
    """The description of a field for the console, e.g. ``field_help("spec.launcher")``."""
    node = node_at(path)
    return node.description if node is not None else None


__all__ = [
    "CONDITION_STATUSES",
    "Field",
    "child_path",
    "field_help",
    "node_at",
    "path_segments",
    "prune_unknown",
    "unknown_fields",
]
