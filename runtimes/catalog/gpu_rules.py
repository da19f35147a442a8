"""GPU request rules that need the accelerator catalog.

Validation only needs three facts from the catalog: the variant ids, the family names and the
accelerator classes. `AcceleratorCatalog` names exactly that, so the rules can be tested with a
small stand-in and wired to ``runtimes.catalog.accelerators.catalog()`` in production.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Any, Protocol

from runtimes.apimachinery import fielderrors as fe
from runtimes.apimachinery.fielderrors import FieldError


class AcceleratorCatalog(Protocol):
    @property
    def ids(self) -> Collection[str]: ...

    @property
    def families(self) -> Collection[str]: ...

    @property
    def classes(self) -> Collection[str]: ...


def gpu_requests(spec: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every GPU request in a spec with its path: the defaults' and each preset's."""
    defaults = spec.get("defaults")
    if isinstance(defaults, dict):
        resources = defaults.get("resources")
        if isinstance(resources, dict) and isinstance(resources.get("gpu"), dict):
            yield "spec.defaults.resources.gpu", resources["gpu"]
    presets = spec.get("presets")
    if isinstance(presets, list):
        for index, preset in enumerate(presets):
            resources = preset.get("resources") if isinstance(preset, dict) else None
            if isinstance(resources, dict) and isinstance(resources.get("gpu"), dict):
                yield f"spec.presets[{index}].resources.gpu", resources["gpu"]


def gpu_type_errors(
    gpu: dict[str, Any], path: str, catalog: AcceleratorCatalog
) -> list[FieldError]:
    """Each entry of gpu.type must be known; with exact: true it must be a variant id."""
    entries = gpu.get("type")
    if not isinstance(entries, list):
        return []
    exact = gpu.get("exact") is True
    known = sorted(catalog.families) + sorted(catalog.ids)
    errors: list[FieldError] = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, str) or not entry:
            continue  # the structural check already reported it
        entry_path = f"{path}.type[{index}]"
        if entry in catalog.ids:
            continue
        if entry in catalog.families:
            if exact:
                variants = [i for i in catalog.ids if variant_family(i, catalog) == entry]
                example = f" such as {variants[0]!r}" if variants else ""
                errors.append(
                    fe.invalid(
                        entry_path,
                        entry,
                        f"exact: true pins a variant, so list variant ids{example} instead of "
                        "the family, or set exact: false",
                    )
                )
            continue
        errors.append(fe.not_supported(entry_path, entry, known))
    return errors


def _slug(text: str) -> str:
    return text.lower().replace(" ", "-")


def variant_family(variant_id: str, catalog: AcceleratorCatalog) -> str | None:
    """The family of a variant id: from the catalog's ``family_of`` when it has one, else from
    the naming convention shared with the catalog (h100-80g-sxm is an H100)."""
    family_of = getattr(catalog, "family_of", None)
    if callable(family_of):
        family = family_of(variant_id)
        if isinstance(getattr(family, "name", None), str):
            return str(family.name)
    named = [f for f in catalog.families if variant_id.startswith(_slug(f) + "-")]
    return max(named, key=len) if named else None


def variant_class(variant_id: str, catalog: AcceleratorCatalog) -> str | None:
    """The accelerator class of a variant id: the catalog's, else the id without its form
    factor (h100-80g-sxm -> h100-80g)."""
    lookup = getattr(catalog, "variant", None)
    if callable(lookup):
        found = getattr(lookup(variant_id), "accelerator_class", None)
        if isinstance(found, str):
            return found
    named = [c for c in catalog.classes if variant_id == c or variant_id.startswith(c + "-")]
    return max(named, key=len) if named else None


def classes_for(entry: str, catalog: AcceleratorCatalog, exact: bool = False) -> set[str]:
    """The accelerator classes a gpu.type entry can run on: a family, or a variant id without
    ``exact``, reaches every class of the family; an exact id only its own class."""
    if entry in catalog.ids:
        if exact:
            own = variant_class(entry, catalog)
            return {own} if own else set()
        family = variant_family(entry, catalog)
        if family is None:
            own = variant_class(entry, catalog)
            return {own} if own else set()
        entry = family
    if entry not in catalog.families:
        return set()
    return {
        cls
        for variant_id in catalog.ids
        if variant_family(variant_id, catalog) == entry
        and (cls := variant_class(variant_id, catalog)) is not None
    }
