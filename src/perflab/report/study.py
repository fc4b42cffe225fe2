"""Reports of a lab's study, rebuilt from the results database alone.

One list of tables (`tables()`) feeds every format: text for the terminal, Markdown, CSV, JSON
(every point plus the statistics) and a self-contained HTML page (html.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass

from perflab.analysis import quality
from perflab.analysis.tables import (
    PER_QUERY_WORDS,
    absolute_by_threads,
    absolute_table,
    groups,
    ladder_tables,
    per_query_table,
    profile_table,
    relative_table,
    response_time_table,
    stats_table,
    verdict_table,
)
from perflab.analysis.verdicts import Judgement, judge, judge_per_query
from perflab.analysis.verdicts import headline as verdict_headline
from perflab.errors import PerflabError
from perflab.output.table import Table
from perflab.report.builds import builds_line, defaults_table
from perflab.report.flags import flag_text
from perflab.server.flavor import server_label
from perflab.stats.decide import Decision
from perflab.stats.summary import summarize
from perflab.store.records import CPU_PER_QUERY, Metrics, StoredPoint, Study


@dataclass(frozen=True)
class ReportOptions:
    margin: float | None = None  # "equivalent" within ±margin (None: the plan's)
    cv_threshold: float = 0.15  # a cell whose throughput varies more over rounds is flagged
    series: str | None = None  # CONFIG:THREADS[:ROUND] for the per-second chart


DEFAULT_OPTIONS = ReportOptions()


def judgement(study: Study, options: ReportOptions) -> Judgement:
    """The study's verdicts at the options' margin, judged once per study read and reused by
    every table, chart and headline that shows them."""
    if options.margin not in study.judged:
        study.judged[options.margin] = judge(study.plan, study.points, study.design,
                                             options.margin)
    return study.judged[options.margin]


def per_query_judgement(study: Study) -> Judgement | None:
    """The verdicts on the server's CPU per query (a second response), judged once per study
    read; None for a single configuration or points without the server's CPU."""
    if "cpu" not in study.judged:
        study.judged["cpu"] = judge_per_query(study.plan, study.points, study.design,
                                              CPU_PER_QUERY) \
            if len(study.plan.configs) > 1 else None
    return study.judged["cpu"]


def tables(study: Study, options: ReportOptions) -> list[Table]:
    plan, points = study.plan, study.points
    if plan.layout == "threads-down":
        out = [absolute_by_threads(plan, points)]
    else:
        out = [absolute_table(plan, points)]
    if len(plan.configs) > 1:
        judged = judgement(study, options)
        out += [relative_table(plan, judged), verdict_table(plan, judged)]
    if plan.ladder:
        out += ladder_tables(plan, points)
    profile = profile_table(plan, points)
    if profile is not None:
        out.append(profile)
    out += [
        stats_table(plan, points, options.cv_threshold),
        response_time_table(plan, points),
        absolute_table(plan, points, "rows_per_query", "Rows read per query", 1),
    ]
    cpu = per_query_judgement(study)
    if cpu is not None:
        out.append(per_query_table(plan, cpu, "Server CPU per query"))
    if any(p.value(CPU_PER_QUERY) is not None for p in points):  # managed points
        out += [absolute_table(plan, points, CPU_PER_QUERY,
                               "Server CPU per query, µs", 1),
                absolute_table(plan, points, "context_switches_per_query",
                               "Server context switches per query", 2)]
    defaults = defaults_table(study)
    return out + ([defaults] if defaults else [])


def headline(study: Study) -> list[str]:
    plan, points = study.plan, study.points
    ok = sum(p.ok for p in points)
    failed = len(points) - ok
    ds, run = plan.dataset, plan.run
    workload = points[0].workload if points else plan.workload.name
    rounds_text = f"{max((p.round for p in points), default=0)} rounds"
    if run.time:
        most = (f"{run.planned_rounds}, what it was fitted to hold" if run.planned_rounds
                else str(run.max_rounds))
        rounds_text += (f" (at least {run.rounds}; a budget of {run.time / 60:g} min, "
                        f"at most {most})")
    engines = sorted({plan.dataset_for(c).engine for c in plan.configs})
    engine = engines[0] if len(engines) == 1 else "/".join(engines) + " (per configuration)"
    return [
        f"Study {plan.name}: {plan.description}".rstrip(": "),
        f"Workload {workload}; dataset {engine} "
        f"{study.dataset or f'{ds.tables} table(s) x {ds.rows} rows'};"
        f" warm-up {run.warmup_seconds} s, run {run.run_seconds} s, {rounds_text}; baseline "
        f"{plan.baseline}",
        f"Points: {ok} ok, {failed} failed",
        *measures_line(study),
    ]


