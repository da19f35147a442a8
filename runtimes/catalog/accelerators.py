"""The accelerator catalog: GPU families, variants and offerings, loaded from data.

Platform admins edit ``runtimes/data/accelerators.yaml`` (or point ``NODUS_ACCELERATORS_FILE``
at their own file); this module validates it, caches it, and presents each variant as a
read-only, cluster-scoped ``Accelerator`` object for ``kubectl get accelerators``.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from runtimes.apimachinery import yamlcodec
from runtimes.apimachinery.meta import API_VERSION
from runtimes.apimachinery.quantities import parse_quantity

ACCELERATORS_FILE_ENV = "NODUS_ACCELERATORS_FILE"
DEFAULT_ACCELERATORS_FILE = Path(__file__).resolve().parents[1] / "data" / "accelerators.yaml"
GPU_COUNTS = (1, 2, 4, 8)
INTERCONNECTS = ("NVLink", "PCIe", "InfinityFabric")

_CLASS_KEY = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


@dataclass(frozen=True)
class Offering:
    """What the platform sells: ``count`` GPUs of one variant on a host of this shape."""

    variant: str
    count: int
    cpu: str
    memory: str
    disk: str
    price_per_hour: float

    def host(self) -> dict[str, str]:
        return {"cpu": self.cpu, "memory": self.memory, "disk": self.disk}

    def as_dict(self) -> dict[str, Any]:
        return {
            "accelerator": self.variant,
            "count": self.count,
            **self.host(),
            "pricePerHour": self.price_per_hour,
        }


@dataclass(frozen=True)
class Variant:
    id: str
    family: str
    vendor: str
    memory: str
    nvlink: bool
    interconnect: str
    accelerator_class: str
    offerings: tuple[Offering, ...]
    # Earlier names of the class that estimates may still be keyed by (rtx-4090-24g).
    class_aliases: tuple[str, ...] = ()

    @property
    def memory_bytes(self) -> Decimal:
        return parse_quantity(self.memory)

    def offering(self, count: int) -> Offering | None:
        return next((o for o in self.offerings if o.count == count), None)


@dataclass(frozen=True)
class Family:
    name: str
    vendor: str
    variants: tuple[str, ...]  # variant ids, in catalog order


class AcceleratorCatalogError(ValueError):
    """The catalog file is unusable; ``problems`` lists every reason, each with its path."""

    def __init__(self, source: str, problems: list[str]) -> None:
        self.source = source
        self.problems = problems
        super().__init__(f"invalid accelerator catalog {source}:\n  " + "\n  ".join(problems))


class AcceleratorCatalog:
    """Families and variants by name, in file order, with their offerings."""

    def __init__(self, families: list[Family], variants: list[Variant]) -> None:
        self.families: dict[str, Family] = {f.name: f for f in families}
        self.variants: dict[str, Variant] = {v.id: v for v in variants}
        self.ids: tuple[str, ...] = tuple(self.variants)
        self.classes: tuple[str, ...] = tuple(dict.fromkeys(v.accelerator_class for v in variants))
        # alias -> class: an estimate keyed by an old class name still counts for the class.
        self.class_aliases: dict[str, str] = {
            alias: v.accelerator_class for v in variants for alias in v.class_aliases
        }
        self.offerings: tuple[Offering, ...] = tuple(o for v in variants for o in v.offerings)

    def variant(self, variant_id: str) -> Variant | None:
        return self.variants.get(variant_id)

    def family_of(self, name: str) -> Family | None:
        """The family a variant id belongs to, or the family a family name names."""
        if name in self.variants:
            return self.families[self.variants[name].family]
        return self.families.get(name)

    def is_family(self, name: str) -> bool:
        return name in self.families

    def knows_class(self, key: str) -> bool:
        """Whether an estimate key names an accelerator class or one of its aliases."""
        return key in self.classes or key in self.class_aliases

    def class_keys(self, accelerator_class: str) -> tuple[str, ...]:
        """The keys an estimate may use for the class: its name first, then its aliases."""
        aliases = (a for a, c in self.class_aliases.items() if c == accelerator_class)
        return (accelerator_class, *aliases)

    def knows(self, name: str) -> bool:
        """Whether a gpu.type entry names a variant id or a family."""
        return name in self.variants or name in self.families


def parse_catalog(data: Any, source: str = "<data>") -> AcceleratorCatalog:
    """Validates the catalog document and builds it; raises AcceleratorCatalogError."""
    problems: list[str] = []
    families: list[Family] = []
    variants: list[Variant] = []
    if not isinstance(data, Mapping) or not isinstance(data.get("families"), list):
        raise AcceleratorCatalogError(source, ["families: must be a list of families"])
    if not data["families"]:
        problems.append("families: must not be empty")
    seen_ids: set[str] = set()
    seen_families: set[str] = set()
    for i, raw in enumerate(data["families"]):
        path = f"families[{i}]"
        if not isinstance(raw, Mapping):
            problems.append(f"{path}: must be a mapping")
            continue
        name = _text(raw, "name", path, problems)
        vendor = _text(raw, "vendor", path, problems)
        if name in seen_families or name in seen_ids:
            problems.append(f"{path}.name: duplicate name {name!r}")
        seen_families.add(name)
        raw_variants = raw.get("variants")
        if not isinstance(raw_variants, list) or not raw_variants:
            problems.append(f"{path}.variants: must be a non-empty list")
            raw_variants = []
        ids: list[str] = []
        for j, raw_variant in enumerate(raw_variants):
            variant = _variant(raw_variant, f"{path}.variants[{j}]", name, vendor, problems)
            if variant is None:
                continue
            if variant.id in seen_ids or variant.id in seen_families:
                problems.append(f"{path}.variants[{j}].id: duplicate id {variant.id!r}")
            seen_ids.add(variant.id)
            ids.append(variant.id)
            variants.append(variant)
        families.append(Family(name=name, vendor=vendor, variants=tuple(ids)))
    # A family name that is also a variant id would make gpu.type ambiguous.
    for clash in sorted(seen_ids & seen_families):
        problems.append(f"families: {clash!r} is both a family name and a variant id")
    if problems:
        raise AcceleratorCatalogError(source, problems)
    return AcceleratorCatalog(families, variants)


def _text(raw: Mapping[str, Any], key: str, path: str, problems: list[str]) -> str:
    value = raw.get(key)
    if not isinstance(value, str) or not value.strip():
        problems.append(f"{path}.{key}: must be a non-empty string")
        return ""
    return value


def _quantity(raw: Mapping[str, Any], key: str, path: str, problems: list[str]) -> str:
    value = raw.get(key)
    try:
        if isinstance(value, int | float | str) and parse_quantity(value) > 0:
            return str(value)
    except ValueError:
        pass
    problems.append(f"{path}.{key}: must be a positive Kubernetes quantity, got {value!r}")
    return ""


def _variant(raw: Any, path: str, family: str, vendor: str, problems: list[str]) -> Variant | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{path}: must be a mapping")
        return None
    variant_id = _text(raw, "id", path, problems)
    if variant_id and not _CLASS_KEY.match(variant_id):
        problems.append(f"{path}.id: {variant_id!r} must be a lowercase DNS-1123 label")
    memory = _quantity(raw, "memory", path, problems)
    nvlink = raw.get("nvlink")
    if not isinstance(nvlink, bool):
        problems.append(f"{path}.nvlink: must be true or false")
        nvlink = False
    interconnect = raw.get("interconnect", "NVLink" if nvlink else "PCIe")
    if interconnect not in INTERCONNECTS:
        problems.append(f"{path}.interconnect: must be one of {', '.join(INTERCONNECTS)}")
    elif (interconnect == "NVLink") != nvlink:
        problems.append(f"{path}.interconnect: {interconnect} contradicts nvlink: {nvlink}")
    accelerator_class = _text(raw, "acceleratorClass", path, problems)
    if accelerator_class and not _CLASS_KEY.match(accelerator_class):
        problems.append(f"{path}.acceleratorClass: {accelerator_class!r} must be a DNS-1123 label")
    aliases = raw.get("classAliases", [])
    if not isinstance(aliases, list) or not all(
        isinstance(a, str) and _CLASS_KEY.match(a) for a in aliases
    ):
        problems.append(f"{path}.classAliases: must be a list of DNS-1123 labels")
        aliases = []
    offerings: list[Offering] = []
    raw_offerings = raw.get("offerings")
    if not isinstance(raw_offerings, list) or not raw_offerings:
        problems.append(f"{path}.offerings: must be a non-empty list")
        raw_offerings = []
    for k, raw_offering in enumerate(raw_offerings):
        offering = _offering(raw_offering, f"{path}.offerings[{k}]", variant_id, problems)
        if offering is None:
            continue
        if any(o.count == offering.count for o in offerings):
            problems.append(f"{path}.offerings[{k}].count: duplicate count {offering.count}")
        offerings.append(offering)
    return Variant(
        id=variant_id,
        family=family,
        vendor=vendor,
        memory=memory,
        nvlink=nvlink,
        interconnect=str(interconnect),
        accelerator_class=accelerator_class,
        offerings=tuple(offerings),
        class_aliases=tuple(aliases),
    )


def _offering(raw: Any, path: str, variant_id: str, problems: list[str]) -> Offering | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{path}: must be a mapping")
        return None
    count = raw.get("count")
    if count not in GPU_COUNTS or isinstance(count, bool):
        problems.append(f"{path}.count: must be 1, 2, 4 or 8, got {count!r}")
        count = 0
    price = raw.get("pricePerHour")
    if isinstance(price, bool) or not isinstance(price, int | float) or price <= 0:
        problems.append(f"{path}.pricePerHour: must be a positive number of USD, got {price!r}")
        price = 0.0
    return Offering(
        variant=variant_id,
        count=int(count),
        cpu=_quantity(raw, "cpu", path, problems),
        memory=_quantity(raw, "memory", path, problems),
        disk=_quantity(raw, "disk", path, problems),
        price_per_hour=float(price),
    )


def load_catalog(path: str | Path) -> AcceleratorCatalog:
    """Reads and validates one catalog file."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise AcceleratorCatalogError(str(path), [f"cannot read: {exc.strerror}"]) from exc
    try:
        data = yamlcodec.load(text)
    except yamlcodec.YAMLError as exc:
        raise AcceleratorCatalogError(str(path), [f"not YAML: {exc}"]) from exc
    return parse_catalog(data, str(path))


