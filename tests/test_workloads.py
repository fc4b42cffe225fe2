"""Workloads on every engine, and the environment dimensions: allocator, pinning, connection."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from conftest import copy_datadir, run_cli, write_plan
from perflab.domain import Dataset, Environment, Workload
from perflab.errors import PerflabError
from perflab.load import sysbench
from perflab.load.sbtest import load_sbtest
from perflab.load.sqlworkload import SqlFamily
from perflab.load.workloads import WORKLOADS, resolve
from perflab.probes.status import delta, global_status, rows_per_query
from perflab.server import environment as env
from perflab.server.managed import ManagedServer

ENGINES = ["InnoDB", "MyISAM", "Aria", "MEMORY", "RocksDB"]
SQL_WORKLOAD = """
[schema]
sql = ["CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), price INT, KEY (price))"]
[[data]]
table = "items"
rows = 3000
columns = { id = "seq", name = "str:8:32", price = "int:1:1000" }
[[statements]]
sql = "SELECT name FROM items WHERE id = {int:1:3000}"
weight = 8
[[statements]]
sql = "SELECT COUNT(*) FROM items WHERE price BETWEEN {int:1:500} AND {int:500:1000}"
weight = 1
[[statements]]
sql = "UPDATE items SET name = {str:3:10} WHERE id = {int:1:3000}"
weight = 1
"""


def workload_options(name: str, tmp_path: Path) -> tuple:
    if WORKLOADS[name].family is SqlFamily:
        path = tmp_path / "sql-workload.toml"
        path.write_text(SQL_WORKLOAD)
        return (("file", str(path)),)
    return {"rw-mix": (("write_share", 0.3),), "join-limit": (("t2_rows", 1500),)}.get(name, ())


def engine_or_skip(engine: str) -> dict[str, str]:
    try:
        return env.engine_options(engine)
    except PerflabError as exc:
        pytest.skip(f"{engine}: {exc.message} ({exc.hint})")


@pytest.mark.parametrize("engine", ENGINES)
def test_every_workload_runs_on_the_engine(engine, tmp_path, pristine_datadir):
    options = engine_or_skip(engine)
    copy_datadir(pristine_datadir, tmp_path / "data")
    dataset = Dataset(engine=engine, tables=1, rows=2000)
    with ManagedServer(tmp_path / "data", tmp_path, options) as server:
        loaded = set()
        for name, spec in WORKLOADS.items():
            workload = resolve(Workload(name, workload_options(name, tmp_path)))
            workload.family.write_files(tmp_path / "files")
            if workload.family.schema not in loaded:
                workload.family.load(server.endpoint, dataset)
                loaded.add(workload.family.schema)
            with server.connect() as conn:
                before = global_status(conn)
            # Writers run on one thread: on a 2000-row table two writers collide all the time
            # (deadlocks, lock waits, DELETE+INSERT races), which is contention, not the
            # workload failing to run.
            threads = 1 if spec.writes else 2
            argv = sysbench.command(workload, dataset, server.endpoint, threads, 1)
            result = sysbench.run(argv, sysbench.environment(workload), 1, threads)
            with server.connect() as conn:
                moved = delta(before, global_status(conn))
            assert result.events > 0, name
            assert result.errors == 0, name
            rows = rows_per_query(moved, result.reads + result.writes)
            assert rows is not None and rows >= 0, name
            if name == "join-limit":
                # the page's plan: t2 by `val`, then t1 by primary key: 1206 + 18 rows at least
                assert rows >= 1224, rows
            if spec.family is SqlFamily:
                assert result.writes > 0 and result.reads > result.writes


def test_uniform_random_points_mean_the_same_at_any_thread_count(tmp_path, pristine_datadir):
    """sysbench's select_random_points reads far more rows per query at 1 thread than at 2;
    the uniform variant does not."""
    copy_datadir(pristine_datadir, tmp_path / "data")
    dataset = Dataset(engine="MyISAM", rows=20000)
    per_query = {}
    with ManagedServer(tmp_path / "data", tmp_path) as server:
        load_sbtest(server.endpoint, dataset)
        for name in ("select_random_points", "random-points-uniform"):
            workload = resolve(Workload(name))
            for threads in (1, 2):
                with server.connect() as conn:
                    before = global_status(conn)
                argv = sysbench.command(workload, dataset, server.endpoint, threads, 1)
                result = sysbench.run(argv, sysbench.environment(workload), 1, threads)
                with server.connect() as conn:
                    moved = delta(before, global_status(conn))
                per_query[(name, threads)] = rows_per_query(moved, result.reads)
    original = per_query[("select_random_points", 1)] / per_query[("select_random_points", 2)]
    uniform = per_query[("random-points-uniform", 1)] / per_query[("random-points-uniform", 2)]
    assert original > 10
    assert 0.7 < uniform < 1.4


def test_a_window_begun_before_the_threads_started_is_measured_again_after_a_longer_lead(
        tmp_path, pristine_datadir):
    """A point whose threads were still starting when its window began (a loaded machine;
    here a lead of 0 ms, which no thread's first event can precede) is not failed at once: it
    is measured again after LATE_LEAD_MS, in a window as long."""
    copy_datadir(pristine_datadir, tmp_path / "data")
    dataset = Dataset(engine="MyISAM", rows=2000)
    workload = resolve(Workload("oltp_point_select"))
    with ManagedServer(tmp_path / "data", tmp_path) as server:
        load_sbtest(server.endpoint, dataset)
        began = time.monotonic()
        result = sysbench.run_alone(workload, dataset, server.endpoint, 2, 1, lead_ms=0)
        took = time.monotonic() - began
    assert result.events > 0 and result.seconds == pytest.approx(1, rel=0.2)
    assert took > sysbench.LATE_LEAD_MS / 1000  # the second run's lead


@pytest.mark.parametrize(("allocator", "library"), [
    ("jemalloc", "libjemalloc"), ("tcmalloc", "libtcmalloc"), ("glibc", None)])
def test_allocator_is_really_mapped_into_mariadbd(allocator, library, tmp_path,
                                                  pristine_datadir):
    copy_datadir(pristine_datadir, tmp_path / "data")
    environment = env.server_environment(Environment(allocator=allocator))
    with ManagedServer(tmp_path / "data", tmp_path, environment=environment) as server:
        maps = Path(f"/proc/{server.pid}/maps").read_text()
    if library:
        assert library in maps
    else:
        assert "libjemalloc" not in maps and "libtcmalloc" not in maps


def test_missing_allocator_library_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(env.LIBRARIES, "jemalloc", "libjemalloc.so.99")
    with pytest.raises(PerflabError) as err:
        env.check(Environment(allocator="jemalloc"), "configs.x")
    assert "configs.x.allocator: jemalloc needs libjemalloc.so.99" in err.value.message
    assert err.value.hint == "apt-get install libjemalloc2"


@pytest.mark.parametrize(("cpus", "message"), [
    ("99", "CPU 99 is not available here"),
    ("0-", "is not a CPU list"),
    ("2-1", "is not a CPU list"),
    ("zero", "is not a CPU list"),
])
def test_invalid_cpu_lists_are_clear_errors(cpus, message):
    with pytest.raises(PerflabError) as err:
        env.check(Environment(server_cpus=cpus), "configs.x")
    assert message in err.value.message and "configs.x.server_cpus" in err.value.message


def allowed_cpus(pid: int) -> set[str]:
    """Cpus_allowed_list of every thread of a process."""
    lists = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        for line in (task / "status").read_text().splitlines():
            if line.startswith("Cpus_allowed_list:"):
                lists.add(line.split(":", 1)[1].strip())
    return lists


def test_pinning_sets_the_affinity_of_every_thread_of_server_and_client(tmp_path,
                                                                       pristine_datadir):
    copy_datadir(pristine_datadir, tmp_path / "data")
    environment = Environment(server_cpus="0", client_cpus="1")
    dataset = Dataset(engine="MyISAM", rows=1000)
    server_env = env.server_environment(environment)
    with ManagedServer(tmp_path / "data", tmp_path, environment=server_env) as server:
        load_sbtest(server.endpoint, dataset)
        assert allowed_cpus(server.pid) == {"0"}
        assert len(list(Path(f"/proc/{server.pid}/task").iterdir())) > 3
        workload = resolve(Workload("oltp_point_select"))
        argv = sysbench.command(workload, dataset, server.endpoint, 4, 3)
        client = subprocess.Popen([*env.client_prefix(environment), *argv],
                                  env=sysbench.environment(workload), stdout=subprocess.DEVNULL)
        try:
            time.sleep(1.5)
            assert allowed_cpus(client.pid) == {"1"}
            assert len(list(Path(f"/proc/{client.pid}/task").iterdir())) >= 4
        finally:
            client.wait(timeout=30)
        assert allowed_cpus(server.pid) == {"0"}  # threads made under load too


def test_environment_axes_run_end_to_end_and_are_recorded(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "axes.toml", "axes", configs="""
[configs.default]
[axes]
allocator = ["glibc", "jemalloc"]
pinning = ["0/1"]
connection = ["socket", "tcp"]
""", threads=(2,), rounds=1, run_seconds=1)
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    assert "; pinned: every configuration (server CPUs 0, client CPUs 1);" in out.stdout
    document = json.loads(run_cli("report", str(shared_lab.root), "--study", "axes",
                                  "--format", "json").stdout)
    assert {p["config"] for p in document["points"]} == {
        "glibc pin 0/1 socket", "glibc pin 0/1 tcp", "jemalloc pin 0/1 socket",
        "jemalloc pin 0/1 tcp"}
    assert all(p["status"] == "ok" and p["qps"] > 0 for p in document["points"])
    states = {s["config"]: s["process"] for s in document["server_states"]}
    assert states["jemalloc pin 0/1 tcp"]["allocator"] == "jemalloc"
    assert states["glibc pin 0/1 socket"]["allocator"] == "glibc"
    assert states["jemalloc pin 0/1 tcp"]["connection"].startswith("tcp 127.0.0.1:")
    assert states["glibc pin 0/1 socket"]["connection"].startswith("socket ")
    assert all(s["cpus_allowed"] == [0] for s in states.values())


def test_bad_pinning_fails_before_any_point(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "pin.toml", "bad-pin", configs="""
[configs.default]
server_cpus = "64"
""")
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 2
    assert "configs.default.server_cpus = '64': CPU 64 is not available here" in out.stderr


@pytest.mark.skipif(os.geteuid() != 0 and not Path("/usr/bin/perf").exists(),
                    reason="perf needs root or a permissive perf_event_paranoid")
def test_profile_names_where_the_server_cpu_goes(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "prof.toml", "profiled-one", configs="[configs.default]\n",
                      threads=(2,), rounds=1, run_seconds=2, warmup_seconds=0)
    plan.write_text(plan.read_text().replace("rounds = 1", "rounds = 1\nprofile = true"))
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root))
    assert out.returncode == 0, out.stderr
    if "profiles skipped" in out.stderr:
        pytest.skip(out.stderr.split("profiles skipped: ", 1)[1].splitlines()[0])
    assert "Where the server's CPU goes" in out.stdout
    document = json.loads(run_cli("report", str(shared_lab.root), "--study", "profiled-one",
                                  "--format", "json").stdout)
    profile = document["points"][0]["profile"]
    assert profile and all(0 < s["share"] <= 1 for s in profile)
    assert sum(s["share"] for s in profile) <= 1.0001
    assert any(s["dso"].startswith("mariadbd") or "libc" in s["dso"] for s in profile)
