"""Statistics on known samples."""

import math

import pytest
from scipy import stats as scipy_stats

from perflab.stats.summary import geometric, outliers, summarize, trend

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast


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


def test_trend_detects_drift_and_ignores_flat_noise():
    rising = trend([100, 104, 108, 112, 116, 120])
    assert rising.drift == pytest.approx(0.2 / 1.1, abs=1e-3) and rising.significant()
    flat = trend([100, 101, 99, 100, 101, 99])
    assert not flat.significant()
    assert trend([1, 2, 3]) is None


def test_trend_on_block_means_ignores_a_wandering_steady_series():
    # a steady series whose neighbours are correlated (slow regimes), as on a shared machine:
    # a line through the raw values calls it drifting, one through block means does not
    regimes = [level for level in (96, 106, 98, 108) for _ in range(5)]
    raw = scipy_stats.linregress(range(len(regimes)), regimes)
    assert raw.pvalue < 0.01 and raw.slope * 19 / 102 > 0.05  # what the old check flagged
    assert not trend(regimes).significant()
    assert trend(list(range(100, 140, 2))).significant()


def test_geometric_mean_and_its_interval():
    centre, low, high = geometric([100.0, 400.0])
    assert centre == pytest.approx(200.0)
    assert low < 200.0 < high and low > 0