def catalog_path() -> Path:
    return Path(os.environ.get(ACCELERATORS_FILE_ENV) or DEFAULT_ACCELERATORS_FILE)


_cached: AcceleratorCatalog | None = None
_lock = threading.Lock()


def catalog() -> AcceleratorCatalog:
    """The platform's catalog, read once per process (``reload()`` re-reads it)."""
    global _cached
    with _lock:
        if _cached is None:
            _cached = load_catalog(catalog_path())
        return _cached


def reload() -> AcceleratorCatalog:
    """Re-reads the catalog file (after an admin changed it or the env var)."""
    global _cached
    with _lock:
        _cached = None
    return catalog()


def accelerator_objects(source: AcceleratorCatalog | None = None) -> list[dict[str, Any]]:
    """One read-only, cluster-scoped ``Accelerator`` object per variant, in catalog order."""
    cat = source or catalog()
    return [
        {
            "apiVersion": API_VERSION,
            "kind": "Accelerator",
            "metadata": {
                "name": v.id,
                "labels": {
                    "nodus.dev/family": _label_value(v.family),
                    "nodus.dev/vendor": _label_value(v.vendor),
                    "nodus.dev/accelerator-class": v.accelerator_class,
                },
            },
            "spec": {
                "family": v.family,
                "vendor": v.vendor,
                "memory": v.memory,
                "nvlink": v.nvlink,
                "interconnect": v.interconnect,
                "acceleratorClass": v.accelerator_class,
                "offerings": [
                    {"count": o.count, **o.host(), "pricePerHour": o.price_per_hour}
                    for o in v.offerings
                ],
            },
        }
        for v in cat.variants.values()
    ]


def _label_value(text: str) -> str:
    # Family names may hold spaces ("RTX 4090"); label values may not.
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-_.").lower()
