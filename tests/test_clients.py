"""Load from several client machines through a Dask scheduler (load/clients.py).

The server tests start a real Dask scheduler and two workers as separate processes on
loopback, and measure a real managed mariadbd with real sysbench from both."""

from __future__ import annotations

import json
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest

import perflab
from conftest import stored_points, wait_for, write_plan
from perflab.domain import Environment
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.load import sysbench
from perflab.load.clients import Clients, LocalCluster, Worker, merge, split
from perflab.load.sysbench import LoadResult
from perflab.load.workloads import resolve
from perflab.plan import with_overrides
from perflab.running.measurer import measure
from perflab.server.environment import server_environment
from perflab.store.records import Sample

# -- no server ------------------------------------------------------------------------------------

@pytest.mark.fast
def test_threads_are_split_evenly_the_first_workers_taking_the_remainder():
    a, b, c = (Worker(f"tcp://127.0.0.1:{p}", n, "127.0.0.1")
               for p, n in ((1, "a"), (2, "b"), (3, "c")))
    assert [n for _, n in split(64, [a, b])] == [32, 32]
    assert [(w.name, n) for w, n in split(7, [a, b, c])] == [("a", 3), ("b", 2), ("c", 2)]
    assert [(w.name, n) for w, n in split(2, [a, b, c])] == [("a", 1), ("b", 1)]


def _result(events: int, histogram: dict[int, int], slices: dict[float, float],
            latency_avg: float) -> LoadResult:
    series = [Sample(t, tps, tps, tps, 0.0, 0.0, 0.0, 0.0, None, 4) for t, tps in slices.items()]
    return LoadResult(seconds=2.0, events=events, reads=events, writes=0, other=0, errors=0,
                      reconnects=0, latency_min_ms=0.1, latency_avg_ms=latency_avg,
                      latency_max_ms=9.0, latency_p95_ms=sysbench.percentile(histogram, 95),
                      latency_p99_ms=sysbench.percentile(histogram, 99), series=series,
                      histogram=histogram)


@pytest.mark.fast
def test_merge_sums_counts_and_takes_percentiles_from_the_summed_histograms():
    fast = _result(900, {100: 890, 400: 10}, {0.25: 1800.0, 0.5: 1800.0}, 1.0)
    slow = _result(100, {300: 60, 600: 40}, {0.25: 200.0, 0.5: 200.0, 0.75: 200.0}, 5.0)
    outcomes = [{"worker": "w1", "host": "one", "result": fast, "cpu": 0.5, "threads": 4,
                 "launched": 10.0, "facts": {}},
                {"worker": "w2", "host": "one", "result": slow, "cpu": 0.4, "threads": 4,
                 "launched": 10.02, "facts": {}}]
    merged = merge(outcomes)
    assert merged.events == 1000 and merged.queries == 1000
    summed = {100: 890, 300: 60, 400: 10, 600: 40}
    assert merged.latency_p95_ms == sysbench.percentile(summed, 95)
    assert merged.latency_p99_ms == sysbench.percentile(summed, 99)
    # an average of the two p95s would say something else
    assert merged.latency_p95_ms != (fast.latency_p95_ms + slow.latency_p95_ms) / 2
    assert merged.latency_avg_ms == pytest.approx((1.0 * 900 + 5.0 * 100) / 1000)
    # throughput summed slice by slice, over the slices both measured
    assert [(s.t, s.qps) for s in merged.series] == [(0.25, 2000.0), (0.5, 2000.0)]
    # two workers on one host: that host's CPU share is theirs together
    assert merged.client_cpu == pytest.approx(0.9)
    assert [c["start_offset_ms"] for c in merged.clients] == [0.0, 20.0]
    assert [c["events"] for c in merged.clients] == [900, 100]


CLIENTS_PLAN = """
[study]
name = "clients-plan"
[workload]
name = "oltp_point_select"
[run]
threads = [4]
{run}
[configs.a]
{config}
"""


@pytest.mark.fast
@pytest.mark.parametrize("run, config, message", [
    ('clients = "not an address"', "", "is not a Dask scheduler's address"),
    ('clients = "tcp://127.0.0.1:8786"\nschedule = "fleet"', "",
     "cannot take load from several client machines"),
    ('clients = "tcp://127.0.0.1:8786"', 'client_cpus = "0"',
     "pin the client"),
])
def test_a_plan_that_cannot_take_remote_load_is_refused(tmp_path, run, config, message):
    path = tmp_path / "plan.toml"
    path.write_text(CLIENTS_PLAN.format(run=run, config=config))
    with pytest.raises(PerflabError, match=message):
        perflab.load_plan(path)


