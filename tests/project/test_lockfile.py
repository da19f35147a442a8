"""The lock files and pyproject.toml cannot drift apart: `make lock` makes one from the other.

`make run` and `make test` install requirements/run.txt and requirements/test.txt with
`--require-hashes --no-deps`, so a dependency named in pyproject.toml but missing from its lock
would simply not be installed. These tests fail until `make lock` has been run after an edit.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
RUN_LOCK = ROOT / "requirements" / "run.txt"
TEST_LOCK = ROOT / "requirements" / "test.txt"


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: frozenset[str]


@cache
def locked(path: Path) -> dict[NormalizedName, Pin]:
    """Every `name==version --hash=...` entry of a lock file, by normalized name."""
    text = re.sub(r"\\\n", " ", path.read_text())  # join continuation lines
    pins: dict[NormalizedName, Pin] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        spec, *options = re.split(r"\s+(?=--)", line)
        requirement = Requirement(spec)
        assert requirement.marker is None, f"{path.name}: environment marker in {spec!r}"
        (specifier,) = requirement.specifier
        assert specifier.operator == "==", f"{path.name}: {spec!r} is not pinned with =="
        name = canonicalize_name(requirement.name)
        assert name not in pins, f"{path.name}: {name} is pinned twice"
        hashes = frozenset(o.removeprefix("--hash=") for o in options if o.startswith("--hash="))
        pins[name] = Pin(Version(specifier.version), hashes)
    return pins


def declared(*extras: str) -> list[Requirement]:
    """pyproject.toml's dependencies plus those extras', those that apply here."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lines = list(project["dependencies"])
    for extra in extras:
        lines += project["optional-dependencies"][extra]
    requirements = [Requirement(line) for line in lines]
    return [r for r in requirements if r.marker is None or r.marker.evaluate()]


LOCKS = [pytest.param(RUN_LOCK, (), id="run"), pytest.param(TEST_LOCK, ("test",), id="test")]


@pytest.mark.parametrize(("lock", "extras"), LOCKS)
def test_every_declared_dependency_is_pinned(lock: Path, extras: tuple[str]) -> None:
    pins = locked(lock)
    problems = []
    for requirement in declared(*extras):
        pin = pins.get(canonicalize_name(requirement.name))
        if pin is None:
            problems.append(f"{requirement} is not in the lock")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            problems.append(f"{requirement} does not allow the locked {pin.version}")
    assert not problems, f"{lock.name} is stale, run `make lock`:\n" + "\n".join(problems)


@pytest.mark.parametrize("lock", [RUN_LOCK, TEST_LOCK], ids=["run", "test"])
def test_every_pin_carries_sha256_hashes(lock: Path) -> None:
    pins = locked(lock)
    assert pins
    for name, pin in pins.items():
        assert pin.hashes, f"{lock.name}: {name} has no --hash"
        assert all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in pin.hashes), name


def test_the_run_lock_is_the_runtime_part_of_the_test_lock() -> None:
    """`make test` installs the test lock over the run lock: it must not change a version."""
    run, test = locked(RUN_LOCK), locked(TEST_LOCK)
    differing = sorted(name for name, pin in run.items() if test.get(name) != pin)
    assert not differing, f"pinned differently in {TEST_LOCK.name}: {differing}"


def requires(name: str, extras: set[str]) -> list[Requirement]:
    """What the installed distribution `name` needs in this environment, with these extras."""
    needed = []
    for line in importlib.metadata.requires(name) or []:
        requirement = Requirement(line)
        marker = requirement.marker
        if marker is None or any(marker.evaluate({"extra": e}) for e in extras or {""}):
            needed.append(requirement)
    return needed


@pytest.mark.parametrize(("lock", "extras"), LOCKS)
def test_the_lock_is_closed_under_the_dependencies_of_what_it_pins(
    lock: Path, extras: tuple[str]
) -> None:
    """Installed with --no-deps, the lock must name every dependency of every dependency,
    the extras' too (jsonschema[format-nongpl], psycopg[binary,pool])."""
    pins = locked(lock)
    missing = []
    todo = [(r, "pyproject.toml") for r in declared(*extras)]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        requirement, needed_by = todo.pop()
        name = canonicalize_name(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        if name not in pins:
            missing.append(f"{requirement} (needed by {needed_by})")
            continue
        try:
            needs = requires(name, set(requirement.extras))
        except importlib.metadata.PackageNotFoundError:
            pytest.fail(f"{name} is locked but not installed: run `make test-deps`")
        todo += [(r, name) for r in needs]
    assert not missing, f"{lock.name} is stale, run `make lock`:\n" + "\n".join(missing)
