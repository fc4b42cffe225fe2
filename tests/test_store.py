"""The results database's contract: what is written is read back, typed, after a reopen."""

import dataclasses
import json
import math
import sqlite3
from dataclasses import replace

import pytest

from perflab.domain import Plan, Point
from perflab.health.results import (
    HealthReport,
    HealthView,
    RuleResult,
    VariableRow,
    save_health,
    stored_health,
)
from perflab.plan import across_builds, parse_plan
from perflab.store import Metrics, PointRecord, ResultStore, Sample, Symbol, read_study
from perflab.store.migrate import LATER_COLUMNS
from perflab.studies import STUDIES_DIR, resolve_plan

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

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
rounds = 2
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


SAMPLE = Sample(1.0, 10.0, 99.0, 90.0, 5.0, 4.0, 0.0, 0.0, 1.5, 2)


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


@pytest.mark.parametrize("path", sorted(STUDIES_DIR.rglob("*.toml")), ids=lambda p: p.stem)
@pytest.mark.parametrize("across", [False, True], ids=["as written", "across builds"])
def test_every_builtin_plan_survives_its_json(path, across):
    plan = resolve_plan(path)
    if across:  # a build names itself in the definition; the host's leaves it as it was
        for config in plan.configs:
            built = replace(config, environment=replace(config.environment, server="mysql-9.7"))
            assert plan.config_hash(built) != plan.config_hash(config)
        plan = across_builds(plan, ["host", "mysql-9.7"])
        hashes = [plan.config_hash(c) for c in plan.configs]
        assert len(set(hashes)) == len(hashes)
    again = type(plan).from_json(plan.to_json())
    assert again == plan
    assert [again.config_hash(c) for c in again.configs] == [
        plan.config_hash(c) for c in plan.configs]


def every_point(plan: Plan) -> list[Point]:
    """Every point of the plan: each round, configuration and thread count."""
    return [Point(config, plan.workload, threads, repeat, plan.config_hash(config))
            for repeat in range(1, plan.run.rounds + 1) for config in plan.configs
            for threads in plan.run.threads]


def test_written_records_read_back_typed_after_a_reopen(tmp_path):
    path = tmp_path / "perflab.sqlite"
    points = every_point(PLAN)
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
                series=[SAMPLE], status_delta={"Rows_read": 5.0},
                histogram={3: 4, 10: 1}, profile=[Symbol(0.5, "mariadbd", "f")],
                error="boom\ntail" if failed else None))
        store.end_session(session, "complete")
        save_health(store, PLAN.name, "off", health())
    with pytest.raises(sqlite3.ProgrammingError):  # the context manager closed it
        store.db.execute("SELECT 1")

    with ResultStore(path) as store:
        study = read_study(store)
    assert study.plan == PLAN
    assert len(study.points) == len(points) == 8
    failed = [p for p in study.points if not p.ok]
    assert len(failed) == 1 and failed[0].metrics is None and failed[0].error == "boom\ntail"
    ok = next(p for p in study.points if p.ok and p.config == "on")
    assert ok.metrics.rows_per_query is None and ok.metrics.events == 2
    assert ok.value("qps") == ok.metrics.qps >= 101 and failed[0].value("qps") is None
    assert ok.series == [SAMPLE] and ok.status_delta == {"Rows_read": 5.0}
    assert ok.histogram == {3: 4, 10: 1} and ok.profile == [Symbol(0.5, "mariadbd", "f")]
    assert study.sessions[0].host == {"hostname": "h", "cpu_count": 2}
    assert study.sessions[0].outcome == "complete"
    assert study.server_states[0].variables == {"a": "1"}
    assert study.server_states[0].process == {"pid": 7}
    reports = stored_health(study)
    assert reports[0].config == "off" and reports[0].report == health()
    assert reports[0].report.failing() == {"hot": ["tmp_disk"]}


