"""Verdicts for a family of comparisons, with the family's error rate kept.

A *cell* is one configuration against the baseline at one thread count. Each round measures both
close in time, so a round gives one value: the log of their throughput ratio. A cell's estimate
is the mean of those values (their 20% trimmed mean from 20 rounds on: trimmed.py), its
interval a t interval on it, back-transformed to a ratio (so an interval never reaches below
-100%). Two labs, which cannot be paired, are compared the same way on Welch's estimate of the
difference of their mean log throughputs.

Four verdicts:
- **equivalent**: the whole interval lies within ±margin (both one-sided tests of TOST) and
  does not exclude 0;
- **faster** / **slower**: the interval excludes 0; when TOST also puts it within the margin,
  the verdict says so (`within_margin`: a real change, smaller than the margin), instead of
  calling a +2.7% [+0.5%, +4.9%] "equivalent" to a user who asked whether it pays;
- **inconclusive**: neither yet, with the rounds the measured noise says it would take.

The cells of one table share what they say of the noise: each paired cell's per-round variance
is moderated toward what all the cells' variances say together (an empirical Bayes prior, as
limma's moderated t of Smyth 2004: the prior's degrees of freedom are estimated from how much
the cells' variances differ beyond chance, so cells whose noise really differs, such as 1 and 2
threads on a 2-core machine, borrow little, and alike ones borrow much). A cell then has the
degrees of freedom of its own rounds plus the prior's (capped at what all the cells' rounds
hold), instead of its own few rounds'. Cells a screen finds noisier (an F test at 20%) keep
their own variance.

The family is every cell of one table. Each cell carries two hypotheses, "no difference" and
"a difference of at least the margin"; at most one of the two is true, so the family holds at
most one true null per cell. Shaffer's step-down (Holm's, sharpened by that constraint) tests
the open hypotheses at alpha / t, t being the number of cells not yet fully decided, and loosens
as cells are decided. "No difference" is judged on the two-sided interval at that level;
"a difference of at least the margin" by TOST, two one-sided tests each at that level, that is
on the interval of twice the level, which an equivalent verdict shows. Looks after every round
use the nominal levels of sequential.py, and a verdict, once given, is final: the data of later
rounds cannot undo it.

A difference, once found, may still be measured on (running/rounds.py: until its rounds could
detect a change the size of the margin), so that its size is known and not only its sign. Its
verdict stays the one given; its estimate and interval are then those of all its rounds, at the
family share it was decided at and on the boundary of the look at that many rounds: a repeated
confidence interval (Jennison and Turnbull), as valid at any look as the one at the decision.
Should that interval no longer support the verdict, the decision's own figures stay and the
verdict is marked disputed.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Generic, TypeVar

import numpy as np

from perflab.stats.design import Design
from perflab.stats.sequential import critical_t
from perflab.stats.trimmed import centre, own_df


class Decision(StrEnum):
    """What a comparison's rounds say (a Verdict's `verdict`)."""

    FASTER = "faster"
    SLOWER = "slower"
    EQUIVALENT = "equivalent"
    INCONCLUSIVE = "inconclusive"
    TOO_FEW = "too few rounds"


FASTER, SLOWER, EQUIVALENT, INCONCLUSIVE, TOO_FEW = Decision
LENT_PER_OWN = 1  # a prior lends at most a cell's own degrees of freedom
UNLIKE = 0.2  # a cell noisier than the family's prior at this level keeps its own variance
MAX_LAG1 = 0.6  # an autocorrelation estimated above this is taken as this
POWER_Z = 0.8416212335729143  # normal 80% quantile: "more rounds" and "detectable" at 80% power
DECIDED = (FASTER, SLOWER, EQUIVALENT)
LOG_LIMIT = 700.0  # exp() of more overflows a float

K = TypeVar("K", bound=Hashable)  # a family's cell key, e.g. (configuration, threads)


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
    """The centre of per-round log ratios (their mean, or their trimmed mean from TRIM_FROM
    rounds on: stats/trimmed.py), with a t interval's standard error."""
    n = len(values)
    if n < 2:
        return Estimate(math.fsum(values) / n if n else math.nan, math.inf, 0, n)
    mean, se = centre(values)
    return Estimate(mean, se, own_df(n), n, se * math.sqrt(n))


@dataclass(frozen=True)
class VariancePrior:
    """What a family's cells say together of one cell's per-round variance: a scaled
    inverse-chi-square prior with `df` degrees of freedom around `variance`; `total_df`, the
    degrees of freedom of all the cells' rounds, is the most a moderated cell can have."""

    df: float
    variance: float
    total_df: float


