"""Schema fragments two kinds share: environment variables, sidecars, a preflight command.

A TrainingJob's spec overrides what its runtime's `spec.defaults` name, so both kinds describe
these fields with one definition each; only the descriptions of the enclosing fields differ.
"""

from __future__ import annotations

from dataclasses import replace

from runtimes.apimachinery.meta import VERSION
from runtimes.apimachinery.schema_nodes import Field, argv, obj, string


def _v1beta1(kind: str) -> str:
    return f"dev.nodus.{VERSION}.{kind}"


ENV_VAR = obj(
    "EnvVar is one environment variable: exactly one of a literal value or a Secret key.",
    _v1beta1("EnvVar"),
    ("name",),
    name=string("Name matches ^[A-Za-z_][A-Za-z0-9_]*$.", min_length=1, format="env-name"),
    value=string("Value is the literal value."),
    valueFrom=obj(
        "ValueFrom names where the value comes from instead of a literal.",
        _v1beta1("EnvVarSource"),
        ("secretKeyRef",),
        # One value, as kube's SecretKeySelector (+structType=atomic): a manager that sets it
        # owns both keys, so two appliers cannot leave the name of one and the key of another.
        secretKeyRef=replace(
            obj(
                "SecretKeyRef selects one key of a Secret in the job's project.",
                _v1beta1("SecretKeySelector"),
                ("name", "key"),
                name=string("Name is the Secret.", min_length=1, format="dns-subdomain"),
                key=string("Key is the key within the Secret.", min_length=1, format="secret-key"),
            ),
            map_type="atomic",
        ),
    ),
)

SIDECAR = obj(
    "Sidecar is a helper container (for example a vLLM rollout server) that starts before the "
    "trainer and stops after it.",
    _v1beta1("Sidecar"),
    ("name",),
    name=string(
        "Name is a DNS-1123 label, unique among the sidecars.", min_length=1, format="dns-label"
    ),
    image=string(
        "Image is a digest-pinned image reference; when unset the sidecar runs the job's image.",
        format="image-ref",
    ),
    command=argv("Command is the sidecar's argv; when unset the image's entrypoint runs."),
    env=Field(
        "array",
        "Env adds environment variables, one per name.",
        items=ENV_VAR,
        list_type="map",
        list_keys=("name",),
    ),
    startupTimeout=string(
        "StartupTimeout bounds how long the sidecar may take to become ready, e.g. 5m.",
        format="duration",
    ),
)


def sidecars(description: str) -> Field:
    """A list of sidecars, one per name (server-side apply merges it by name)."""
    return Field("array", description, items=SIDECAR, list_type="map", list_keys=("name",))


def init_command(description: str, definition: str) -> Field:
    """A preflight command with its timeout (at most 30m, the contract's bound)."""
    return obj(
        description,
        _v1beta1(definition),
        ("command",),
        command=argv("Command is the preflight's argv.", min_items=1),
        timeout=string("Timeout bounds the preflight; at most 30m.", format="duration"),
    )
