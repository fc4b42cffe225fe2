"""The noise a lab has measured, per way of measuring: kept after each run, used to forecast the
next one's intervals before its first point (and by tune to plan its re-measure).

A figure is the per-round sd of a comparison's log ratio, pooled over the comparisons at one
thread count; it belongs to a workload, a dataset, a way of measuring (serial, or a fleet with
its slice) and a point's length, because each of these changes it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable
from dataclasses import replace

from perflab.domain import Plan, Schedule
from perflab.load.workloads import ResolvedWorkload
from perflab.output.text import duration
from perflab.probes.busy import under_load
from perflab.running.rounds import comparisons
from perflab.stats.decide import as_change, forecast_detectable, forecast_half_width
from perflab.stats.dependence import lag1, pooled_sd, skewness
from perflab.stats.design import Design
from perflab.store import Noise, ResultStore, StoredPoint, WayOfMeasuring

ASSUMED_NOISE = 0.10  # per-round sd of a log ratio, before this lab has measured any


def way_of_measuring(plan: Plan, schedule: Schedule) -> WayOfMeasuring:
    """The way of measuring that noise figures belong to: serial, or a fleet and its slice."""
    if schedule != Schedule.FLEET:
        return WayOfMeasuring(Schedule.SERIAL)
    return WayOfMeasuring(Schedule.FLEET, plan.run.effective_slice_seconds)


def _dataset(plan: Plan, workload: ResolvedWorkload) -> str:
    return workload.config_dataset_key(plan, plan.config(plan.baseline))


def _latest(store: ResultStore, plan: Plan, workload: ResolvedWorkload, schedule: Schedule,
            usable: Callable[[Noise], bool] = lambda _: True) -> dict[int, Noise]:
    """Per thread count, the latest `usable` figure this lab measured for the plan's way of
    measuring."""
    found = store.noise(workload.workload.label, _dataset(plan, workload),
                        way_of_measuring(plan, schedule), plan.run.run_seconds)
    per_threads: dict[int, Noise] = {}
    for noise in found:  # the latest first
        if usable(noise):
            per_threads.setdefault(noise.threads, noise)
    return per_threads


def lab_noise(store: ResultStore, plan: Plan, workload: ResolvedWorkload, schedule: Schedule
              ) -> tuple[float, str]:
    """The per-round sd this lab measured for the plan's way of measuring, with where it comes
    from; ASSUMED_NOISE when it has measured none. The figures of the plan's own thread counts
    when it has any (noise differs between thread counts, and a quiet one must not lend its
    confidence to a loud one), else those of the others, named."""
    measured = _latest(store, plan, workload, schedule)
    if not measured:
        return ASSUMED_NOISE, "assumed: this lab has not measured it yet (perflab calibrate)"
    own = {t: n for t, n in measured.items() if t in plan.run.threads}
    per_threads = own or measured
    elsewhere = "" if own else f" at {', '.join(map(str, sorted(measured)))} threads"
    sd = statistics.median(n.sd for n in per_threads.values())
    rounds = sum(n.rounds for n in per_threads.values())
    loaded = _loaded(per_threads.values())
    return sd, f"measured in this lab over {rounds} rounds{elsewhere}{loaded}"


def _loaded(figures: Iterable[Noise]) -> str:
    """What a forecast says of noise measured while other work loaded the machine: a loaded
    machine's noise is not this one's idle noise (wider, or narrower when the load was steady),
    so a figure so measured is named, with the share of its points, never used silently."""
    measured = [(n.loaded, n.rounds) for n in figures if math.isfinite(n.loaded)]
    rounds = sum(r for _, r in measured)
    share = sum(loaded * r for loaded, r in measured) / rounds if rounds else 0.0
    if not share:
        return ""
    shown = f"{share:.0%}" if share >= 0.01 else "under 1%"
    return (f", {shown} of its points while other work loaded the machine: not this "
            "machine's idle noise; perflab calibrate --again when it is idle")


LAG1_ROUNDS = 8  # a thread count's lag-1 measured over fewer rounds is not used ...
LAG1_TOTAL = 24  # ... nor a lab's over fewer rounds in all (its standard error ~ 0.2)


def frozen_dependence(store: ResultStore, plan: Plan, workload: ResolvedWorkload,
                      schedule: Schedule) -> Plan:
    """The plan with the dependence of rounds its intervals allow for, set at the study's
    first run from what this lab measured for the plan's way of measuring (calibrate and
    earlier runs; the latest figure of each thread count): the largest lag-1
    autocorrelation those rounds do not rule out (their pooled lag-1 plus two standard
    errors, 1 / sqrt(rounds) each), where that is more than the design's default. Never
    less: a lab's rounds that alternated yesterday say little of a study's today (allowing 0
    where a study's rounds had lag-1 0.2 made 6.2% of tables false, allowing 0.2 2.8%:
    bench/error_rates.py). Later runs keep the first run's (stats/design.study_design), so it is
    never chosen after seeing the study's own rounds."""
    if store.design_of(plan.name) is not None:
        return plan
    per_threads = _latest(store, plan, workload, schedule,
                          lambda n: n.rounds >= LAG1_ROUNDS and math.isfinite(n.lag1))
    rounds = sum(n.rounds for n in per_threads.values())
    if rounds < LAG1_TOTAL:
        return plan
    pooled = sum(n.lag1 * n.rounds for n in per_threads.values()) / rounds
    allowed = max(Design.lag1, pooled + 2 / math.sqrt(rounds))
    return replace(plan, run=replace(plan.run, lag1=math.ceil(allowed * 100) / 100))


