"""Reports of a lab's study, rebuilt from the results database alone.

One list of tables (`tables()`) feeds every format: text for the terminal, Markdown, CSV, JSON
(every point plus the statistics) and a self-contained HTML page (html.py).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from perflab.analysis import quality
from perflab.analysis.stats import summarize
from perflab.analysis.tables import (
    Table,
    absolute_by_threads,
    absolute_table,
    comparisons,
    groups,
    ladder_tables,
    profile_table,
    relative_table,
    stats_table,
    verdict_table,
)
from perflab.errors import PerflabError
from perflab.lab import Lab

POINT_FIELDS = (
    "config", "workload", "threads", "repeat", "status", "qps", "tps", "reads_ps", "writes_ps",
    "other_ps", "latency_min_ms", "latency_avg_ms", "latency_p95_ms", "latency_p99_ms",
    "latency_max_ms", "rows_per_query", "events", "queries", "reads", "writes", "other",
    "errors", "reconnects", "seconds", "started_at", "finished_at", "session_id",
    "server_state_id", "error",
)


@dataclass(frozen=True)
class ReportOptions:
    min_effect: float = 0.02  # smallest change called faster/slower
    cv_threshold: float = 0.05  # a point noisier than this is flagged
    series: str | None = None  # CONFIG:THREADS[:REPEAT] for the per-second chart


DEFAULT_OPTIONS = ReportOptions()


@dataclass
class StudyResults:
    lab: str
    plan: dict
    points: list[dict]
    sessions: list[dict]
    server_states: list[dict]
    health: list[dict]  # the latest stored health report per configuration (perflab health)


def load_results(lab: Lab, study: str | None = None) -> StudyResults:
    if not lab.exists():
        raise PerflabError(
            f"{lab.root} holds no results database",
            hint="run a study first: perflab run key-cache-segments --lab DIR",
        )
    store = lab.store()
    try:
        studies = store.studies()
        if not studies:
            raise PerflabError(f"{lab.root} holds no study yet")
        name = study or studies[0]
        if name not in studies:
            raise PerflabError(f"no study {name!r} in {lab.root}",
                               hint=f"studies: {', '.join(studies)}")
        plan = store.latest_plan(name)
        points = store.points(name, list(plan["definitions"].values()))
        sessions = store.sessions(name)
        states = store.server_states([s["id"] for s in sessions]) if sessions else []
        health = store.health_reports(name)
    finally:
        store.close()
    return StudyResults(str(lab.root), plan, points, sessions, states, health)


def tables(results: StudyResults, options: ReportOptions) -> list[Table]:
    plan, points = results.plan, results.points
    if plan.get("layout") == "threads-down":
        out = [absolute_by_threads(plan, points)]
    else:
        out = [absolute_table(plan, points)]
    if len(plan["configs"]) > 1:
        out += [relative_table(plan, points), verdict_table(plan, points, options.min_effect)]
    if plan.get("ladder"):
        out += ladder_tables(plan, points)
    profile = profile_table(plan, points)
    if profile is not None:
        out.append(profile)
    out += [
        stats_table(plan, points, options.cv_threshold),
        absolute_table(plan, points, "latency_p95_ms", "p95 latency, ms", 2),
        absolute_table(plan, points, "rows_per_query", "Rows read per query", 1),
    ]
    return out


def headline(results: StudyResults) -> list[str]:
    plan, points = results.plan, results.points
    ok = sum(p["status"] == "ok" for p in points)
    failed = sum(p["status"] == "failed" for p in points)
    ds, run = plan["dataset"], plan["run"]
    workload = points[0]["workload"] if points else plan["workload"]["name"]
    repeats = f"{run['repeats']} repeats"
    if run.get("target_interval"):
        repeats += f" (adaptive to ±{run['target_interval']:.0%}, at most {run['max_repeats']})"
    engines = sorted(set(plan.get("engines", {}).values())) or [ds["engine"]]
    engine = engines[0] if len(engines) == 1 else "/".join(engines) + " (per configuration)"
    return [
        f"Study {plan['name']}: {plan['description']}".rstrip(": "),
        f"Workload {workload}; dataset {engine} {ds['tables']} table(s) x {ds['rows']} rows;"
        f" warm-up {run['warmup_seconds']} s, run {run['run_seconds']} s, {repeats}; baseline "
        f"{plan['baseline']}",
        f"Points: {ok} ok, {failed} failed",
    ]


def environment_lines(results: StudyResults) -> list[str]:
    if not results.sessions:
        return []
    host = json.loads(results.sessions[-1]["host_json"])
    memory = host.get("memory_bytes") or 0
    lines = [
        f"Host {host['hostname']}: {host['cpu_model']}, {host['cpu_count']} CPUs, "
        f"{memory / 2**30:.1f} GiB, {host['os']}, kernel {host['kernel']}",
        f"Datadir on {host.get('datadir_filesystem')}, I/O scheduler "
        f"{host.get('io_scheduler')}; open files {host['open_files_limit']['soft']}",
    ]
    if results.server_states:
        state = results.server_states[-1]
        process = json.loads(state["process_json"])
        lines.append(
            f"Server MariaDB {state['version']}, allocator {process.get('allocator', '?')}, "
            f"open files {process.get('open_files_limit', {}).get('soft', '?')}"
        )
    return lines


def failures(results: StudyResults) -> list[str]:
    lines = []
    for p in results.points:
        if p["status"] == "failed":
            first = (p["error"] or "unknown error").splitlines()[0]
            lines.append(f"{p['config']} threads={p['threads']} repeat={p['repeat']}: {first}")
    return lines


def render_text(results: StudyResults, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    lines = headline(results) + environment_lines(results)
    for table in tables(results, options):
        lines += ["", table.render()]
    return "\n".join(lines + _flag_lines(results, options))


def render_markdown(results: StudyResults, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    lines = [f"# {results.plan['name']}", ""] + [f"- {line}" for line in
                                                 headline(results) + environment_lines(results)]
    for table in tables(results, options):
        lines += ["", table.markdown()]
    return "\n".join(lines + _flag_lines(results, options, bullet="- "))


def render_csv(results: StudyResults, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    return "\n".join(table.csv() for table in tables(results, options))


def _flag_lines(results: StudyResults, options: ReportOptions, bullet: str = "  ") -> list[str]:
    lines = []
    found = quality.flags(results.plan, results.points, options.cv_threshold)
    if found:
        lines += ["", "Flags:"] + [f"{bullet}{flag}" for flag in found]
    failed = failures(results)
    if failed:
        lines += ["", "Failed points:"] + [f"{bullet}{line}" for line in failed]
    return lines


def analysis(results: StudyResults, options: ReportOptions) -> dict:
    """Statistics per (config, threads) and every comparison with the baseline."""
    summaries = []
    for (config, threads), values in groups(results.points, "qps").items():
        s = summarize(values)
        summaries.append({
            "config": config, "threads": threads, "n": s.n, "median": s.median,
            "mean": s.mean, "stdev": _finite(s.stdev), "cv": _finite(s.cv),
            "ci95": [_finite(s.ci_low), _finite(s.ci_high)],
            "outliers": [values[i] for i in s.outliers],
        })
    compared = [
        {"config": config, "threads": threads, "change": c.change,
         "ci95": [_finite(c.ci_low), _finite(c.ci_high)], "p_value": _finite(c.p_value),
         "verdict": c.verdict}
        for (config, threads), c in comparisons(results.plan, results.points,
                                                options.min_effect).items()
    ]
    return {
        "min_effect": options.min_effect,
        "cv_threshold": options.cv_threshold,
        "qps": summaries,
        "vs_baseline": compared,
        "flags": quality.flags(results.plan, results.points, options.cv_threshold),
    }


def render_json(results: StudyResults, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    points = []
    for p in results.points:
        item = {name: p[name] for name in POINT_FIELDS}
        item["series"] = json.loads(p["series_json"]) if p["series_json"] else []
        item["status_delta"] = json.loads(p["status_delta_json"]) if p["status_delta_json"] else {}
        item["profile"] = json.loads(p["profile_json"]) if p.get("profile_json") else []
        points.append(item)
    sessions = [
        {**{k: s[k] for k in ("id", "started_at", "finished_at", "outcome")},
         "host": json.loads(s["host_json"])}
        for s in results.sessions
    ]
    states = [
        {**{k: s[k] for k in ("id", "session_id", "config", "how", "version", "created_at")},
         "variables": json.loads(s["variables_json"]), "process": json.loads(s["process_json"])}
        for s in results.server_states
    ]
    document = {
        "study": results.plan["name"],
        "plan": results.plan,
        "points": points,
        "analysis": analysis(results, options),
        "sessions": sessions,
        "server_states": states,
    }
    return json.dumps(document, indent=2)


def series_point(results: StudyResults, choice: str | None) -> dict | None:
    """The point whose per-second series is charted: CONFIG:THREADS[:REPEAT], or by default
    the baseline's first repeat at the largest thread count."""
    ok = [p for p in results.points if p["status"] == "ok" and p["series_json"]]
    if choice:
        parts = choice.split(":")
        if len(parts) not in (2, 3) or not all(x.isdigit() for x in parts[1:]):
            raise PerflabError(f"--series {choice!r}: expected CONFIG:THREADS or "
                               "CONFIG:THREADS:REPEAT")
        wanted = [p for p in ok if p["config"] == parts[0] and p["threads"] == int(parts[1])
                  and (len(parts) == 2 or p["repeat"] == int(parts[2]))]
        if not wanted:
            raise PerflabError(f"--series {choice!r}: no such successful point")
        return min(wanted, key=lambda p: p["repeat"])
    base = [p for p in ok if p["config"] == results.plan["baseline"]]
    if not base:
        return None
    return min(base, key=lambda p: (-p["threads"], p["repeat"]))


def _finite(value: float) -> float | None:
    return None if value is None or math.isnan(value) else value
