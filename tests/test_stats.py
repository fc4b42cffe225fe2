"""Statistics on known samples."""

import math

import pytest

from perflab.stats.summary import compare, outliers, summarize, trend


def test_summary_of_a_known_sample():
    s = summarize([10.0, 12.0, 14.0])
    assert (s.n, s.median, s.mean, s.stdev) == (3, 12.0, 12.0, 2.0)
    assert s.cv == pytest.approx(2 / 12)
    # t(0.975, df=2) = 4.302653: half width 4.302653 * 2 / sqrt(3) = 4.968275
    assert s.ci_low == pytest.approx(12 - 4.968275, abs=1e-5)
    assert s.ci_high == pytest.approx(12 + 4.968275, abs=1e-5)
    assert s.half_width == pytest.approx(4.968275 / 12, abs=1e-6)


def test_a_single_value_has_no_interval():
    s = summarize([5.0])
    assert s.median == 5.0 and math.isnan(s.ci_low) and s.half_width == math.inf


def test_outliers_by_median_absolute_deviation_are_reported_not_dropped():
    values = [100.0, 101.0, 99.0, 100.5, 99.5, 140.0]
    assert outliers(values) == (5,)
    s = summarize(values)
    assert s.outliers == (5,) and s.n == 6  # still counted in the statistics
    assert outliers([100.0, 101.0, 99.0, 100.5, 99.5, 102.0]) == ()
    assert outliers([100.0, 100.0, 100.0, 100.0, 130.0]) == (4,)  # MAD = 0 fallback
    assert outliers([1.0, 50.0, 100.0]) == ()  # too few values to call anything


def test_welch_known_p_value_and_interval():
    # means 3 and 6, variances 2.5 and 10, n = 5: t = 1.897, Welch df = 5.88, p = 0.108
    c = compare([1, 2, 3, 4, 5], [2, 4, 6, 8, 10], min_effect=0.02)
    assert c.change == pytest.approx(1.0)
    assert c.p_value == pytest.approx(0.108, abs=0.002)
    assert c.verdict == "noise"  # a doubling, but not significant with this spread
    assert c.ci_low < 1.0 < c.ci_high


def test_clear_difference_is_faster_or_slower():
    base = [100.0, 101.0, 99.0, 100.0, 100.5]
    faster = compare(base, [110.0, 111.0, 109.0, 110.0, 110.5])
    assert faster.verdict == "faster" and faster.significant
    assert faster.change == pytest.approx(0.0995, abs=1e-3)
    assert faster.ci_low > 0.08 and faster.ci_high < 0.12
    slower = compare(base, [90.0, 91.0, 89.0, 90.0, 90.5])
    assert slower.verdict == "slower"


def test_significant_but_tiny_change_is_noise_under_the_minimum_effect():
    base = [100.0, 100.1, 99.9, 100.0] * 5
    other = [100.5, 100.6, 100.4, 100.5] * 5  # +0.5%, p far below 0.05
    c = compare(base, other, min_effect=0.02)
    assert c.p_value < 1e-6
    assert c.verdict == "noise"
    assert compare(base, other, min_effect=0.001).verdict == "faster"


def test_too_few_repeats_give_no_verdict():
    assert compare([100.0], [120.0]).verdict == "too few repeats"


def test_trend_detects_drift_and_ignores_flat_noise():
    rising = trend([100, 104, 108, 112, 116, 120])
    assert rising.drift == pytest.approx(0.2 / 1.1, abs=1e-3) and rising.significant()
    flat = trend([100, 101, 99, 100, 101, 99])
    assert not flat.significant()
    assert trend([1, 2, 3]) is None


def test_no_verdict_beside_an_interval_that_holds_zero():
    # Welch's p is 0.029 here, but the ratio's delta-method interval, which scales the
    # baseline's wide spread by the ratio, still reaches below zero: that is noise.
    base = [111.6, 91.2, 82.4, 104.5]
    other = [123.3, 122.9, 122.4, 124.0]
    c = compare(base, other)
    assert c.p_value == pytest.approx(0.0292, abs=0.001)
    assert c.ci_low < 0 < c.ci_high
    assert c.verdict == "noise"
