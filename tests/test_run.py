"""`perflab run` end to end: real mariadbd, real sysbench, the results database."""

import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PERFLAB, mariadbd_under, run_cli, stored_points, wait_for, write_plan

TWO_CONFIGS = """
[server]
key_buffer_size = "32M"
[configs.off]
key_cache_segments = 0
[configs.seg]
key_cache_segments = 8
"""

ONE_CONFIG = """
[configs.default]
key_buffer_size = "32M"
"""


def test_tiny_plan_runs_end_to_end_and_every_point_is_stored(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "p.toml", "e2e", configs=TWO_CONFIGS,
                      workload='name = "select_random_points"\noptions = { random_points = 5 }')
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    assert "In relative numbers:" in out.stdout
    assert "(seg/off)" in out.stdout
    assert "Traceback" not in out.stderr
    assert "[round 2]" in out.stderr and "schedule: fleet" in out.stderr
    assert "Measured side by side" in out.stdout and "no CPU pinning" in out.stdout
    # two configurations, one dataset: prepared at most once (the lab may hold it already),
    # one working copy per server, restored at most once (the workload only reads)
    assert out.stderr.count("preparing dataset") <= 1
    assert out.stderr.count("datadir from the") <= 2

    points = stored_points(shared_lab, "e2e")
    assert len(points) == 2 * 2 * 2
    assert {(p["config"], p["threads"], p["round"]) for p in points} == {
        (c, t, r) for c in ("off", "seg") for t in (1, 2) for r in (1, 2)
    }
    for p in points:
        assert p["status"] == "ok"
        assert p["qps"] > 0 and p["tps"] > 0
        assert 0 < p["latency_p95_ms"] <= p["latency_p99_ms"] <= p["latency_max_ms"] * 1.05
        assert p["rows_per_query"] > 0
        delta = json.loads(p["status_delta_json"])
        assert delta["Com_select"] >= p["reads"]
        assert len(json.loads(p["series_json"])) >= 1
        assert 0 <= p["off_turn_cpu"] <= 1  # the fleet saw its server's CPU, turn by turn

    report = run_cli("report", str(shared_lab.root), "--study", "e2e", "--format", "json")
    assert report.returncode == 0, report.stderr
    document = json.loads(report.stdout)
    assert len(document["points"]) == 8
    for p in document["points"]:
        for key in ("config", "workload", "threads", "round", "status", "qps", "tps",
                    "latency_p95_ms", "rows_per_query"):
            assert key in p
    session = document["sessions"][-1]
    assert session["outcome"] == "complete"
    for fact in ("kernel", "cpu_model", "cpu_count", "memory_bytes", "io_scheduler",
                 "open_files_limit", "perflab"):
        assert fact in session["host"]
    states = document["server_states"]
    # side by side: both configurations' servers start afresh every round, launched together
    # and recorded in an order rotated per round, and move to the other copy of the dataset the
    # next round
    assert [(s["config"], s["how"]) for s in states] == [
        ("off", "start"), ("seg", "start"), ("seg", "start"), ("off", "start")]
    datadirs = {config: [s["process"]["datadir"] for s in states if s["config"] == config]
                for config in ("off", "seg")}
    assert datadirs["off"] == datadirs["seg"][::-1] and len(set(datadirs["off"])) == 2
    assert states[0]["variables"]["key_buffer_size"] == str(32 << 20)
    assert states[0]["version"].startswith("10.")

    again = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert again.returncode == 0
    assert "all 8 points of e2e are already stored" in again.stderr
    assert "preparing dataset" not in again.stderr
    assert len(stored_points(shared_lab, "e2e")) == 8


def test_bad_variable_name_fails_in_one_line_before_any_point(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "bad.toml", "bad-name",
                      configs="[configs.a]\nkey_cache_segmentz = 4\n")
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert lines[0].startswith("perflab: error: ")
    assert "configs.a: unknown server variable 'key_cache_segmentz'" in lines[0]
    assert "key_cache_segments" in out.stderr  # the hint
    assert len(lines) <= 2 and "Traceback" not in out.stderr
    assert stored_points(shared_lab, "bad-name") == []


def test_out_of_range_value_fails_in_one_line_before_any_point(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "range.toml", "bad-range",
                      configs="[configs.a]\nkey_cache_segments = 65\n")
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert lines == [
        "perflab: error: configs.a: key_cache_segments = 65 is out of range (allowed: 0 to 64)"
    ]
    assert stored_points(shared_lab, "bad-range") == []


