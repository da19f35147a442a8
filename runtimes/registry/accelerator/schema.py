"""The Accelerator resource schema: one read-only object per catalog variant.

The objects are written by the seed from ``runtimes.catalog.accelerators`` and never by a
client, so the schema serves ``kubectl explain``, the OpenAPI v3 document and server-side apply's
list types (managedFields of the seed's writes); it is not used to validate anything.
"""

from __future__ import annotations

from runtimes.apimachinery.meta import API_VERSION, VERSION
from runtimes.apimachinery.meta_schema import OBJECT_META
from runtimes.apimachinery.schema_nodes import Field, boolean, integer, obj, quantity, string

KIND = "Accelerator"
PLURAL = "accelerators"


def _v1beta1(kind: str) -> str:
    return f"dev.nodus.{VERSION}.{kind}"


OFFERING = obj(
    "AcceleratorOffering is what the platform sells of the variant: count GPUs on one host of "
    "this shape, at this price.",
    _v1beta1("AcceleratorOffering"),
    ("count", "cpu", "memory", "disk"),
    count=integer("Count is the number of GPUs per node: 1, 2, 4 or 8.", enum=(1, 2, 4, 8)),
    cpu=quantity("CPU is the host's vCPUs."),
    memory=quantity("Memory is the host's memory."),
    disk=quantity("Disk is the host's ephemeral disk."),
    pricePerHour=Field("number", "PricePerHour is the price of one node per hour, in USD."),
)

SPEC = obj(
    "AcceleratorSpec describes one GPU variant of the catalog.",
    _v1beta1("AcceleratorSpec"),
    ("family", "vendor", "memory", "acceleratorClass"),
    family=string("Family is what a gpu.type entry may name to match every variant of it."),
    vendor=string("Vendor is NVIDIA, AMD ..."),
    memory=quantity("Memory is the memory of one GPU, e.g. 80Gi."),
    nvlink=boolean("NVLink is true when the GPUs of one host talk over NVLink."),
    interconnect=string("Interconnect is NVLink, PCIe or InfinityFabric."),
    acceleratorClass=string(
        "AcceleratorClass is the key of a runtime's estimate.secondsPerStep and secondsPerTask; "
        "variants that train at the same speed share one."
    ),
    offerings=Field(
        "array",
        "Offerings are the GPU counts the platform sells, one per count.",
        items=OFFERING,
        list_type="map",
        list_keys=("count",),
    ),
)

ACCELERATOR = obj(
    "Accelerator is one GPU variant the platform sells, from the platform's catalog; read-only.",
    _v1beta1(KIND),
    apiVersion=string(f"APIVersion is {API_VERSION}."),
    kind=string(f"Kind is {KIND}."),
    metadata=OBJECT_META,
    spec=SPEC,
)