def variance_prior(estimates: Sequence[Estimate]) -> VariancePrior | None:
    """The prior the paired cells' variances support (Smyth's moment estimate on log
    variances), or None with fewer than 3 cells of 2 rounds or more.

    The spread of the cells' log variances beyond what their own degrees of freedom explain
    gives the prior's: cells whose noise differs get a small one (little borrowed), cells alike
    a large one, never more than all their rounds hold together.
    """
    from scipy import special

    usable = [e for e in estimates if e.df >= 1 and math.isfinite(e.sd) and e.sd > 0]
    if len(usable) < 3:
        return None
    df = np.array([e.df for e in usable], dtype=float)
    variances = np.array([e.sd ** 2 for e in usable])
    total_df = float(df.sum())
    logs = np.log(variances) - special.digamma(df / 2) + np.log(df / 2)
    mean = float(logs.mean())
    spread = float(logs.var(ddof=1) - special.polygamma(1, df / 2).mean())
    if spread <= 0:  # no more spread than chance: one variance for all
        return VariancePrior(total_df, float((df * variances).sum()) / total_df, total_df)
    prior_df = min(2 * _inverse_trigamma(spread), total_df)
    variance = math.exp(mean + float(special.digamma(prior_df / 2)) - math.log(prior_df / 2))
    return VariancePrior(prior_df, variance, total_df)


def _inverse_trigamma(y: float) -> float:
    """x with trigamma(x) = y (Newton's method on 1/trigamma, as limma's trigammaInverse)."""
    from scipy import special

    if y > 1e7:
        return 1 / math.sqrt(y)
    if y < 1e-6:
        return 1 / y
    x = 0.5 + 1 / y
    for _ in range(50):
        tri = float(special.polygamma(1, x))
        step = tri * (1 - tri / y) / float(special.polygamma(2, x))
        x += step
        if -step / x < 1e-8:
            break
    return x


def moderated(estimate: Estimate, prior: VariancePrior | None) -> Estimate:
    """A paired estimate whose variance borrows the prior's (posterior mean of the variance,
    degrees of freedom added), the prior weighing at most LENT_PER_OWN times the cell's own
    degrees of freedom: with few rounds the cells' real differences in noise hide under
    chance, and a prior that weighed more pulled the noisier cells' intervals too narrow (in
    bench/error_rates.py's tables, 4% noise with ten times the variance at one thread count
    made 7.8% false tables lending twice, 2.6% lending once with the screen at 20%)."""
    if prior is None or estimate.df < 1 or not math.isfinite(estimate.sd):
        return estimate
    lent = min(prior.df, LENT_PER_OWN * estimate.df)
    weight = estimate.df + lent
    sd = math.sqrt((lent * prior.variance + estimate.df * estimate.sd ** 2) / weight)
    df = min(weight, prior.total_df)  # the cell's own rounds are among the prior's
    return Estimate(estimate.mean, sd / math.sqrt(estimate.n), df, estimate.n, sd)


def widened(estimate: Estimate, rho: float) -> Estimate:
    """A paired estimate whose rounds have lag-1 autocorrelation `rho` (AR(1)): its spread
    widened by how much the mean's variance exceeds what independent rounds would give, and
    the sample variance falls short of the rounds' (nothing changes for rho <= 0, which only
    makes an interval err on the wide side)."""
    n = estimate.n
    if not (rho > 0) or n < 2 or not math.isfinite(estimate.sd):
        return estimate
    rho = min(rho, MAX_LAG1)
    tail = math.fsum((1 - k / n) * rho ** k for k in range(1, n))
    factor = math.sqrt((1 + 2 * tail) / (1 - 2 * tail / (n - 1)))
    return Estimate(estimate.mean, estimate.se * factor, estimate.df, n, estimate.sd * factor)


