"""A study's comparisons: every configuration against the baseline at every thread count, paired
by round, judged as one family (stats/decide.py), and summed up in a headline.

The same verdicts feed the relative table, the verdict table, the chart and the headline, so
they all show one estimate and one interval per comparison.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, replace

from perflab.domain import Plan
from perflab.stats.decide import (
    EQUIVALENT,
    FASTER,
    INCONCLUSIVE,
    SLOWER,
    Verdict,
    decide,
    detectable_change,
    log_ratios,
)
from perflab.stats.design import Design
from perflab.store.records import StoredPoint, throughput

Cell = tuple[str, int]  # (configuration, threads)


@dataclass(frozen=True)
class Judgement:
    design: Design
    verdicts: dict[Cell, Verdict]
    # why these verdicts are not the study's own decisions (a margin chosen after the data)
    exploratory: str | None = None

    @property
    def decided(self) -> int:
        return sum(v.decided for v in self.verdicts.values())

    def precision(self) -> float | None:
        """The median over comparisons of their intervals' half-width (as a change, half the
        distance between its ends): how precisely the study measured, whenever its cells
        stopped."""
        found = [(v.high - v.low) / 2 for v in self.verdicts.values()
                 if math.isfinite(v.low) and math.isfinite(v.high)]
        return statistics.median(found) if found else None

    def detectable(self) -> float | None:
        """The median over the open comparisons of the smallest change their rounds so far
        could tell from 0 with 80% power (None when every comparison is decided)."""
        found = [detectable_change(v.sd, v.n, v.level, self.design, v.df)
                 for v in self.verdicts.values()
                 if not v.decided and v.n >= 2 and math.isfinite(v.sd)]
        found = [f for f in found if math.isfinite(f)]
        return statistics.median(found) if found else None


def judge(plan: Plan, points: list[StoredPoint], design: Design,
          margin: float | None = None) -> Judgement:
    """The verdict of every comparison with the baseline, as the run decided them (the
    design's looks are replayed), at the design's margin or another one."""
    exploratory = None
    if margin is not None and margin != design.margin:
        exploratory = (f"exploratory: margin ±{margin:.0%} chosen after the data; the study "
                       f"decides at ±{design.margin:.0%}, fixed at its first run")
        design = replace(design, margin=margin)
    cells = log_ratios(throughput(points), plan.baseline, plan.config_names, plan.run.threads)
    return Judgement(design, decide(cells, design), exploratory)


def judge_per_query(plan: Plan, points: list[StoredPoint], design: Design, metric: str
                    ) -> Judgement | None:
    """A second response (the server's CPU per query, where less is better): every comparison
    with the baseline, paired by round, judged as its own family at one look on the rounds
    measured, with the study's error rate and margin. Exploratory: the rounds were stopped by
    throughput's verdicts, not by these. None when the points hold no such figure."""
    values = {(p.config, p.threads, p.round): value for p in points
              if (value := p.value(metric)) is not None}
    if not values:
        return None
    cells = log_ratios(values, plan.baseline, plan.config_names, plan.run.threads)
    one_look = replace(design, last_look=design.first_look)
    return Judgement(one_look, decide(cells, one_look),
                     "exploratory: the rounds were stopped by throughput's verdicts")


def headline(plan: Plan, judgement: Judgement) -> list[str]:
    """One line per configuration, what the study found, then how decided it is."""
    if not judgement.verdicts:
        return []
    lines = []
    margin = judgement.design.margin
    for config in plan.config_names:
        if config == plan.baseline:
            continue
        runs = _runs([(t, judgement.verdicts[(config, t)]) for t in plan.run.threads], margin)
        parts = [_part(group, margin) for group in runs]
        lines.append(f"{config} vs {plan.baseline}: " + "; ".join(parts))
    total = len(judgement.verdicts)
    counts = {name: sum(v.verdict == name for v in judgement.verdicts.values())
              for name in (FASTER, SLOWER, EQUIVALENT)}
    found = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
    precision, detectable = judgement.precision(), judgement.detectable()
    resolution = (f"; precision ±{precision:.1%} (median half-width of the intervals)"
                  if precision is not None else "")
    if detectable is not None:
        resolution += (f"; the open ones' rounds so far would detect {detectable:.0%} "
                       "with 80% power")
    lines.append(f"Decided {judgement.decided} of {total} comparisons"
                 f"{' (' + found + ')' if found else ''}, with a {judgement.design.alpha:.0%} "
                 f"error rate over the whole table, margin ±{margin:.0%}{resolution}")
    if judgement.exploratory:
        lines.append(f"({judgement.exploratory})")
    return lines


def _runs(cells: list[tuple[int, Verdict]], margin: float) -> list[list[tuple[int, Verdict]]]:
    """Neighbouring thread counts with the same verdict (and the same side of the margin),
    together."""
    groups: list[list[tuple[int, Verdict]]] = []
    for threads, verdict in cells:
        last = groups[-1][-1][1] if groups else None
        if last is not None and last.verdict == verdict.verdict and \
                last.within(margin) == verdict.within(margin):
            groups[-1].append((threads, verdict))
        else:
            groups.append([(threads, verdict)])
    return groups


def _part(group: list[tuple[int, Verdict]], margin: float) -> str:
    threads = [t for t, _ in group]
    where = (f"at {threads[0]} thread{'s' if threads[0] > 1 else ''}" if len(threads) == 1
             else f"at {threads[0]}–{threads[-1]} threads")
    verdicts = [v for _, v in group]
    kind = verdicts[0].verdict
    if kind == EQUIVALENT:
        return f"equivalent within ±{margin:.0%} {where}"
    if kind in (FASTER, SLOWER):
        within = f", within ±{margin:.0%}" if verdicts[0].within(margin) else ""
        if len(group) == 1:
            v = verdicts[0]
            return f"{kind} {where}, {_change(v)}{within}"
        low = min(v.change for v in verdicts)
        high = max(v.change for v in verdicts)
        digits = ".1%" if within else ".0%"
        return f"{kind} {where} ({low:+{digits}} to {high:+{digits}}){within}"
    if kind == INCONCLUSIVE:
        more = [v.more_rounds for v in verdicts if v.more_rounds is not None]
        if len(more) == len(verdicts):
            return f"inconclusive {where}, ~{max(more)} more rounds"
        return f"inconclusive {where}, more rounds than the plan allows"
    return f"{kind} {where}"


def _change(v: Verdict) -> str:
    if math.isnan(v.low):
        return f"{v.change:+.1%}"
    return f"{v.change:+.1%} [{v.low:+.1%}, {v.high:+.1%}]"


def paired_change(points: list[StoredPoint], base: str, other: str, threads: int
                  ) -> float | None:
    """`other`'s change over `base` at `threads`: exp(mean per-round log ratio) - 1."""
    if base == other:
        return 0.0
    rounds = log_ratios(throughput(points), base, [other], [threads])[(other, threads)]
    if not rounds:
        return None
    return math.expm1(math.fsum(rounds.values()) / len(rounds))