def test_a_failed_point_is_replaced_by_its_retry_and_an_ok_one_only_when_asked(tmp_path):
    point: Point = every_point(PLAN)[0]
    with ResultStore(tmp_path / "db.sqlite") as store:
        session = store.begin_session(PLAN.name, store.save_plan(PLAN), {})
        store.save_point(session, PLAN.name, PointRecord(point, "failed", 1, 2, None, None,
                                                         error="x"))
        assert not [p for p in store.points(PLAN.name) if p.ok]
        store.save_point(session, PLAN.name, PointRecord(point, "ok", 3, 4, None, metrics(5.0)))
        store.save_point(session, PLAN.name, PointRecord(point, "ok", 5, 6, None, metrics(9.0)))
        assert [p.round for p in store.points(PLAN.name) if p.ok] == [point.round]
        stored = store.points(PLAN.name)
        # a round's thread count measured again whole (rounds.py) replaces what it measured
        store.save_point(session, PLAN.name, PointRecord(point, "ok", 7, 8, None, metrics(7.0)),
                         replace=True)
        again = store.points(PLAN.name)
    assert [(p.status, p.metrics.qps) for p in stored] == [("ok", 5.0)]
    assert [(p.status, p.metrics.qps) for p in again] == [("ok", 7.0)]


# What the first release (6aed42a) stored: its plan JSON and its points table, verbatim.
FIRST_PLAN = {
    "name": "old", "description": "", "baseline": "off", "source": "",
    "configs": {"off": {"key_buffer_size": "16M", "key_cache_segments": 0},
                "on": {"key_buffer_size": "16M", "key_cache_segments": 8}},
    "workload": {"name": "oltp_point_select", "options": {}},
    "dataset": {"engine": "MyISAM", "tables": 1, "rows": 1000},
    "run": {"threads": [1, 2], "warmup_seconds": 1, "run_seconds": 1, "repeats": 1,
            "warmup_threads": 0},
    "definitions": {"off": "0123456789abcdef", "on": "fedcba9876543210"},
}
FIRST_POINTS = """CREATE TABLE points (id INTEGER PRIMARY KEY, study TEXT NOT NULL, definition TEXT
    NOT NULL, config TEXT NOT NULL, workload TEXT NOT NULL, threads INTEGER NOT NULL, repeat
    INTEGER NOT NULL, status TEXT NOT NULL CHECK (status IN ('ok', 'failed')), session_id
    INTEGER NOT NULL REFERENCES sessions(id), server_state_id INTEGER REFERENCES
    server_states(id), started_at REAL NOT NULL, finished_at REAL NOT NULL, seconds REAL,
    events INTEGER, queries INTEGER, reads INTEGER, writes INTEGER, other INTEGER, errors
    INTEGER, reconnects INTEGER, tps REAL, qps REAL, reads_ps REAL, writes_ps REAL, other_ps
    REAL, latency_min_ms REAL, latency_avg_ms REAL, latency_p95_ms REAL, latency_p99_ms REAL,
    latency_max_ms REAL, rows_per_query REAL, series_json TEXT, status_delta_json TEXT,
    histogram_json TEXT, error TEXT, UNIQUE (study, definition, threads, repeat))"""


