"""Where a round's noise comes from (analysis/variance.py), on synthetic stored points."""

import dataclasses
import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.analysis.variance import GROWTH_CAP, split
from perflab.store import Metrics, StoredPoint
from perflab.store.records import CPU_SECONDS, Sample, covered

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

METRICS = Metrics(**dict.fromkeys(Metrics.names(), 0))
SLICES = 8
SECONDS = 2.0  # each point's own measured seconds
WALL = 8.0  # a round's span at one thread count: 3 points x 2 s measured, 2 s measuring nothing


def point(config: str, repeat: int, slices: list[float], threads: int = 4) -> StoredPoint:
    series = [Sample(t=(i + 1) * 0.75, tps=v, qps=v, reads_ps=v, writes_ps=0, other_ps=0,
                     errors_ps=0, reconnects_ps=0, latency_p95_ms=None, threads=threads)
              for i, v in enumerate(slices)]
    metrics = dataclasses.replace(METRICS, qps=sum(slices) / len(slices), seconds=SECONDS)
    start = repeat * 100.0
    return StoredPoint(0, "s", "d", config, "w", threads, repeat, "ok", 1, None, start,
                       start + WALL, metrics, series)


def study(rounds: int, between: float, within: float, seed: int = 1) -> list[StoredPoint]:
    """Two configurations and a baseline; each point's level moves by `between` (log SD) from
    round to round, each slice by `within` around its point's level."""
    rng = random.Random(seed)
    points = []
    for repeat in range(1, rounds + 1):
        for config in ("base", "a", "b"):
            level = 1000 * math.exp(rng.gauss(0, between))
            points.append(point(config, repeat, [level * math.exp(rng.gauss(0, within))
                                                 for _ in range(SLICES)]))
    return points


def test_rounds_that_differ_as_wholes_are_between_round_noise_and_want_short_points():
    (row,) = split(study(200, between=0.10, within=0.01), "base")
    assert row.within_share < 0.05
    assert row.best_slices < SLICES  # shorter points, more rounds
    assert row.time_at_best < 0.8


def test_slices_that_wander_within_points_are_within_point_noise_and_want_long_points():
    (row,) = split(study(200, between=0.0, within=0.10), "base")
    assert row.within_share > 0.8
    assert row.best_slices > SLICES
    assert row.lag1 < 0.2  # independent slices


def test_a_rounds_seconds_are_split_into_measured_and_fixed():
    (row,) = split(study(5, between=0.05, within=0.05), "base")
    assert row.threads == 4 and row.comparisons == 2 and row.rounds == 10
    assert row.fixed_seconds == pytest.approx(WALL - 3 * SECONDS)
    assert row.slice_seconds == pytest.approx(3 * SECONDS / SLICES)


def test_the_servers_cpu_per_query_is_a_second_response_with_its_own_round_noise():
    """Throughput that moves 10% from round to round while the server's CPU per query moves
    1%: the second response's round SD is its own, and missing where a point lacks it."""
    rng = random.Random(3)
    points = []
    for p in study(60, between=0.10, within=0.01):
        cpu = 1e-3 * math.exp(rng.gauss(0, 0.01 / math.sqrt(2)))  # seconds for 1,000 queries
        points.append(dataclasses.replace(
            p, status_delta={"Questions": 1000, CPU_SECONDS: cpu * 1000}))
    (row,) = split(points, "base")
    assert row.cpu_round_variance is not None
    assert 0.007 < row.cpu_round_variance ** 0.5 < 0.013
    assert row.round_variance ** 0.5 > 0.1
    assert split(study(5, 0.05, 0.05), "base")[0].cpu_round_variance is None


def test_thread_counts_with_fewer_than_three_paired_rounds_are_left_out():
    points = study(2, between=0.05, within=0.05)
    points += [dataclasses.replace(p, threads=16) for p in study(3, 0.05, 0.05)]
    assert [row.threads for row in split(points, "base")] == [16]


def test_spans_are_counted_once_where_they_overlap():
    assert covered([(0, 2), (1, 3), (5, 6)]) == pytest.approx(4.0)
    assert covered([]) == 0.0


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 12), st.floats(0.0, 0.3), st.floats(0.0, 0.3), st.integers(0, 10**6))
def test_the_best_split_is_never_worse_than_todays(rounds, between, within, seed):
    for row in split(study(rounds, between, within, seed), "base"):
        assert 0.0 <= row.within_share <= 1.0
        assert row.between_variance >= 0.0
        assert 1.0 <= row.best_slices <= GROWTH_CAP * row.slices
        assert row.time_at_best <= 1.0 + 1e-9


def test_calibrate_says_where_the_noise_lies_and_the_point_length_it_wants():
    from perflab.running.calibrate import where_table

    long_points, short_points = (split(study(200, between=b, within=w), "base")[0]
                                 for b, w in ((0.0, 0.10), (0.10, 0.01)))
    table = where_table([long_points, short_points], run_seconds=SECONDS)
    assert table.title == "Where the noise lies"
    (long_row, short_row) = table.rows
    # the point length follows the best slices: longer where the slices hold the noise
    assert float(long_row[5].split()[0]) > SECONDS > float(short_row[5].split()[0])
    assert int(long_row[3].rstrip("%")) > 80 > int(short_row[3].rstrip("%"))