@pytest.mark.fast
def test_remote_load_is_a_definition_of_its_own():
    plan = perflab.load_plan("key-cache-segments")
    remote = with_overrides(plan, clients="tcp://127.0.0.1:8786")
    base = plan.config("off")
    assert remote.config_hash(base) != plan.config_hash(base)
    elsewhere = with_overrides(plan, clients="tcp://127.0.0.1:9999")
    assert elsewhere.config_hash(base) == remote.config_hash(base)
    fleet = replace(plan, run=replace(plan.run, schedule="fleet"))
    with pytest.raises(PerflabError, match="fleet") as err:
        with_overrides(fleet, clients="tcp://127.0.0.1:8786")
    assert err.value.option == "clients"  # the CLI names --clients


@pytest.mark.fast
def test_a_scheduler_that_cannot_be_reached_is_one_error_before_anything_runs():
    with pytest.raises(PerflabError, match="cannot reach the Dask scheduler at tcp://127.0.0.1:9"):
        Clients("tcp://127.0.0.1:9", lambda _: None, timeout=1)


# -- a scheduler and two workers ------------------------------------------------------------------

def test_a_scheduler_without_workers_is_one_error_before_anything_runs(tmp_path):
    with LocalCluster(tmp_path, workers=0) as empty, \
            pytest.raises(PerflabError, match="has no workers") as err:
        Clients(empty.address, lambda _: None)
    assert f"dask worker {empty.address}" in err.value.hint


@pytest.fixture
def cluster(tmp_path):
    """Two workers of a test's own, which it may kill."""
    with LocalCluster(tmp_path, workers=2) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory):
    """Two workers that the module's tests which leave them running share."""
    with LocalCluster(tmp_path_factory.mktemp("cluster"), workers=2) as cluster:
        yield cluster


def _children(pid: int, name: str) -> list[int]:
    """pids of the running processes called `name` whose parent is `pid`."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        command, rest = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:]
        if command == name and int(rest.split()[1]) == pid and rest[0] != "Z":
            found.append(int(proc.name))
    return found


def test_a_point_spread_over_two_workers_is_their_merge(shared_cluster, seed_lab, tmp_path):
    cluster = shared_cluster
    plan = write_plan(tmp_path / "plan.toml", "two-clients", configs="[configs.base]",
                      threads=(64,), rounds=1, run_seconds=2, warmup_seconds=0,
                      run=f'clients = "{cluster.address}"')
    lab = Lab(seed_lab(tmp_path / "lab", plan))
    summary = perflab.run(plan, lab, say=lambda _: None)
    assert summary.failed == 0
    (point,) = perflab.load_study(lab, "two-clients").points
    assert point.ok
    assert sorted(c["threads"] for c in point.clients) == [32, 32]
    assert sorted(c["worker"] for c in point.clients) == ["w1", "w2"]
    assert all(c["series"] and c["events"] > 0 for c in point.clients)
    # each worker's own driver counted its threads: 32 each, not the point's 64
    assert {s["threads"] for c in point.clients for s in c["series"]} == {32}
    assert point.metrics.events == sum(c["events"] for c in point.clients)
    concatenated: dict[int, int] = {}
    for c in point.clients:
        for bucket, count in c["histogram"].items():
            concatenated[int(bucket)] = concatenated.get(int(bucket), 0) + count
    assert point.metrics.latency_p95_ms == sysbench.percentile(concatenated, 95)
    assert point.histogram == concatenated
    assert point.client_start_skew_ms is not None and point.client_start_skew_ms < 1000
    assert {c["facts"]["sysbench"] for c in point.clients} == {sysbench.sysbench_version()}
    # every point says where its load came from, in the JSON export too
    document = perflab.render(perflab.load_study(lab, "two-clients"), "json")
    assert '"clients": [' in document and '"client_start_skew_ms"' in document
    assert "Load from 2 client worker(s) on 1 host(s)" in perflab.render(
        perflab.load_study(lab, "two-clients"))

    # the same server measured from one client and from two, interleaved: within the noise
    loaded = perflab.load_plan(plan)
    workload, dataset = resolve(loaded.workload), loaded.dataset
    slot = lab.slot(0)
    slot.checkout(workload.dataset_key(dataset), lambda _: None)
    clients = Clients(cluster.address, lambda _: None)
    logs = []
    try:
        with slot.server({}, server_environment(Environment(connection="tcp"))) as server:
            measure(server, workload, dataset, 64, 1)  # a warm-up, not counted
            for pair in range(4):
                figures = {}
                for side in (("one", "two") if pair % 2 == 0 else ("two", "one")):
                    result, _ = measure(server, workload, dataset, 64, 2,
                                        clients=clients if side == "two" else None)
                    figures[side] = result.qps
                logs.append(math.log(figures["two"] / figures["one"]))
    finally:
        clients.close()
    half = 3.182 * statistics.stdev(logs) / math.sqrt(len(logs))  # t(3), 95%
    low, high = math.expm1(statistics.fmean(logs) - half), math.expm1(statistics.fmean(logs) + half)
    assert low < 0.10 and high > -0.10, f"two clients vs one: [{low:+.1%}, {high:+.1%}]"


def test_a_worker_lost_mid_point_fails_that_point_and_the_next_runs_on_the_others(
        cluster, seed_lab, tmp_path):
    plan = write_plan(tmp_path / "plan.toml", "lost-client", configs="[configs.base]",
                      threads=(8, 4), rounds=1, run_seconds=6, warmup_seconds=0,
                      run=f'clients = "{cluster.address}"')
    lab = Lab(seed_lab(tmp_path / "lab", plan))
    doomed = cluster.processes["w2"]
    seen: list[int] = []

    def kill_mid_point() -> None:
        seen.extend(wait_for(lambda: _children(doomed.pid, "sysbench"), 120,
                             "w2's sysbench"))
        time.sleep(2)
        os.kill(doomed.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_mid_point)
    killer.start()
    summary = perflab.run(plan, lab, say=lambda _: None)
    killer.join()
    first, second = stored_points(lab, "lost-client")
    assert (first["threads"], first["status"]) == (8, "failed")
    assert "w2" in first["error"] and "lost" in first["error"]
    assert (second["threads"], second["status"]) == (4, "ok")
    after = next(p for p in perflab.load_study(lab, "lost-client").points if p.threads == 4)
    (only,) = after.clients
    assert only["threads"] == 4
    assert summary.failed == 1
    # nothing of the point is left running: not w2's sysbench, nor w1's share of it
    wait_for(lambda: not any(_running(pid) for pid in seen), 10, "w2's sysbench to go")
    assert not _children(cluster.processes["w1"].pid, "sysbench")


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


COORDINATOR = """
import json, sys
from perflab.load.clients import Clients
spec = json.loads(sys.argv[1])
Clients(spec["address"], lambda _: None).run_window(spec["options"], spec["variables"], None, 8,
                                                   30)
