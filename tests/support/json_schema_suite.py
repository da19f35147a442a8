"""The official JSON Schema Test Suite, draft 2020-12, as jsonschema's sdist ships it.

The suite is not copied into the repository: the sdist of the jsonschema version the lock pins is
fetched from the package index (PEP 691's JSON page), checked against the lock's hashes, and its
`json/tests/draft2020-12` unpacked once into `.cache/` (gitignored). A case is (file, group, test)
with the group's schema. The sdist is fetched as a file, not through `pip download`: pip would
build its metadata in an isolated environment first, which took up to 106 s of a CI run.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import tarfile
import tempfile
import urllib.parse
import urllib.request
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
# PyPI unless PIP_INDEX_URL names another index that speaks PEP 691.
INDEX = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/")


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


def _locked_hashes(pinned: str) -> set[str]:
    """The sha256 digests the lock holds for `jsonschema==pinned` (wheel and sdist)."""
    text = LOCK.read_text()
    block = re.search(rf"^jsonschema=={re.escape(pinned)}((?:\s*\\\n\s*--hash=\S+)+)", text, re.M)
    assert block, f"jsonschema=={pinned} is not in {LOCK.name}"
    return set(re.findall(r"--hash=sha256:([0-9a-f]{64})", block.group(1)))


def _sdist_url(pinned: str) -> str:
    """The sdist's address on the index's JSON simple page (PEP 691)."""
    request = urllib.request.Request(
        f"{INDEX}/jsonschema/", headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        page = json.load(answer)
    name = f"jsonschema-{pinned}.tar.gz"
    [url] = [entry["url"] for entry in page["files"] if entry["filename"] == name]
    return urllib.parse.urljoin(f"{INDEX}/jsonschema/", str(url))


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
            _fetch(target, pinned)
            done.touch()
    return target / DRAFT


def _fetch(target: Path, pinned: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        sdist = Path(work) / f"jsonschema-{pinned}.tar.gz"
        with urllib.request.urlopen(_sdist_url(pinned), timeout=300) as answer:
            sdist.write_bytes(answer.read())
        digest = hashlib.sha256(sdist.read_bytes()).hexdigest()
        assert digest in _locked_hashes(pinned), f"{sdist.name}: sha256 {digest} is not locked"
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
