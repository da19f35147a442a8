"""The abuse benchmark's table: each attack beside its benign baseline, with the issue's target.

Nothing here judges: a target is printed beside the figure it is about, never asserted.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from benchmarks.abuse_probe import Outcome


@dataclass
class Row:
    name: str  # the attack, as docs/security.md's threat table names it
    who: str  # who can mount it
    attack: Outcome
    baseline: Outcome | None = None
    target: str = ""  # the target, printed beside the figure
    notes: list[str] = field(default_factory=list)

    @property
    def ratio(self) -> str:
        if self.baseline is None or self.attack.seconds is None:
            return ""
        if not self.baseline.seconds:
            return ""
        at_least = "≥ " if self.attack.at_least else ""
        return f"{at_least}{self.attack.seconds / self.baseline.seconds:.1f}x"


def _seconds(outcome: Outcome) -> str:
    if outcome.seconds is None:
        return "—"
    at_least = "≥ " if outcome.at_least else ""
    if outcome.seconds >= 10:
        return f"{at_least}{outcome.seconds:.1f} s"
    return f"{at_least}{outcome.seconds * 1000:.1f} ms"


def _memory(outcome: Outcome) -> str:
    text = f"+{outcome.rss_added_mb:.1f} MB"
    return f"{text} (killed)" if outcome.killed else text


def _livez(outcome: Outcome) -> str:
    if outcome.livez_worst_seconds is None and not outcome.livez_missed:
        return "—"
    worst = (
        ""
        if outcome.livez_worst_seconds is None
        else f"{outcome.livez_worst_seconds * 1000:.0f} ms"
    )
    missed = f", {outcome.livez_missed} missed" if outcome.livez_missed else ""
    return (worst + missed).lstrip(", ")


COLUMNS = ("attack", "answer", "time", "peak RSS", "livez worst", "ratio")
WIDEST = (62, 44, 10, 18, 20, 10)


def _cells(label: str, outcome: Outcome, ratio: str) -> tuple[str, ...]:
    return (label, outcome.answer, _seconds(outcome), _memory(outcome), _livez(outcome), ratio)


def render(rows: list[Row]) -> str:
    """Per attack: its line, its baseline's line below, then target, who, and notes."""
    lines: list[tuple[str, ...]] = []
    for row in rows:
        lines.append(_cells(row.name, row.attack, row.ratio))
        if row.baseline is not None:
            lines.append(_cells(f"  baseline: {row.baseline.label}", row.baseline, ""))
    widths = [
        min(max(len(line[i]) for line in [COLUMNS, *lines]), WIDEST[i]) for i in range(len(COLUMNS))
    ]

    def format_line(cells: tuple[str, ...]) -> str:
        return "  ".join(c[:w].ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [format_line(COLUMNS), "-" * (sum(widths) + 2 * (len(widths) - 1))]
    at = 0
    for row in rows:
        count = 2 if row.baseline is not None else 1
        out += [format_line(line) for line in lines[at : at + count]]
        at += count
        out.append(
            f"    target: {row.target}; who: {row.who}"
            + (f"; HWM {row.attack.hwm_after_mb:.0f} MB after" if row.attack.hwm_after_mb else "")
        )
        out += [f"    {note}" for note in [*row.notes, *row.attack.extra.values()]]
        if row.attack.killed:
            out.append(f"    the probe killed the server: {row.attack.killed}; started it again")
    return "\n".join(out)