def family_estimates(series: Mapping[K, Sequence[float]], least_lag1: float = 0.0
                     ) -> dict[K, Estimate]:
    """The estimate of every cell of a family from its per-round log ratios (in round order):
    paired, its variance moderated by what the family's variances say together, widened by
    the lag-1 autocorrelation of rounds: `least_lag1`, or more when the family's own rounds
    show more beyond one standard error (about 1 / sqrt(rounds); stats/dependence.py).

    The prior is estimated from every cell, and only the cells its screen finds alike borrow
    from it: estimated again from those alone, it would be drawn from the cells whose sample
    variances happened to be low, and too narrow for them (with a screen liberal enough to
    catch a cell ten times noisier at 2 degrees of freedom, that made 7% false tables)."""
    from perflab.stats.dependence import lag1

    own = {key: paired(list(values)) for key, values in series.items()}
    prior = variance_prior(list(own.values()))
    if prior is not None:  # cells noisier than the others keep their own variance
        alike = [key for key, noisier in zip(own, _noisier(list(own.values()), prior),
                                             strict=True) if not noisier]
        own = {key: moderated(e, prior) if key in alike else e for key, e in own.items()}
    measured = lag1(list(series.values()))
    rounds = sum(len(values) for values in series.values())
    if math.isfinite(measured):  # more than the design's, where the rounds show it
        rho = max(least_lag1, measured - 1 / math.sqrt(rounds))
    else:
        rho = least_lag1
    return {key: widened(e, rho) for key, e in own.items()}


def _noisier(estimates: list[Estimate], prior: VariancePrior) -> list[bool]:
    """Per estimate, whether it may be noisier than the prior says a cell of its kind is (a
    one-sided F test at UNLIKE, 20%: at 2-4 degrees of freedom a test at 1% misses a cell ten
    times noisier one time in three, and that cell, shrunk toward the others, gets a falsely
    narrow interval; a quiet cell wrongly kept apart only loses the degrees of freedom it
    would have borrowed). A cell quieter than the prior borrows: that only widens its
    interval."""
    from scipy import stats as scipy_stats

    df = np.array([e.df if e.df >= 1 and math.isfinite(e.sd) else 1.0 for e in estimates])
    ratio = np.array([e.sd ** 2 / prior.variance if e.df >= 1 and math.isfinite(e.sd) else 0.0
                      for e in estimates])
    return list(scipy_stats.f.sf(ratio, df, prior.df) < UNLIKE)


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
    df = (va + vb) ** 2 / (va ** 2 / a.df + vb ** 2 / b.df)
    return Estimate(b.mean - a.mean, se, df, n)


@dataclass(frozen=True)
class Verdict:
    verdict: Decision  # faster, slower, equivalent, inconclusive, or "too few rounds"
    n: int
    change: float  # exp(estimated log ratio) - 1
    low: float  # interval, as changes; nan without one
    high: float
    level: float  # the family-wise share of alpha behind the interval (alpha / t)
    sd: float = math.nan  # per-round standard deviation of the log ratios (paired)
    look: int | None = None  # the round of the look that decided it
    more_rounds: int | None = None  # inconclusive: rounds more for 80% power, as measured
    df: float = math.nan  # degrees of freedom of the interval (own rounds and the prior's)
    disputed: bool = False  # with the rounds after its decision, its interval no longer supports it
    within_margin: bool = False  # faster/slower, and TOST put it within the margin too

    def within(self, margin: float) -> bool:
        """A difference (faster or slower) known to be smaller than the margin: TOST said so
        at its decision, or its interval lies within ±margin now."""
        return self.verdict in (FASTER, SLOWER) and (
            self.within_margin or -margin < self.low and self.high < margin)

    @property
    def decided(self) -> bool:
        return self.verdict in DECIDED

    def supported_by(self, low: float, high: float, margin: float) -> bool:
        """Whether an interval of the same change still says what this verdict says."""
        if self.verdict == FASTER:
            return low > 0
        if self.verdict == SLOWER:
            return high < 0
        if self.verdict == EQUIVALENT:
            return -margin < low and high < margin
        return True

    def interval_text(self) -> str:
        if math.isnan(self.low):
            return "-"
        return f"[{self.low:+.1%}, {self.high:+.1%}]"


