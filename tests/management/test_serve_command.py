"""`manage.py serve`: what it prints works as printed, from another shell."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.support.kubectl import kubectl_binary
from tests.support.liveserver import REPO, serve_command

pytestmark = pytest.mark.kubectl


def another_shell() -> dict[str, str]:
    """The environment of a new terminal: none of the server's settings."""
    return {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("NODUS_", "DATABASE_URL", "DJANGO_", "PORT", "TLS_PORT", "HOST"))
    }


def test_the_printed_kubectl_steps_reach_a_server_on_other_ports_and_data(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    with serve_command(data) as (_process, _port):
        printed = (data / "serve.log").read_text().splitlines()
        [first] = [line for line in printed if line.startswith("  kubectl:")]
        second = printed[printed.index(first) + 1]
        config = tmp_path / "nodus.kubeconfig"
        write = first.removeprefix("  kubectl:").strip().replace("nodus.kubeconfig", str(config))
        made = subprocess.run(
            ["bash", "-c", write],
            cwd=REPO,
            env=another_shell(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert made.returncode == 0, made.stderr
        words = second.split()
        assert words[:3] == ["kubectl", "--kubeconfig", "nodus.kubeconfig"]
        listed = subprocess.run(
            [str(kubectl_binary()), "--kubeconfig", str(config), *words[3:]],
            env=another_shell(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listed.returncode == 0, listed.stderr
