"""When a trial's reading is measured again before the search believes it (tune/reading.py)."""

import dataclasses
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.domain import Point, ServerConfig, Workload
from perflab.store import Metrics
from perflab.store.records import PointRecord
from perflab.tune.reading import SURPRISE, combined, reading, retake_reason
from perflab.tune.result import REFERENCE
from perflab.tune.settings import TuneSettings

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

METRICS = Metrics(**dict.fromkeys(Metrics.names(), 0))
THROUGHPUT = TuneSettings.from_plan({}).score
SD = 0.05  # a round's noise


def record(config: str, threads: int, qps: float | None, other_cpu: float | None = None,
           server_failed: bool = False, error: str = "sysbench: lost connection") -> PointRecord:
    point = Point(ServerConfig(config), Workload("oltp_read_only"), threads, 1, "d")
    if qps is None:
        return PointRecord(point, "failed", 0.0, 1.0, None, None, error=error,
                           server_failed=server_failed)
    metrics = dataclasses.replace(METRICS, qps=qps, other_cpu=other_cpu)
    return PointRecord(point, "ok", 0.0, 1.0, None, metrics)


def round_of(trial: list[float | None], reference: list[float | None], **kwargs) -> list:
    return [record("trial", 2 ** i, q, **kwargs) for i, q in enumerate(trial)] + \
        [record("ref", 2 ** i, q) for i, q in enumerate(reference)]


def test_a_reading_close_to_the_reference_is_believed():
    taken = reading(round_of([1050, 2100], [1000, 2000]), "trial", "ref")
    assert taken.value(THROUGHPUT) == pytest.approx(1.05)
    assert retake_reason(taken, taken.value(THROUGHPUT), SD) is None


@pytest.mark.parametrize("ratio", [1.5, 0.6])
def test_a_reading_far_from_the_reference_either_way_is_measured_again(ratio):
    taken = reading(round_of([1000 * ratio, 2000 * ratio], [1000, 2000]), "trial", "ref")
    why = retake_reason(taken, taken.value(THROUGHPUT), SD)
    assert why is not None and f"×{ratio:.2f}" in why


def test_a_failed_load_is_measured_again_but_a_server_that_died_is_not():
    load = reading(round_of([1000, None], [1000, 2000]), "trial", "ref")
    assert load.failed and load.cause is None
    assert "a point failed (sysbench: lost connection)" in retake_reason(load, None, SD)
    died = reading(round_of([1000, None], [1000, 2000], server_failed=True,
                            error="mariadbd exited"), "trial", "ref")
    assert died.failed and retake_reason(died, None, SD) is None


def test_a_failed_reference_is_blamed_on_the_reference_and_measured_again():
    taken = reading(round_of([1000, 2000], [1000, None]), "trial", "ref")
    assert taken.cause == REFERENCE and taken.error.startswith("its reference")
    assert retake_reason(taken, None, SD) is not None


def test_a_reading_taken_under_load_keeps_its_load_for_the_warning():
    taken = reading(round_of([1000, 2000], [1000, 2000], other_cpu=0.4), "trial", "ref")
    assert taken.loaded == pytest.approx(0.4)
    assert retake_reason(taken, 1.0, SD) is None  # a busy machine stays busy: warned, not retaken


def test_a_retake_that_fails_fails_the_trial_and_a_failed_first_reading_is_replaced():
    good = reading(round_of([1500, 3000], [1000, 2000]), "trial", "ref")
    bad = reading(round_of([1500, None], [1000, 2000]), "trial", "ref")
    assert combined(good, bad).failed
    both = combined(bad, good)
    assert not both.failed and both.value(THROUGHPUT) == pytest.approx(1.5)
    assert retake_reason(both, 1.5, SD) is None  # measured twice: believed


@given(st.floats(0.3, 3.0), st.floats(0.3, 3.0), st.floats(100, 1e5))
def test_two_readings_pool_to_the_geometric_mean_of_their_ratios(a, b, base):
    first = reading(round_of([base * a, 2 * base * a], [base, 2 * base]), "trial", "ref")
    second = reading(round_of([base * b, 2 * base * b], [base, 2 * base]), "trial", "ref")
    pooled = combined(first, second).value(THROUGHPUT)
    assert pooled == pytest.approx(math.sqrt(a * b), rel=1e-9)
    surprising = abs(math.log(a)) > SURPRISE * SD
    assert (retake_reason(first, first.value(THROUGHPUT), SD) is not None) == surprising
