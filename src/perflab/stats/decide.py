"""Verdicts for a family of comparisons, with the family's error rate kept.

A *cell* is one configuration against the baseline at one thread count. Each round measures both
close in time, so a round gives one value: the log of their throughput ratio. A cell's estimate
is the mean of those values, its interval a t interval on that mean, back-transformed to a ratio
(so an interval never reaches below -100%). Two labs, which cannot be paired, are compared the
same way on Welch's estimate of the difference of their mean log throughputs.

Four verdicts:
- **equivalent**: the whole interval lies within ±margin (both one-sided tests of TOST);
- **faster** / **slower**: the interval excludes 0 (and is not all within the margin);
- **inconclusive**: neither yet, with the rounds the measured noise says it would take.

The family is every cell of one table. Each cell carries two hypotheses, "no difference" and
"a difference of at least the margin"; at most one of the two is true, so the family holds at
most one true null per cell. Shaffer's step-down (Holm's, sharpened by that constraint) tests
the open hypotheses at alpha / t, t being the number of cells not yet fully decided, and loosens
as cells are decided. Both hypotheses of a cell are judged on the same interval (equivalence at
half the level per side, which is conservative), so the interval shown is the one the verdict
rests on. Looks after every round use the nominal levels of sequential.py, and a verdict, once
given, is final: the data of later rounds cannot undo it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from perflab.stats.design import Design
from perflab.stats.sequential import critical_t

FASTER, SLOWER, EQUIVALENT, INCONCLUSIVE = "faster", "slower", "equivalent", "inconclusive"
TOO_FEW = "too few rounds"
DECIDED = (FASTER, SLOWER, EQUIVALENT)


@dataclass(frozen=True)
class Estimate:
    """A log-ratio estimate with its standard error and degrees of freedom."""

    mean: float
    se: float
    df: float
    n: int  # rounds (paired), or the smaller side's values (two labs)
    sd: float = math.nan  # per-round standard deviation of a paired estimate

    def half_width(self, nominal: float) -> float:
        if self.df < 1 or not math.isfinite(self.se):
            return math.inf
        return critical_t(nominal, self.df) * self.se


def paired(values: list[float]) -> Estimate:
    """The mean of per-round log ratios, with a t interval's standard error."""
    n = len(values)
    mean = math.fsum(values) / n if n else math.nan
    if n < 2:
        return Estimate(mean, math.inf, 0, n)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    return Estimate(mean, sd / math.sqrt(n), n - 1, n, sd)


def welch(base: list[float], other: list[float]) -> Estimate:
    """mean(other) - mean(base) of two independent samples of log throughput, Welch's
    standard error and degrees of freedom."""
    a, b = paired(base), paired(other)
    n = min(a.n, b.n)
    if n < 2:
        return Estimate(b.mean - a.mean, math.inf, 0, n)
    va, vb = a.se ** 2, b.se ** 2
    se = math.sqrt(va + vb)
    if se == 0:
        return Estimate(b.mean - a.mean, 0.0, a.n + b.n - 2, n)
    df = (va + vb) ** 2 / (va ** 2 / (a.n - 1) + vb ** 2 / (b.n - 1))
    return Estimate(b.mean - a.mean, se, df, n)


@dataclass(frozen=True)
class Verdict:
    verdict: str  # faster, slower, equivalent, inconclusive, or "too few rounds"
    n: int
    change: float  # exp(estimated log ratio) - 1
    low: float  # interval, as changes; nan without one
    high: float
    level: float  # the family-wise share of alpha behind the interval (alpha / t)
    sd: float = math.nan  # per-round standard deviation of the log ratios (paired)
    look: int | None = None  # the round of the look that decided it
    more_rounds: int | None = None  # inconclusive: rounds more the noise says it needs

    @property
    def decided(self) -> bool:
        return self.verdict in DECIDED

    def interval_text(self) -> str:
        if math.isnan(self.low):
            return "-"
        return f"[{self.low:+.1%}, {self.high:+.1%}]"