def test_unknown_plan_key_fails_without_touching_the_lab(tmp_path):
    plan = write_plan(tmp_path / "typo.toml", "typo", configs=ONE_CONFIG)
    plan.write_text(plan.read_text().replace("[run]", "[run]\nround = 2"))
    lab = tmp_path / "untouched"
    out = run_cli("run", str(plan), "--lab", str(lab))
    assert out.returncode == 2
    assert "unknown key run.round " in out.stderr
    assert "did you mean run.rounds?" in out.stderr
    assert not lab.exists()


def test_sigkill_of_perflab_resumes_with_no_loss_and_no_duplicate(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "kill.toml", "killed", configs=ONE_CONFIG,
                      threads=(1, 2, 4), rounds=2, run_seconds=1, warmup_seconds=0)
    proc = subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(shared_lab.root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: len(stored_points(shared_lab, "killed")) >= 2, 120, "two points")
        time.sleep(0.7)  # into the middle of the next point (its 1-s lead)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    before = stored_points(shared_lab, "killed")
    assert 2 <= len(before) < 6
    # the killed perflab's server and sysbench go away on their own (parent-death signal)
    wait_for(lambda: not mariadbd_under(shared_lab.root), 60, "the orphaned mariadbd to stop")

    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    assert f"resuming: {len(before)} of 6 points already stored" in out.stderr
    after = stored_points(shared_lab, "killed")
    assert len(after) == 6
    assert len({(p["threads"], p["round"]) for p in after}) == 6
    kept = {p["id"]: p for p in after}
    for p in before:  # finished points are untouched by the resumed run
        assert kept[p["id"]]["started_at"] == p["started_at"]
        assert kept[p["id"]]["qps"] == p["qps"]


def test_mariadbd_killed_mid_point_gives_one_failed_point_and_the_sweep_goes_on(
    shared_lab, tmp_path
):
    plan = write_plan(tmp_path / "crash.toml", "crash", configs=ONE_CONFIG,
                      threads=(1, 2, 4), rounds=1, run_seconds=3,
                      warmup_seconds=0)
    pid_file = Path(shared_lab.slot(0).root / "mysqld.pid")
    proc = subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(shared_lab.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(stored_points(shared_lab, "crash")) >= 1, 120, "the first point")
        time.sleep(1.0)  # the second point is running now
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1  # a failed point makes the run exit non-zero
    points = stored_points(shared_lab, "crash")
    assert [(p["threads"], p["status"]) for p in points] == [(1, "ok"), (2, "failed"), (4, "ok")]
    failed = points[1]
    assert "mariadbd died during the point" in failed["error"]
    assert "Failed points:" in stdout


def test_ctrl_c_stops_the_server_cleanly_and_keeps_finished_points(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "int.toml", "interrupted", configs=ONE_CONFIG,
                      threads=(1, 2, 4), rounds=2, run_seconds=2,
                      warmup_seconds=0)
    proc = subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(shared_lab.root)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: len(stored_points(shared_lab, "interrupted")) >= 1, 120, "a point")
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert "interrupted; finished points are stored" in stderr
    assert "Traceback" not in stderr
    assert not mariadbd_under(shared_lab.root)  # stopped before perflab exited
    assert all(p["status"] == "ok" for p in stored_points(shared_lab, "interrupted"))
    report = json.loads(run_cli("report", str(shared_lab.root), "--study", "interrupted",
                                "--format", "json").stdout)
    assert report["sessions"][-1]["outcome"] == "interrupted"


def test_a_refused_set_global_falls_back_to_a_restart(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "kb0.toml", "kb0", configs="""
schedule = "serial"
[configs.kb16]
key_buffer_size = "16M"
[configs.kb0]
key_buffer_size = 0
""", threads=(1,), rounds=1, run_seconds=1, warmup_seconds=0)
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    assert "SET GLOBAL refused (Cannot drop default keycache): restarting instead" in out.stderr
    points = stored_points(shared_lab, "kb0")
    assert [(p["config"], p["status"]) for p in points] == [("kb16", "ok"), ("kb0", "ok")]


