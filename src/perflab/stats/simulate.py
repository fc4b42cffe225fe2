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

from perflab.stats.decide import EQUIVALENT, FASTER, SLOWER, Judge, family_estimates
from perflab.stats.design import Design


@dataclass
class ErrorTally:
    """What a simulation counted: its families, those with a false verdict of each kind, and
    every cell's verdicts."""

    families: int
    false_direction: int = 0  # families with any faster/slower contradicting the truth
    false_equivalent: int = 0  # families with any "equivalent" where |true change| >= margin
    false_any: int = 0  # families with either: what "5% over the whole table" promises
    verdicts: Counter = field(default_factory=Counter)  # (cell, verdict) -> families
    rounds: list[int] = field(default_factory=list)  # rounds each family ran

    def share(self, cell: object, verdict: str) -> float:
        return self.verdicts[(cell, verdict)] / self.families


@dataclass(frozen=True)
class SyntheticNoise:
    """The noise of a synthetic study: how one point's log throughput strays from the truth.

    sd: per thread count (or one figure for all), the standard deviation of a point's log
    throughput; a round's log ratio has about sd * sqrt(2);
    rho: lag-1 autocorrelation of a series' noise from round to round (AR(1)): drift that
    slices do not cancel;
    tails: Student-t degrees of freedom instead of normal noise;
    skew: skewness of each point's noise (negative: more slow rounds than fast ones);
    session_sd: each session of `session_rounds` rounds shifts every comparison by its own
    normal offset with this sd (a restart, another slot layout);
    wild: the share of points whose error is `wild_scale` times wider (a burst of other work
    hitting one point's slices: mostly tight rounds with a few far out, as this machine's are).
    """

    sd: float | dict[int, float]
    rho: float = 0.0
    tails: float | None = None
    skew: float = 0.0
    session_sd: float = 0.0
    session_rounds: int = 5
    wild: float = 0.0
    wild_scale: float = 5.0

    def of(self, threads: int) -> float:
        return self.sd[threads] if isinstance(self.sd, dict) else self.sd


def simulate(effects: dict[tuple[str, int], float], noise: float | SyntheticNoise, design: Design,
             families: int = 1000, seed: int = 1, tails: float | None = None,
             rounds: int | None = None) -> ErrorTally:
    """Run `families` synthetic studies.

    effects: true change (ratio - 1) of each cell (config, threads) against the baseline;
    noise: a `SyntheticNoise`, or the sd of one point's log throughput (normal, independent rounds,
    Student-t with `tails` degrees of freedom if given); the cells at one thread count share
    the baseline's noise, as in a real round. Each family runs first_look rounds, then a round
    more (only for open cells) after each look, up to last_look, or up to `rounds` (to show what
    looking more often than the design allows does to the error rate).
    """
    if not isinstance(noise, SyntheticNoise):
        noise = SyntheticNoise(noise, tails=tails)
    rng = np.random.default_rng(seed)
    last_round = rounds or design.last_look
    cells = list(effects)
    truth = {key: math.log1p(change) for key, change in effects.items()}
    low_bound, high_bound = design.bounds
    outcome = ErrorTally(families)
    threads = sorted({t for _, t in cells})
    series = [("", t) for t in threads] + cells  # each baseline, then each configuration
    scale = np.array([noise.of(t) for _, t in series])

    for _ in range(families):
        judge = Judge(cells, design)
        data: dict[tuple[str, int], list[float]] = {key: [] for key in cells}
        errors = _errors(rng, noise, last_round, len(series)) * scale
        shifts = _shifts(rng, noise, last_round, len(cells))
        done = 0
        for number in range(1, last_round + 1):
            open_cells = [key for key in cells if key not in judge.final]
            if not open_cells:
                break
            done = number
            row = dict(zip(series, errors[number - 1], strict=True))
            for i, key in enumerate(cells):
                if key in open_cells:
                    data[key].append(truth[key] + row[key] - row[("", key[1])]
                                     + shifts[number - 1, i])
            if number >= design.first_look:
                judge.look(family_estimates(data, design.lag1), number)
        outcome.rounds.append(done)
        verdicts = judge.verdicts(family_estimates(data, design.lag1))
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
        outcome.false_any += wrong_direction or wrong_equivalence
    return outcome


def _errors(rng: np.random.Generator, noise: SyntheticNoise, rounds: int, count: int) -> np.ndarray:
    """rounds x count errors: `count` series, each AR(1) with noise.rho and unit variance, with
    the noise's tails or skew, and its wild points widened."""
    if noise.tails is not None:
        draws = rng.standard_t(noise.tails, (rounds, count)) / math.sqrt(
            noise.tails / (noise.tails - 2))
    elif noise.skew:
        shape = 4 / noise.skew ** 2  # a gamma's skewness is 2 / sqrt(shape)
        draws = (rng.gamma(shape, 1.0, (rounds, count)) - shape) / math.sqrt(shape)
        draws *= math.copysign(1, noise.skew)
    else:
        draws = rng.standard_normal((rounds, count))
    if noise.rho:
        keep = math.sqrt(1 - noise.rho ** 2)
        for number in range(1, rounds):
            draws[number] = noise.rho * draws[number - 1] + keep * draws[number]
    if noise.wild:
        draws *= np.where(rng.random((rounds, count)) < noise.wild, noise.wild_scale, 1.0)
    return draws


def _shifts(rng: np.random.Generator, noise: SyntheticNoise, rounds: int, cells: int) -> np.ndarray:
    """rounds x cells: each session's offset of each comparison, repeated over its rounds."""
    if not noise.session_sd:
        return np.zeros((rounds, cells))
    sessions = -(-rounds // noise.session_rounds)
    offsets = rng.standard_normal((sessions, cells)) * noise.session_sd
    return np.repeat(offsets, noise.session_rounds, axis=0)[:rounds]
