"""Repeated looks at a growing sample without inflating the error rate (a Pocock-style design
on nominal t-test levels).

perflab looks at every comparison after each round and stops measuring the ones that are
decided. Looking at a t-test after every round and stopping at the first p < a rejects a true
null far more often than a. Here every look uses the same *nominal* level a' < a, chosen so
that over all planned looks (rounds first..last) the chance that any look rejects a true null is
a: a' is the a-quantile of the smallest two-sided p-value of a t-test over those looks, for
normal data with no effect. The t statistic is pivotal (its null distribution does not depend
on the unknown variance), so a' depends only on a and the looks, and is found once by
simulation (a fixed seed: the same design always gives the same a').

Stopping earlier than the last planned look only drops looks, so the error stays below a.
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
from scipy import stats as scipy_stats

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


@lru_cache(maxsize=1024)
def nominal_level(level: float, first: int, last: int) -> float:
    """The per-look two-sided level that keeps the chance of any false rejection over the
    looks at n = first..last (all of them) at `level`."""
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if last <= first:
        return level  # one look: the plain t-test
    smallest = _smallest_null_p(first, last)
    # The level-quantile of the simulated minima, taken two standard errors low (an order
    # statistic below the estimate), so that simulation error errs on the safe side.
    expected = level * len(smallest)
    index = int(expected - 2 * math.sqrt(expected))
    return float(smallest[max(index, 0)])


@lru_cache(maxsize=32)
def _smallest_null_p(first: int, last: int) -> np.ndarray:  # ~1 s for 3..20 looks
    """min over looks n = first..last of the two-sided t-test p-value, per simulated null
    sample of `last` standard normal values, sorted."""
    rng = np.random.default_rng(SEED + 1000 * first + last)
    smallest = np.ones(PATHS)
    chunk = 50_000
    for start in range(0, PATHS, chunk):
        x = rng.standard_normal((min(chunk, PATHS - start), last))
        sums = np.cumsum(x, axis=1)
        squares = np.cumsum(x * x, axis=1)
        block = np.ones(x.shape[0])
        for n in range(max(first, 2), last + 1):
            mean = sums[:, n - 1] / n
            var = (squares[:, n - 1] - n * mean * mean) / (n - 1)
            t = mean / np.sqrt(np.maximum(var, 1e-300) / n)
            p = 2 * scipy_stats.t.sf(np.abs(t), n - 1)
            np.minimum(block, p, out=block)
        smallest[start:start + x.shape[0]] = block
    smallest.sort()
    smallest.flags.writeable = False
    return smallest