def test_profiles_are_recorded_side_by_side_as_one_server_at_a_time(shared_lab, tmp_path):
    """profile = true under the fleet (the default for two configurations): each server's own
    perf profile per point, of its own slices."""


    if shutil.which("perf") is None:
        pytest.skip("perf is not installed (scripts/setup --for-tests installs linux-perf)")
    plan = write_plan(tmp_path / "profiled.toml", "profiled",
                      configs='[configs.small]\nkey_buffer_size = "1M"\n[configs.big]\n'
                              'key_buffer_size = "64M"\n', threads=(2,), rounds=1)
    plan.write_text(plan.read_text().replace("[run]", "[run]\nprofile = true\nschedule = "
                                             '"fleet"'))
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    assert "profiles skipped" not in out.stderr, out.stderr
    points = stored_points(shared_lab, "profiled")
    assert sorted(p["config"] for p in points) == ["big", "small"]
    for point in points:
        # its own server's samples: its code, its libraries and the kernel on its behalf,
        # never the load generator's. Not "mariadbd's own code in the top 15": in a loaded
        # suite both servers' top symbols were all kernel and libc, twice in six runs
        symbols = json.loads(point["profile_json"])
        dsos = {s["dso"] for s in symbols}
        assert symbols and not any("sysbench" in d or "lua" in d for d in dsos), dsos


SLEEPS = '[[statements]]\nsql = "SELECT SLEEP({seconds})"\n'


def test_a_fleet_slice_counts_only_its_own_work(shared_lab, tmp_path):
    """Events of 20 ms, too long for the base slice of 250 ms: before the first round the
    fleet measures them alone and sizes the thread count's slice to hold events 4 times as
    long, ten to a slice (0.8-0.85 s), so no point fails for its events' length (issue 43: 16-
    and 64-thread points did). A thread starts an event only when its slice still has room for
    it, so none runs on into the other server's turn, and the point reads under 100 qps at 2
    threads (a slice filled to its end, and past it, would read 100 or more)."""
    statements = tmp_path / "sleep-0.02.toml"
    statements.write_text(SLEEPS.format(seconds=0.02))
    plan = write_plan(tmp_path / "sleep-0.02.plan.toml", "slices-0.02", configs=TWO_CONFIGS,
                      threads=(2,), rounds=1, run_seconds=2,
                      workload=f'name = "sql"\noptions = {{ file = "{statements}" }}')
    plan.write_text(plan.read_text().replace("[run]", '[run]\nschedule = "fleet"\n'
                                                      "slice_seconds = 0.25"))
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    sized = re.search(r"slices sized to the events they hold: ([\d.]+) s at 2 threads",
                      out.stderr)
    assert sized and 0.8 <= float(sized.group(1)) <= 1.0, out.stderr  # 4 x 20 ms x 10
    points = stored_points(shared_lab, "slices-0.02")
    assert len(points) == 2
    for p in points:
        assert p["status"] == "ok", p["error"]
        assert 88 < p["qps"] < 100, p["qps"]  # never the whole slice: 2 x 40 / 0.8 s = 100


def test_a_serial_point_counts_its_window_and_nothing_else(shared_lab, tmp_path):
    """Events of 0.3 s at 2 threads do 6.67 a second, 13.3 in a 2-s window (stored as 13
    whole events). A serial point is measured after a lead of its own in the same sysbench
    run, events across the window's edges counted for their share inside, so sysbench
    starting its threads is not in the window and the edges neither lose nor gain an event;
    its series is counted per quarter second."""
    statements = tmp_path / "sleep.toml"
    statements.write_text(SLEEPS.format(seconds=0.3))
    plan = write_plan(tmp_path / "serial-window.toml", "serial-window", configs=ONE_CONFIG,
                      threads=(2,), rounds=2, run_seconds=2, warmup_seconds=0,
                      workload=f'name = "sql"\noptions = {{ file = "{statements}" }}')
    plan.write_text(plan.read_text().replace("[run]", '[run]\nschedule = "serial"'))
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    # the report names the file's data, not the plan's [dataset] rows it does not load
    assert " sleep.toml: no [[data]];" in out.stdout, out.stdout
    points = stored_points(shared_lab, "serial-window")
    assert len(points) == 2
    for p in points:
        assert p["status"] == "ok", p["error"]
        assert 6.45 < p["qps"] < 6.85, p["qps"]
        assert len(json.loads(p["series_json"])) == 8  # quarter seconds
