"""The tables engineers publish: absolute figures per configuration x thread count, and the
relative table of the key-cache page, `(32/off)` = QPS(32) / QPS(off) - 1 per thread count.

Every figure is the median over the repeats that succeeded; a cell with no successful repeat
shows `-`.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]

    def render(self) -> str:
        widths = [
            max(len(row[i]) for row in [self.header, *self.rows]) for i in range(len(self.header))
        ]
        widths[1:] = [max(w, 6) for w in widths[1:]]
        lines = [self.title]
        for row in [self.header, *self.rows]:
            first = row[0].ljust(widths[0])
            rest = [cell.rjust(widths[i + 1]) for i, cell in enumerate(row[1:])]
            lines.append("  ".join([first, *rest]).rstrip())
        return "\n".join(lines)


def medians(points: list[dict], metric: str) -> dict[tuple[str, int], float]:
    """Median of `metric` over the ok repeats of each (config, threads)."""
    groups: dict[tuple[str, int], list[float]] = {}
    for point in points:
        if point["status"] == "ok" and point.get(metric) is not None:
            groups.setdefault((point["config"], point["threads"]), []).append(point[metric])
    return {key: statistics.median(values) for key, values in groups.items()}


def absolute_table(plan: dict, points: list[dict], metric: str = "qps",
                   title: str = "Queries per second", digits: int = 0) -> Table:
    threads = plan["run"]["threads"]
    values = medians(points, metric)
    rows = []
    for config in plan["configs"]:
        cells = [_number(values.get((config, t)), digits) for t in threads]
        rows.append([config, *cells])
    repeats = plan["run"]["repeats"]
    return Table(
        f"{title} (median of {repeats} repeat{'s' if repeats != 1 else ''})",
        ["Threads", *[str(t) for t in threads]],
        rows,
    )


def relative_values(plan: dict, points: list[dict], metric: str = "qps"
                    ) -> dict[tuple[str, int], float]:
    """(config, threads) -> median(config) / median(baseline) - 1, for non-baseline configs."""
    baseline = plan["baseline"]
    values = medians(points, metric)
    out = {}
    for config in plan["configs"]:
        if config == baseline:
            continue
        for t in plan["run"]["threads"]:
            base, mine = values.get((baseline, t)), values.get((config, t))
            if base and mine is not None:
                out[(config, t)] = mine / base - 1
    return out


def relative_table(plan: dict, points: list[dict], metric: str = "qps") -> Table:
    baseline = plan["baseline"]
    threads = plan["run"]["threads"]
    relative = relative_values(plan, points, metric)
    rows = []
    for config in plan["configs"]:
        if config == baseline:
            continue
        cells = [percent(relative.get((config, t))) for t in threads]
        rows.append([f"({config}/{baseline})", *cells])
    return Table("In relative numbers:", ["Threads", *[str(t) for t in threads]], rows)


def percent(ratio: float | None) -> str:
    """A relative change as the key-cache page prints it: -3%, 53%, -0.3%."""
    if ratio is None:
        return "-"
    value = ratio * 100
    if round(value, 1) == 0:
        return "0%"
    if abs(value) < 1:
        return f"{value:.1f}%"
    return f"{value:.0f}%"


def _number(value: float | None, digits: int) -> str:
    if value is None:
        return "-"
    return f"{value:.{digits}f}"
