"""Statistics of one cell's repeated measurements (comparisons are in decide.py).

- `summarize`: median, mean, standard deviation, coefficient of variation and a 95% Student-t
  interval of the mean; outliers by the modified z-score (median/MAD), shown, never dropped.
- `geometric`: geometric mean and its interval, for throughput;
- `trend`: whether a point's series drifts within its measured window (on block means).
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


def geometric(values: list[float], confidence: float = CONFIDENCE
              ) -> tuple[float, float, float]:
    """Geometric mean of positive values with the interval of the mean of their logs, back
    transformed: throughput is a rate, and its ratios are what engineers compare."""
    logs = [math.log(v) for v in values]
    s = summarize(logs, confidence)
    if s.n < 2:
        return math.exp(s.mean), math.exp(s.mean), math.exp(s.mean)
    return math.exp(s.mean), math.exp(s.ci_low), math.exp(s.ci_high)


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


@dataclass(frozen=True)
class Trend:
    drift: float  # fitted change over the window, relative to the mean (0.1 = +10%)
    p_value: float

    def significant(self, threshold: float = 0.05) -> bool:
        return self.p_value < 0.05 and abs(self.drift) >= threshold


MAX_BLOCKS = 5


def trend(series: list[float]) -> Trend | None:
    """The drift of a throughput series over its window, judged on block means.

    Neighbouring values of a series are correlated (the machine's speed wanders over seconds),
    so a line through the raw values finds "significant" trends in steady runs. The means of a
    few contiguous blocks are close to independent: a line through them, with blocks - 2
    degrees of freedom, is an honest test. None below 6 values (3 blocks of 2).
    """
    blocks = min(MAX_BLOCKS, len(series) // 2)
    if blocks < 3:
        return None
    mean = statistics.fmean(series)
    if mean == 0:
        return None
    edges = [round(i * len(series) / blocks) for i in range(blocks + 1)]
    centres = [(edges[i] + edges[i + 1] - 1) / 2 for i in range(blocks)]
    means = [statistics.fmean(series[edges[i]:edges[i + 1]]) for i in range(blocks)]
    fit = scipy_stats.linregress(centres, means)
    drift = fit.slope * (len(series) - 1) / mean
    return Trend(drift, float(fit.pvalue))
