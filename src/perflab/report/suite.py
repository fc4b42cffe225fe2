"""One table over the studies of a suite (`perflab run versions`): per workload and thread count,
each configuration's change against the baseline with its verdict, and the server's CPU time and
context switches per query, which say where a change comes from."""

from __future__ import annotations

from perflab.analysis.tables import medians, percent
from perflab.output.table import Table
from perflab.report.study import DEFAULT_OPTIONS, ReportOptions, judgement
from perflab.store.records import CPU_PER_QUERY, Study


def suite_tables(studies: list[Study], options: ReportOptions = DEFAULT_OPTIONS) -> list[Table]:
    """The change table and the per-query table over `studies`, whose configurations are the
    same (a suite's plans crossed with the same builds)."""
    configs = studies[0].plan.config_names
    baseline = studies[0].plan.baseline
    others = [c for c in configs if c != baseline]
    changes, costs = [], []
    for study in studies:
        judged = judgement(study, options)
        cpu = medians(study.points, CPU_PER_QUERY)
        switches = medians(study.points, "context_switches_per_query")
        workload = study.plan.workload.label
        for threads in study.plan.run.threads:
            cells = []
            for config in others:
                verdict = judged.verdicts.get((config, threads))
                cells.append(f"{percent(verdict.change)} {verdict.verdict}"
                             if verdict and verdict.n else "-")
            changes.append([workload, str(threads), *cells])
            costs.append([workload, str(threads), *(
                _cost(cpu.get((c, threads)), switches.get((c, threads))) for c in configs)])
    run = studies[0].plan.run
    margin = options.margin if options.margin is not None else run.margin
    return [
        Table(f"Change vs {baseline} (paired by round; each workload's intervals keep a "
              f"{run.alpha:.0%} error rate over its own comparisons, margin ±{margin:.0%})",
              ["Workload", "Threads", *others], changes),
        Table("Server CPU per query, µs / context switches per query (median over rounds)",
              ["Workload", "Threads", *configs], costs),
    ]


def _cost(cpu_us: float | None, switches: float | None) -> str:
    if cpu_us is None:
        return "-"
    return f"{cpu_us:.0f} / {switches:.2f}" if switches is not None else f"{cpu_us:.0f}"
