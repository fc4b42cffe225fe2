"""The centre a comparison's rounds are judged on (stats/trimmed.py): the mean below 20 rounds,
the 20% trimmed mean with Yuen's standard error from then on."""

import math
import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from perflab.stats.decide import FASTER, decide
from perflab.stats.design import Design
from perflab.stats.trimmed import TRIM_FROM, centre, own_df, t_statistics, trimmed

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

ROUNDS = st.lists(st.floats(-1, 1, allow_nan=False), min_size=2, max_size=40)


def test_below_twenty_rounds_the_centre_is_the_mean_and_its_t_interval():
    values = [0.03, 0.05, 0.01, 0.04, 0.02, 0.06, 0.03, 0.04, 0.05]
    mean, se = centre(values)
    assert mean == pytest.approx(statistics.fmean(values))
    assert se == pytest.approx(statistics.stdev(values) / 3)
    assert own_df(19) == 18 and trimmed(19) == 0


def test_from_twenty_rounds_a_fifth_is_trimmed_from_each_end():
    assert [trimmed(n) for n in (20, 24, 25, 29, 30, 60)] == [4, 4, 5, 5, 6, 12]
    assert own_df(20) == 11 and own_df(60) == 35
    values = [float(v) for v in range(1, 21)]  # 1..20: the trimmed mean of 5..16
    mean, se = centre(values)
    assert mean == pytest.approx(10.5)
    winsorized = [5.0] * 5 + [float(v) for v in range(6, 16)] + [16.0] * 5
    # Yuen: (n - 1) s_w^2 / (h (h - 1)) for the h = 12 rounds kept
    assert se == pytest.approx(math.sqrt(19 * statistics.variance(winsorized) / (12 * 11)))


def test_two_wild_rounds_in_twenty_leave_a_small_real_change_decided():
    """Eighteen rounds at +3% +- 0.5%, two at -40% and +25% (rounds a burst of other work
    hit): the mean's interval straddles 0; the trimmed centre's says faster."""
    rng = np.random.default_rng(7)
    values = list(0.03 + 0.005 * rng.standard_normal(18)) + [-0.40, 0.25]
    design = Design(alpha=0.05, margin=0.05, first_look=20, last_look=20, lag1=0.0)
    verdict = decide({"x": dict(enumerate(values, 1))}, design)["x"]
    assert verdict.verdict == FASTER and 0.02 < verdict.change < 0.04
    mean_half = scipy_stats.t.ppf(0.975, 19) * statistics.stdev(values) / math.sqrt(20)
    assert statistics.fmean(values) - mean_half < 0  # the mean could not have said so


@given(ROUNDS, st.floats(-1, 1), st.floats(0.1, 10))
def test_the_centre_moves_with_a_shift_and_scales_with_a_scale(values, shift, scale):
    mean, se = centre(values)
    moved, moved_se = centre([v * scale + shift for v in values])
    assert moved == pytest.approx(mean * scale + shift, abs=1e-9)
    assert moved_se == pytest.approx(se * scale, rel=1e-6, abs=1e-9)


@given(st.lists(st.floats(-1, 1), min_size=TRIM_FROM, max_size=60), st.floats(-1e6, 1e6))
def test_one_value_anywhere_keeps_the_trimmed_centre_within_the_others(values, wild):
    """From TRIM_FROM rounds on, one round, however far out, cannot carry the centre beyond
    the range of the other rounds (the mean it would carry anywhere)."""
    others = values[1:]
    mean, _ = centre([wild, *others])
    assert min(others) - 1e-12 <= mean <= max(others) + 1e-12


@given(st.lists(ROUNDS.filter(lambda v: len(v) >= 3), min_size=1, max_size=5))
def test_the_boundarys_vectorised_statistic_is_the_verdicts(rows):
    n = min(len(r) for r in rows)
    matrix = np.array([r[:n] for r in rows])
    for row, t in zip(matrix, t_statistics(matrix), strict=True):
        mean, se = centre(list(row))
        if se > 1e-9:
            assert t == pytest.approx(mean / se, rel=1e-6)

