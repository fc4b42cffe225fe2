"""The results database's contract: what is written is read back, typed, after a reopen."""

import dataclasses
import json
import sqlite3

import pytest

from perflab.plan import Point, expand, parse_plan
from perflab.store import (
    HealthReport,
    HealthView,
    Metrics,
    PointRecord,
    ResultStore,
    RuleResult,
    VariableRow,
    load_study,
)
from perflab.studies import builtin_names, resolve_plan

PLAN = parse_plan("""
[study]
name = "contract"
baseline = "off"
[dataset]
engine = "MyISAM"
rows = 1000
[workload]
name = "select_random_points"
options = { random_points = 5 }
[run]
threads = [1, 2]
repeats = 2
[server]
key_buffer_size = "16M"
[configs.off]
key_cache_segments = 0
[configs.on]
key_cache_segments = 8
engine = "Aria"
allocator = "jemalloc"
[tune]
knobs = ["key_buffer_size"]
""")


def metrics(qps: float) -> Metrics:
    figures = {name: index + 1 for index, name in enumerate(Metrics.names())}
    return dataclasses.replace(Metrics(**figures), qps=qps, rows_per_query=None)


def health() -> HealthReport:
    rule = RuleResult("tmp_disk", "Temporary tables on disk", "fail", 30.0, "30%", "3 of 10",
                      "%", "<= 25%", None, 25.0, "a / b", ("tmp_table_size",), "MySQLTuner",
                      "raise tmp_table_size")
    return HealthReport("lab", "10.11", 1.5, (HealthView("hot", 2.0, (rule,)),),
                        (VariableRow("global buffers", "key_buffer_size", "16777216", "16 MB",
                                     "134217728"),))


@pytest.mark.parametrize("name", builtin_names())
def test_every_builtin_plan_survives_its_json(name):
    plan = resolve_plan(name)
    again = type(plan).from_json(plan.to_json())
    assert again == plan
    assert [again.definition(c) for c in again.configs] == [
        plan.definition(c) for c in plan.configs]


def test_written_records_read_back_typed_after_a_reopen(tmp_path):
    path = tmp_path / "perflab.sqlite"
    points = expand(PLAN)
    with ResultStore(path) as store:
        plan_id = store.save_plan(PLAN)
        assert store.save_plan(PLAN) == plan_id  # the same plan is stored once
        session = store.begin_session(PLAN.name, plan_id, {"hostname": "h", "cpu_count": 2})
        state = store.save_server_state(session, "off", "start", "10.11", {"a": "1"},
                                        {"pid": 7})
        for number, point in enumerate(points):
            failed = number == 0
            store.save_point(session, PLAN.name, PointRecord(
                point, "failed" if failed else "ok", 10.0 + number, 11.0 + number,
                None if failed else state, None if failed else metrics(100.0 + number),
                series=[{"t": 1.0, "qps": 99.0}], status_delta={"Rows_read": 5.0},
                histogram={3: 4, 10: 1}, profile=[{"symbol": "f", "share": 0.5}],
                error="boom\ntail" if failed else None))
        store.end_session(session, "complete")
        store.save_health(PLAN.name, "off", health())
    with pytest.raises(sqlite3.ProgrammingError):  # the context manager closed it
        store.db.execute("SELECT 1")

    with ResultStore(path) as store:
        study = load_study(store)
    assert study.plan == PLAN
    assert len(study.points) == len(points) == 8
    failed = [p for p in study.points if not p.ok]
    assert len(failed) == 1 and failed[0].metrics is None and failed[0].error == "boom\ntail"
    ok = next(p for p in study.points if p.ok and p.config == "on")
    assert ok.metrics.rows_per_query is None and ok.metrics.events == 2
    assert ok.value("qps") == ok.metrics.qps >= 101 and failed[0].value("qps") is None
    assert ok.series == [{"t": 1.0, "qps": 99.0}] and ok.status_delta == {"Rows_read": 5.0}
    assert ok.histogram == {3: 4, 10: 1} and ok.profile == [{"symbol": "f", "share": 0.5}]
    assert study.sessions[0].host == {"hostname": "h", "cpu_count": 2}
    assert study.sessions[0].outcome == "complete"
    assert study.server_states[0].variables == {"a": "1"}
    assert study.server_states[0].process == {"pid": 7}
    assert study.health[0].config == "off" and study.health[0].report == health()
    assert study.health[0].report.failing() == {"hot": ["tmp_disk"]}


def test_a_failed_point_is_replaced_by_its_retry_and_an_ok_one_never(tmp_path):
    point: Point = expand(PLAN)[0]
    with ResultStore(tmp_path / "db.sqlite") as store:
        session = store.begin_session(PLAN.name, store.save_plan(PLAN), {})
        store.save_point(session, PLAN.name, PointRecord(point, "failed", 1, 2, None, None,
                                                         error="x"))
        assert not store.done(PLAN.name, point.definition, point.threads, point.repeat)
        store.save_point(session, PLAN.name, PointRecord(point, "ok", 3, 4, None, metrics(5.0)))
        store.save_point(session, PLAN.name, PointRecord(point, "ok", 5, 6, None, metrics(9.0)))
        assert store.done(PLAN.name, point.definition, point.threads, point.repeat)
        stored = store.points(PLAN.name)
    assert [(p.status, p.metrics.qps) for p in stored] == [("ok", 5.0)]


def test_a_results_database_of_the_first_release_opens_and_reads(tmp_path):
    """Labs made before profiles and the lossless plan JSON still open and report."""
    path = tmp_path / "old.sqlite"
    with ResultStore(path) as store:
        store.db.execute("DROP TABLE points")
        columns = ", ".join(f"{n} REAL" for n in Metrics.names())
        store.db.execute(
            "CREATE TABLE points (id INTEGER PRIMARY KEY, study TEXT NOT NULL, definition TEXT "
            "NOT NULL, config TEXT NOT NULL, workload TEXT NOT NULL, threads INTEGER NOT NULL, "
            "repeat INTEGER NOT NULL, status TEXT NOT NULL, session_id INTEGER NOT NULL, "
            "server_state_id INTEGER, started_at REAL NOT NULL, finished_at REAL NOT NULL, "
            f"{columns}, series_json TEXT, status_delta_json TEXT, histogram_json TEXT, "
            "error TEXT, UNIQUE (study, definition, threads, repeat))")
        old = PLAN.to_json()
        del old["config_engines"], old["tune"]
        store.db.execute("INSERT INTO plans (study, plan_json, created_at) VALUES (?, ?, 0)",
                         (PLAN.name, json.dumps(old)))
    with ResultStore(path) as store:
        plan = store.latest_plan(PLAN.name)
        assert [c.name for c in plan.configs] == ["off", "on"]
        assert plan.config("on").engine == "Aria" and plan.config("off").engine is None
        assert plan.definition(plan.config("on")) == PLAN.definition(PLAN.config("on"))
        assert store.points(PLAN.name) == []