def test_a_results_database_of_the_first_release_opens_and_reports(tmp_path):
    from perflab.report.study import render_json, render_text

    path = tmp_path / "old.sqlite"
    db = sqlite3.connect(path)
    db.executescript(
        "CREATE TABLE plans (id INTEGER PRIMARY KEY, study TEXT NOT NULL, plan_json TEXT NOT "
        "NULL, created_at REAL NOT NULL); CREATE TABLE sessions (id INTEGER PRIMARY KEY, study "
        "TEXT NOT NULL, plan_id INTEGER NOT NULL, started_at REAL NOT NULL, finished_at REAL, "
        "outcome TEXT, host_json TEXT NOT NULL); CREATE TABLE server_states (id INTEGER PRIMARY "
        "KEY, session_id INTEGER NOT NULL, config TEXT NOT NULL, how TEXT NOT NULL, version "
        "TEXT NOT NULL, variables_json TEXT NOT NULL, process_json TEXT NOT NULL, created_at "
        f"REAL NOT NULL); {FIRST_POINTS}; CREATE TABLE noise (id INTEGER PRIMARY KEY, study "
        "TEXT NOT NULL, workload TEXT NOT NULL, dataset TEXT NOT NULL, schedule TEXT NOT NULL, "
        "run_seconds REAL NOT NULL, threads INTEGER NOT NULL, rounds INTEGER NOT NULL, sd REAL "
        "NOT NULL, source TEXT NOT NULL, created_at REAL NOT NULL);")
    db.execute("INSERT INTO noise VALUES (1, 'old', 'w', 'd', 'serial', 2, 4, 8, 0.05, 'run', 0)")
    db.execute("INSERT INTO plans VALUES (1, 'old', ?, 0)", (json.dumps(FIRST_PLAN),))
    db.execute("INSERT INTO sessions VALUES (1, 'old', 1, 0, 1, 'complete', ?)", (json.dumps(
        {"hostname": "h", "cpu_model": "c", "cpu_count": 2, "memory_bytes": 1 << 30, "os": "o",
         "kernel": "k", "open_files_limit": {"soft": 1024, "hard": 4096}}),))
    figures = ", ".join("1" for name in Metrics.names() if name not in LATER_COLUMNS["points"])
    for number, (config, qps) in enumerate((("off", 100.0), ("on", 150.0)), 1):
        db.execute(
            f"INSERT INTO points VALUES ({number}, 'old', ?, ?, 'oltp_point_select', 2, 1, 'ok',"
            f" 1, NULL, 0, 1, {figures}, ?, '{{}}', '{{\"3\": 7}}', NULL)",
            (FIRST_PLAN["definitions"][config], config,
             json.dumps([{"t": 1.0, "tps": 1, "qps": qps, "reads_ps": 1, "writes_ps": 0,
                          "other_ps": 0, "errors_ps": 0, "reconnects_ps": 0,
                          "latency_p95_ms": 1, "threads": 2}])))
        db.execute("UPDATE points SET qps = ? WHERE id = ?", (qps, number))
    db.commit()
    db.close()

    with ResultStore(path) as store:
        study = read_study(store)
        (noise,) = store.noise("w", "d", "serial", 2)  # kept, with what it did not measure
        columns = {row[1] for row in store.db.execute("PRAGMA table_info(points)")}
    assert {"round", "config_hash"} <= columns and not {"repeat", "definition"} & columns
    with ResultStore(path) as store:  # upgraded once: opened again, it reads the same
        assert len(read_study(store).points) == 2
        assert noise.sd == 0.05 and math.isnan(noise.lag1) and math.isnan(noise.skew)
    assert [c.name for c in study.plan.configs] == ["off", "on"]
    assert study.plan.config("on").engine is None and study.plan.run.rounds == 1
    # points are found under the definitions stored then, whatever today's hash says
    assert sorted(p.metrics.qps for p in study.points) == [100.0, 150.0]
    assert study.points[0].histogram == {3: 7} and study.points[0].series[0].qps == 100.0
    text = render_text(study)
    assert "In relative numbers:" in text and "(on/off)" in text and "50%" in text
    document = json.loads(render_json(study))
    assert [p["qps"] for p in document["points"]] == [100.0, 150.0]
    assert document["points"][0]["profile"] == []


def noise_figure(threads: int, rounds: int, **measured):
    """A noise figure of PLAN's fleet, 5% per round, with `measured` (lag1, loaded...)."""
    from perflab.load.workloads import resolve
    from perflab.running.noise import _dataset, way_of_measuring
    from perflab.store import Noise

    workload = resolve(PLAN.workload)
    return Noise(workload.workload.label, _dataset(PLAN, workload),
                 way_of_measuring(PLAN, "fleet"), PLAN.run.run_seconds, threads, rounds, 0.05,
                 "calibrate", "aa", **measured)


def test_the_dependence_a_lab_measured_is_frozen_into_a_study_at_its_first_run(tmp_path):
    """The intervals allow for the largest lag-1 of rounds the lab's measured rounds do not
    rule out (pooled lag-1 + 2 / sqrt(rounds)), never less than the default 0.2 (a study's own
    rounds lower it, not the lab's), once the lab has measured enough;
    once the study has run, later figures (which may include its own rounds) change nothing."""
    from perflab.load.workloads import resolve
    from perflab.running.noise import frozen_dependence

    workload = resolve(PLAN.workload)

    def noise(threads: int, rounds: int, lag1: float):
        return noise_figure(threads, rounds, lag1=lag1)

    with ResultStore(tmp_path / "perflab.sqlite") as store:
        assert frozen_dependence(store, PLAN, workload, "fleet").run.lag1 == 0.2  # none yet
        store.save_noise([noise(1, 12, 0.5), noise(2, 4, 0.9)])  # 2 threads: too few rounds
        assert frozen_dependence(store, PLAN, workload, "fleet") == PLAN  # 12 rounds in all
        store.save_noise([noise(2, 12, 0.3), noise(4, 12, 0.4)])
        assert frozen_dependence(store, PLAN, workload, "serial") == PLAN  # another way
        frozen = frozen_dependence(store, PLAN, workload, "fleet")
        assert frozen.run.lag1 == 0.74  # 0.4 pooled over 36 rounds, + 2 / 6
        assert frozen.run.design().lag1 == 0.74
        store.save_plan(frozen)
        store.save_noise([noise(1, 20, 0.0), noise(2, 20, 0.0), noise(4, 20, 0.0)])
        assert frozen_dependence(store, PLAN, workload, "fleet") == PLAN  # run before
        store.save_plan(PLAN)  # a later run's plan: the first run's dependence holds
        assert store.design(PLAN.name).lag1 == 0.74
    with ResultStore(tmp_path / "rotated.sqlite") as store:
        # rounds that alternated (copies of the data rotating between servers): the default,
        # which only the study's own rounds rule out
        store.save_noise([noise(1, 50, -0.5), noise(2, 50, -0.3)])
        assert frozen_dependence(store, PLAN, workload, "fleet").run.lag1 == 0.2


