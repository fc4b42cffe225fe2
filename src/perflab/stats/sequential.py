"""Repeated looks at a growing sample without inflating the error rate: nominal t-test levels
on a Wang-Tsiatis boundary.

perflab looks at every comparison after each round and stops measuring the ones that are
decided. Looking at a t-test after every round and stopping at the first p < a rejects a true
null far more often than a. Here the look at n rounds uses a *nominal* level a'(n) < a: on the
normal scale, the t-test's p-value must fall below the tail beyond C * (n / last) ** (shape -
1/2), with C chosen so that over all planned looks (rounds first..last) the chance that any
look rejects a true null is a (Wang and Tsiatis 1987).

- shape 1/2 is Pocock's design: the same level at every look, robust when the number of looks
  that will happen is unknown;
- a smaller shape asks more of early looks and less of late ones, so a study that reaches its
  last planned look judges it nearly at the fixed-sample level. perflab uses 1/4 when the
  looks were fitted to what the time budget holds (plan.RunSettings.planned_rounds).

C is the a-quantile of max over looks of the t-test's normal score times (n / last) ** (1/2 -
shape), for normal data with no effect; the t statistic is the one the verdicts use (of the
trimmed mean from trimmed.TRIM_FROM rounds on). It is pivotal (its null distribution does
not depend on the unknown variance), so C depends only on a, the looks and the shape, and is
found once by simulation (a fixed seed: the same design always gives the same levels).

Stopping earlier than the last planned look only drops looks, so the error stays below a.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats as scipy_stats

from perflab.stats.trimmed import own_df, t_statistics, trimmed

PATHS = 200_000  # simulated null samples: a' for a = 0.001 rests on ~200 of them
SEED = 20260101


def critical_t(level: float, df: float) -> float:
    """The two-sided t quantile: |T| with df degrees of freedom exceeds it with probability
    `level`. Fractional df (a moderated variance's) are rounded down to a quarter, which only
    widens an interval, so that the quantiles of a run's looks are computed once."""
    return _critical_t(level, math.floor(df * 4) / 4)


@lru_cache(maxsize=16384)
def _critical_t(level: float, df: float) -> float:
    return float(scipy_stats.t.ppf(1 - level / 2, df))


@lru_cache(maxsize=16384)
def nominal_level(level: float, first: int, last: int, rounds: int | None = None,
                  shape: float = 0.5) -> float:
    """The two-sided level of the look at `rounds` rounds (default: the last) that keeps the
    chance of any false rejection over the looks at n = first..last at `level`, on the
    boundary of `shape` (default: Pocock's, stats.design.POCOCK_SHAPE; design.py, which holds
    it, imports this module only when it decides, so this one does not import it back)."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if last <= first:
        return level  # one look: the plain t-test
    n = last if rounds is None else min(max(rounds, first), last)
    edge = _constant(level, first, last, shape) * (n / last) ** (shape - 0.5)
    return float(2 * scipy_stats.norm.sf(edge))


@lru_cache(maxsize=1024)
def _constant(level: float, first: int, last: int, shape: float) -> float:
    """C of the boundary: the level-quantile from the top of the simulated maxima, taken two
    standard errors high (an order statistic above the estimate), so that simulation error
    errs on the safe side."""
    scores = _null_scores(first, last)
    looks = np.arange(max(first, 2), last + 1)
    weights = (looks / last) ** (0.5 - shape)
    maxima = np.sort((scores * weights).max(axis=1))[::-1]
    expected = level * len(maxima)
    index = int(expected - 2 * math.sqrt(expected))
    return float(maxima[max(index, 0)])


@lru_cache(maxsize=4)  # ~29 MB each for 3..20 looks; the constants are cached apart
def _null_scores(first: int, last: int) -> np.ndarray:  # ~1 s for 3..20 looks
    """Per simulated null sample of `last` standard normal values (a row), the normal score
    of the two-sided t-test's p-value at each look n = first..last (a column)."""
    rng = np.random.default_rng(SEED + 1000 * first + last)
    looks = range(max(first, 2), last + 1)
    scores = np.empty((PATHS, len(looks)))
    chunk = 50_000
    for start in range(0, PATHS, chunk):
        x = rng.standard_normal((min(chunk, PATHS - start), last))
        sums = np.cumsum(x, axis=1)
        squares = np.cumsum(x * x, axis=1)
        for column, n in enumerate(looks):
            if trimmed(n):
                t = t_statistics(x[:, :n])
            else:
                mean = sums[:, n - 1] / n
                var = (squares[:, n - 1] - n * mean * mean) / (n - 1)
                t = mean / np.sqrt(np.maximum(var, 1e-300) / n)
            tail = scipy_stats.t.sf(np.abs(t), own_df(n))
            scores[start:start + x.shape[0], column] = scipy_stats.norm.isf(
                np.maximum(tail, 1e-300))
    scores.flags.writeable = False
    return scores
