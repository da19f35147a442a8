"""The README and docs/ as a newcomer meets them: short, linked, self-contained and true.

The README stays within its size and names the two commands the Makefile runs; every relative
link in it and in docs/ leads to a file (and heading) that exists; docs/index.md reaches every
page; nothing in the repository points at a file outside it or at an issue number; and the
layers drawn in docs/architecture.md are the layers import-linter holds the code to.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
README_LIMIT = 12 * 1024

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
# Pieces joined at run time, so this file does not match its own patterns.
OUTSIDE = re.compile(
    "|".join(
        (
            r"\.\./" + "shared",
            r"\bshared/(?:spec|testdata|hooks)\b",
            "KUBE-" + r"API\.md",
            "CONTRACT" + r"\.md",
            "STACK-" + "NOTES",
            "ARCHITECTURE" + r"\.md",
            "DEVELOPERS" + r"\.md",
            r"(?i:\bissues?\s*#?\d+)",
        )
    )
)
SKIPPED_DIRS = {".git", ".venv", "node_modules", "build", "test-artifacts", "__pycache__", ".data"}
TEXT_SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".toml", ".yaml", ".yml", ".txt", ".cfg"}
TEXT_NAMES = {"Makefile", "Procfile", "Containerfile", "run", "find-python", "scale-out"}


def doc_pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    return {slug(m) for m in re.findall(r"(?m)^#{1,6} (.+)$", page.read_text())}


def test_the_readme_stays_short() -> None:
    size = len(README.read_bytes())
    assert size <= README_LIMIT, f"README.md is {size} bytes; move detail into docs/"


def test_the_readmes_two_commands_are_the_makefiles() -> None:
    text = README.read_text()
    for command in ("make run", "make test"):
        assert f"\n{command} " in text, f"the README no longer shows `{command}`"
        target = command.split()[1]
        dry = subprocess.run(
            ["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=False
        )
        assert dry.returncode == 0, f"`make -n {target}` fails: {dry.stderr}"


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.name)
def test_every_relative_link_leads_somewhere(page: Path) -> None:
    broken = []
    for target in LINK.findall(page.read_text()):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        destination = (page.parent / path).resolve() if path else page
        missing_anchor = bool(anchor) and destination.suffix == ".md"
        if not destination.exists() or (missing_anchor and anchor not in anchors(destination)):
            broken.append(target)
    assert broken == [], f"{page.name} links nowhere: {broken}"


def test_the_index_reaches_every_page() -> None:
    index = (DOCS / "index.md").read_text()
    missing = [p.name for p in DOCS.glob("*.md") if p.name != "index.md" and p.name not in index]
    assert missing == [], f"docs/index.md does not link {missing}"


def repository_text_files() -> list[Path]:
    found = []
    for path in ROOT.rglob("*"):
        if any(part in SKIPPED_DIRS for part in path.relative_to(ROOT).parts):
            continue
        if path.is_file() and (path.suffix in TEXT_SUFFIXES or path.name in TEXT_NAMES):
            found.append(path)
    return found


def test_nothing_points_outside_the_repository_or_at_an_issue() -> None:
    found = []
    for path in repository_text_files():
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert found == [], "say it here instead:\n" + "\n".join(found)


def drawn_layers() -> list[set[str]]:
    """The packages of runtimes/ in the order docs/architecture.md's drawing stacks them."""
    text = (DOCS / "architecture.md").read_text()
    drawing = text.split("```")[1]
    packages = {p.name for p in (ROOT / "runtimes").iterdir() if (p / "__init__.py").exists()}
    layers = []
    for line in drawing.splitlines():
        names = {n for n in re.findall(r"(?<![\w/])(\w+)/", line) if n in packages}
        if names:
            layers.append(names)
    return layers


def test_the_architecture_drawing_matches_the_import_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers")
    enforced = [
        {name.strip().removeprefix("runtimes.") for name in layer.split("|")}
        for layer in contract["layers"]
    ]
    assert drawn_layers() == enforced


def test_the_security_limits_name_only_settings_that_exist() -> None:
    """Every setting docs/security.md's limits table names is one the server reads."""
    from django.conf import settings

    text = (DOCS / "security.md").read_text()
    limits = text.split("## Limits", 1)[1].split("\n## ", 1)[0]
    named = set(re.findall(r"`(NODUS_[A-Z0-9_]+)`", limits))
    assert len(named) > 10, "the limits table lost its settings column"
    unknown = sorted(n for n in named if not hasattr(settings, n) and n not in _ENV_ONLY)
    assert unknown == [], f"the limits table names settings that do not exist: {unknown}"


# Read from the environment under other names (django-axes', Django's own).
_ENV_ONLY = {"NODUS_LOGIN_FAILURE_LIMIT", "NODUS_LOGIN_COOLOFF_MINUTES", "NODUS_HSTS_SECONDS"}
