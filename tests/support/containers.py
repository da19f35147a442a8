"""Debian's podman, for building and running the project's image in tests.

This machine reaches no container registry, so when `python:3.12-slim-bookworm` cannot be pulled
the tests build a stand-in made as that image is made: Debian bookworm (debootstrap, from
Debian's mirror) with CPython 3.12 in /usr/local, here the interpreter running the tests.
Containers run under runc with lowered rlimits: a sandbox may refuse to raise them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import pytest

OFFICIAL_BASE = "docker.io/library/python:3.12-slim-bookworm"
STAND_IN_BASE = "localhost/nodus-python:3.12-slim-bookworm"
# Shared objects CPython's own modules link against, as the official slim image has them.
RUNTIME_LIBRARIES = (
    "libssl3,libsqlite3-0,libffi8,libbz2-1.0,liblzma5,zlib1g,libexpat1,libreadline8,"
    "libncursesw6,libgdbm6,libuuid1,ca-certificates,tzdata"
)
CA_BUNDLE = Path("/etc/ssl/certs/ca-certificates.crt")
RUN_FLAGS = ("--runtime", "runc", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")


def require_podman() -> None:
    missing = [tool for tool in ("podman", "runc", "debootstrap") if not shutil.which(tool)]
    if not missing:
        return
    if os.environ.get("CI"):
        pytest.fail(f"{', '.join(missing)} missing: `make test` installs them")
    pytest.skip(f"needs {', '.join(missing)} (apt-get install -y podman runc debootstrap)")


def podman(*args: str, timeout: float = 900, check: bool = True) -> str:
    done = subprocess.run(
        ["podman", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"podman {' '.join(args[:3])} failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def succeeds(*args: str) -> bool:
    done = subprocess.run(["podman", *args], capture_output=True, timeout=120, check=False)
    return done.returncode == 0


def base_image() -> str:
    """The official base if it is here or can be pulled, else the stand-in (made once)."""
    if succeeds("image", "exists", OFFICIAL_BASE) or succeeds("pull", "-q", OFFICIAL_BASE):
        return OFFICIAL_BASE
    if not succeeds("image", "exists", STAND_IN_BASE):
        build_stand_in_base()
    return STAND_IN_BASE


def build_stand_in_base() -> None:
    with tempfile.TemporaryDirectory(prefix="nodus-base-") as work:
        root = Path(work) / "rootfs"
        subprocess.run(
            [
                "debootstrap",
                "--variant=minbase",
                f"--include={RUNTIME_LIBRARIES}",
                "bookworm",
                str(root),
                "http://deb.debian.org/debian",
            ],
            capture_output=True,
            check=True,
            timeout=900,
        )
        local = root / "usr" / "local"
        prefix = Path(sys.base_prefix)
        for part in ("bin", "lib", "include"):
            shutil.copytree(
                prefix / part,
                local / part,
                symlinks=True,
                dirs_exist_ok=True,
                ignore=shutil.ignore_patterns("site-packages", "test", "__pycache__"),
            )
        for script in (local / "bin").glob("pip*"):  # pip lives in each venv, not the base
            script.unlink()
        for name in ("python3", "python"):
            (local / "bin" / name).unlink(missing_ok=True)
            (local / "bin" / name).symlink_to("python3.12")
        subprocess.run(["ldconfig", "-r", str(root)], check=True)
        archive = Path(work) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(root, arcname=".")
        podman(
            "import",
            "--change",
            "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "ENV LANG=C.UTF-8",
            "--change",
            'CMD ["python3"]',
            str(archive),
            STAND_IN_BASE,
        )


def build_image(context: Path, tag: str) -> None:
    args = ["build", *RUN_FLAGS, "--build-arg", f"BASE_IMAGE={base_image()}", "-t", tag]
    if CA_BUNDLE.exists():  # behind a TLS-inspecting proxy, npm and pip need its CA
        args += ["--secret", f"id=ca-certificates,src={CA_BUNDLE}"]
    podman(*args, "-f", str(context / "Containerfile"), str(context), timeout=1800)