class Judge:
    """The verdicts of one family, look after look. After each round, `look` at every cell's
    estimate so far; a cell it decides stays decided."""

    def __init__(self, keys: list, design: Design):
        self.design = design
        self.final: dict[object, Verdict] = {}
        self.rejected: dict[object, set[str]] = {key: set() for key in keys}

    def open_cells(self) -> int:
        """Cells that can still hold a true null (fewer than both hypotheses rejected)."""
        return sum(len(r) < 2 for r in self.rejected.values())

    def level(self) -> float:
        """The share of alpha an open hypothesis is tested at now (Shaffer: alpha / t)."""
        return self.design.alpha / max(1, self.open_cells())

    def look(self, estimates: Mapping[object, Estimate], look: int | None = None) -> None:
        """Shaffer's step-down over the cells not decided yet."""
        low_bound, high_bound = self.design.bounds
        while True:
            level = self.level()
            nominal = self.design.nominal(level)
            newly = False
            for key, estimate in estimates.items():
                if key in self.final or estimate.n < 2:
                    continue
                mean, half = estimate.mean, estimate.half_width(nominal)
                found = set()
                if mean - half > 0 or mean + half < 0:
                    found.add("diff")
                if low_bound < mean - half and mean + half < high_bound:
                    found.add("eq")
                if found:
                    self.rejected[key] |= found
                    name = EQUIVALENT if "eq" in found else (FASTER if mean > 0 else SLOWER)
                    self.final[key] = self._verdict(name, estimate, level, look)
                    newly = True
            if not newly:
                return

    def verdicts(self, estimates: Mapping[object, Estimate]) -> dict[object, Verdict]:
        """Every cell's verdict: the decided ones as decided, the others with their interval at
        the current level and, for paired ones, the rounds they would still need."""
        level = self.level()
        out = {}
        for key, estimate in estimates.items():
            if key in self.final:
                out[key] = self.final[key]
            elif estimate.n < 2:
                out[key] = self._verdict(TOO_FEW, estimate, level)
            else:
                out[key] = self._projected(self._verdict(INCONCLUSIVE, estimate, level),
                                           estimate)
        return out

    def _verdict(self, name: str, estimate: Estimate, level: float,
                 look: int | None = None) -> Verdict:
        half = estimate.half_width(self.design.nominal(level))
        change = math.expm1(estimate.mean)
        if not math.isfinite(half):
            return Verdict(name, estimate.n, change, math.nan, math.nan, level, estimate.sd,
                           look)
        return Verdict(name, estimate.n, change, math.expm1(estimate.mean - half),
                       math.expm1(estimate.mean + half), level, estimate.sd, look)

    def _projected(self, verdict: Verdict, estimate: Estimate) -> Verdict:
        """How many more rounds, if the mean and spread stay as measured, until the interval
        excludes 0 or fits within the margin (None: not within the design's rounds, or not a
        paired estimate)."""
        if not math.isfinite(estimate.sd):
            return verdict
        design, mean, n = self.design, estimate.mean, estimate.n
        low_bound, high_bound = design.bounds
        nominal = design.nominal(verdict.level)
        limit = design.last_look if design.sequential else n + 100
        for total in range(n + 1, limit + 1):
            half = half_width(estimate.sd, total, nominal)
            if abs(mean) > half or (low_bound < mean - half and mean + half < high_bound):
                return replace(verdict, more_rounds=total - n)
        return verdict


def half_width(sd: float, rounds: int, level: float) -> float:
    """The half width, on the log scale, of the t interval of a mean over `rounds` rounds
    whose per-round spread is `sd`, at two-sided `level` (infinite below 2 rounds)."""
    if rounds < 2:
        return math.inf
    return critical_t(level, rounds - 1) * sd / math.sqrt(rounds)


def decide(cells: Mapping[object, Mapping[int, float]], design: Design) -> dict[object, Verdict]:
    """Verdicts for every cell from its per-round log ratios ({round: log ratio}).

    With one planned look the look is at the rounds there are. With a look after every round,
    the looks are replayed round by round up to the design's last, so the verdicts of a resumed
    or re-read study are the ones the run gave.
    """
    last_round = max((r for rounds in cells.values() for r in rounds), default=0)
    if design.sequential:
        looks = range(design.first_look, min(last_round, design.last_look) + 1)
    else:
        looks = [last_round] if last_round >= 2 else []
    judge = Judge(list(cells), design)
    for look in looks:
        judge.look({key: paired([v for r, v in sorted(rounds.items()) if r <= look])
                    for key, rounds in cells.items()}, look)
    return judge.verdicts({key: paired([v for _, v in sorted(rounds.items())])
                           for key, rounds in cells.items()})


def log_ratios(throughput: Mapping[tuple[str, int, int], float], baseline: str,
               configs: Sequence[str], threads: Sequence[int]
               ) -> dict[tuple[str, int], dict[int, float]]:
    """{(config, threads, round): throughput} -> {(config, threads): {round: log ratio to the
    baseline at the same threads and round}}, for the rounds that measured both.

    The family is every comparison of `configs` with the baseline at `threads`, measured or
    not (an unmeasured one has no rounds): the run that decides when to stop and the report
    that replays its looks must judge the same family."""
    cells: dict[tuple[str, int], dict[int, float]] = {
        (config, t): {} for config in configs if config != baseline for t in threads}
    for (config, threads, round_number), value in throughput.items():
        if (config, threads) not in cells:
            continue
        base = throughput.get((baseline, threads, round_number))
        if base and value and base > 0 and value > 0:
            cells[(config, threads)][round_number] = math.log(value / base)
    return cells


def detectable_change(sd: float, n: int, level: float, design: Design,
                      power: float = 0.8) -> float:
    """The smallest true change (a ratio - 1) that n rounds with this per-round spread would
    call faster with the given power, at the family share `level` of alpha."""
    from scipy import stats as scipy_stats

    if n < 2 or not math.isfinite(sd):
        return math.inf
    shift = critical_t(design.nominal(level), n - 1) + scipy_stats.norm.ppf(power)
    return math.expm1(shift * sd / math.sqrt(n))
