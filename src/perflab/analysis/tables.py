"""The tables engineers publish, plus the statistics that say which differences are real.

- absolute: a metric per configuration x thread count (median over rounds);
- relative: the key-cache page's `(32/off)` rows in its percent format, the paired change
  per round that the verdicts judge;
- verdicts: every comparison's paired change with its interval and verdict (analysis/verdicts.py);
- per-cell statistics: n, median, mean, sd, CV, interval, outliers, the client's CPU share;
- response time against connections: avg, p95, p99;
- ladder: step, change, throughput, gain over the previous step and over the start (the NetBSD
  tuning thread).

A cell with no successful round shows `-`.
"""

from __future__ import annotations

import math
import statistics

from perflab.analysis.verdicts import Judgement, paired_change
from perflab.domain import Plan
from perflab.output.table import Table
from perflab.stats.decide import FASTER, INCONCLUSIVE, SLOWER
from perflab.stats.summary import summarize
from perflab.stats.trimmed import TRIM, TRIM_FROM
from perflab.store.records import StoredPoint


def groups(points: list[StoredPoint], metric: str = "qps") -> dict[tuple[str, int], list[float]]:
    """The ok rounds' values of `metric` per (config, threads), in round order."""
    out: dict[tuple[str, int], list[float]] = {}
    for point in sorted(points, key=lambda p: p.round):
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
        f"{title} (median over rounds)",
        ["Threads", *[str(t) for t in threads]],
        rows,
    )


def absolute_by_threads(plan: Plan, points: list[StoredPoint]) -> Table:
    """Queries/s with one row per thread count and one column per configuration."""
    values = medians(points, "qps")
    configs = plan.config_names
    rows = [[str(t), *[_number(values.get((c, t)), 0) for c in configs]]
            for t in plan.run.threads]
    return Table("Queries per second (median over rounds)", ["Threads", *configs], rows)


def response_time_table(plan: Plan, points: list[StoredPoint]) -> Table:
    """Response time against connections (the STAR notes' plots as numbers): per thread count,
    each configuration's average, p95 and p99 latency."""
    figures = {m: medians(points, m) for m in RESPONSE_TIMES}
    configs = plan.config_names
    rows = [[str(t), *[_number(figures[m].get((c, t)), 2) for c in configs
                       for m in RESPONSE_TIMES]] for t in plan.run.threads]
    header = ["Connections", *[f"{c} {label}" for c in configs
                               for label in ("avg", "p95", "p99")]]
    return Table("Response time vs connections, ms (median over rounds)", header, rows)


RESPONSE_TIMES = ("latency_avg_ms", "latency_p95_ms", "latency_p99_ms")


def relative_table(plan: Plan, judgement: Judgement) -> Table:
    """The MariaDB KB key cache page's format: one row per configuration, its change over the
    baseline per thread count (the paired estimate the verdicts rest on)."""
    threads = plan.run.threads
    rows = []
    for config in plan.config_names:
        if config == plan.baseline:
            continue
        cells = []
        for t in threads:
            verdict = judgement.verdicts.get((config, t))
            cells.append(percent(verdict.change) if verdict and verdict.n else "-")
        rows.append([f"({config}/{plan.baseline})", *cells])
    return Table("In relative numbers:", ["Threads", *[str(t) for t in threads]], rows)


def verdict_table(plan: Plan, judgement: Judgement) -> Table:
    design = judgement.design
    rows = []
    for (config, threads), v in judgement.verdicts.items():
        if v.decided:
            note = f"decided after round {v.look}" if v.look else ""
            if v.disputed:
                note += "; the rounds since no longer support it"
        elif v.verdict == INCONCLUSIVE:
            note = (f"~{v.more_rounds} more rounds" if v.more_rounds is not None
                    else "more rounds than the plan allows")
        else:
            note = ""
        change = "-" if math.isnan(v.change) else f"{v.change:+.1%}"
        said = f"{v.verdict}, within ±{design.margin:.0%}" if v.within(design.margin) \
            else v.verdict
        rows.append([config, str(threads), str(v.n), change, v.interval_text(), said, note])
    boundary = "levels fitted to the budget" if design.fitted else "Pocock's level"
    looks = (f"a look after every round from {design.first_look} to {design.last_look} "
             f"({boundary})" if design.sequential else "one look at the end")
    return Table(
        f"Change vs {plan.baseline} (paired by round; intervals keep a {design.alpha:.0%} "
        f"error rate over all {len(judgement.verdicts)} comparisons)",
        ["Config", "Threads", "Rounds", "Change", "Interval", "Verdict", ""],
        rows,
        note=f"equivalent: the interval lies within ±{design.margin:.0%}; faster/slower: it "
             f"excludes 0 (within ±{design.margin:.0%}: a real change smaller than the "
             f"margin); {looks}, Shaffer's step-down across the table"
             + (f"; from {TRIM_FROM} rounds on, the change is the {TRIM:.0%} trimmed mean of the "
                f"rounds' ratios" if any(v.n >= TRIM_FROM for v in judgement.verdicts.values())
                else ""),
    )


