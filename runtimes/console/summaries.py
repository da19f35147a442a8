"""What the catalog shows about one runtime: the facts a row, a card and the filters need.

Derived once per object from its spec and status plus the accelerator catalog, so the table,
the facet counts and the websocket pushes all agree on the same values.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runtimes.apimachinery.meta import Obj
from runtimes.catalog.accelerators import AcceleratorCatalog, catalog
from runtimes.catalog.matching import match_gpu
from runtimes.registry.trainingjob.strategy import format_duration

DESCRIPTION = "nodus.dev/description"  # the annotation the catalog shows under a runtime's name


@dataclass(frozen=True)
class Fastest:
    """The quickest measured time: seconds per step (training) or per task (evaluation)."""

    accelerator_class: str
    seconds: float
    unit: str  # "step" or "task"

    @property
    def per_unit(self) -> str:
        return f"{human_duration(self.seconds)}/{self.unit}"


def human_duration(seconds: float) -> str:
    """The console's one duration format, kubectl's: 0.42s, 12s, 3m5s, 2h10m, 3d4h (a
    TrainingJob's Duration column is written the same way)."""
    if seconds < 10:
        return f"{seconds:.3g}s"
    return format_duration(seconds)


@dataclass(frozen=True)
class RuntimeSummary:
    namespace: str
    name: str
    task: str
    launcher: str
    modes: tuple[str, ...]
    phase: str
    managed: bool
    models: tuple[str, ...]
    families: tuple[str, ...]
    fastest: Fastest | None
    resource_version: str
    labels: dict[str, str] = field(default_factory=dict)
    description: str = ""

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def row_id(self) -> str:
        # Namespaces are DNS labels and names DNS subdomains: both already valid in an id.
        return f"tr-{self.namespace}-{self.name}"

    def search_text(self) -> str:
        parts = [self.namespace, self.name, self.task, self.launcher, *self.models]
        parts += [*self.families, *self.labels.values(), self.description]
        return " ".join(parts).lower()


def gpu_requests(spec: Obj) -> list[Obj]:
    """Every GPU request the runtime makes: its default resources and each preset's."""
    requests = []
    default_gpu = ((spec.get("defaults") or {}).get("resources") or {}).get("gpu")
    if default_gpu:
        requests.append(default_gpu)
    for preset in spec.get("presets") or []:
        gpu = (preset.get("resources") or {}).get("gpu")
        if gpu:
            requests.append(gpu)
    return requests


def families_of(spec: Obj, source: AcceleratorCatalog) -> tuple[str, ...]:
    found: dict[str, None] = {}
    for request in gpu_requests(spec):
        for match in match_gpu(request, source):
            found[match.variant.family] = None
    return tuple(found)


def fastest_of(spec: Obj) -> Fastest | None:
    estimate = spec.get("estimate") or {}
    for key, unit in (("secondsPerStep", "step"), ("secondsPerTask", "task")):
        times = estimate.get(key) or {}
        numeric = {k: v for k, v in times.items() if isinstance(v, int | float)}
        if numeric:
            best = min(numeric, key=lambda k: (numeric[k], k))
            return Fastest(best, float(numeric[best]), unit)
    return None


def summarize(obj: Obj, source: AcceleratorCatalog | None = None) -> RuntimeSummary:
    source = source or catalog()
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    models = tuple(dict.fromkeys(str(p.get("model")) for p in spec.get("presets") or []))
    return RuntimeSummary(
        namespace=meta.get("namespace", ""),
        name=meta.get("name", ""),
        task=str(spec.get("task", "")),
        launcher=str(spec.get("launcher") or "Plain"),
        modes=tuple(spec.get("modes") or ["Train"]),
        phase=str(status.get("phase") or "Pending"),
        managed=bool(status.get("managed")),
        models=models,
        families=families_of(spec, source),
        fastest=fastest_of(spec),
        resource_version=str(meta.get("resourceVersion", "")),
        labels=dict(meta.get("labels") or {}),
        description=str((meta.get("annotations") or {}).get(DESCRIPTION, "")),
    )