def measures_line(study: Study) -> list[str]:
    """How the points were measured, in one line: side by side or one server at a time, the
    configurations pinned to CPUs, and the second response judged beside throughput."""
    ok = study.ok_points
    if not ok:
        return []
    fleet = any(p.metrics and p.metrics.off_turn_cpu is not None for p in ok)
    parts = ["side by side (a server per configuration, taking turns in time slices)" if fleet
             else "one server at a time"]
    pins: dict[tuple[str | None, str | None], list[str]] = {}
    for config in study.plan.configs:
        cpus = (config.environment.server_cpus, config.environment.client_cpus)
        if any(cpus):
            pins.setdefault(cpus, []).append(config.name)
    every = len(study.plan.configs)
    pinned = [f"{'every configuration' if len(names) == every else ', '.join(names)} (server "
              f"CPUs {server or 'any'}, client CPUs {client or 'any'})"
              for (server, client), names in pins.items()]
    parts.append(f"pinned: {' and '.join(pinned)}" if pinned else "no CPU pinning")
    if per_query_judgement(study) is not None:
        parts.append("the server's CPU per query judged beside throughput")
    return ["Measured " + "; ".join(parts)]


def findings(study: Study, options: ReportOptions) -> list[str]:
    """What the study found, one line per configuration (empty for a single one)."""
    if len(study.plan.configs) < 2:
        return []
    lines = verdict_headline(study.plan, judgement(study, options))
    busy = [f"{config} at {threads} threads"
            for config, threads, _, _ in quality.off_turn_workers(study.points)]
    if busy:
        lines.append(f"Caution: {'; '.join(busy)} did background work in the other servers' "
                     "turns, so the fleet's ratios there lean toward it (see Flags); "
                     "schedule = \"serial\" measures each server alone")
    return lines


def environment_lines(study: Study) -> list[str]:
    host = study.host
    if host is None:
        return []
    memory = host.get("memory_bytes") or 0
    lines = [
        f"Host {host['hostname']}: {host['cpu_model']}, {host['cpu_count']} CPUs, "
        f"{memory / 2**30:.1f} GiB, {host['os']}, kernel {host['kernel']}",
        f"Datadir on {host.get('datadir_filesystem')}, I/O scheduler "
        f"{host.get('io_scheduler')}; open files {host['open_files_limit']['soft']}",
    ]
    if study.server_states:
        state = study.server_states[-1]
        process = state.process
        server = builds_line(study) or f"Server {server_label(state.version)}"
        lines.append(f"{server}; allocator {process.get('allocator', '?')}, "
                     f"open files {process.get('open_files_limit', {}).get('soft', '?')}")
    return lines + client_lines(study)


def client_lines(study: Study) -> list[str]:
    """Where the load came from, when several client machines made it (load/clients.py)."""
    spread = [p for p in study.points if p.clients]
    if not spread:
        return []
    hosts: dict[str, dict] = {}
    for p in spread:
        for c in p.clients:
            hosts[c["host"]] = c["facts"]
    described = "; ".join(f"{host} ({facts['cpus']} CPUs, kernel {facts['kernel']}, "
                          f"{facts['sysbench']})" for host, facts in sorted(hosts.items()))
    workers = max(len(p.clients) for p in spread)
    skews = [p.client_start_skew_ms for p in spread]
    skew = max(s for s in skews if s is not None)  # None only for a point without clients
    return [f"Load from {workers} client worker(s) on {len(hosts)} host(s): {described}; "
            f"start skew at most {skew:.1f} ms over {len(spread)} point(s)"]


def failures(study: Study) -> list[str]:
    lines = []
    for p in study.points:
        if not p.ok:
            first = (p.error or "unknown error").splitlines()[0]
            lines.append(f"{p.label}: {first}")
    return lines


