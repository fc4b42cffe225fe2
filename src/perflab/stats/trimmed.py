"""The centre a comparison's rounds are judged on: their mean, or from TRIM_FROM rounds on,
their 20% trimmed mean with Yuen's standard error (Yuen 1974; Wilcox, *Introduction to Robust
Estimation and Hypothesis Testing*).

Why trimmed: a cell's rounds on a shared machine are mostly tight with a few wild ones (a round
whose slices a burst of other work hit). In the small-effects plan at 4 threads (pfs and AHI
against the defaults, 53-56 rounds) the rounds' SD was 7-8% while their middle spread as 2-3%:
the 20% trimmed mean's standard error was 0.31-0.42 times the mean's, 6 to 10 times fewer
rounds for the same interval; at 64 threads, where the rounds were near normal, the two were
alike (0.79-0.93 against 0.79-0.84). Under normal noise the trimmed mean keeps about 94% of
the mean's efficiency, but the degrees of freedom it gives up cost more at the few rounds and
strict per-look levels of a study's early looks: trimmed from 10 rounds on, a +10% effect at 8%
noise a point was found in 70% of simulated studies of 3..20 looks instead of 81%, from 20 on
in 81%. Most comparisons are decided before 20 rounds; the ones that go on are those whose
tails it pays to trim (docs/STATISTICS.md §3 has the simulations).

Both the verdicts (decide.py) and the looks' boundary (sequential.py, simulated with this same
statistic) use these functions, so a look's nominal level is the one of the statistic judged.
"""

from __future__ import annotations

import math

import numpy as np

TRIM = 0.2  # share of the rounds trimmed from each end, from TRIM_FROM rounds on
TRIM_FROM = 20


def trimmed(n: int) -> int:
    """How many of n rounds are trimmed from each end."""
    return int(TRIM * n + 1e-9) if n >= TRIM_FROM else 0


def own_df(n: int) -> int:
    """The degrees of freedom n rounds give their centre's t interval."""
    return n - 2 * trimmed(n) - 1


def centre(values: list[float]) -> tuple[float, float]:
    """The centre of n >= 2 values and its standard error (the mean's, or Yuen's: from the
    winsorized variance, (n - 1) s_w^2 / (h (h - 1)) for the h values kept)."""
    n, cut = len(values), trimmed(len(values))
    kept = sorted(values)[cut:n - cut]
    winsorized = [min(max(v, kept[0]), kept[-1]) for v in values]
    mean_w = math.fsum(winsorized) / n
    variance_w = math.fsum((v - mean_w) ** 2 for v in winsorized) / (n - 1)
    h = len(kept)
    return math.fsum(kept) / h, math.sqrt((n - 1) * variance_w / (h * (h - 1)))


def t_statistics(rows: np.ndarray) -> np.ndarray:
    """Per row of `rows` (samples x n), the centre over its standard error, as `centre` gives
    them (the boundary's simulation of many null samples at once)."""
    n, cut = rows.shape[1], trimmed(rows.shape[1])
    # only the two cut points need their sorted places, the kept values between them in any
    # order: a partition, not a sort (which took most of the boundary's simulation)
    parted = np.partition(rows, (cut, n - cut - 1), axis=1)
    kept = parted[:, cut:n - cut]
    winsorized = np.clip(rows, parted[:, cut:cut + 1], parted[:, n - cut - 1:n - cut])
    variance_w = winsorized.var(axis=1, ddof=1)
    h = n - 2 * cut
    se = np.sqrt(np.maximum((n - 1) * variance_w / (h * (h - 1)), 1e-300))
    return kept.mean(axis=1) / se
