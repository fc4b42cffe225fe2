"""Charts of a study (matplotlib, rendered off-screen to PNG and SVG).

- throughput: queries/s vs threads, one line per configuration, 95% interval bands, log2 axis;
- latency: response time (p95 solid, average dashed, p99 dotted) vs number of connections
  (the STAR notes);
- relative: gain over the baseline per thread count, with interval whiskers; noise is faded;
- series: the per-second throughput of one point;
- ladder: throughput after each cumulative step (the NetBSD tuning thread).
"""

from __future__ import annotations

import math
from pathlib import Path

from matplotlib.figure import Figure

from perflab.analysis.tables import groups, medians
from perflab.analysis.verdicts import Judgement
from perflab.domain import Plan
from perflab.output.figure import new_figure, render
from perflab.stats.summary import geometric
from perflab.store.records import StoredPoint, Study


def throughput(plan: Plan, points: list[StoredPoint]) -> Figure:
    fig, ax = new_figure(f"{plan.name}: queries per second", "threads", "queries/s", log2_x=True)
    values = groups(points, "qps")
    threads = plan.run.threads
    for config in plan.config_names:
        xs, mid, low, high = [], [], [], []
        for t in threads:
            samples = values.get((config, t))
            if not samples:
                continue
            centre, lower, upper = geometric(samples)
            xs.append(t)
            mid.append(centre)
            low.append(lower)
            high.append(upper)
        if xs:
            (line,) = ax.plot(xs, mid, marker="o", label=config)
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2)
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.legend(title="configuration (geometric mean, band: its 95% interval)")
    ax.set_ylim(bottom=0)
    return fig


def latency(plan: Plan, points: list[StoredPoint]) -> Figure:
    fig, ax = new_figure(f"{plan.name}: response time vs number of connections",
                         "connections (threads)", "latency, ms", log2_x=True)
    p95, avg = medians(points, "latency_p95_ms"), medians(points, "latency_avg_ms")
    p99 = medians(points, "latency_p99_ms")
    threads = plan.run.threads
    for config in plan.config_names:
        xs = [t for t in threads if (config, t) in p95]
        if not xs:
            continue
        (line,) = ax.plot(xs, [p95[(config, t)] for t in xs], marker="o", label=f"{config} p95")
        ax.plot(xs, [avg[(config, t)] for t in xs], linestyle="--", color=line.get_color(),
                label=f"{config} avg")
        ax.plot(xs, [p99[(config, t)] for t in xs], linestyle=":", color=line.get_color(),
                label=f"{config} p99")
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.legend()
    return fig


def relative(plan: Plan, judgement: Judgement) -> Figure:
    """Each comparison's change with the interval its verdict rests on; the margin shaded,
    inconclusive ones faded."""
    fig, ax = new_figure(f"{plan.name}: change vs {plan.baseline}", "threads",
                         "change in queries/s, %")
    configs = [c for c in plan.config_names if c != plan.baseline]
    threads = plan.run.threads
    width = 0.8 / max(len(configs), 1)
    margin = judgement.design.margin * 100
    ax.axhspan(-margin, margin, color="grey", alpha=0.12,
               label=f"±{judgement.design.margin:.0%}: equivalent if the whole interval is in")
    for i, config in enumerate(configs):
        for j, t in enumerate(threads):
            v = judgement.verdicts.get((config, t))
            if v is None or not v.n:
                continue
            x = j + (i - (len(configs) - 1) / 2) * width
            errors = None
            if not math.isnan(v.low):
                errors = [[(v.change - v.low) * 100], [(v.high - v.change) * 100]]
            ax.bar(x, v.change * 100, width, yerr=errors, capsize=3, color=f"C{i}",
                   alpha=1.0 if v.decided else 0.35, label=config if j == 0 else None)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(threads)), [str(t) for t in threads])
    ax.legend(title="faded: inconclusive")
    return fig


def series(point: StoredPoint) -> Figure:
    fig, ax = new_figure(
        f"{point.config} at {point.threads} threads, round {point.round}: "
        "per-second throughput", "seconds into the run", "queries/s")
    ax.plot([s.t for s in point.series], [s.qps for s in point.series], marker=".")
    ax.set_ylim(bottom=0)
    return fig


def ladder(plan: Plan, points: list[StoredPoint]) -> Figure:
    fig, ax = new_figure(f"{plan.name}: throughput after each step", "step", "queries/s")
    values = medians(points, "qps")
    steps = plan.config_names
    for t in plan.run.threads:
        ys = [values.get((step, t), math.nan) for step in steps]
        ax.step(range(len(steps)), ys, where="mid", marker="o", label=f"{t} threads")
    ax.set_xticks(range(len(steps)), steps, rotation=25, ha="right")
    ax.legend()
    ax.set_ylim(bottom=0)
    return fig


def study_charts(plan: Plan, points: list[StoredPoint], judgement: Judgement | None,
                 series_point: StoredPoint | None) -> dict[str, Figure]:
    """Every chart that applies to the study, by file stem."""
    charts = {"throughput": throughput(plan, points), "latency": latency(plan, points)}
    if judgement is not None and len(plan.configs) > 1:
        charts["relative"] = relative(plan, judgement)
    if plan.ladder:
        charts["ladder"] = ladder(plan, points)
    if series_point is not None:
        charts["series"] = series(series_point)
    return charts


def write_charts(study: Study, directory: Path, judgement: Judgement | None,
                 series_point: StoredPoint | None) -> int:
    """Every chart of the study as NAME.png and NAME.svg in `directory`; returns how many."""
    directory.mkdir(parents=True, exist_ok=True)
    figures = study_charts(study.plan, study.points, judgement, series_point)
    for name, fig in figures.items():
        png, svg = render(fig)
        (directory / f"{name}.png").write_bytes(png)
        (directory / f"{name}.svg").write_text(svg)
    return len(figures)