def render_text(study: Study, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    found = findings(study, options)
    lines = [*found, ""] if found else []
    lines += headline(study) + environment_lines(study)
    for table in tables(study, options):
        lines += ["", table.render()]
    return "\n".join(lines + _flag_lines(study, options))


def render_markdown(study: Study, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    lines = [f"# {study.plan.name}", ""] + [f"**{line}**  " for line in findings(study, options)]
    lines += [""] + [f"- {line}" for line in headline(study) + environment_lines(study)]
    for table in tables(study, options):
        lines += ["", table.markdown()]
    return "\n".join(lines + _flag_lines(study, options, bullet="- "))


def render_csv(study: Study, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    return "\n".join(table.csv() for table in tables(study, options))


def study_flags(study: Study, options: ReportOptions) -> list[str]:
    """The study's flags, judged against its baseline at the margin the report judges at, in
    words."""
    return [flag_text(flag) for flag in quality.flags(
        study.points, options.cv_threshold, study.plan.baseline,
        options.margin or study.design.margin)]


def _flag_lines(study: Study, options: ReportOptions, bullet: str = "  ") -> list[str]:
    lines = []
    found = study_flags(study, options)
    if found:
        lines += ["", "Flags:"] + [f"{bullet}{flag}" for flag in found]
    failed = failures(study)
    if failed:
        lines += ["", "Failed points:"] + [f"{bullet}{line}" for line in failed]
    return lines


def analysis(study: Study, options: ReportOptions) -> dict:
    """Statistics per (config, threads) and every comparison with the baseline."""
    summaries = []
    for (config, threads), values in groups(study.points, "qps").items():
        s = summarize(values)
        summaries.append({
            "config": config, "threads": threads, "n": s.n, "median": s.median,
            "mean": s.mean, "stdev": _finite(s.stdev), "cv": _finite(s.cv),
            "ci95": [_finite(s.ci_low), _finite(s.ci_high)],
            "outliers": [values[i] for i in s.outliers],
        })
    judged = judgement(study, options)
    cpu = per_query_judgement(study)
    return {
        "alpha": judged.design.alpha,
        "margin": judged.design.margin,
        "looks": [judged.design.first_look, judged.design.last_look],
        "boundary_shape": judged.design.shape,  # Wang-Tsiatis: 0.5 Pocock, 0.25 fitted looks
        "headline": findings(study, options),
        "precision": judged.precision(),
        "detectable_change_open": judged.detectable(),
        "cv_threshold": options.cv_threshold,
        "qps": summaries,
        "vs_baseline": _compared(judged),
        # the server's CPU per query, a second response: "more"/"less" for faster/slower
        "server_cpu_per_query": None if cpu is None else {
            "exploratory": cpu.exploratory, "alpha": cpu.design.alpha,
            "vs_baseline": _compared(cpu, PER_QUERY_WORDS)},
        "flags": study_flags(study, options),
    }


def _compared(judged: Judgement, words: dict[Decision, str] | None = None) -> list[dict]:
    """Every comparison of `judged` with the baseline, its verdict in `words` where given."""
    return [
        {"config": config, "threads": threads, "rounds": v.n, "change": _finite(v.change),
         "interval": [_finite(v.low), _finite(v.high)], "level": v.level,
         "verdict": (words or {}).get(v.verdict, v.verdict),
         "within_margin": v.within(judged.design.margin),
         "decided_after_round": v.look, "disputed": v.disputed,
         "more_rounds": v.more_rounds}
        for (config, threads), v in judged.verdicts.items()
    ]


def render_json(study: Study, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    document = {
        "study": study.plan.name,
        "plan": study.plan.to_json(),
        "dataset": study.dataset,  # as the workload's family described it (may be empty)
        "points": [_point_json(p) for p in study.points],
        "analysis": analysis(study, options),
        "sessions": [dataclasses.asdict(s) for s in study.sessions],
        "server_states": [dataclasses.asdict(s) for s in study.server_states],
    }
    return json.dumps(document, indent=2)


def _point_json(p: StoredPoint) -> dict:
    figures = p.metrics.as_dict() if p.metrics else dict.fromkeys(Metrics.names())
    return {
        "config": p.config, "workload": p.workload, "threads": p.threads, "round": p.round,
        "status": p.status, **figures, "started_at": p.started_at,
        "finished_at": p.finished_at, "session_id": p.session_id,
        "server_state_id": p.server_state_id, "error": p.error,
        "series": [dataclasses.asdict(s) for s in p.series], "status_delta": p.status_delta,
        "profile": [dataclasses.asdict(s) for s in p.profile],
        "clients": p.clients,  # load from several client machines: one entry per worker
        "client_start_skew_ms": p.client_start_skew_ms,
    }


def series_point(study: Study, choice: str | None) -> StoredPoint | None:
    """The point whose per-second series is charted: CONFIG:THREADS[:ROUND], or by default
    the baseline's first round at the largest thread count."""
    ok = [p for p in study.points if p.ok and p.series]
    if choice:
        parts = choice.split(":")
        if len(parts) not in (2, 3) or not all(x.isdigit() for x in parts[1:]):
            raise PerflabError(f"series {choice!r}: expected CONFIG:THREADS or "
                               "CONFIG:THREADS:ROUND", option="series")
        wanted = [p for p in ok if p.config == parts[0] and p.threads == int(parts[1])
                  and (len(parts) == 2 or p.round == int(parts[2]))]
        if not wanted:
            known = [f"{c}:{t}" for c, t in sorted({(p.config, p.threads) for p in ok})]
            shown = ", ".join(known[:12]) + (", ..." if len(known) > 12 else "")
            raise PerflabError(f"series {choice!r}: no such successful point",
                               hint=f"points with a series: {shown or 'none'}", option="series")
        return min(wanted, key=lambda p: p.round)
    base = [p for p in ok if p.config == study.plan.baseline]
    if not base:
        return None
    return min(base, key=lambda p: (-p.threads, p.round))


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value
