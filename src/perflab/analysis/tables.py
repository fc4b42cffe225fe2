"""The tables engineers publish, plus the statistics that say which differences are real.

- absolute: a metric per configuration x thread count (median over repeats);
- relative: the key-cache page's `(32/off)` rows, QPS(config) / QPS(baseline) - 1, in its
  percent format;
- verdicts: every relative number with its 95% interval, Welch's p-value and a verdict;
- per-point statistics: n, median, mean, sd, CV, interval, outliers;
- ladder: step, change, throughput, gain over the previous step and over the start (seed 003).

A cell with no successful repeat shows `-`.
"""

from __future__ import annotations

import math
import statistics

from perflab.output.table import Table
from perflab.plan import Plan
from perflab.stats.summary import Comparison, compare, summarize
from perflab.store.records import StoredPoint


def groups(points: list[StoredPoint], metric: str = "qps") -> dict[tuple[str, int], list[float]]:
    """The ok repeats' values of `metric` per (config, threads), in repeat order."""
    out: dict[tuple[str, int], list[float]] = {}
    for point in sorted(points, key=lambda p: p.repeat):
        value = point.value(metric)
        if value is not None:
            out.setdefault((point.config, point.threads), []).append(value)
    return out


def medians(points: list[StoredPoint], metric: str) -> dict[tuple[str, int], float]:
    return {key: statistics.median(v) for key, v in groups(points, metric).items()}


def absolute_table(plan: Plan, points: list[StoredPoint], metric: str = "qps",
                   title: str = "Queries per second", digits: int = 0) -> Table:
    threads = plan.run.threads
    values = medians(points, metric)
    rows = []
    for config in plan.config_names:
        cells = [_number(values.get((config, t)), digits) for t in threads]
        rows.append([config, *cells])
    return Table(
        f"{title} (median over repeats)",
        ["Threads", *[str(t) for t in threads]],
        rows,
    )


def absolute_by_threads(plan: Plan, points: list[StoredPoint]) -> Table:
    """Queries/s with one row per thread count and one column per configuration."""
    values = medians(points, "qps")
    configs = plan.config_names
    rows = [[str(t), *[_number(values.get((c, t)), 0) for c in configs]]
            for t in plan.run.threads]
    return Table("Queries per second (median over repeats)", ["Threads", *configs], rows)


def comparisons(plan: Plan, points: list[StoredPoint], min_effect: float, metric: str = "qps"
                ) -> dict[tuple[str, int], Comparison]:
    """(config, threads) -> the comparison against the baseline, for non-baseline configs."""
    baseline = plan.baseline
    values = groups(points, metric)
    out = {}
    for config in plan.config_names:
        if config == baseline:
            continue
        for t in plan.run.threads:
            base, mine = values.get((baseline, t)), values.get((config, t))
            if base and mine:
                out[(config, t)] = compare(base, mine, min_effect)
    return out


def relative_table(plan: Plan, points: list[StoredPoint], metric: str = "qps") -> Table:
    """The seed's format: one row per non-baseline configuration, ratio of medians."""
    baseline = plan.baseline
    threads = plan.run.threads
    values = medians(points, metric)
    rows = []
    for config in plan.config_names:
        if config == baseline:
            continue
        cells = []
        for t in threads:
            base, mine = values.get((baseline, t)), values.get((config, t))
            cells.append(percent(mine / base - 1) if base and mine is not None else "-")
        rows.append([f"({config}/{baseline})", *cells])
    return Table("In relative numbers:", ["Threads", *[str(t) for t in threads]], rows)


def verdict_table(plan: Plan, points: list[StoredPoint], min_effect: float) -> Table:
    rows = []
    for (config, threads), c in comparisons(plan, points, min_effect).items():
        interval = "-" if math.isnan(c.ci_low) else f"[{c.ci_low:+.1%}, {c.ci_high:+.1%}]"
        p_value = "-" if math.isnan(c.p_value) else f"{c.p_value:.3f}"
        rows.append([config, str(threads), f"{c.change:+.1%}", interval, p_value, c.verdict])
    return Table(
        f"Change vs {plan.baseline} (mean queries/s, 95% interval, Welch's t-test)",
        ["Config", "Threads", "Change", "95% interval", "p", "Verdict"],
        rows,
        note=f"faster/slower: p < 0.05, the interval excludes 0 and |change| >= "
             f"{min_effect:.0%}; otherwise noise",
    )


def stats_table(plan: Plan, points: list[StoredPoint], cv_threshold: float) -> Table:
    values = groups(points, "qps")
    rows = []
    for config in plan.config_names:
        for t in plan.run.threads:
            samples = values.get((config, t))
            if not samples:
                continue
            s = summarize(samples)
            flags = []
            if s.n >= 2 and s.cv > cv_threshold:
                flags.append(f"CV>{cv_threshold:.0%}")
            if s.outliers:
                flags.append("outlier " + ",".join(f"{samples[i]:.0f}" for i in s.outliers))
            interval = "-" if s.n < 2 else f"[{s.ci_low:.0f}, {s.ci_high:.0f}]"
            cv = "-" if s.n < 2 else f"{s.cv:.1%}"
            sd = "-" if s.n < 2 else f"{s.stdev:.0f}"
            rows.append([config, str(t), str(s.n), f"{s.median:.0f}", f"{s.mean:.0f}", sd, cv,
                         interval, " ".join(flags)])
    return Table(
        "Queries per second over repeats",
        ["Config", "Threads", "n", "Median", "Mean", "SD", "CV", "95% interval", "Flags"],
        rows,
    )


def ladder_tables(plan: Plan, points: list[StoredPoint]) -> list[Table]:
    """Seed 003's progression: one table per thread count."""
    values = medians(points, "qps")
    changes = dict(plan.changes)
    steps = plan.config_names
    tables = []
    for t in plan.run.threads:
        rows, previous, start = [], None, values.get((steps[0], t))
        for step in steps:
            qps = values.get((step, t))
            rows.append([
                step,
                changes.get(step, "-"),
                _number(qps, 1),
                percent(qps / previous - 1) if qps and previous else "-",
                percent(qps / start - 1) if qps and start else "-",
            ])
            previous = qps
        tables.append(Table(f"Ladder at {t} thread(s): each step keeps the changes above it",
                            ["Step", "Change", "Queries/s", "vs previous", "vs start"], rows))
    return tables


def profile_table(plan: Plan, points: list[StoredPoint], top: int = 5) -> Table | None:
    """Where mariadbd's CPU went: per configuration, its first profiled point at the most
    threads, with the top symbols and their share of samples (seed 001's oprofile table)."""
    rows = []
    for config in plan.config_names:
        profiled = [p for p in points if p.config == config and p.ok and p.profile]
        if not profiled:
            continue
        point = min(profiled, key=lambda p: (-p.threads, p.repeat))
        symbols = point.profile[:top]
        rows.append([config, str(point.threads),
                     "; ".join(f"{s.share:.0%} {s.symbol}" for s in symbols)])
    if not rows:
        return None
    return Table("Where mariadbd's CPU goes (perf, share of samples)",
                 ["Config", "Threads", f"Top {top} symbols"], rows)


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
