"""The round policy: which points round N measures, or that the study stops. A pure function of
the plan, the points stored so far, the design and the round's number, so that resuming, the
time budget and the rounds for undecided comparisons are decided the same way whoever asks,
and can be tested without a server.

Rounds 1..rounds measure every configuration at every thread count. After them, a plan that
decides (a look after every round, within a budget) measures again the comparisons not yet
resolved, with their baseline, up to the design's last look: those still undecided, and the
differences found whose size is not yet known against the margin, neither wholly beyond it
nor measured finely enough to detect a change of its size (so that "+25% [+4%, +52%]" goes on
to tell whether the gain matters, not only its sign; stats/decide.py `resolved`). A design
asked one-sided (tune's checks against its winner) measures on only the comparisons not yet
known to lose more than the margin or not, and not those its last look is unlikely to tell,
as their rounds so far predict it (`beyond_reach`): once only those are open, it stops, left
open.

A thread count of a round already stored is not measured again: an interrupted run resumes
where it stopped. A round is atomic:
its comparisons are chosen from the rounds before it only, and a thread count of it is measured
whole, in one run (one that an interrupted run left half stored is measured again, replacing
what was stored), so that every ratio pairs points measured together.

With a budget, the study's looks are fitted once, at its first look, to the rounds the budget
holds at the pace of the rounds before it (`fitted_looks`): the timing of rounds says nothing
of the comparisons' values, so the design chosen from it stays a design fixed in advance.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from scipy import stats as scipy_stats

from perflab.domain import Plan, ServerConfig
from perflab.stats.decide import Verdict, decide, log_ratios, resolved
from perflab.stats.design import Design
from perflab.stats.sequential import critical_t
from perflab.stats.trimmed import own_df
from perflab.store import StoredPoint, throughput


@dataclass(frozen=True)
class Measure:
    """Round `number` measures these configurations per thread count (empty when an earlier
    run stored all of them), replacing any of them an interrupted run stored; `note` says why
    a round beyond the planned ones is run."""

    number: int
    points: dict[int, list[ServerConfig]]
    note: str | None = None


@dataclass(frozen=True)
class Stop:
    """The study needs no round `number`: complete, or every comparison resolved (`decided`:
    decided and its size known, or, asked one-sided, known to lose more than the margin or
    not; decide.resolved), or, asked one-sided, the rest unlikely to be told by the last look
    (`left_open`: `beyond_reach`)."""

    number: int
    decided: bool = False
    note: str | None = None
    left_open: bool = False


def next_round(plan: Plan, ok: list[StoredPoint], design: Design, number: int
               ) -> Measure | Stop:
    """What round `number` measures given the successful points `ok` stored so far."""
    run = plan.run
    configs, threads = list(plan.configs), list(run.threads)
    note = None
    if number <= run.rounds:
        wanted = {t: configs for t in threads}
    elif design.sequential and number <= design.last_look:
        verdicts = decide(comparisons(plan, [p for p in ok if p.round < number]), design)
        undecided = sum(not v.decided for v in verdicts.values())
        open_cells = {key for key, v in verdicts.items() if not resolved(v, design)}
        futile = {key for key in open_cells if beyond_reach(verdicts[key], design)}
        open_cells -= futile
        note = (f"after round {number - 1}: {len(verdicts) - undecided} of "
                f"{len(verdicts)} comparisons decided")
        measured_on = sum(v.decided for key, v in verdicts.items() if key in open_cells)
        if measured_on:
            note += (f", {measured_on} of them measured on until " +
                     (f"known to lose more than {design.margin:.0%} or not" if design.one_sided
                      else f"their size is known against ±{design.margin:.0%}"))
        if futile:
            note += (f", {len(futile)} left open: unlikely to be told from -{design.margin:.0%} "
                     f"by the last look, round {design.last_look}")
        if not open_cells:
            return Stop(number, decided=not futile, note=note, left_open=bool(futile))
        wanted = {t: [c for c in configs if c.name == plan.baseline
                      or (c.name, t) in open_cells] for t in threads}
        wanted = {t: cs for t, cs in wanted.items() if len(cs) > 1}
    else:
        return Stop(number)
    stored = {(p.config, p.threads) for p in ok if p.round == number}
    return Measure(number, {t: cs for t, cs in wanted.items()
                            if any((c.name, t) not in stored for c in cs)}, note)


# A comparison asked one-sided is no longer measured once the chance that its last look tells
# it, as its rounds so far predict, falls under this (predictive power: a futility stop).
FUTILE_POWER = 0.1


def beyond_reach(verdict: Verdict, design: Design) -> bool:
    """Asked one-sided, whether a comparison is unlikely to be told by the design's last look:
    the chance that the interval then lies wholly above or below -margin is under
    FUTILE_POWER, as its rounds so far predict it (predictive power: the rounds to come drawn
    with its rounds' spread about a true change as uncertain as its estimate, that spread
    itself estimated on the interval's degrees of freedom, so that a few rounds near the
    margin do not stop it). Measuring it on would then decide little (the
    put-back's pool-alone study sat at its margin for 29 rounds, until the tune's budget
    ended). A futility stop gives no verdict, so the family's error rate holds. The spread is
    read back from the interval as it was built (its t quantile, the rounds the family lends),
    and the last look's interval is built the same way."""
    n, last = verdict.n, design.last_look
    if not design.one_sided or not design.first_look <= n < last or \
            not (math.isfinite(verdict.low) and math.isfinite(verdict.high)):
        return False
    lent = verdict.df - own_df(n)  # the degrees of freedom the family's prior lends
    half = (math.log1p(verdict.high) - math.log1p(verdict.low)) / 2
    spread = half / critical_t(design.nominal(verdict.level, n), verdict.df) * math.sqrt(n)
    if not spread > 0:
        return False
    then = critical_t(design.nominal(verdict.level, last), own_df(last) + lent) * spread \
        / math.sqrt(last)  # the interval's half-width at the last look
    drift = spread * math.sqrt((last - n) / (last * n))  # sd of the last look's estimate
    distance = abs(math.log1p(verdict.change) - math.log1p(-design.margin))
    predicted = scipy_stats.t(verdict.df)  # the spread is itself estimated, on verdict.df
    power = predicted.cdf((distance - then) / drift) + predicted.cdf((-distance - then) / drift)
    return float(power) < FUTILE_POWER


def comparisons(plan: Plan, points: list[StoredPoint]) -> dict[tuple[str, int], dict[int, float]]:
    """The plan's comparisons with their per-round log ratios (the family judged)."""
    return log_ratios(throughput(points), plan.baseline, plan.config_names, plan.run.threads)


# A budget's looks are fitted to a quarter more rounds than the first rounds' pace allows: the
# rounds after the first look measure only the comparisons still open, so they are shorter, and
# a boundary fitted to more looks than happen costs little (stopping at 0.8 of them, the last
# look's critical value is 6% higher), where fitting too few would leave the budget unused.
LOOKS_SLACK = 1.25


def fitted_looks(plan: Plan, done: int, remaining: float, timed: list[float]) -> Plan:
    """The plan with the rounds its budget holds (RunSettings.planned_rounds): the `done`
    rounds, and as many more as `remaining` seconds hold at the mean pace of the `timed`
    rounds, with LOOKS_SLACK; between run.rounds and max_rounds."""
    run = plan.run
    pace = statistics.mean(timed)
    more = math.ceil(max(remaining, 0.0) / pace * LOOKS_SLACK) if pace > 0 else run.max_rounds
    rounds = max(run.rounds, min(run.max_rounds, done + more))
    return replace(plan, run=replace(run, planned_rounds=rounds))
