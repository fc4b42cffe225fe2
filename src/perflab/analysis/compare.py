"""Two labs side by side (two hosts, two versions: the STAR notes' old node vs new node).

Points are matched by configuration, workload and thread count; lab A is the reference. Two labs
ran at different times, so nothing can be paired: each match compares the mean log throughput
of B's rounds with A's (Welch), and the matches form one family (stats/decide.py).
"""

from __future__ import annotations

import math
import statistics

from perflab.errors import PerflabError
from perflab.output.table import Table
from perflab.stats.decide import Judge, welch
from perflab.stats.design import Design
from perflab.store.records import Study, ok_metrics


def compare_labs(a: Study, b: Study, margin: float | None = None) -> Table:
    """B against A per shared (configuration, workload, threads), "equivalent" within ±`margin`
    (default: A's, the reference's, stored plan's run.margin)."""
    margin = a.plan.run.margin if margin is None else margin
    ours, theirs = _by_key(a), _by_key(b)
    shared = [key for key in ours if key in theirs]
    if not shared:
        raise PerflabError(
            "the two labs share no (configuration, workload, threads) with successful points",
            hint="compare labs that ran the same plan",
        )
    alpha = b.plan.run.alpha  # the error rate the later study asked for
    design = Design(alpha, margin, 2, 2)
    estimates = {key: welch([math.log(v) for v in ours[key]], [math.log(v) for v in theirs[key]])
                 for key in shared}
    judge = Judge(shared, design)
    judge.look(estimates)
    verdicts = judge.verdicts(estimates)
    rows = []
    for config, workload, threads in shared:
        base, other = ours[(config, workload, threads)], theirs[(config, workload, threads)]
        v = verdicts[(config, workload, threads)]
        rows.append([config, workload, str(threads), f"{statistics.median(base):.0f}",
                     f"{statistics.median(other):.0f}", f"{v.change:+.1%}", v.interval_text(),
                     v.verdict])
    return Table(
        f"B vs A: {b.lab} ({b.plan.name}) against {a.lab} ({a.plan.name})",
        ["Config", "Workload", "Threads", "A qps", "B qps", "Change", "Interval", "Verdict"],
        rows,
        note=f"medians shown; the change is B's geometric mean over A's (Welch on log "
             f"throughput); intervals keep a {alpha:.0%} error rate over all {len(shared)} "
             f"rows; equivalent: within ±{margin:.0%}",
    )


def _by_key(study: Study) -> dict[tuple[str, str, int], list[float]]:
    out: dict[tuple[str, str, int], list[float]] = {}
    for p in sorted(study.ok_points, key=lambda p: (p.config, p.threads, p.round)):
        out.setdefault((p.config, p.workload, p.threads), []).append(ok_metrics(p).qps)
    return out
