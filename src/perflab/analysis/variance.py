"""Where a comparison's round-to-round noise comes from, and where a round's seconds would cut it.

A round's log ratio varies for two reasons: each point's mean is taken over a few slices of a
series that wanders (the *within-point* part, which falls as a point holds more slices), and
whole points differ from one round to the next (the *between-round* part: the server's and the
scheduler's state, caches, a restored datadir; only more rounds average it). Kalibera & Jones
("Rigorous benchmarking in reasonable time", 2013) spend repetitions at the level that varies:
with `fixed` seconds per point that measure nothing (warm-up, connections, snapshots) and
`per_slice` seconds for one more slice of every configuration, the round's variance
B + S/n costs (fixed + per_slice * n) seconds, and the precision bought per second is greatest at
n* = sqrt(S * fixed / (B * per_slice)) slices per point.

Slices next to each other are correlated (the machine's speed wanders for seconds), so a point's
within variance is its slices' variance over n, inflated by the lag-1 autocorrelation of the
cell's slices (pooled over its points, corrected for the small-sample bias). Everything here is
estimated from a study's stored points; with few rounds the split is rough, so each row says how
many rounds it stands on.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from perflab.stats.dependence import lag1, pooled_sd
from perflab.store.records import CPU_PER_QUERY, StoredPoint, covered, ok_metrics

MAX_LAG1 = 0.8  # a higher pooled lag-1 says the point is one or two level shifts, not noise
GROWTH_CAP = 8.0  # best slices per point are reported up to this multiple of today's


@dataclass(frozen=True)
class Split:
    """The noise of one thread count's comparisons (pooled over them), split by level."""

    threads: int
    comparisons: int
    rounds: int  # rounds with both points of a comparison (summed over the comparisons)
    round_variance: float  # of a round's log ratio
    within_variance: float  # the part the points' own slices explain
    lag1: float  # pooled, bias-corrected lag-1 autocorrelation of the slices
    slices: float  # per point, today
    fixed_seconds: float  # per round at this thread count, measuring nothing
    slice_seconds: float  # one more slice of every configuration
    # of a round's log ratio of the server's CPU per query, a second response (None: the
    # points hold no server CPU)
    cpu_round_variance: float | None = None

    @property
    def within_share(self) -> float:
        return min(1.0, self.within_variance / self.round_variance) if self.round_variance else 0.0

    @property
    def between_variance(self) -> float:
        return max(0.0, self.round_variance - self.within_variance)

    @property
    def slice_variance(self) -> float:
        """The within-point variance one slice carries (a point of n slices: this / n)."""
        return self.within_variance * self.slices

    @property
    def best_slices(self) -> float:
        """Slices per point that buy the most precision per second (capped at GROWTH_CAP times
        today's when the rounds show no between-round part)."""
        cap = GROWTH_CAP * self.slices
        if self.between_variance <= 0 or self.slice_seconds <= 0:
            return cap
        best = math.sqrt(self.slice_variance * self.fixed_seconds / (self.between_variance
                                                           * self.slice_seconds))
        return min(cap, max(1.0, best))

    def seconds_for_precision(self, slices: float) -> float:
        """Seconds of rounds per unit of precision (variance x cost) at `slices` per point."""
        return ((self.between_variance + self.slice_variance / slices)
                * (self.fixed_seconds + self.slice_seconds * slices))

    @property
    def time_at_best(self) -> float:
        """The time the best split needs for today's precision, as a share of today's."""
        today = self.seconds_for_precision(self.slices)
        return self.seconds_for_precision(self.best_slices) / today if today else 1.0


