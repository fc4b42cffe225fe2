"""How a comparison's rounds depend on one another: what the t interval's independence assumes
and a machine may not give. Drift that slices do not cancel makes consecutive rounds alike
(a positive lag-1 autocorrelation), which narrows an interval below its stated level; slow
rounds more common than fast ones skew the log ratios.

Both are pooled over a family's comparisons (each centred on its own mean): one comparison's
few rounds say little, a table's say more.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence


def lag1(series: Sequence[Sequence[float]]) -> float:
    """The lag-1 autocorrelation of rounds, pooled over `series` (each a comparison's rounds
    in order), with the small-sample bias of a mean-centred estimate removed (Kendall:
    E[r] is about rho - (1 + 3 rho) / n); nan with fewer than 8 rounds in all."""
    products = squares = 0.0
    rounds = 0
    lengths = []
    for values in series:
        n = len(values)
        if n < 3:
            continue
        mean = math.fsum(values) / n
        centred = [v - mean for v in values]
        products += math.fsum(a * b for a, b in zip(centred[:-1], centred[1:], strict=True))
        squares += math.fsum(c * c for c in centred)
        rounds += n
        lengths.append(n)
    if rounds < 8 or squares == 0:
        return math.nan
    r = products / squares
    length = rounds / len(lengths)  # the comparisons' mean length
    return max(-1.0, min(1.0, (r * length + 1) / (length - 3))) if length > 3 else math.nan


def pooled_sd(series: Sequence[Sequence[float]]) -> float | None:
    """The per-round sd pooled over `series` (each comparison about its own mean, weighted by
    its degrees of freedom); None when no comparison has two rounds."""
    used = [values for values in series if len(values) >= 2]
    df = sum(len(values) - 1 for values in used)
    if not df:
        return None
    return math.sqrt(math.fsum((len(v) - 1) * statistics.variance(v) for v in used) / df)


def skewness(series: Sequence[Sequence[float]]) -> float:
    """The skewness of the rounds about their comparison's mean, pooled over `series`; nan
    with fewer than 8 rounds in all."""
    centred = []
    for values in series:
        if len(values) >= 2:
            mean = math.fsum(values) / len(values)
            centred += [v - mean for v in values]
    if len(centred) < 8:
        return math.nan
    variance = math.fsum(c * c for c in centred) / len(centred)
    if variance == 0:
        return 0.0
    return math.fsum(c ** 3 for c in centred) / len(centred) / variance ** 1.5