class Judge(Generic[K]):
    """The verdicts of one family, look after look. After each round, `look` at every cell's
    estimate so far; a cell it decides stays decided."""

    def __init__(self, keys: list[K], design: Design):
        self.design = design
        self.final: dict[K, Verdict] = {}
        self.rejected: dict[K, set[str]] = {key: set() for key in keys}

    def open_cells(self) -> int:
        """Cells that can still hold a true null (fewer than both hypotheses rejected)."""
        return sum(len(r) < 2 for r in self.rejected.values())

    def level(self) -> float:
        """The share of alpha an open hypothesis is tested at now (Shaffer: alpha / t)."""
        return self.design.alpha / max(1, self.open_cells())

    def look(self, estimates: Mapping[K, Estimate], look: int | None = None) -> None:
        """Shaffer's step-down over the cells not decided yet."""
        low_bound, high_bound = self.design.bounds
        while True:
            level = self.level()
            newly = False
            for key, estimate in estimates.items():
                if key in self.final or estimate.n < 2:
                    continue
                nominal = self.design.nominal(level, estimate.n)
                mean, half = estimate.mean, estimate.half_width(nominal)
                tost = estimate.half_width(2 * nominal)  # one-sided tests at the level each
                found = set()
                if mean - half > 0 or mean + half < 0:
                    found.add("diff")
                if low_bound < mean - tost and mean + tost < high_bound:
                    found.add("eq")
                if found:
                    self.rejected[key] |= found
                    name = EQUIVALENT if "diff" not in found else (FASTER if mean > 0 else
                                                                   SLOWER)
                    self.final[key] = replace(self._verdict(name, estimate, level, look),
                                              within_margin=name != EQUIVALENT and "eq" in found)
                    newly = True
            if not newly:
                return

    def verdicts(self, estimates: Mapping[K, Estimate]) -> dict[K, Verdict]:
        """Every cell's verdict: the decided ones as decided, the others with their interval at
        the current level and, for paired ones, the rounds they would still need."""
        level = self.level()
        out = {}
        for key, estimate in estimates.items():
            if key in self.final:
                out[key] = self._measured_on(self.final[key], estimate)
            elif estimate.n < 2:
                out[key] = self._verdict(TOO_FEW, estimate, level)
            else:
                out[key] = self._projected(self._verdict(INCONCLUSIVE, estimate, level),
                                           estimate)
        return out

    def _verdict(self, name: Decision, estimate: Estimate, level: float,
                 look: int | None = None) -> Verdict:
        """The verdict with the interval it rests on: TOST's for equivalent, else the
        two-sided one at the family's level, on the boundary of the look at its rounds."""
        nominal = self.design.nominal(level, estimate.n)
        half = estimate.half_width(2 * nominal if name == EQUIVALENT else nominal)
        change = math.expm1(estimate.mean)
        if not half <= LOG_LIMIT:  # none, or wider than a float holds as a ratio
            return Verdict(name, estimate.n, change, math.nan, math.nan, level, estimate.sd,
                           look, df=estimate.df)
        return Verdict(name, estimate.n, change, math.expm1(estimate.mean - half),
                       math.expm1(estimate.mean + half), level, estimate.sd, look,
                       df=estimate.df)

    def _measured_on(self, verdict: Verdict, estimate: Estimate) -> Verdict:
        """A decided cell with rounds after its decision: its verdict with the estimate of all
        its rounds at its decision's level, or, if those no longer support it, as decided and
        disputed."""
        if estimate.n <= verdict.n:
            return verdict
        latest = self._verdict(verdict.verdict, estimate, verdict.level, verdict.look)
        if not verdict.supported_by(latest.low, latest.high, self.design.margin):
            return replace(verdict, disputed=True)
        return replace(latest, within_margin=verdict.within_margin)

    def _projected(self, verdict: Verdict, estimate: Estimate) -> Verdict:
        """How many more rounds, if the change and spread are as measured, until the interval
        excludes 0, or TOST's fits within the margin, with 80% power at the design's level
        (None: not within the design's rounds, or not a paired estimate)."""
        if not math.isfinite(estimate.sd):
            return verdict
        design, mean, n = self.design, abs(estimate.mean), estimate.n
        prior_df = estimate.df - own_df(n)  # what the family lends stays lent
        limit = design.last_look if design.sequential else n + 100
        for total in range(n + 1, limit + 1):
            nominal = design.nominal(verdict.level, total)
            se, df = estimate.sd / math.sqrt(total), own_df(total) + prior_df
            differs = (critical_t(nominal, df) + POWER_Z) * se < mean
            within = mean + (critical_t(2 * nominal, df) + POWER_Z) * se < design.bounds[1]
            if differs or within:
                return replace(verdict, more_rounds=total - n)
        return verdict


def half_width(sd: float, rounds: int, level: float, lent_df: float = 0.0) -> float:
    """The half width, on the log scale, of the t interval of a mean over `rounds` rounds
    whose per-round spread is `sd`, at two-sided `level`, with `lent_df` degrees of freedom
    lent by the family (infinite below 2 rounds)."""
    if rounds < 2:
        return math.inf
    return critical_t(level, own_df(rounds) + lent_df) * sd / math.sqrt(rounds)


