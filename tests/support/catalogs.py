"""A small accelerator catalog, as a platform admin's file would hold it."""

from __future__ import annotations


def small_catalog_data() -> dict:
    return {
        "families": [
            {
                "name": "H100",
                "vendor": "NVIDIA",
                "variants": [
                    {
                        "id": "h100-80g-sxm",
                        "memory": "80Gi",
                        "nvlink": True,
                        "interconnect": "NVLink",
                        "acceleratorClass": "h100-80g",
                        "offerings": [
                            {"count": 1, "cpu": "26", "memory": "225Gi", "disk": "1Ti",
                             "pricePerHour": 3.0},
                            {"count": 8, "cpu": "208", "memory": "1800Gi", "disk": "8Ti",
                             "pricePerHour": 24.0},
                        ],
                    }
                ],
            }
        ]
    }  # fmt: skip
