"""Two labs side by side (two hosts, two versions: seed 004's old node vs new node).

Points are matched by configuration, workload and thread count; lab A is the reference.
"""

from __future__ import annotations

import math
import statistics

from perflab.errors import PerflabError
from perflab.output.table import Table
from perflab.stats.summary import compare
from perflab.store.records import Study


def compare_labs(a: Study, b: Study, min_effect: float) -> Table:
    ours, theirs = _by_key(a), _by_key(b)
    shared = [key for key in ours if key in theirs]
    if not shared:
        raise PerflabError(
            "the two labs share no (configuration, workload, threads) with successful points",
            hint="compare labs that ran the same plan",
        )
    rows = []
    for config, workload, threads in shared:
        base, other = ours[(config, workload, threads)], theirs[(config, workload, threads)]
        c = compare(base, other, min_effect)
        interval = "-" if math.isnan(c.ci_low) else f"[{c.ci_low:+.1%}, {c.ci_high:+.1%}]"
        p_value = "-" if math.isnan(c.p_value) else f"{c.p_value:.3f}"
        rows.append([config, workload, str(threads), f"{statistics.median(base):.0f}",
                     f"{statistics.median(other):.0f}", f"{c.change:+.1%}", interval, p_value,
                     c.verdict])
    return Table(
        f"B vs A: {b.lab} ({b.plan.name}) against {a.lab} ({a.plan.name})",
        ["Config", "Workload", "Threads", "A qps", "B qps", "Change", "95% interval", "p",
         "Verdict"],
        rows,
        note=f"faster/slower: p < 0.05, the interval excludes 0 and |change| >= "
             f"{min_effect:.0%}; otherwise noise. "
             "Medians shown; the change compares means.",
    )


def _by_key(study: Study) -> dict[tuple[str, str, int], list[float]]:
    out: dict[tuple[str, str, int], list[float]] = {}
    for p in sorted(study.ok_points, key=lambda p: (p.config, p.threads, p.repeat)):
        out.setdefault((p.config, p.workload, p.threads), []).append(p.metrics.qps)
    return out