# a second response's verdicts in its own words: more of the server's CPU per query is worse
PER_QUERY_WORDS = {FASTER: "more", SLOWER: "less"}


def per_query_table(plan: Plan, judgement: Judgement, title: str) -> Table:
    """A per-query figure's change against the baseline, with its verdicts (verdicts.
    judge_per_query): more or less of it per query, equivalent, or inconclusive."""
    margin = judgement.design.margin
    rows = []
    for (config, threads), v in judgement.verdicts.items():
        change = "-" if math.isnan(v.change) else f"{v.change:+.1%}"
        said = PER_QUERY_WORDS.get(v.verdict, v.verdict)
        rows.append([config, str(threads), str(v.n), change, v.interval_text(),
                     f"{said}, within ±{margin:.0%}" if v.within(margin) else said])
    return Table(f"{title}: change vs {plan.baseline} (paired by round; one look at the rounds "
                 f"measured, a {judgement.design.alpha:.0%} error rate over its "
                 f"{len(judgement.verdicts)} comparisons)",
                 ["Config", "Threads", "Rounds", "Change", "Interval", "Verdict"], rows,
                 note=f"more/less: the interval excludes 0; equivalent: within ±{margin:.0%}; "
                      f"{judgement.exploratory}")


CLIENT_BOUND = 0.8  # the load generator used this share of the client's CPUs: it may limit


def stats_table(plan: Plan, points: list[StoredPoint], cv_threshold: float) -> Table:
    values = groups(points, "qps")
    client = groups(points, "client_cpu")
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
            shares = client.get((config, t))
            cpu = statistics.median(shares) if shares else None
            if cpu is not None and cpu >= CLIENT_BOUND:
                flags.append("client-bound")
            interval = "-" if s.n < 2 else f"[{s.ci_low:.0f}, {s.ci_high:.0f}]"
            cv = "-" if s.n < 2 else f"{s.cv:.1%}"
            sd = "-" if s.n < 2 else f"{s.stdev:.0f}"
            rows.append([config, str(t), str(s.n), f"{s.median:.0f}", f"{s.mean:.0f}", sd, cv,
                         interval, "-" if cpu is None else f"{cpu:.0%}", " ".join(flags)])
    return Table(
        "Queries per second over rounds",
        ["Config", "Threads", "n", "Median", "Mean", "SD", "CV", "95% interval", "Client CPU",
         "Flags"],
        rows,
        note=f"Client CPU: the load generator's share of the client machine's CPUs; "
             f"client-bound: {CLIENT_BOUND:.0%} or more, so the client may be what limits",
    )


def ladder_tables(plan: Plan, points: list[StoredPoint]) -> list[Table]:
    """The NetBSD tuning thread's progression: one table per thread count, each step's change
    paired by round with the step before and with the start."""
    values = medians(points, "qps")
    changes = dict(plan.changes)
    steps = plan.config_names
    tables = []
    for t in plan.run.threads:
        rows, previous = [], None
        for step in steps:
            rows.append([
                step,
                changes.get(step, "-"),
                _number(values.get((step, t)), 1),
                percent(paired_change(points, previous, step, t)) if previous else "-",
                percent(paired_change(points, steps[0], step, t)),
            ])
            previous = step
        tables.append(Table(f"Ladder at {t} thread(s): each step keeps the changes above it",
                            ["Step", "Change", "Queries/s", "vs previous", "vs start"], rows))
    return tables


def profile_table(plan: Plan, points: list[StoredPoint], top: int = 5) -> Table | None:
    """Where the server's CPU went: per configuration, its first profiled point at the most
    threads, with the top symbols and their share of samples (the MyISAM key-buffer benchmark's
    oprofile table)."""
    rows = []
    for config in plan.config_names:
        profiled = [p for p in points if p.config == config and p.ok and p.profile]
        if not profiled:
            continue
        point = min(profiled, key=lambda p: (-p.threads, p.round))
        symbols = point.profile[:top]
        rows.append([config, str(point.threads),
                     "; ".join(f"{s.share:.0%} {s.symbol}" for s in symbols)])
    if not rows:
        return None
    return Table("Where the server's CPU goes (perf, share of samples)",
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
