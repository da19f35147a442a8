"""The TrainingJob resource schema: the one source of truth for its fields.

A TrainingJob is what a person asks of a TrainingRuntime: which model, method and parameters,
how much work, where. Its spec is the compile draft (``runtimes.catalog.compile``) plus the
fields a runtime's defaults name (resources, distributed.nodes, sidecars, initCommand), so the
shared fragments (`registry.fragments`: sidecars, env, the preflight) are reused, not restated.
Status is the job controller's: the compiled plan, pinned to the runtime generation and image
digest it was compiled against.
"""

from __future__ import annotations

from runtimes.apimachinery.meta import API_VERSION, VERSION
from runtimes.apimachinery.meta_schema import CONDITION, OBJECT_META
from runtimes.apimachinery.schema_nodes import Field, integer, obj, quantity, string
from runtimes.registry.fragments import init_command, sidecars
from runtimes.registry.trainingruntime.schema import GPU_COUNTS, METHODS, MODES

KIND = "TrainingJob"
PLURAL = "trainingjobs"
PHASES = ("Pending", "Compiled", "Invalid")
SELECTABLE_FIELDS = (
    "spec.runtimeRef.name",
    "spec.model",
    "spec.method",
    "spec.accelerator",
    "status.phase",
)
# Asking for a recompile against the runtime as it is now: set or change this annotation
# (any value, e.g. a timestamp); status.recompileRequest echoes the value acted on.
RECOMPILE_ANNOTATION = "nodus.dev/recompile"


def _v1beta1(kind: str) -> str:
    return f"dev.nodus.{VERSION}.{kind}"


RUNTIME_REF = obj(
    "RuntimeRef names the TrainingRuntime the job compiles against.",
    _v1beta1("RuntimeReference"),
    ("name",),
    name=string("Name is the runtime's name.", min_length=1, format="dns-subdomain"),
    namespace=string(
        "Namespace is the runtime's project; it defaults to the job's. Managed runtimes live in "
        "project nodus.",
        format="dns-label",
    ),
)

JOB_RESOURCES = obj(
    "Resources raise the runtime's floors for this job; each may only go up. For GPU work each "
    "of cpu, memory and disk is then the larger of the floor and the matched offering's host "
    "shape.",
    _v1beta1("JobResources"),
    cpu=quantity("CPU is the least number of vCPUs, e.g. 16."),
    memory=quantity("Memory is the least host memory, e.g. 128Gi."),
    disk=quantity("Disk is the least ephemeral disk, e.g. 500Gi."),
    nodes=integer(
        "Nodes above 1 is shorthand for spec.distributed.nodes and is stored in that form.",
        minimum=1,
    ),
    gpu=obj(
        "GPU raises the GPU request of the runtime's preset: more GPUs per node, or more memory "
        "per GPU. Which accelerator runs it is spec.accelerator.",
        _v1beta1("JobGPURequest"),
        count=integer("Count is the number of GPUs per node: 1, 2, 4 or 8.", enum=GPU_COUNTS),
        minMemory=quantity("MinMemory is the least memory each GPU must have, e.g. 80Gi."),
    ),
)

DISTRIBUTED = obj(
    "Distributed spreads the job over several nodes with the runtime's gang launcher.",
    _v1beta1("Distributed"),
    nodes=integer(
        "Nodes is how many nodes run the job (default 1, or the preset's nodes); above 1 needs "
        "a runtime whose launcher is Torchrun, Accelerate or Deepspeed.",
        minimum=1,
    ),
)

SPEC = obj(
    "TrainingJobSpec is what the job asks of its runtime; a create or update is admitted only "
    "when it compiles against the runtime.",
    _v1beta1("TrainingJobSpec"),
    ("runtimeRef",),
    runtimeRef=RUNTIME_REF,
    mode=string(
        "Mode is Train or Evaluate, among the runtime's modes; by default it follows steps "
        "(Train) or tasks (Evaluate).",
        enum=MODES,
    ),
    model=string(
        "Model is a Hugging Face repository id, e.g. Qwen/Qwen3-0.6B; with presets it picks one.",
        min_length=1,
    ),
    method=string("Method is Full, LoRA or QLoRA, among the model's presets.", enum=METHODS),
    quantization=string(
        "Quantization is empty or a scheme such as nf4, among the model's presets.",
        format="token",
    ),
    data=string("Data is the training data, e.g. hf://datasets/owner/name."),
    teacher=string("Teacher is the teacher model of a distillation."),
    environment=string(
        "Environment is the environment the job's tasks run in; only runtimes whose "
        "environmentTasks is AttemptAPI can run one."
    ),
    parameters=Field(
        "object",
        "Parameters are merged over the runtime's default parameters as a JSON merge patch "
        "(objects merge, null removes a default) and must then validate against the runtime's "
        "parameter schema. Where the schema offers alternatives (oneOf, anyOf, or a name "
        "discriminator) the job's object replaces the default's.",
        preserve_unknown=True,
    ),
    steps=integer("Steps is how many training steps to run (training).", minimum=1),
    tasks=integer("Tasks is how many evaluation tasks to run (evaluation).", minimum=1),
    accelerator=string(
        "Accelerator narrows the runtime's GPU request to one variant id (h100-80g-sxm) or "
        "family (H100) from the catalog.",
        min_length=1,
    ),
    resources=JOB_RESOURCES,
    distributed=DISTRIBUTED,
    sidecars=sidecars(
        "Sidecars add to the runtime's default sidecars, or replace the one of the same name. "
        "A sidecar without an image runs the job's (the runtime's) image."
    ),
    initCommand=init_command(
        "InitCommand replaces the runtime's preflight for this job.", "JobInitCommand"
    ),
)

