"""The results database: one SQLite file per lab directory.

A point is written in one transaction when it completes, so a run killed at any moment keeps
every finished point and none half-written. Points are unique on (study, config_hash, threads,
round): a resumed run skips what is stored, and a failed point is replaced when it is retried.
Labs of earlier versions are upgraded when opened (migrate.py).

JSON columns are encoded and decoded here and nowhere else: readers get typed records
(records.py).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sqlite3
import time
from pathlib import Path
from typing import Any

from perflab.domain import Plan
from perflab.errors import PerflabError
from perflab.server.secrets import masked_variables
from perflab.stats.design import Design, study_design
from perflab.store.migrate import stored_plan, upgrade
from perflab.store.records import (
    Activation,
    ConfigDocument,
    Metrics,
    Noise,
    PointRecord,
    PointStatus,
    RunEnd,
    Sample,
    ServerState,
    Session,
    StoredPoint,
    Symbol,
    WayOfMeasuring,
)

SCHEMA = f"""
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
    config_hash TEXT NOT NULL,
    config TEXT NOT NULL,
    workload TEXT NOT NULL,
    threads INTEGER NOT NULL,
    round INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    session_id INTEGER NOT NULL REFERENCES sessions(id),
    server_state_id INTEGER REFERENCES server_states(id),
    started_at REAL NOT NULL,
    finished_at REAL NOT NULL,
    {Metrics.columns()},
    series_json TEXT,
    status_delta_json TEXT,
    histogram_json TEXT,
    profile_json TEXT,
    error TEXT,
    UNIQUE (study, config_hash, threads, round)
);
CREATE TABLE IF NOT EXISTS slices (
    study TEXT NOT NULL,
    threads INTEGER NOT NULL,
    slice_ms REAL NOT NULL,
    probe_latency_ms REAL,
    created_at REAL NOT NULL,
    PRIMARY KEY (study, threads)
);
CREATE TABLE IF NOT EXISTS noise (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    workload TEXT NOT NULL,
    dataset TEXT NOT NULL,
    schedule TEXT NOT NULL,
    run_seconds REAL NOT NULL,
    threads INTEGER NOT NULL,
    rounds INTEGER NOT NULL,
    sd REAL NOT NULL,
    source TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS health_reports (
    id INTEGER PRIMARY KEY,
    study TEXT NOT NULL,
    config TEXT NOT NULL,
    report_json TEXT NOT NULL,
    created_at REAL NOT NULL
);
"""


class _Frozen:
    """What a study fixes before it decides anything and keeps for every later run (its
    slices, the rounds its budget was fitted to, its design), and the noise the lab measured:
    the part of the results database the round policy reads."""

    db: sqlite3.Connection

    def slices(self, study: str) -> dict[int, float]:
        """The turn length (ms) the study's side-by-side points take at each thread count,
        sized before its first round (running/_slices.py) and kept for every later run."""
        rows = self.db.execute("SELECT threads, slice_ms FROM slices WHERE study = ?", (study,))
        return {row["threads"]: row["slice_ms"] for row in rows}

    def save_slices(self, study: str, sized: dict[int, tuple[float, float | None]]) -> None:
        """Record {threads: (slice_ms, the probe's mean event latency)}; never replaces one."""
        self.db.executemany(
            "INSERT OR IGNORE INTO slices (study, threads, slice_ms, probe_latency_ms, "
            "created_at) VALUES (?, ?, ?, ?, ?)",
            [(study, t, ms, latency, time.time()) for t, (ms, latency) in sized.items()])

    def planned_rounds(self, study: str) -> int:
        """The rounds the study's budget was fitted to hold at its first look (0: never
        fitted): later runs keep them, so that its looks stay those chosen before any look."""
        rows = self.db.execute("SELECT plan_json FROM plans WHERE study = ?", (study,))
        return max((json.loads(r["plan_json"])["run"].get("planned_rounds", 0) for r in rows),
                   default=0)

    def fit_rounds(self, study: str, rounds: int) -> None:
        """Record the rounds fitted at the study's first look in every budgeted plan it was run
        with, so that its design (`design`) looks up to them and no further."""
        rows = self.db.execute("SELECT id, plan_json FROM plans WHERE study = ?",
                               (study,)).fetchall()
        for row in rows:
            data = json.loads(row["plan_json"])
            if data["run"].get("time") and not data["run"].get("planned_rounds"):
                data["run"]["planned_rounds"] = rounds
                self.db.execute("UPDATE plans SET plan_json = ? WHERE id = ?",
                                (json.dumps(data), row["id"]))

    def design(self, study: str) -> Design:
        """How the study's verdicts are judged, over every plan it was run with (study_design)."""
        found = self.design_of(study)
        if found is None:
            raise KeyError(study)
        return found

    def design_of(self, study: str) -> Design | None:
        """The study's design (see `design`), None before its first run."""
        rows = self.db.execute("SELECT plan_json FROM plans WHERE study = ? ORDER BY id",
                               (study,)).fetchall()
        if not rows:
            return None
        return study_design([Plan.from_json(stored_plan(json.loads(r["plan_json"]))).run.design()
                             for r in rows])

    def save_noise(self, records: list[Noise]) -> None:
        for r in records:
            self.db.execute(
                "INSERT INTO noise (study, workload, dataset, schedule, run_seconds, threads, "
                "rounds, sd, source, created_at, lag1, skew, loaded) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (r.study, r.workload, r.dataset, str(r.schedule), r.run_seconds, r.threads,
                 r.rounds, r.sd, r.source, time.time(), _number(r.lag1), _number(r.skew),
                 _number(r.loaded)))

    def noise(self, workload: str, dataset: str, schedule: WayOfMeasuring, run_seconds: float
              ) -> list[Noise]:
        """What this lab measured of the noise of one way of measuring, the latest first."""
        rows = self.db.execute(
            "SELECT * FROM noise WHERE workload = ? AND dataset = ? AND schedule = ? AND "
            "run_seconds = ? ORDER BY id DESC", (workload, dataset, str(schedule), run_seconds))
        return [Noise(row["workload"], row["dataset"], WayOfMeasuring.parse(row["schedule"]),
                      row["run_seconds"], row["threads"], row["rounds"], row["sd"],
                      row["source"], row["study"],
                      row["created_at"], _nan(row["lag1"]), _nan(row["skew"]),
                      _nan(row["loaded"]))
                for row in rows]


class ResultStore(_Frozen):
    """The lab's results database. Use it as a context manager so that it is always closed."""

    def __init__(self, path: Path):
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.db.row_factory = sqlite3.Row
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self.db.executescript(SCHEMA)
            upgrade(self.db)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if isinstance(exc, sqlite3.OperationalError):  # locked, or not writable
                hint = "wait for the perflab that holds it, or check that you can write to it"
            else:  # not SQLite, or damaged
                hint = "give a lab made by perflab; move a damaged file aside to start afresh"
            raise PerflabError(f"cannot use {path} as a results database: {exc}",
                               hint=hint) from None

    def close(self) -> None:
        self.db.close()

    def __enter__(self) -> ResultStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- writing -------------------------------------------------------------------------------

    def save_plan(self, plan: Plan, dataset: str = "") -> int:
        """Store the plan a run measures (once while it stays the same), with `dataset`, its
        data as the workload's family describes it (load/family.describe): a report names
        what was measured on from it, not from the plan's [dataset] alone."""
        data = plan.to_json() | ({"dataset_described": dataset} if dataset else {})
        text = json.dumps(data)  # keeps the plan's order of configurations
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
        return _row_id(cur)

    def begin_session(self, study: str, plan_id: int, host: dict) -> int:
        cur = self.db.execute(
            "INSERT INTO sessions (study, plan_id, started_at, host_json) VALUES (?, ?, ?, ?)",
            (study, plan_id, time.time(), json.dumps(host)),
        )
        return _row_id(cur)

    def end_session(self, session_id: int, outcome: RunEnd) -> None:
        self.db.execute(
            "UPDATE sessions SET finished_at = ?, outcome = ? WHERE id = ?",
            (time.time(), outcome, session_id),
        )

    def save_server_state(
        self, session_id: int, config: str, how: Activation, version: str, variables: dict,
        process: dict,
    ) -> int:
        """Secret variables (report_password, ...) are stored masked: a lab is shared."""
        cur = self.db.execute(
            "INSERT INTO server_states (session_id, config, how, version, variables_json, "
            "process_json, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, config, how, version, json.dumps(masked_variables(variables)),
             json.dumps(process), time.time()),
        )
        return _row_id(cur)

    def save_point(self, session_id: int, study: str, record: PointRecord,
                   replace: bool = False) -> None:
        """Store a measured point. A stored 'ok' point is kept, unless `replace` (a round's
        thread count measured again whole, running/rounds.py); a 'failed' one is replaced by its
        retry."""
        point = record.point
        metrics = record.metrics.as_dict() if record.metrics else {}
        histogram = ({str(k): v for k, v in sorted(record.histogram.items())}
                     if record.histogram is not None else None)
        columns = {
            "study": study,
            "config_hash": point.config_hash,
            "config": point.config.name,
            "workload": point.workload.label,
            "threads": point.threads,
            "round": point.round,
            "status": record.status,
            "session_id": session_id,
            "server_state_id": record.server_state_id,
            "started_at": record.started_at,
            "finished_at": record.finished_at,
            **{name: metrics.get(name) for name in Metrics.names()},
            "series_json": _encode(_dicts(record.series)),
            "status_delta_json": _encode(record.status_delta),
            "histogram_json": _encode(histogram),
            "profile_json": _encode(_dicts(record.profile)),
            "error": record.error,
            "clients_json": _encode(record.clients),
        }
        names = ", ".join(columns)
        marks = ", ".join("?" for _ in columns)
        updates = ", ".join(f"{n} = excluded.{n}" for n in columns)
        only_failed = "" if replace else " WHERE points.status = 'failed'"
        self.db.execute(
            f"INSERT INTO points ({names}) VALUES ({marks}) "
            "ON CONFLICT (study, config_hash, threads, round) DO UPDATE SET "
            f"{updates}{only_failed}",
            tuple(columns.values()),
        )

    def save_health_json(self, study: str, config: str, data: dict[str, Any]) -> None:
        """Keep `data`, a health report as health/results.py encodes it, for `config`."""
        self.db.execute(
            "INSERT INTO health_reports (study, config, report_json, created_at) "
            "VALUES (?, ?, ?, ?)", (study, config, json.dumps(data), time.time()))

    # -- reading -------------------------------------------------------------------------------

    def studies(self) -> list[str]:
        """Study names, the most recently planned first."""
        rows = self.db.execute("SELECT study FROM plans GROUP BY study ORDER BY MAX(id) DESC")
        return [row["study"] for row in rows]

    def latest_plan(self, study: str) -> tuple[Plan, list[str], str] | None:
        """The study's latest plan, the definitions its configurations' points are stored
        under (as recorded then, so that a later change of the hash cannot hide them), and its
        data as the plan was stored with it (save_plan; empty in a lab of a perflab before)."""
        row = self.db.execute(
            "SELECT plan_json FROM plans WHERE study = ? ORDER BY id DESC LIMIT 1", (study,)
        ).fetchone()
        if row is None:
            return None
        data = json.loads(row["plan_json"])
        plan = Plan.from_json(stored_plan(data))
        stored = data.get("definitions", {})
        return (plan, [stored.get(c.name) or plan.config_hash(c) for c in plan.configs],
                data.get("dataset_described", ""))

    def points(self, study: str, definitions: list[str] | None = None,
               threads: int | None = None) -> list[StoredPoint]:
        """A study's points, optionally only some configurations' (by config_hash) or one
        thread count, ordered by configuration, threads and round."""
        sql = "SELECT * FROM points WHERE study = ?"
        args: list = [study]
        if definitions is not None:
            sql += f" AND config_hash IN ({', '.join('?' for _ in definitions)})"
            args += definitions
        if threads is not None:
            sql += " AND threads = ?"
            args.append(threads)
        sql += " ORDER BY config, threads, round"
        return [_point(row) for row in self.db.execute(sql, args)]

    def sessions(self, study: str) -> list[Session]:
        rows = self.db.execute("SELECT * FROM sessions WHERE study = ? ORDER BY id", (study,))
        return [Session(row["id"], row["study"], row["plan_id"], row["started_at"],
                        row["finished_at"], RunEnd(row["outcome"]) if row["outcome"] else None,
                        json.loads(row["host_json"]))
                for row in rows]

    def server_states(self, session_ids: list[int]) -> list[ServerState]:
        """Masked again as read: labs written before perflab masked them hold them plain."""
        marks = ", ".join("?" for _ in session_ids)
        rows = self.db.execute(
            f"SELECT * FROM server_states WHERE session_id IN ({marks}) ORDER BY id", session_ids
        )
        return [ServerState(row["id"], row["session_id"], row["config"], Activation(row["how"]),
                            row["version"], masked_variables(json.loads(row["variables_json"])),
                            json.loads(row["process_json"]), row["created_at"])
                for row in rows]

    def health_json(self, study: str) -> list[ConfigDocument]:
        """The latest health report of each configuration of the study, as JSON."""
        rows = self.db.execute(
            "SELECT config, report_json FROM health_reports WHERE id IN (SELECT MAX(id) FROM "
            "health_reports WHERE study = ? GROUP BY config) ORDER BY id", (study,))
        return [ConfigDocument(row["config"], json.loads(row["report_json"])) for row in rows]


def _row_id(cur: sqlite3.Cursor) -> int:
    """The id of the row the INSERT just run by `cur` added."""
    assert cur.lastrowid is not None, "set by every INSERT"
    return cur.lastrowid


def _point(row: sqlite3.Row) -> StoredPoint:
    ok = row["status"] == PointStatus.OK
    return StoredPoint(
        id=row["id"], study=row["study"], config_hash=row["config_hash"], config=row["config"],
        workload=row["workload"], threads=row["threads"], round=row["round"],
        status=PointStatus(row["status"]), session_id=row["session_id"],
        server_state_id=row["server_state_id"], started_at=row["started_at"],
        finished_at=row["finished_at"],
        metrics=Metrics(**{name: row[name] for name in Metrics.names()}) if ok else None,
        series=[Sample(**item) for item in _decode(row["series_json"], [])],
        status_delta=_decode(row["status_delta_json"], {}),
        histogram={int(k): v for k, v in _decode(row["histogram_json"], {}).items()},
        profile=[Symbol(**item) for item in _decode(row["profile_json"], [])],
        error=row["error"],
        clients=_decode(row["clients_json"], []),
    )


def _dicts(records: list | None) -> list[dict] | None:
    return None if records is None else [dataclasses.asdict(r) for r in records]


def _encode(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def _decode(text: str | None, empty: Any) -> Any:
    return json.loads(text) if text else empty


def _number(value: float) -> float | None:
    """NaN ("not measured") as SQL NULL."""
    return None if math.isnan(value) else value


def _nan(value: float | None) -> float:
    return math.nan if value is None else value
