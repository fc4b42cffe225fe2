"""The results database: one SQLite file per lab directory.

A point is written in one transaction when it completes, so a run killed at any moment keeps
every finished point and none half-written. Points are unique on (study, definition, threads,
repeat): a resumed run skips what is stored, and a failed point is replaced when it is retried.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from perflab.plan import Plan, Point

SCHEMA = """
CREATE TABLE IF NOT EXISTS plans (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    plan_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    plan_id INTEGER NOT NULL REFERENCES plans(id),
    started_at REAL NOT NULL,
    finished_at REAL,
    outcome TEXT,
    host_json TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS server_states (
    id INTEGER PRIMARY KEY,
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    config TEXT NOT NULL,
    how TEXT NOT NULL,
    version TEXT NOT NULL,
    variables_json TEXT NOT NULL,
    process_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS points (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    definition TEXT NOT NULL,
    config TEXT NOT NULL,
    workload TEXT NOT NULL,
    threads INTEGER NOT NULL,
    repeat INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    server_state_id INTEGER REFERENCES server_states(id),
    started_at REAL NOT NULL,
    finished_at REAL NOT NULL,
    seconds REAL,
    events INTEGER,
    queries INTEGER,
    reads INTEGER,
    writes INTEGER,
    other INTEGER,
    errors INTEGER,
    reconnects INTEGER,
    tps REAL,
    qps REAL,
    reads_ps REAL,
    writes_ps REAL,
    other_ps REAL,
    latency_min_ms REAL,
    latency_avg_ms REAL,
    latency_p95_ms REAL,
    latency_p99_ms REAL,
    latency_max_ms REAL,
    rows_per_query REAL,
    series_json TEXT,
    status_delta_json TEXT,
    histogram_json TEXT,
    profile_json TEXT,
    error TEXT,
    UNIQUE (study, definition, threads, repeat)
);
CREATE TABLE IF NOT EXISTS health_reports (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    config TEXT NOT NULL,
    report_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""

METRIC_COLUMNS = (
    "seconds", "events", "queries", "reads", "writes", "other", "errors", "reconnects", "tps",
    "qps", "reads_ps", "writes_ps", "other_ps", "latency_min_ms", "latency_avg_ms",
    "latency_p95_ms", "latency_p99_ms", "latency_max_ms", "rows_per_query",
)


@dataclass
class PointRecord:
    """What the runner hands the store for one finished point."""

    point: Point
    status: str
    started_at: float
    finished_at: float
    server_state_id: int | None
    metrics: dict
    series: list | None = None
    status_delta: dict | None = None
    histogram: dict | None = None
    profile: list | None = None
    error: str | None = None


class ResultStore:
    def __init__(self, path: Path):
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        columns = {row["name"] for row in self.db.execute("PRAGMA table_info(points)")}
        if "profile_json" not in columns:  # results databases made before profiles existed
            self.db.execute("ALTER TABLE points ADD COLUMN profile_json TEXT")

    def close(self) -> None:
        self.db.close()

    # -- writing -------------------------------------------------------------------------------

    def save_plan(self, plan: Plan) -> int:
        text = json.dumps(plan.to_json())  # keeps the plan's order of configurations
        last = self.db.execute(
            "SELECT id, plan_json FROM plans WHERE study = ? ORDER BY id DESC LIMIT 1",
            (plan.name,),
        ).fetchone()
        if last is not None and last["plan_json"] == text:
            return last["id"]
        cur = self.db.execute(
            "INSERT INTO plans (study, plan_json, created_at) VALUES (?, ?, ?)",
            (plan.name, text, time.time()),
        )
        return cur.lastrowid

    def begin_session(self, study: str, plan_id: int, host: dict) -> int:
        cur = self.db.execute(
            "INSERT INTO sessions (study, plan_id, started_at, host_json) VALUES (?, ?, ?, ?)",
            (study, plan_id, time.time(), json.dumps(host)),
        )
        return cur.lastrowid

    def end_session(self, session_id: int, outcome: str) -> None:
        self.db.execute(
            "UPDATE sessions SET finished_at = ?, outcome = ? WHERE id = ?",
            (time.time(), outcome, session_id),
        )

    def save_server_state(
        self, session_id: int, config: str, how: str, version: str, variables: dict,
        process: dict,
    ) -> int:
        cur = self.db.execute(
            "INSERT INTO server_states (session_id, config, how, version, variables_json, "
            "process_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, config, how, version, json.dumps(variables), json.dumps(process),
             time.time()),
        )
        return cur.lastrowid

    def save_point(self, session_id: int, study: str, record: PointRecord) -> None:
        point = record.point
        columns = {
            "study": study,
            "definition": point.definition,
            "config": point.config.name,
            "workload": point.workload.label,
            "threads": point.threads,
            "repeat": point.repeat,
            "status": record.status,
            "session_id": session_id,
            "server_state_id": record.server_state_id,
            "started_at": record.started_at,
            "finished_at": record.finished_at,
            **{name: record.metrics.get(name) for name in METRIC_COLUMNS},
            "series_json": _json(record.series),
            "status_delta_json": _json(record.status_delta),
            "histogram_json": _json(record.histogram),
            "profile_json": _json(record.profile),
            "error": record.error,
        }
        names = ", ".join(columns)
        marks = ", ".join("?" for _ in columns)
        updates = ", ".join(f"{n} = excluded.{n}" for n in columns if n != "id")
        # A stored 'ok' point is never overwritten; a 'failed' one is replaced by its retry.
        self.db.execute(
            f"INSERT INTO points ({names}) VALUES ({marks}) "
            "ON CONFLICT (study, definition, threads, repeat) DO UPDATE SET "
            f"{updates} WHERE points.status = 'failed'",
            tuple(columns.values()),
        )

    # -- reading -------------------------------------------------------------------------------

    def done(self, study: str, point: Point) -> bool:
        row = self.db.execute(
            "SELECT 1 FROM points WHERE study = ? AND definition = ? AND threads = ? "
            "AND repeat = ? AND status = 'ok'",
            (study, point.definition, point.threads, point.repeat),
        ).fetchone()
        return row is not None

    def repeats(self, study: str, definition: str, threads: int) -> list[tuple[int, str, float]]:
        """(repeat, status, qps) of every stored repeat of one configuration and thread count."""
        rows = self.db.execute(
            "SELECT repeat, status, qps FROM points WHERE study = ? AND definition = ? "
            "AND threads = ? ORDER BY repeat",
            (study, definition, threads),
        )
        return [(row["repeat"], row["status"], row["qps"]) for row in rows]

    def studies(self) -> list[str]:
        rows = self.db.execute("SELECT study FROM plans GROUP BY study ORDER BY MAX(id) DESC")
        return [row["study"] for row in rows]

    def latest_plan(self, study: str) -> dict | None:
        row = self.db.execute(
            "SELECT plan_json FROM plans WHERE study = ? ORDER BY id DESC LIMIT 1", (study,)
        ).fetchone()
        return json.loads(row["plan_json"]) if row else None

    def points(self, study: str, definitions: list[str] | None = None) -> list[dict]:
        sql = "SELECT * FROM points WHERE study = ?"
        args: list = [study]
        if definitions is not None:
            sql += f" AND definition IN ({', '.join('?' for _ in definitions)})"
            args += definitions
        sql += " ORDER BY config, threads, repeat"
        return [dict(row) for row in self.db.execute(sql, args)]

    def sessions(self, study: str) -> list[dict]:
        rows = self.db.execute("SELECT * FROM sessions WHERE study = ? ORDER BY id", (study,))
        return [dict(row) for row in rows]

    def server_states(self, session_ids: list[int]) -> list[dict]:
        marks = ", ".join("?" for _ in session_ids)
        rows = self.db.execute(
            f"SELECT * FROM server_states WHERE session_id IN ({marks}) ORDER BY id", session_ids
        )
        return [dict(row) for row in rows]

    def save_health(self, study: str, config: str, report: dict) -> None:
        self.db.execute(
            "INSERT INTO health_reports (study, config, report_json, created_at) "
            "VALUES (?, ?, ?, ?)", (study, config, json.dumps(report), time.time()))

    def health_reports(self, study: str) -> list[dict]:
        """The latest health report of each configuration of the study, as stored."""
        rows = self.db.execute(
            "SELECT config, report_json FROM health_reports WHERE id IN (SELECT MAX(id) FROM "
            "health_reports WHERE study = ? GROUP BY config) ORDER BY id", (study,))
        return [{"config": row["config"], **json.loads(row["report_json"])} for row in rows]


def _json(value) -> str | None:
    return None if value is None else json.dumps(value)