def split(points: list[StoredPoint], baseline: str) -> list[Split]:
    """Per thread count, the split of the comparisons' round noise (thread counts with fewer
    than 3 paired rounds are left out)."""
    by_cell: dict[tuple[str, int], dict[int, StoredPoint]] = {}
    for point in points:
        if point.ok and ok_metrics(point).qps > 0 and len(point.series) >= 3:
            by_cell.setdefault((point.config, point.threads), {})[point.round] = point
    out = []
    for threads in sorted({t for _, t in by_cell}):
        base = by_cell.get((baseline, threads), {})
        cells = [rounds for (config, t), rounds in by_cell.items()
                 if t == threads and config != baseline]
        pairs = [[(rounds[r], base[r]) for r in sorted(rounds) if r in base] for rounds in cells]
        pairs = [p for p in pairs if len(p) >= 3]
        if pairs:
            out.append(_split(threads, pairs, _costs(points, threads)))
    return out


def _split(threads: int, pairs: list[list[tuple[StoredPoint, StoredPoint]]],
           costs: tuple[float, float]) -> Split:
    lag1 = _pooled_lag1([p for cell in pairs for pair in cell for p in pair])
    inflation = (1 + lag1) / (1 - lag1)
    round_var, within, weights, slices = 0.0, 0.0, 0, []
    for cell in pairs:
        ratios = [math.log(ok_metrics(a).qps / ok_metrics(b).qps) for a, b in cell]
        df = len(ratios) - 1
        round_var += statistics.variance(ratios) * df
        within += df * statistics.fmean(
            _mean_variance(a) * inflation + _mean_variance(b) * inflation for a, b in cell)
        weights += df
        slices += [len(p.series) for pair in cell for p in pair]
    fixed, per_slice_all = costs
    count = statistics.fmean(slices)
    return Split(threads, len(pairs), sum(len(c) for c in pairs), round_var / weights,
                 within / weights, lag1, count, fixed, per_slice_all / count,
                 _cpu_round_variance(pairs))


def _cpu_round_variance(pairs: list[list[tuple[StoredPoint, StoredPoint]]]) -> float | None:
    """The pooled round variance of the log ratio of the server's CPU per query, over the
    comparisons whose every pair has it (at least 3 rounds), or None."""
    series = []
    for cell in pairs:
        values = [(a.value(CPU_PER_QUERY), b.value(CPU_PER_QUERY)) for a, b in cell]
        ratios = [math.log(x / y) for x, y in values if x and y]
        if len(ratios) == len(cell):
            series.append(ratios)
    sd = pooled_sd(series)
    return None if sd is None else sd ** 2


def _log_slices(point: StoredPoint) -> list[float]:
    return [math.log(s.qps) for s in point.series if s.qps > 0]


def _mean_variance(point: StoredPoint) -> float:
    """The variance of the mean log throughput of a point's slices, taken as independent."""
    logs = _log_slices(point)
    return statistics.variance(logs) / len(logs) if len(logs) >= 2 else 0.0


def _pooled_lag1(points: list[StoredPoint]) -> float:
    """Lag-1 autocorrelation of the slices, each point centred on its own mean, pooled and
    bias-corrected (stats/dependence.lag1), within [0, MAX_LAG1]; 0 where it cannot be
    estimated (points of 3 slices or fewer)."""
    rho = lag1([_log_slices(point) for point in points])
    return 0.0 if math.isnan(rho) else min(MAX_LAG1, max(0.0, rho))


def _costs(points: list[StoredPoint], threads: int) -> tuple[float, float]:
    """(seconds per round at `threads` that measure nothing, measured seconds per round), the
    medians over its rounds: a round's wall time is the union of its points' spans, and its
    measured seconds the sum of its points' own (the fleet's turns and the serial points both
    exclude each other)."""
    rounds: dict[int, list[StoredPoint]] = {}
    for point in points:
        if point.ok and point.threads == threads:
            rounds.setdefault(point.round, []).append(point)
    fixed, measured = [], []
    for group in rounds.values():
        own = sum(ok_metrics(p).seconds for p in group)
        fixed.append(max(0.0, covered([(p.started_at, p.finished_at) for p in group]) - own))
        measured.append(own)
    return statistics.median(fixed), statistics.median(measured)

