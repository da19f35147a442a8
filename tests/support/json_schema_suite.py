"""The official JSON Schema Test Suite, draft 2020-12, as jsonschema's sdist ships it.

The suite is not copied into the repository: the sdist of the jsonschema version the lock pins is
fetched with pip, checked against the lock's hashes, and its `json/tests/draft2020-12` unpacked
once into `.cache/` (gitignored). A case is (file, group, test) with the group's schema.
"""

from __future__ import annotations

import fcntl
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "requirements" / "test.txt"
DRAFT = "draft2020-12"
# Required cases, and the optional ones about what nodus chose: patterns and formats.
OPTIONAL = ("optional/ecmascript-regex.json", "optional/format/*.json")


@dataclass(frozen=True)
class Case:
    file: str
    group: str
    test: str
    schema: Any
    data: Any
    valid: bool

    @property
    def id(self) -> str:
        return f"{self.file} | {self.group} | {self.test}"


def _locked_requirement() -> str:
    """`jsonschema==X` with every hash the lock holds for it (wheel and sdist)."""
    pinned = version("jsonschema")
    text = LOCK.read_text()
    block = re.search(rf"^jsonschema=={re.escape(pinned)}((?:\s*\\\n\s*--hash=\S+)+)", text, re.M)
    assert block, f"jsonschema=={pinned} is not in {LOCK.name}"
    hashes = " ".join(re.findall(r"--hash=\S+", block.group(1)))
    return f"jsonschema=={pinned} {hashes}"


def suite_root() -> Path:
    """The unpacked `json/tests/draft2020-12` folder, fetched on first use (one process at a
    time: pytest-xdist's workers wait for the first)."""
    pinned = version("jsonschema")
    target = REPO / ".cache" / "json-schema-test-suite" / pinned
    done = target / ".complete"
    target.mkdir(parents=True, exist_ok=True)
    with (target.parent / f".{pinned}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            _fetch(target)
            done.touch()
    return target / DRAFT


def _fetch(target: Path) -> None:
    with tempfile.TemporaryDirectory() as work:
        requirements = Path(work) / "requirements.txt"
        requirements.write_text(_locked_requirement() + "\n")
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--require-hashes", "-r", str(requirements), "-d", work],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
        [sdist] = Path(work).glob("jsonschema-*.tar.gz")
        prefix = f"{sdist.name.removesuffix('.tar.gz')}/json/tests/{DRAFT}/"
        with tarfile.open(sdist) as archive:
            for member in archive.getmembers():
                if member.isfile() and member.name.startswith(prefix):
                    out = target / DRAFT / member.name.removeprefix(prefix)
                    out.parent.mkdir(parents=True, exist_ok=True)
                    source = archive.extractfile(member)
                    assert source is not None
                    out.write_bytes(source.read())


def cases(root: Path) -> Iterator[Case]:
    files = sorted(root.glob("*.json"))
    for pattern in OPTIONAL:
        files += sorted(root.glob(pattern))
    for path in files:
        name = path.relative_to(root).as_posix()
        for group in json.loads(path.read_text()):
            for test in group["tests"]:
                yield Case(
                    name, group["description"], test["description"], group["schema"],
                    test["data"], test["valid"],
                )  # fmt: skip
