"""Synthetic studies with known effects and noise, run through perflab's own decision procedure.

This is how the error rates in docs/STATISTICS.md are shown rather than argued: a family of
cells (configurations x thread counts, all against one baseline measured in the same rounds)
gets normally (or heavy-tail) distributed per-round noise around known true ratios; rounds are
added only for cells still open, exactly as `perflab run` does with a budget, and the verdicts
are counted.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from perflab.stats.decide import EQUIVALENT, FASTER, SLOWER, Judge, paired
from perflab.stats.design import Design


@dataclass
class Outcome:
    families: int
    false_direction: int = 0  # families with any faster/slower contradicting the truth
    false_equivalent: int = 0  # families with any "equivalent" where |true change| >= margin
    verdicts: Counter = field(default_factory=Counter)  # (cell, verdict) -> families
    rounds: list[int] = field(default_factory=list)  # rounds each family ran

    def share(self, cell: object, verdict: str) -> float:
        return self.verdicts[(cell, verdict)] / self.families


def simulate(effects: dict[tuple[str, int], float], noise: float, design: Design,
             families: int = 1000, seed: int = 1, tails: float | None = None,
             rounds: int | None = None) -> Outcome:
    """Run `families` synthetic studies.

    effects: true change (ratio - 1) of each cell (config, threads) against the baseline;
    noise: standard deviation of one point's log throughput, so that a round's log ratio has
    noise * sqrt(2), and the cells at one thread count share the baseline's noise, as in a
    real round; tails: degrees of freedom of a Student-t noise instead of normal noise.
    Each family runs first_look rounds, then a round more (only for open cells) after each
    look, up to last_look, or up to `rounds` (to show what looking more often than the design
    allows does to the error rate).
    """
    rng = np.random.default_rng(seed)
    last_round = rounds
    cells = list(effects)
    truth = {key: math.log1p(change) for key, change in effects.items()}
    low_bound, high_bound = design.bounds
    outcome = Outcome(families)
    threads = sorted({t for _, t in cells})

    def draw(size: int) -> np.ndarray:
        if tails is None:
            return rng.standard_normal(size) * noise
        return rng.standard_t(tails, size) * noise / math.sqrt(tails / (tails - 2))

    for _ in range(families):
        judge = Judge(cells, design)
        data: dict[tuple[str, int], list[float]] = {key: [] for key in cells}
        rounds = 0
        for rounds in range(1, (last_round or design.last_look) + 1):
            open_cells = [key for key in cells if key not in judge.final]
            if not open_cells:
                rounds -= 1
                break
            baseline = dict(zip(threads, draw(len(threads)), strict=True))
            own = draw(len(open_cells))
            for key, e in zip(open_cells, own, strict=True):
                data[key].append(truth[key] + e - baseline[key[1]])
            if rounds >= design.first_look:
                judge.look({key: paired(values) for key, values in data.items()}, rounds)
        outcome.rounds.append(rounds)
        verdicts = judge.verdicts({key: paired(values) for key, values in data.items()})
        wrong_direction = wrong_equivalence = False
        for key, verdict in verdicts.items():
            outcome.verdicts[(key, verdict.verdict if verdict.decided else "open")] += 1
            true = truth[key]
            if verdict.verdict == FASTER and true <= 0 or verdict.verdict == SLOWER and true >= 0:
                wrong_direction = True
            inside = low_bound + 1e-12 < true < high_bound - 1e-12  # at the margin is outside
            if verdict.verdict == EQUIVALENT and not inside:
                wrong_equivalence = True
        outcome.false_direction += wrong_direction
        outcome.false_equivalent += wrong_equivalence
    return outcome