def forecast(plan: Plan, design, noise: tuple[float, str]) -> list[str]:
    """Before the first point: the interval the plan's rounds and budget can reach."""
    cells = (len(plan.configs) - 1) * len(plan.run.threads)
    if cells == 0:
        return []
    sd, source = noise
    level = design.alpha / cells
    lines = [f"noise: {sd:.1%} per round ({source}); {cells} comparisons, "
             f"margin ±{design.margin:.0%}",
             f"  lag-1 autocorrelation of rounds allowed for: {design.lag1:.2f} " +
             ("(perflab's least; a lab that measured more raises it)"
              if design.lag1 == Design.lag1 else
              "(from this lab's rounds, frozen at the study's first run)")]
    capped = plan.run.time and not design.fitted  # the last look is max_rounds until fitted
    for rounds in sorted({design.first_look, design.last_look}):
        half = as_change(forecast_half_width(sd, rounds, level, cells, design))
        found = forecast_detectable(sd, rounds, level, cells, design)
        cap = (f" (max_rounds; after round {design.first_look} the last look is fitted to "
               "what the budget holds)"
               if capped and rounds == design.last_look > design.first_look else "")
        lines.append(f"  {rounds} rounds{cap}: intervals about ±{half:.0%}; a change of "
                     f"{found:.0%} or more found with 80% power")
    if plan.run.time:
        lines.append(f"  budget {duration(plan.run.time)}: rounds go on for the " + (
            f"comparisons not yet known to lose more than {design.margin:.0%} or not"
            if design.one_sided else
            "undecided comparisons, and the differences found until measured to the margin")
            + ", up to the last above")
    return lines


def budget_reach(plan: Plan, design, ok: list[StoredPoint], seconds_per_round: float
                 ) -> str | None:
    """At a budgeted study's first look, once its pace and its own rounds' noise are known:
    when the intervals its last look reaches on that noise are wider than the margin, the
    rounds and the budget that would reach the margin (about: a half width shrinks as the
    square root of the rounds), so that a user knows before the rest of the budget is spent;
    None when the budget reaches it."""
    cells = (len(plan.configs) - 1) * len(plan.run.threads)
    sd = pooled_sd([list(rounds.values()) for rounds in comparisons(plan, ok).values()
                    if len(rounds) >= 3])
    if cells == 0 or not plan.run.time or sd is None:
        return None
    level = design.alpha / cells
    last = design.last_look
    half = as_change(forecast_half_width(sd, last, level, cells, design))
    if half <= design.margin:
        return None
    needed = math.ceil(last * (half / design.margin) ** 2)
    return (f"on {sd:.1%} noise per round the budget's {last} rounds reach intervals of about "
            f"±{half:.0%}, wider than the ±{design.margin:.0%} margin: about {needed} rounds "
            f"would reach it, a budget of about {duration(needed * seconds_per_round)} at "
            f"{seconds_per_round:.0f} s a round (run.time; with max_rounds to match)")


def save_noise(store: ResultStore, plan: Plan, workload: ResolvedWorkload, schedule: Schedule,
               ok: list[StoredPoint], source: str | None) -> None:
    """What a study's rounds say of the noise: per thread count, the pooled sd of its
    comparisons' log ratios, for the next run's forecast, with how consecutive rounds depend
    on one another and how skewed they are (stats/dependence.py), and the share of its points
    measured while other work loaded the machine (which the forecasts name); nothing when
    `source` is None (a study whose comparisons were chosen for their effects)."""
    if source is None:
        return
    per_threads: dict[int, list[list[float]]] = {}
    for (_, threads), rounds in comparisons(plan, ok).items():
        values = [v for _, v in sorted(rounds.items())]
        if len(values) >= 3:
            per_threads.setdefault(threads, []).append(values)
    records = []
    for threads, series in sorted(per_threads.items()):
        df = sum(len(values) - 1 for values in series)
        sd = pooled_sd(series)
        assert sd is not None, "every series has 3 rounds or more"
        shares = [share for p in ok if p.threads == threads
                  and (share := p.value("other_cpu")) is not None]
        loaded = sum(map(under_load, shares)) / len(shares) if shares else math.nan
        records.append(Noise(workload.workload.label, _dataset(plan, workload),
                             way_of_measuring(plan, schedule), plan.run.run_seconds, threads,
                             df + len(series), sd, source, plan.name,
                             lag1=lag1(series), skew=skewness(series), loaded=loaded))
    if records:
        store.save_noise(records)

