"""Charts of a study (matplotlib, rendered off-screen to PNG and SVG).

- throughput: queries/s vs threads, one line per configuration, 95% interval bands, log2 axis;
- latency: response time (p95 solid, average dashed) vs number of connections (seed 004);
- relative: gain over the baseline per thread count, with interval whiskers; noise is faded;
- series: the per-second throughput of one point;
- ladder: throughput after each cumulative step (seed 003).
"""

from __future__ import annotations

import io
import json
import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from perflab.analysis.stats import summarize  # noqa: E402
from perflab.analysis.tables import comparisons, groups, medians  # noqa: E402

SIZE = (7.5, 4.2)


def render(fig: Figure) -> tuple[bytes, str]:
    """PNG bytes and SVG text of a figure, which is closed afterwards."""
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    fig.savefig(svg, format="svg", bbox_inches="tight")
    plt.close(fig)
    return png.getvalue(), svg.getvalue()


def _axes(title: str, xlabel: str, ylabel: str, log2_x: bool = True):
    fig, ax = plt.subplots(figsize=SIZE)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if log2_x:
        ax.set_xscale("log", base=2)
    return fig, ax


def throughput(plan: dict, points: list[dict]) -> Figure:
    fig, ax = _axes(f"{plan['name']}: queries per second", "threads", "queries/s")
    values = groups(points, "qps")
    threads = plan["run"]["threads"]
    for config in plan["configs"]:
        xs, mid, low, high = [], [], [], []
        for t in threads:
            samples = values.get((config, t))
            if not samples:
                continue
            s = summarize(samples)
            xs.append(t)
            mid.append(s.median)
            low.append(s.ci_low if s.n > 1 else s.median)
            high.append(s.ci_high if s.n > 1 else s.median)
        if xs:
            (line,) = ax.plot(xs, mid, marker="o", label=config)
            ax.fill_between(xs, low, high, color=line.get_color(), alpha=0.2)
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.legend(title="configuration (band: 95% interval)")
    ax.set_ylim(bottom=0)
    return fig


def latency(plan: dict, points: list[dict]) -> Figure:
    fig, ax = _axes(f"{plan['name']}: response time vs number of connections",
                    "connections (threads)", "latency, ms")
    p95, avg = medians(points, "latency_p95_ms"), medians(points, "latency_avg_ms")
    threads = plan["run"]["threads"]
    for config in plan["configs"]:
        xs = [t for t in threads if (config, t) in p95]
        if not xs:
            continue
        (line,) = ax.plot(xs, [p95[(config, t)] for t in xs], marker="o", label=f"{config} p95")
        ax.plot(xs, [avg[(config, t)] for t in xs], linestyle="--", color=line.get_color(),
                label=f"{config} avg")
    ax.set_xticks(threads, [str(t) for t in threads])
    ax.legend()
    return fig


def relative(plan: dict, points: list[dict], min_effect: float) -> Figure:
    fig, ax = _axes(f"{plan['name']}: change vs {plan['baseline']}", "threads",
                    "change in queries/s, %", log2_x=False)
    found = comparisons(plan, points, min_effect)
    configs = [c for c in plan["configs"] if c != plan["baseline"]]
    threads = plan["run"]["threads"]
    width = 0.8 / max(len(configs), 1)
    for i, config in enumerate(configs):
        for j, t in enumerate(threads):
            c = found.get((config, t))
            if c is None:
                continue
            x = j + (i - (len(configs) - 1) / 2) * width
            errors = None
            if not math.isnan(c.ci_low):
                errors = [[(c.change - c.ci_low) * 100], [(c.ci_high - c.change) * 100]]
            ax.bar(x, c.change * 100, width, yerr=errors, capsize=3,
                   color=f"C{i}", alpha=1.0 if c.significant else 0.35,
                   label=config if j == 0 else None)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(threads)), [str(t) for t in threads])
    ax.legend(title="faded: within noise")
    return fig


def series(point: dict) -> Figure:
    fig, ax = _axes(
        f"{point['config']} at {point['threads']} threads, repeat {point['repeat']}: "
        "per-second throughput", "seconds into the run", "queries/s", log2_x=False)
    samples = json.loads(point["series_json"] or "[]")
    ax.plot([s["t"] for s in samples], [s["qps"] for s in samples], marker=".")
    ax.set_ylim(bottom=0)
    return fig


def ladder(plan: dict, points: list[dict]) -> Figure:
    fig, ax = _axes(f"{plan['name']}: throughput after each step", "step", "queries/s",
                    log2_x=False)
    values = medians(points, "qps")
    steps = list(plan["configs"])
    for t in plan["run"]["threads"]:
        ys = [values.get((step, t), math.nan) for step in steps]
        ax.step(range(len(steps)), ys, where="mid", marker="o", label=f"{t} threads")
    ax.set_xticks(range(len(steps)), steps, rotation=25, ha="right")
    ax.legend()
    ax.set_ylim(bottom=0)
    return fig


def study_charts(plan: dict, points: list[dict], min_effect: float,
                 series_point: dict | None) -> dict[str, Figure]:
    """Every chart that applies to the study, by file stem."""
    charts = {"throughput": throughput(plan, points), "latency": latency(plan, points)}
    if len(plan["configs"]) > 1:
        charts["relative"] = relative(plan, points, min_effect)
    if plan.get("ladder"):
        charts["ladder"] = ladder(plan, points)
    if series_point is not None:
        charts["series"] = series(series_point)
    return charts