def test_noise_measured_under_load_is_named_wherever_a_forecast_uses_it(tmp_path):
    """A lab's noise keeps the share of its points measured while other work loaded the
    machine; the forecast that uses such a figure names it, weighted by rounds, and one
    measured on an idle machine (or before the share was kept) is quoted plainly. A figure of
    a thread count the plan does not measure is used only when none of its own is measured."""
    from perflab.load.workloads import resolve
    from perflab.running.noise import lab_noise

    workload = resolve(PLAN.workload)
    with ResultStore(tmp_path / "perflab.sqlite") as store:
        store.save_noise([noise_figure(4, 10, loaded=1.0)])  # not one of the plan's (1, 2)
        _, source = lab_noise(store, PLAN, workload, "fleet")
        assert source.startswith("measured in this lab over 10 rounds at 4 threads, 100% of")
        store.save_noise([noise_figure(1, 10, loaded=math.nan), noise_figure(2, 10, loaded=0.0)])
        sd, source = lab_noise(store, PLAN, workload, "fleet")
        assert sd == 0.05 and source == "measured in this lab over 20 rounds"
        store.save_noise([noise_figure(1, 30, loaded=1.0)])  # the latest at 1 thread: loaded
        latest = noise_figure(1, 30)
        assert store.noise(latest.workload, latest.dataset, latest.schedule,
                           latest.run_seconds)[0].loaded == 1
        _, source = lab_noise(store, PLAN, workload, "fleet")
        assert source.startswith("measured in this lab over 40 rounds, 75% of its points "
                                 "while other work loaded the machine")
        assert "perflab calibrate --again when it is idle" in source


def test_a_study_of_comparisons_chosen_for_their_effects_keeps_no_noise(tmp_path):
    """A comparison whose ratio drifts over its rounds (a cache warming up, x200) reads as tens
    of percent of noise and a lag-1 near 1, which would be frozen into every later study of the
    lab: a study of such comparisons (tune's re-measure and put-back: source None) keeps none;
    a run keeps what it measured."""
    from perflab.load.workloads import resolve
    from perflab.running.noise import _dataset, save_noise, way_of_measuring
    from test_rounds import point

    workload = resolve(PLAN.workload)
    ok = [point(config, 1, r, qps) for r in range(1, 11)  # a lag-1 needs 8 rounds or more
          for config, qps in (("off", 1000.0), ("on", 200_000.0 * (1 + 0.2 * r)))]
    key = (workload.workload.label, _dataset(PLAN, workload), way_of_measuring(PLAN, "fleet"),
           PLAN.run.run_seconds)
    with ResultStore(tmp_path / "perflab.sqlite") as store:
        save_noise(store, PLAN, workload, "fleet", ok, None)
        assert store.noise(*key) == []
        save_noise(store, PLAN, workload, "fleet", ok, "run")
        (figure,) = store.noise(*key)
        assert figure.sd > 0.1 and figure.lag1 > 0.5  # what it would have lent


def test_a_forecast_uses_the_latest_noise_figure_of_its_way_of_measuring(tmp_path):
    """The forecast's noise is this lab's latest figure per thread count for the plan's way of
    measuring, with the rounds it rests on; another way of measuring lends it nothing."""
    from perflab.load.workloads import resolve
    from perflab.running.noise import lab_noise

    workload = resolve(PLAN.workload)
    with ResultStore(tmp_path / "perflab.sqlite") as store:
        store.save_noise([noise_figure(1, 10), noise_figure(2, 10)])
        store.save_noise([noise_figure(1, 30)])  # measured again: the latest at 1 thread
        sd, source = lab_noise(store, PLAN, workload, "fleet")
        assert source == "measured in this lab over 40 rounds" and sd > 0
        assert lab_noise(store, PLAN, workload, "serial")[1].startswith("assumed")


