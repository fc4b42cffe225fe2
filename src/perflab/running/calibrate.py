"""`perflab calibrate`: know the noise before deciding anything.

An A/A study: the plan's baseline against an identical copy of itself, measured exactly as a
run would (same workload, dataset, schedule, run length), at a few thread counts, for a fixed
number of rounds. Every difference it finds is noise. Its per-round spread is kept in the lab,
and `perflab run` uses it to say beforehand how small a change the plan's rounds and budget can
resolve. A calibration that calls anything faster or slower is itself a warning: the machine,
or the way of measuring, is not what the statistics assume.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from perflab.analysis.variance import GROWTH_CAP, Split, split
from perflab.analysis.verdicts import Judgement, judge
from perflab.domain import Plan
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.output.table import Table
from perflab.probes.busy import under_load
from perflab.running.rounds import comparisons
from perflab.running.runner import Runner
from perflab.stats.decide import as_change, forecast_half_width, half_width
from perflab.stats.dependence import lag1, skewness
from perflab.stats.design import FITTED_SHAPE
from perflab.store import ResultStore, read_study

TWIN = "{}'"  # the baseline's identical copy
PROJECTED_ROUNDS = (3, 5, 10, 20)


@dataclass
class Calibration:
    plan: Plan  # the A/A plan that ran
    judgement: Judgement
    seconds_per_round: float  # at the calibrated thread counts
    study_plan: Plan  # the plan it calibrates
    rounds: dict[int, list[float]]  # per thread count, the A/A log ratios in round order
    splits: list[Split]  # per thread count, where the noise lies (analysis/variance.py)

    def noise(self) -> dict[int, float]:
        """Per thread count: the standard deviation of one round's log ratio."""
        return {threads: v.sd for (_, threads), v in self.judgement.verdicts.items()
                if math.isfinite(v.sd)}

    def tables(self) -> list[Table]:
        rows = []
        for (_, threads), v in self.judgement.verdicts.items():
            shown_sd = "-" if math.isnan(v.sd) else f"{v.sd:.1%}"
            series = [self.rounds.get(threads, [])]
            rows.append([str(threads), str(v.n), shown_sd, _figure(lag1(series), "+.2f"),
                         _figure(skewness(series), "+.2f"), f"{v.change:+.1%}",
                         v.interval_text(), v.verdict])
        measured = Table(
            f"A/A: {self.plan.baseline} against an identical copy of itself "
            f"({self.plan.workload.label})",
            ["Threads", "Rounds", "Noise per round", "Lag-1", "Skew", "Change", "Interval",
             "Verdict"], rows,
            note="noise per round: standard deviation of one round's log throughput ratio; "
                 "lag-1: correlation of consecutive rounds (drift the slices do not cancel; "
                 "0 when rounds are independent); a faster or slower verdict here would be a "
                 "false one")
        noise = self.noise()
        if not noise:
            return [measured]
        where = [where_table(self.splits, self.plan.run.run_seconds)] if self.splits else []
        sd = statistics.median(noise.values())
        study = self.study_plan
        cells = max(1, (len(study.configs) - 1) * len(study.run.threads))
        design = study.run.design()
        level = design.alpha / cells
        scale = (len(study.run.threads) / len(self.plan.run.threads)
                 * max(1, len(study.configs)) / 2)
        rows = []
        for rounds in PROJECTED_ROUNDS:
            single = as_change(half_width(sd, rounds, design.alpha))
            # a budget that holds this many rounds: its looks fitted to them (rounds.py)
            fitted = replace(design, first_look=3, last_look=rounds, shape=FITTED_SHAPE)
            family = as_change(forecast_half_width(sd, rounds, level, cells, fitted))
            minutes = rounds * self.seconds_per_round * scale / 60
            rows.append([str(rounds), f"±{single:.0%}", f"±{family:.0%}", f"{minutes:.0f} min"])
        projected = Table(
            f"What {study.name} can resolve with this noise ({sd:.1%} per round, "
            f"{cells} comparisons, a look after every round of a budget that holds them)",
            ["Rounds", "One comparison, one look", "Whole table, every look", "About"], rows,
            note=f"an interval narrower than ±{design.margin:.0%} around 0 is needed to call a "
                 "comparison equivalent; a change larger than the interval's half width is "
                 "called faster or slower")
        return [measured, *where, projected]


