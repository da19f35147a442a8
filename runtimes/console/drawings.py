"""Geometry for the small server-rendered SVGs: the sidecar topology and the estimate bars.

Only numbers and labels come out; the templates draw them (and escape every label).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

BOX_W, BOX_H, GAP = 200, 46, 18


@dataclass(frozen=True)
class Box:
    x: int
    y: int
    w: int
    h: int
    label: str
    detail: str
    trainer: bool = False

    @property
    def cx(self) -> int:
        return self.x + self.w // 2

    @property
    def cy(self) -> int:
        return self.y + self.h // 2


@dataclass(frozen=True)
class Edge:
    x1: int
    y1: int
    x2: int
    y2: int


@dataclass(frozen=True)
class Topology:
    width: int
    height: int
    boxes: tuple[Box, ...]
    edges: tuple[Edge, ...]


def topology(spec: dict[str, Any]) -> Topology:
    """The trainer on the right, its sidecars stacked on the left, each linked to it."""
    sidecars: Sequence[dict[str, Any]] = (spec.get("defaults") or {}).get("sidecars") or []
    rows = max(1, len(sidecars))
    height = rows * BOX_H + (rows - 1) * GAP + 2 * GAP
    trainer_x = BOX_W + 3 * GAP * 2 if sidecars else GAP
    width = trainer_x + BOX_W + GAP
    trainer = Box(
        trainer_x,
        (height - BOX_H) // 2,
        BOX_W,
        BOX_H,
        "trainer",
        f"{spec.get('launcher') or 'Plain'} · {spec.get('task', '')}",
        trainer=True,
    )
    boxes = [trainer]
    edges = []
    for index, sidecar in enumerate(sidecars):
        y = GAP + index * (BOX_H + GAP)
        detail = "job image" if not sidecar.get("image") else _short_image(sidecar["image"])
        if sidecar.get("startupTimeout"):
            detail += f" · ready ≤ {sidecar['startupTimeout']}"
        box = Box(GAP, y, BOX_W, BOX_H, str(sidecar.get("name", "")), detail)
        boxes.append(box)
        edges.append(Edge(box.x + box.w, box.cy, trainer.x, trainer.cy))
    return Topology(width, height, tuple(boxes), tuple(edges))


def _short_image(image: str) -> str:
    name = image.split("@", 1)[0].rsplit("/", 1)[-1]
    return name if len(name) <= 28 else name[:27] + "…"


@dataclass(frozen=True)
class Bar:
    y: int
    width: int
    label: str
    value: str


@dataclass(frozen=True)
class BarChart:
    width: int
    height: int
    label_width: int
    bars: tuple[Bar, ...]
    bar_height: int = 20


def bar_chart(rows: Sequence[tuple[str, float, str]], width: int = 640) -> BarChart:
    """Horizontal bars: (label, amount, value text) each, scaled to the largest amount."""
    label_width, value_width, bar_h, gap = 190, 130, 20, 8
    span = max(1, width - label_width - value_width)
    top = max((amount for _, amount, _ in rows), default=0.0) or 1.0
    bars = tuple(
        Bar(
            gap + i * (bar_h + gap),
            max(2, round(span * amount / top)),
            label,
            value,
        )
        for i, (label, amount, value) in enumerate(rows)
    )
    height = gap + len(rows) * (bar_h + gap)
    return BarChart(width, height, label_width, bars, bar_h)