COMPILED = obj(
    "Compiled is the plan the job was admitted with: what would run, where, how long, at what "
    "cost.",
    _v1beta1("CompiledJob"),
    mode=string("Mode is Train or Evaluate."),
    preset=Field(
        "object", "Preset is the runtime's preset the job runs on.", preserve_unknown=True
    ),
    parameters=Field(
        "object", "Parameters are the merged parameters the trainer gets.", preserve_unknown=True
    ),
    provenance=Field(
        "map",
        "Provenance says, per JSON pointer into parameters, whether the value is the job's or "
        "the runtime's default.",
        values=string("job or default."),
    ),
    resources=Field(
        "object",
        "Resources are the floors after the preset and the job's own.",
        preserve_unknown=True,
    ),
    nodes=integer("Nodes is the number of nodes.", minimum=1),
    sidecars=Field(
        "array",
        "Sidecars are the runtime's and the job's, each with its image.",
        items=Field("object", "A sidecar.", preserve_unknown=True),
    ),
    initCommand=Field("object", "InitCommand is the preflight that runs.", preserve_unknown=True),
    work=Field("object", "Work is steps or tasks.", preserve_unknown=True),
    offerings=Field(
        "array",
        "Offerings are the matching offerings, fastest first, each with its effective "
        "resources, duration and cost.",
        items=Field("object", "An offering.", preserve_unknown=True),
    ),
    accelerator=string("Accelerator is the first offering's accelerator."),
    seconds=Field("number", "Seconds is the first offering's expected duration."),
    cost=Field("number", "Cost is the first offering's expected cost in USD."),
    warnings=Field("array", "Warnings about the plan.", items=string("A warning.")),
)

STATUS = obj(
    "TrainingJobStatus is written by the job controller only.",
    _v1beta1("TrainingJobStatus"),
    phase=string(
        "Phase is Pending until the job is compiled against a Ready runtime, then Compiled, or "
        "Invalid when it no longer compiles.",
        enum=PHASES,
    ),
    conditions=Field(
        "array",
        "Conditions: Compiled, RuntimeReady (reason RuntimeMissing once the runtime is deleted) "
        "and RuntimeChanged (the runtime moved on since the compile).",
        items=CONDITION,
        list_type="map",
        list_keys=("type",),
    ),
    observedGeneration=integer(
        "ObservedGeneration is the job generation this status describes.", minimum=0
    ),
    runtimeGeneration=integer(
        "RuntimeGeneration is the runtime generation the job was compiled against.", minimum=0
    ),
    imageDigest=string("ImageDigest is the runtime's verified image digest, pinned at compile."),
    recompileRequest=string(
        f"RecompileRequest is the value of the {RECOMPILE_ANNOTATION} annotation last acted on."
    ),
    runtimeFingerprint=Field(
        "map",
        "RuntimeFingerprint is a short hash of each field of the runtime spec compiled against, "
        "so RuntimeChanged can say which fields moved.",
        values=string("A hash."),
    ),
    compiled=COMPILED,
)

TRAINING_JOB = obj(
    "TrainingJob asks a TrainingRuntime for one run: model, method, parameters, work and "
    "accelerator. It is admitted only when it compiles, and its status holds the compiled, "
    "estimated plan pinned to the runtime generation and image digest.",
    _v1beta1(KIND),
    apiVersion=string(f"APIVersion is {API_VERSION}."),
    kind=string(f"Kind is {KIND}."),
    metadata=OBJECT_META,
    spec=SPEC,
    status=STATUS,
)