def where_table(splits: list[Split], run_seconds: float) -> Table:
    """Where each thread count's round noise lies, and the point length that would buy the
    most precision per second of measuring."""
    rows = [[str(s.threads), str(s.rounds), f"{s.round_variance ** 0.5:.1%}",
             f"{s.within_share:.0%}", f"{s.slices:.0f}",
             f"{run_seconds * s.best_slices / s.slices:.2g} s" if s.slices else "-",
             f"{s.time_at_best:.0%}"] for s in splits]
    return Table("Where the noise lies",
                 ["Threads", "Rounds", "Noise per round", "In the points' slices",
                  "Slices per point", "Best point length", "Time at best"], rows,
                 note="in the points' slices: the share of a round's noise that a point's own "
                      "slices explain (the rest lies between rounds: starts, caches, copies "
                      "of the data; only more rounds average it); best point length: what "
                      "buys the most precision per second (Kalibera & Jones 2013), up to "
                      f"{GROWTH_CAP:g} times today's; time at best: what it needs for today's "
                      "precision, as a share of today's (run_seconds sets it)")


def calibrate(plan: Plan, lab: Lab, rounds: int, threads: tuple[int, ...] | None,
              say: Callable[[str], None], again: bool = False) -> Calibration:
    """The A/A of `plan`'s baseline: the lab's latest calibration of it, resumed (or reprinted
    when complete), or with `again` a new one (a machine that was loaded then is idle now)."""
    if rounds < 3:
        raise PerflabError(f"rounds must be at least 3, got {rounds}", option="rounds",
                           hint="a spread needs a few rounds; 8 or more is better")
    chosen = threads or _spread(plan.run.threads)
    base = plan.config(plan.baseline)
    twin = replace(base, name=TWIN.format(base.name))
    started = time.monotonic()
    with lab.locked(), lab.store() as store:
        aa = replace(plan, name=_study_name(store, plan.name, again), configs=(base, twin),
                     ladder=False, changes=(), layout="configs-down",
                     run=replace(plan.run, threads=chosen, rounds=rounds, time=0.0))
        say(f"calibrating ({aa.name}): {base.name} against an identical copy at "
            f"{_list(chosen)} threads, {rounds} rounds")
        summary = Runner(aa, lab, store, say, noise_source="calibrate").run()
        study = read_study(store, aa.name, str(lab.root))
    seconds = (time.monotonic() - started) / max(1, summary.rounds)
    loaded = [p for p in study.points if under_load(p.value("other_cpu"))]
    if loaded:
        say(f"WARNING: {len(loaded)} of {len(study.points)} points were measured while other "
            "work loaded the machine: the noise kept is that loaded machine's, and the "
            "forecasts that use it say so; when the machine is idle, perflab calibrate --again")
    judged = judge(aa, study.points, study.design, plan.run.margin)
    ratios = {threads: [v for _, v in sorted(values.items())]
              for (_, threads), values in comparisons(aa, study.points).items()}
    return Calibration(aa, judged, seconds, plan, ratios, split(study.points, aa.baseline))


def _study_name(store: ResultStore, study: str, again: bool) -> str:
    """The latest calibration of `study` in the lab (`study:calibration`, then
    `study:calibration-2`, ...), or with `again` the next one."""
    names = [f"{study}:calibration"]
    while store.latest_plan(names[-1]) is not None:
        names.append(f"{study}:calibration-{len(names) + 1}")
    stored = names[:-1]
    return names[-1] if again or not stored else stored[-1]


def _spread(threads: tuple[int, ...]) -> tuple[int, ...]:
    """The smallest, a middle and the largest thread count."""
    ordered = sorted(threads)
    return tuple(dict.fromkeys((ordered[0], ordered[len(ordered) // 2], ordered[-1])))


def _figure(value: float, spec: str) -> str:
    return "-" if math.isnan(value) else format(value, spec)


def _list(values: tuple[int, ...]) -> str:
    return ", ".join(str(v) for v in values)