def decide(cells: Mapping[K, Mapping[int, float]], design: Design) -> dict[K, Verdict]:
    """Verdicts for every cell from its per-round log ratios ({round: log ratio}).

    With one planned look the look is at the rounds there are. With a look after every round,
    the looks are replayed round by round up to the design's last, so the verdicts of a resumed
    or re-read study are the ones the run gave.
    """
    last_round = max((r for rounds in cells.values() for r in rounds), default=0)
    looks: Sequence[int]
    if design.sequential:
        looks = range(design.first_look, min(last_round, design.last_look) + 1)
    else:
        looks = [last_round] if last_round >= 2 else []
    judge = Judge(list(cells), design)
    for look in looks:
        judge.look(family_estimates({key: [v for r, v in sorted(rounds.items()) if r <= look]
                                     for key, rounds in cells.items()}, design.lag1), look)
    return judge.verdicts(family_estimates({key: [v for _, v in sorted(rounds.items())]
                                            for key, rounds in cells.items()}, design.lag1))


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
    for (config, t, round_number), value in throughput.items():
        if (config, t) not in cells:
            continue
        base = throughput.get((baseline, t, round_number))
        if base and value and base > 0 and value > 0:
            cells[(config, t)][round_number] = math.log(value / base)
    return cells


def forecast_half_width(sd: float, rounds: int, level: float, cells: int, design: Design
                        ) -> float:
    """The half width (log scale) a family's intervals reach after `rounds` rounds whose
    per-round spread is `sd`, at the family share `level`: as `family_estimates` will judge
    them, a family of 3 cells or more lending up to LENT_PER_OWN times a cell's own degrees of
    freedom, and the design's allowance for autocorrelation widening them."""
    if rounds < 2:
        return math.inf
    spread, lent = _forecast_spread(sd, rounds, cells, design)
    return half_width(spread, rounds, design.nominal(level, rounds), lent)


def forecast_detectable(sd: float, rounds: int, level: float, cells: int, design: Design
                        ) -> float:
    """The smallest change (a ratio - 1) that `rounds` rounds of per-round spread `sd` would
    find with 80% power, judged as forecast_half_width's intervals are."""
    if rounds < 2:
        return math.inf
    spread, lent = _forecast_spread(sd, rounds, cells, design)
    return detectable_change(spread, rounds, level, design, own_df(rounds) + lent)


def _forecast_spread(sd: float, rounds: int, cells: int, design: Design
                     ) -> tuple[float, float]:
    """The per-round spread a forecast judges with (widened for the design's allowance for
    autocorrelation) and the degrees of freedom the family would lend."""
    own = Estimate(0.0, sd / math.sqrt(rounds), own_df(rounds), rounds, sd)
    lent = LENT_PER_OWN * own_df(rounds) if cells >= 3 else 0.0
    return widened(own, design.lag1).sd, lent


def detectable_change(sd: float, n: int, level: float, design: Design, df: float | None = None
                      ) -> float:
    """The smallest true change (a ratio - 1) that n rounds with this per-round spread would
    call faster with 80% power, at the family share `level` of alpha, with `df` degrees of
    freedom (default: the rounds' own)."""
    if n < 2 or not math.isfinite(sd):
        return math.inf
    df = own_df(n) if df is None or not math.isfinite(df) else df
    shift = critical_t(design.nominal(level, n), df) + POWER_Z
    return as_change(shift * sd / math.sqrt(n))


def as_change(log_ratio: float) -> float:
    """exp(log_ratio) - 1, infinite beyond what a float holds: a half-width at an early look
    fitted to many (its level asks a t quantile in the thousands at 2 degrees of freedom)."""
    return math.inf if log_ratio > LOG_LIMIT else math.expm1(log_ratio)


def resolved(verdict: Verdict, design: Design) -> bool:
    """Whether a comparison needs no more rounds: its size is known against the margin. It is
    equivalent; or a difference whose interval lies wholly beyond the margin (it matters); or
    one whose rounds could detect a change the size of the margin (it is small and real).
    Asked one-sided (Design.one_sided), only whether it is slower by more than the margin:
    its interval lies above -margin (no), or below it (yes); the low end of the family's
    two-sided interval keeps that question's error rate at half the family's."""
    if verdict.verdict == EQUIVALENT or verdict.disputed:  # disputed: its figures are frozen
        return True
    if design.one_sided:
        return verdict.low > -design.margin or verdict.high < -design.margin
    if verdict.within(design.margin):  # real, and smaller than the margin: its size is known
        return True
    if not verdict.decided:
        return False
    if verdict.low > design.margin or verdict.high < -design.margin:
        return True
    return detectable_change(verdict.sd, verdict.n, verdict.level, design,
                             verdict.df) <= design.margin
