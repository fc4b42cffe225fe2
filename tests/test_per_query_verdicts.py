"""The server's CPU per query as a second response with its own verdicts
(analysis/verdicts.judge_per_query): synthetic stored points, no server."""

import dataclasses
import json
import math
import random

import pytest

from perflab.analysis.tables import per_query_table
from perflab.analysis.verdicts import judge_per_query
from perflab.plan import parse_plan
from perflab.stats.decide import EQUIVALENT, SLOWER
from perflab.stats.design import Design
from perflab.store import Metrics, StoredPoint
from perflab.store.records import CPU_SECONDS

pytestmark = pytest.mark.fast

PLAN = """
[study]
name = "cpu"
[workload]
name = "oltp_point_select"
[run]
threads = [1, 4]
[configs.a]
[configs.b]
key_buffer_size = "16M"
"""
METRICS = Metrics(**dict.fromkeys(Metrics.names(), 0))


def points(rounds: int, cpu_change: dict[int, float], seed: int = 7) -> list[StoredPoint]:
    """a and b at the same throughput; b's server CPU per query off a's by `cpu_change` at
    each thread count, each point's CPU within 2% noise."""
    rng = random.Random(seed)
    out = []
    for r in range(1, rounds + 1):
        for threads, change in cpu_change.items():
            for config, factor in (("a", 1.0), ("b", 1.0 + change)):
                cpu = 50e-6 * factor * math.exp(rng.gauss(0, 0.02)) * 10_000
                metrics = dataclasses.replace(METRICS, qps=1000.0, tps=1000.0, seconds=1.0)
                out.append(StoredPoint(0, "cpu", "d", config, "w", threads, r, "ok", 1, None,
                                       0.0, 1.0, metrics,
                                       status_delta={"Questions": 10_000, CPU_SECONDS: cpu}))
    return out


def test_less_cpu_per_query_is_decided_as_less_and_no_change_as_equivalent():
    plan = parse_plan(PLAN)
    judged = judge_per_query(plan, points(8, {1: -0.2, 4: 0.0}), Design(),
                             "server_cpu_us_per_query")
    assert judged is not None and not judged.design.sequential
    assert judged.verdicts[("b", 1)].verdict == SLOWER
    assert judged.verdicts[("b", 1)].change == pytest.approx(-0.2, abs=0.03)
    assert judged.verdicts[("b", 4)].verdict == EQUIVALENT
    table = per_query_table(plan, judged, "Server CPU per query")
    assert [row[5] for row in table.rows] == ["less", EQUIVALENT]
    assert "exploratory" in table.note
    # points without the server's CPU (someone else's server): no second response
    bare = [dataclasses.replace(p, status_delta={}) for p in points(4, {1: 0.0, 4: 0.0})]
    assert judge_per_query(plan, bare, Design(), "server_cpu_us_per_query") is None


def test_the_reports_carry_the_second_response_and_name_how_they_measured():
    from perflab.report.study import render_json, render_text
    from perflab.store import Study

    plan = parse_plan(PLAN)
    study = Study("lab", plan, points(8, {1: -0.2, 4: 0.0}), [], [], [], Design())
    cpu = json.loads(render_json(study))["analysis"]["server_cpu_per_query"]
    verdicts = {(c["config"], c["threads"]): c["verdict"] for c in cpu["vs_baseline"]}
    assert verdicts == {("b", 1): "less", ("b", 4): EQUIVALENT}
    assert "exploratory" in cpu["exploratory"]
    bare = dataclasses.replace(study, points=[dataclasses.replace(p, status_delta={})
                                              for p in study.points])
    assert json.loads(render_json(bare))["analysis"]["server_cpu_per_query"] is None
    # the report names how it measured: the points carry an off-turn share, so side by side
    said = next(line for line in render_text(study).splitlines() if line.startswith("Measured"))
    assert said == ("Measured side by side (a server per configuration, taking turns in time "
                    "slices); no CPU pinning; the server's CPU per query judged beside throughput")
    assert "CPU per query" not in next(line for line in render_text(bare).splitlines()
                                       if line.startswith("Measured"))


def test_the_measured_line_names_pinned_configurations_by_group():
    from perflab.report.study import measures_line
    from perflab.store import Study

    def line(plan_text: str) -> str:
        plan = parse_plan(plan_text)
        return measures_line(Study("lab", plan, points(3, {1: 0.0}), [], [], [], Design()))[0]

    everyone = PLAN.replace("[configs.a]", '[server]\nserver_cpus = "1"\nclient_cpus = "0"\n'
                            "[configs.a]")
    assert "; pinned: every configuration (server CPUs 1, client CPUs 0);" in line(everyone)
    one = PLAN + 'server_cpus = "1"\n'
    assert "; pinned: b (server CPUs 1, client CPUs any);" in line(one)
