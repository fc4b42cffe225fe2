"""Statistics over repeats: is a difference real, or noise?

- `summarize`: median, mean, standard deviation, coefficient of variation and a 95% Student-t
  interval of the mean; outliers by the modified z-score (median/MAD), shown, never dropped.
- `compare`: a configuration against the baseline at one thread count: the relative change of
  the means with a 95% interval (delta method, Welch degrees of freedom) and a verdict from
  Welch's t-test plus a minimum effect size, so a "significant" 0.3% is still called noise.
- `trend`: whether a point's per-second series drifts within its measured window.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from scipy import stats as scipy_stats

CONFIDENCE = 0.95
MAD_THRESHOLD = 3.5  # Iglewicz and Hoaglin's cut-off for the modified z-score
MAD_SCALE = 0.6745  # makes MAD comparable to a standard deviation for normal data
OUTLIER_MIN_N = 5  # below this a median absolute deviation says too little to call outliers


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    mean: float
    stdev: float  # sample standard deviation; nan below 2 values
    cv: float  # stdev / mean
    ci_low: float  # 95% interval of the mean; nan below 2 values
    ci_high: float
    outliers: tuple[int, ...]  # indexes into the values, by the modified z-score

    @property
    def half_width(self) -> float:
        """The interval's half width relative to the mean (0.02 = ±2%)."""
        if self.n < 2 or self.mean == 0:
            return math.inf
        return (self.ci_high - self.ci_low) / 2 / abs(self.mean)


@dataclass(frozen=True)
class Comparison:
    change: float  # mean(other) / mean(base) - 1
    ci_low: float
    ci_high: float
    p_value: float
    verdict: str  # "faster", "slower", "noise" or "too few repeats"

    @property
    def significant(self) -> bool:
        return self.verdict in ("faster", "slower")


def summarize(values: list[float], confidence: float = CONFIDENCE) -> Summary:
    if not values:
        raise ValueError("no values to summarize")
    n = len(values)
    mean = statistics.fmean(values)
    median = statistics.median(values)
    if n < 2:
        nan = math.nan
        return Summary(n, median, mean, nan, nan, nan, nan, ())
    stdev = statistics.stdev(values)
    half = scipy_stats.t.ppf((1 + confidence) / 2, n - 1) * stdev / math.sqrt(n)
    cv = stdev / mean if mean else math.nan
    return Summary(n, median, mean, stdev, cv, mean - half, mean + half, outliers(values))


def outliers(values: list[float], threshold: float = MAD_THRESHOLD) -> tuple[int, ...]:
    """Indexes of values whose modified z-score |0.6745 (x - median) / MAD| exceeds threshold."""
    if len(values) < OUTLIER_MIN_N:
        return ()
    median = statistics.median(values)
    deviations = [abs(v - median) for v in values]
    mad = statistics.median(deviations)
    if mad > 0:
        scores = [MAD_SCALE * d / mad for d in deviations]
    else:
        # More than half the values are equal: fall back to the mean absolute deviation
        # (scaled to match a standard deviation, as in IBM's and Iglewicz's variant).
        mean_ad = statistics.fmean(deviations)
        if mean_ad == 0:
            return ()
        scores = [d / (1.253314 * mean_ad) for d in deviations]
    return tuple(i for i, score in enumerate(scores) if score > threshold)


def compare(
    base: list[float],
    other: list[float],
    min_effect: float = 0.02,
    confidence: float = CONFIDENCE,
) -> Comparison:
    """`other` against `base`: relative change of the means, its interval and a verdict.

    The verdict is "faster"/"slower" only when Welch's t-test rejects equal means at the
    confidence level, the interval of the change excludes zero *and* the change is at least
    min_effect; otherwise "noise".
    """
    mean_b, mean_o = statistics.fmean(base), statistics.fmean(other)
    change = mean_o / mean_b - 1 if mean_b else math.nan
    if len(base) < 2 or len(other) < 2:
        return Comparison(change, math.nan, math.nan, math.nan, "too few repeats")
    var_b, var_o = statistics.variance(base), statistics.variance(other)
    se_b2, se_o2 = var_b / len(base), var_o / len(other)
    if se_b2 + se_o2 == 0:
        p_value = 0.0 if mean_b != mean_o else 1.0
        half = 0.0
    else:
        p_value = float(scipy_stats.ttest_ind(other, base, equal_var=False).pvalue)
        df = (se_b2 + se_o2) ** 2 / (
            se_b2**2 / (len(base) - 1) + se_o2**2 / (len(other) - 1)
        )
        ratio = mean_o / mean_b
        # delta method for the ratio of two independent means
        se_ratio = ratio * math.sqrt(se_b2 / mean_b**2 + se_o2 / mean_o**2)
        half = scipy_stats.t.ppf((1 + confidence) / 2, df) * se_ratio
    low, high = change - half, change + half
    # All three must agree, so that a verdict never sits beside an interval that holds zero
    # (Welch's test and the ratio's interval can disagree at the margin).
    significant = (p_value < 1 - confidence and (low > 0 or high < 0)
                   and abs(change) >= min_effect)
    verdict = ("faster" if change > 0 else "slower") if significant else "noise"
    return Comparison(change, low, high, p_value, verdict)


@dataclass(frozen=True)
class Trend:
    drift: float  # fitted change over the window, relative to the mean (0.1 = +10%)
    p_value: float

    def significant(self, threshold: float = 0.05) -> bool:
        return self.p_value < 0.05 and abs(self.drift) >= threshold


def trend(series: list[float]) -> Trend | None:
    """A least-squares line through a per-second series; None below 4 samples."""
    if len(series) < 4:
        return None
    mean = statistics.fmean(series)
    if mean == 0:
        return None
    fit = scipy_stats.linregress(range(len(series)), series)
    drift = fit.slope * (len(series) - 1) / mean
    return Trend(drift, float(fit.pvalue))