"""


def test_a_killed_perflab_leaves_no_sysbench_on_the_workers(shared_cluster, seed_lab,
                                                            tmp_path):
    cluster = shared_cluster
    plan = write_plan(tmp_path / "plan.toml", "killed-run", configs="[configs.base]",
                      threads=(2,), rounds=1, run_seconds=1, warmup_seconds=0)
    lab = Lab(seed_lab(tmp_path / "lab", plan))  # the dataset, without a run to make it
    loaded = perflab.load_plan(plan)
    workload, dataset = resolve(loaded.workload), loaded.dataset
    slot = lab.slot(0)
    slot.checkout(workload.dataset_key(dataset), lambda _: None)
    workers = [cluster.processes[name].pid for name in ("w1", "w2")]
    with slot.server({}, server_environment(Environment(connection="tcp"))) as server:
        spec = {"address": cluster.address,
                "options": sysbench.options(workload, dataset, server.endpoint),
                "variables": sysbench.driver_variables(workload, server.endpoint)}
        coordinator = subprocess.Popen([sys.executable, "-c", COORDINATOR, json.dumps(spec)])
        try:
            loads = wait_for(lambda: [p for w in workers for p in _children(w, "sysbench")]
                             if all(_children(w, "sysbench") for w in workers) else None,
                             120, "both workers' sysbench")
            coordinator.kill()  # as perflab killed mid-point, its server still up
            coordinator.wait()
            # the scheduler drops a client that went away, and each task kills its sysbench
            wait_for(lambda: not any(_running(pid) for pid in loads), 15,
                     "the workers' sysbench to stop")
            assert server.alive()
        finally:
            if coordinator.poll() is None:
                coordinator.kill()
                coordinator.wait()


@pytest.mark.fast
def test_a_worker_without_perflab_is_named_as_such():
    from perflab.load.clients import _task_error

    assert "perflab is not installed there" in _task_error(
        ModuleNotFoundError("No module named 'perflab'"))
    assert _task_error(RuntimeError("first line\nsecond line")) == "RuntimeError: first line"
