"""Two labs side by side (analysis/compare.py) as a table: per match, both medians, B's change
over A with its interval, and the verdict."""

from __future__ import annotations

from perflab.analysis.compare import LabComparison
from perflab.output.table import Table


def compare_table(compared: LabComparison) -> Table:
    a, b = compared.a, compared.b
    rows = [[m.config, m.workload, str(m.threads), f"{m.median_a:.0f}", f"{m.median_b:.0f}",
             f"{m.verdict.change:+.1%}", m.verdict.interval_text(), m.verdict.verdict]
            for m in compared.matches]
    return Table(
        f"B vs A: {b.lab} ({b.plan.name}) against {a.lab} ({a.plan.name})",
        ["Config", "Workload", "Threads", "A qps", "B qps", "Change", "Interval", "Verdict"],
        rows,
        note=f"medians shown; the change is B's geometric mean over A's (Welch on log "
             f"throughput); intervals keep a {compared.alpha:.0%} error rate over all "
             f"{len(rows)} rows; equivalent: within ±{compared.margin:.0%}",
    )