def test_calibrate_resumes_its_latest_calibration_and_again_starts_the_next(tmp_path):
    """`perflab calibrate` resumes (or reprints) the lab's latest calibration of a study;
    `--again` measures a new one beside it, so noise measured on a loaded machine can be
    measured again once it is idle."""
    from perflab.running.calibrate import _study_name

    with ResultStore(tmp_path / "perflab.sqlite") as store:
        first = f"{PLAN.name}:calibration"
        assert _study_name(store, PLAN.name, again=False) == first  # none yet: the first
        assert _study_name(store, PLAN.name, again=True) == first
        store.save_plan(dataclasses.replace(PLAN, name=first))
        assert _study_name(store, PLAN.name, again=False) == first  # resumed, or reprinted
        second = _study_name(store, PLAN.name, again=True)
        assert second == f"{PLAN.name}:calibration-2"
        store.save_plan(dataclasses.replace(PLAN, name=second))
        assert _study_name(store, PLAN.name, again=False) == second  # the latest
        assert _study_name(store, PLAN.name, again=True) == f"{PLAN.name}:calibration-3"
        assert _study_name(store, "other", again=False) == "other:calibration"


def test_looks_fitted_at_a_studys_first_look_are_kept_by_every_later_run(tmp_path):
    """The rounds a budget holds, fitted at the first look, become the last look of the study's
    design (on the fitted boundary), in the plan rows stored before the fit too; a later run
    with a larger max_rounds keeps them, so no look is added after the data were seen."""
    from perflab.running.rounds import fitted_looks

    budgeted = dataclasses.replace(PLAN, run=dataclasses.replace(PLAN.run, rounds=3,
                                                                 time=600.0, max_rounds=20))
    with ResultStore(tmp_path / "perflab.sqlite") as store:
        store.save_plan(budgeted)
        assert store.planned_rounds(PLAN.name) == 0
        assert store.design(PLAN.name).last_look == 20
        fitted = fitted_looks(budgeted, 3, 240.0, [60.0])
        store.fit_rounds(PLAN.name, fitted.run.planned_rounds)
        assert store.planned_rounds(PLAN.name) == 8
        design = store.design(PLAN.name)
        assert (design.last_look, design.shape) == (8, 0.25)
        later = dataclasses.replace(budgeted, run=dataclasses.replace(
            budgeted.run, max_rounds=40, planned_rounds=store.planned_rounds(PLAN.name)))
        store.save_plan(later)
        assert store.design(PLAN.name).last_look == 8


def test_slices_sized_for_a_study_are_kept_for_every_later_run(tmp_path):
    """The fleet's slice per thread count is chosen once, before the first round, and never
    replaced by a later sizing (whose figures a run's outcome could have moved)."""
    from perflab.load.sysbench import MIN_TURNS, sized_slice

    assert sized_slice(0.5, 250) == 250  # short events: the base slice
    assert sized_slice(30, 250) == 1200  # 64-thread read-only transactions: 4 x 30 / 0.1
    assert sized_slice(90, 250) == 3600  # an analytic GROUP BY
    assert sized_slice(31, 250) % 50 == 0 and MIN_TURNS >= 4
    with ResultStore(tmp_path / "perflab.sqlite") as store:
        assert store.slices(PLAN.name) == {}
        store.save_slices(PLAN.name, {64: (750.0, 30.0), 8: (250.0, None)})
        store.save_slices(PLAN.name, {64: (2000.0, 80.0), 16: (250.0, 5.0)})
        assert store.slices(PLAN.name) == {64: 750.0, 8: 250.0, 16: 250.0}


def test_events_longer_than_their_slice_allows_still_fail_the_point():
    """The guard behind the sized slices: a configuration whose events outgrow the slice
    sized for them (more than 4 times slower than measured alone) fails its point with the
    slice it would need, rather than running into the other servers' turns."""
    from perflab.load.sysbench import LoadFailed, Slicing, _sliced_result

    slicing = Slicing(0.0, 250.0, 2, 500.0, 2000.0)
    windows = [{"first_ms": 10.0, "executed": 40, "measured": 40.0, "latency_sum_ms": 40 * 30.0,
                "slices": {"0": 40.0}}]
    total = {"reads": 40, "writes": 0, "other": 0}
    with pytest.raises(LoadFailed, match="30.0 ms on average, too long for 250 ms slices"):
        _sliced_result(total, windows, {0: 40}, slicing, 0)
