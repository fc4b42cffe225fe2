"""What a budget can decide, said at the first look (running/noise.budget_reach): synthetic
stored points, no server."""

import dataclasses
import math
import random

import pytest

from perflab.output.text import duration
from perflab.plan import parse_plan
from perflab.running.noise import budget_reach
from perflab.stats.design import FITTED_SHAPE, Design
from perflab.store import Metrics, StoredPoint

pytestmark = pytest.mark.fast

PLAN = """
[study]
name = "reach"
[workload]
name = "oltp_point_select"
[run]
threads = [4]
time = "10m"
max_rounds = 40
[configs.a]
[configs.b]
key_buffer_size = "16M"
"""
METRICS = Metrics(**dict.fromkeys(Metrics.names(), 0))


def rounds(n: int, sd: float, seed: int = 5) -> list[StoredPoint]:
    """n rounds of a and b, b's throughput off a's by a log ratio of spread `sd`."""
    rng = random.Random(seed)
    points = []
    for r in range(1, n + 1):
        for config, qps in (("a", 1000.0), ("b", 1000.0 * math.exp(rng.gauss(0, sd)))):
            metrics = dataclasses.replace(METRICS, qps=qps, tps=qps, seconds=1.0)
            points.append(StoredPoint(0, "reach", "d", config, "w", 4, r, "ok", 1, None,
                                      0.0, 1.0, metrics))
    return points


def test_a_budget_too_short_for_the_margin_says_the_rounds_and_budget_that_would_reach_it():
    plan = parse_plan(PLAN)
    design = Design(first_look=3, last_look=12, shape=FITTED_SHAPE)
    said = budget_reach(plan, design, rounds(12, 0.15), 50.0)
    assert said is not None and "wider than the ±5% margin" in said
    needed = int(said.split("about ")[2].split(" rounds")[0])
    assert needed > 12  # more rounds than the budget holds
    assert f"a budget of about {duration(50 * needed)} at 50 s a round" in said
    # quiet rounds: the budget reaches the margin, nothing to say
    assert budget_reach(plan, design, rounds(12, 0.005), 50.0) is None
    # no budget, or too few rounds to tell the noise: nothing to say
    assert budget_reach(dataclasses.replace(plan, run=dataclasses.replace(plan.run, time=0.0)),
                        design, rounds(12, 0.15), 50.0) is None
    assert budget_reach(plan, design, rounds(2, 0.15), 50.0) is None
