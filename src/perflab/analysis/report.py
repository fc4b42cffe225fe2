"""Reports of a lab's study, rebuilt from the results database alone: text and JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass

from perflab.analysis.tables import absolute_table, relative_table
from perflab.errors import PerflabError
from perflab.lab import Lab

POINT_FIELDS = (
    "config", "workload", "threads", "repeat", "status", "qps", "tps", "reads_ps", "writes_ps",
    "other_ps", "latency_min_ms", "latency_avg_ms", "latency_p95_ms", "latency_p99_ms",
    "latency_max_ms", "rows_per_query", "events", "queries", "reads", "writes", "other",
    "errors", "reconnects", "seconds", "started_at", "finished_at", "session_id",
    "server_state_id", "error",
)


@dataclass
class StudyResults:
    plan: dict
    points: list[dict]
    sessions: list[dict]
    server_states: list[dict]


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
            raise PerflabError(f"no study {name!r} in {lab.root}", hint=f"studies: {studies}")
        plan = store.latest_plan(name)
        points = store.points(name, list(plan["definitions"].values()))
        sessions = store.sessions(name)
        states = store.server_states([s["id"] for s in sessions]) if sessions else []
    finally:
        store.close()
    return StudyResults(plan, points, sessions, states)


def render_text(results: StudyResults) -> str:
    plan, points = results.plan, results.points
    ok = [p for p in points if p["status"] == "ok"]
    failed = [p for p in points if p["status"] == "failed"]
    expected = len(plan["configs"]) * len(plan["run"]["threads"]) * plan["run"]["repeats"]
    ds, run = plan["dataset"], plan["run"]
    workload = points[0]["workload"] if points else plan["workload"]["name"]
    lines = [
        f"Study {plan['name']}: {plan['description']}".rstrip(": "),
        f"Workload {workload}; dataset {ds['engine']} {ds['tables']} table(s) x {ds['rows']} rows;"
        f" warm-up {run['warmup_seconds']} s, run {run['run_seconds']} s, baseline "
        f"{plan['baseline']}",
        f"Points: {len(ok)} ok, {len(failed)} failed, {expected} planned",
    ]
    lines += environment_lines(results)
    lines += ["", absolute_table(plan, points).render(), "", relative_table(plan, points).render()]
    lines += ["", absolute_table(plan, points, "rows_per_query", "Rows read per query", 1).render()]
    if failed:
        lines += ["", "Failed points:"]
        for p in failed:
            first = (p["error"] or "").splitlines()[0] if p["error"] else "unknown error"
            lines.append(f"  {p['config']} threads={p['threads']} repeat={p['repeat']}: {first}")
    return "\n".join(lines)


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


def render_json(results: StudyResults) -> str:
    points = []
    for p in results.points:
        item = {name: p[name] for name in POINT_FIELDS}
        item["series"] = json.loads(p["series_json"]) if p["series_json"] else []
        item["status_delta"] = json.loads(p["status_delta_json"]) if p["status_delta_json"] else {}
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
        "sessions": sessions,
        "server_states": states,
    }
    return json.dumps(document, indent=2)
