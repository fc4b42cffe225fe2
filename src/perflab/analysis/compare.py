"""Two labs side by side (two hosts, two versions: the STAR notes' old node vs new node).

Points are matched by configuration, workload and thread count; lab A is the reference. Two labs
ran at different times, so nothing can be paired: each match compares the mean log throughput
of B's rounds with A's (Welch), and the matches form one family (stats/decide.py).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from perflab.errors import PerflabError
from perflab.stats.decide import Judge, Verdict, welch
from perflab.stats.design import Design
from perflab.store.records import Study, ok_metrics


@dataclass(frozen=True)
class Match:
    """One (configuration, workload, threads) both labs measured: B's verdict against A."""

    config: str
    workload: str
    threads: int
    median_a: float  # queries/s, the median over each lab's rounds
    median_b: float
    verdict: Verdict


@dataclass(frozen=True)
class LabComparison:
    """Two labs' studies side by side, B against A (report/compare.py words it)."""

    a: Study
    b: Study
    alpha: float  # the error rate over every match
    margin: float  # equivalent: within ±margin
    matches: list[Match]


def compare_labs(a: Study, b: Study, margin: float | None = None) -> LabComparison:
    """B against A per shared (configuration, workload, threads), "equivalent" within ±`margin`
    (default: A's, the reference's, stored plan's run.margin)."""
    margin = a.plan.run.margin if margin is None else margin
    ours, theirs = _by_key(a), _by_key(b)
    shared = [key for key in ours if key in theirs]
    if not shared:
        raise PerflabError(
            "the two labs share no (configuration, workload, threads) with successful points",
            hint="compare labs that ran the same plan",
        )
    alpha = b.plan.run.alpha  # the error rate the later study asked for
    design = Design(alpha, margin, 2, 2)
    estimates = {key: welch([math.log(v) for v in ours[key]], [math.log(v) for v in theirs[key]])
                 for key in shared}
    judge = Judge(shared, design)
    judge.look(estimates)
    verdicts = judge.verdicts(estimates)
    matches = [Match(*key, statistics.median(ours[key]), statistics.median(theirs[key]),
                     verdicts[key]) for key in shared]
    return LabComparison(a, b, alpha, margin, matches)


def _by_key(study: Study) -> dict[tuple[str, str, int], list[float]]:
    out: dict[tuple[str, str, int], list[float]] = {}
    for p in sorted(study.ok_points, key=lambda p: (p.config, p.threads, p.round)):
        out.setdefault((p.config, p.workload, p.threads), []).append(ok_metrics(p).qps)
    return out
