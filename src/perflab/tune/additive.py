"""The default search of `perflab tune --method bayes`: screen the knobs in groups from the
defaults, then follow an additive Bayesian model of the objective, a few knobs away from the
setting it believes best.

Why this and not TPE or random search: on a server the defaults suit most knobs, a few knobs
matter, and one trial is noisy (2-10% side by side on a 2-core machine). Drawing every knob at
random, as random search, TPE's start-up and TPE's prior do, changes twenty harmless-looking
knobs per trial and leaves some harmful ones in the winner; changing one knob at a time (seed
002's method, `ofat`) finds the few that matter only after trying every knob alone. Here:

1. Screening: two passes over the knobs, each trial moving a group of about a sixth of them from
   the defaults; each knob goes far to one side of its default in the first pass and to the other
   side in the second, so a large effect anywhere shows within a dozen trials. A screening trial
   that told nothing (interrupted, its reference failed) is run again before the model's.
2. The model: log objective = intercept + a sum of one effect per knob (a choice: one term per
   non-default choice; a number: a piecewise-linear curve over its search scale, plus a step for
   being set at all, since some variables change the server by being set: query_cache_size
   switches the query cache on). Each knob has its own prior scale and the trials one noise, both
   fitted to the trials by EM (empirical Bayes with automatic relevance): knobs the trials show
   harmless shrink to almost nothing, the few that matter keep their size.
3. Jump: among settings one or two knobs from the best-believed one, with one of its knobs put
   back, or joined with the moves of another good setting (two screening groups that both
   helped), one predicted better by more than JUMP noise sds is measured first.
4. Attribution: otherwise a knob the best-believed setting moves (typically one that came in with
   others in a screening group) whose own effect the trials cannot tell (posterior sd above UNTOLD)
   is put back to its default, as group screening follows up a group that moved.
5. Otherwise the candidate of largest expected improvement over the best-believed setting (the
   trials still running counted at their believed value, so that workers sharing a study spread).
   Every moved knob costs a little, so that a recommendation changes only what the trials support.

The answer is the best-believed tried setting (the model's mean, not the luckiest figure), and
the final re-measure (search.py) judges it. The proposals depend on the seed, the trial number
and the trials so far, so a resumed study goes on as it began.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.trial import FrozenTrial, TrialState
from scipy import special

from perflab.tune.space import Knob

GRID = 5  # points of each number's piecewise-linear curve
PASSES = 2  # screening passes over the knobs
MOVE_COST = 0.01  # in log objective, per knob moved from its default
JUMP = 2.0  # a predicted gain over the best-believed setting of this many noise sds is taken
UNTOLD = 0.05  # posterior sd of a knob's own effect (log) above which it is attributed
PROPOSALS = 400  # settings one or two knobs from the best-believed one, scored each trial
UNIONS = 12  # the best-believed settings whose moves are tried joined to the best one
FAILED_PENALTY = 1.0  # a trial that failed counts as this much below the worst (log)
SCALES = (0.02, 1.0)  # bounds of a knob's prior effect scale (log objective)
NOISES = (0.01, 0.5)  # bounds of the noise's
START_SCALE, START_NOISE = 0.2, 0.1
EM_ROUNDS = 40
INTERCEPT_SCALE = 10.0
REFERENCE = "reference"  # a failed trial's cause when its reference, not its setting, failed


@dataclass(frozen=True)
class Space:
    """The knobs, the values a trial leaves unset (the server's startup values, within the
    ranges), and the memory rule every proposal must keep."""

    knobs: tuple[Knob, ...]
    defaults: dict
    memory: Callable[[dict], int]  # worst-case bytes of a setting
    limit: int  # bytes

    def distributions(self) -> dict[str, BaseDistribution]:
        return {k.name: CategoricalDistribution(k.choices) if k.kind == "choice"
                else IntDistribution(k.low, k.high, log=k.log) for k in self.knobs}

    def fits(self, params: dict) -> bool:
        return self.memory(params) <= self.limit

    def moved(self, params: dict) -> list[Knob]:
        return [k for k in self.knobs if not same(k, params[k.name], self.defaults[k.name])]

    def complete(self, params: dict) -> dict:
        """A trial's params over the defaults, within today's ranges: a trial of a study whose
        knobs have changed since may lack some, or hold a value out of range (clamped) or a
        choice no longer offered (the default)."""
        return {**self.defaults, **{k.name: k.within(params[k.name], self.defaults[k.name])
                                    for k in self.knobs if k.name in params}}


def same(knob: Knob, a, b) -> bool:
    return str(a) == str(b) if knob.kind == "choice" else int(a) == int(b)


def unit(knob: Knob, value) -> float:
    """A number's place in its search range, 0..1, on its scale (log or linear)."""
    v = int(value)
    if knob.high == knob.low:
        return 0.0
    if knob.log:
        return (math.log(v) - math.log(knob.low)) / (math.log(knob.high) - math.log(knob.low))
    return (v - knob.low) / (knob.high - knob.low)


def from_unit(knob: Knob, u: float) -> int:
    u = min(max(u, 0.0), 1.0)
    if knob.log:
        value = math.exp(math.log(knob.low) + u * (math.log(knob.high) - math.log(knob.low)))
    else:
        value = knob.low + u * (knob.high - knob.low)
    return min(max(round(value), knob.low), knob.high)


def _hats(u: float) -> np.ndarray:
    return np.maximum(0.0, 1 - np.abs(u - np.linspace(0, 1, GRID)) * (GRID - 1))


def _knob_terms(knob: Knob, value, default) -> list[float]:
    """One knob's terms: a choice's indicator per non-default choice; a number's curve over
    GRID points, then its step for being set at all. All zero at the default."""
    if knob.kind == "choice":
        return [float(str(value) == c) for c in knob.choices if c != str(default)]
    return [*(_hats(unit(knob, value)) - _hats(unit(knob, default))),
            float(int(value) != int(default))]


def features(space: Space, params: dict) -> np.ndarray:
    """The model's terms for a setting: all zero but the intercept at the defaults."""
    return np.array([1.0] + [term for knob in space.knobs for term in
                             _knob_terms(knob, params[knob.name], space.defaults[knob.name])])


class Model:
    """Bayesian linear regression of the log objective on the additive terms, with a prior
    scale per knob fitted to the trials (automatic relevance determination by EM, Tipping
    2001): most knobs' effects shrink to nothing while the few that matter keep theirs, where
    one scale for all would read the large effects as noise."""

    def __init__(self, space: Space, settings: Sequence[dict], values: Sequence[float]):
        self.space = space
        self.x = np.array([features(space, s) for s in settings])
        self.y = np.array(values, dtype=float)
        self.groups = _groups(space)
        self.variances = np.full(self.x.shape[1], START_SCALE ** 2)
        self.variances[0] = INTERCEPT_SCALE ** 2
        self.noise = START_NOISE
        for _ in range(EM_ROUNDS):
            self._posterior()
            for group in self.groups:
                spread = (self.mean[group] ** 2 + np.diag(self.cov)[group]).mean()
                self.variances[group] = min(max(spread, SCALES[0] ** 2), SCALES[1] ** 2)
            residual = self.y - self.x @ self.mean
            explained = np.einsum("ij,jk,ik->", self.x, self.cov, self.x)
            noise2 = (residual @ residual + explained) / len(self.y)
            self.noise = min(max(math.sqrt(noise2), NOISES[0]), NOISES[1])
        self._posterior()

    def _posterior(self) -> None:
        precision = self.x.T @ self.x / self.noise ** 2 + np.diag(1 / self.variances)
        self.cov = np.linalg.inv(precision)
        self.cov = (self.cov + self.cov.T) / 2
        self.mean = self.cov @ self.x.T @ self.y / self.noise ** 2

    def with_believed(self, settings: Sequence[dict]) -> Model:
        """The model with `settings` (trials still running) added at their predicted values,
        so that the next proposal looks elsewhere (the "kriging believer")."""
        if not settings:
            return self
        other = object.__new__(Model)
        other.space, other.groups = self.space, self.groups
        other.variances, other.noise = self.variances, self.noise
        believed = np.array([features(self.space, s) for s in settings])
        other.x = np.vstack([self.x, believed])
        other.y = np.concatenate([self.y, believed @ self.mean])
        other._posterior()
        return other

    def predict(self, params: dict) -> float:
        return float(features(self.space, params) @ self.mean)

    def believed(self, params: dict) -> float:
        """The predicted log objective less the cost of the knobs moved."""
        return self.predict(params) - MOVE_COST * len(self.space.moved(params))

    def untold(self, params: dict, without: dict) -> float:
        """The posterior sd of the difference the change from `without` to `params` makes."""
        d = features(self.space, params) - features(self.space, without)
        return math.sqrt(max(0.0, float(d @ self.cov @ d)))

    def expected_improvement(self, anchor: dict, proposals: Sequence[dict]) -> np.ndarray:
        """For each proposal, the expected gain over `anchor` that is above zero, under the
        posterior of their difference (less the cost of the knobs it moves beyond the
        anchor's): large for a predicted jump, about 0.4 sd for a change whose effect the trials
        cannot tell (a knob that came in with others, put back), about 0 for a known one."""
        base = features(self.space, anchor)
        d = np.array([features(self.space, p) for p in proposals]) - base
        cost = MOVE_COST * (np.array([len(self.space.moved(p)) for p in proposals])
                            - len(self.space.moved(anchor)))
        mean = d @ self.mean - cost
        sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, self.cov, d), 1e-18))
        z = mean / sd
        return mean * special.ndtr(z) + sd * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def _groups(space: Space) -> list[np.ndarray]:
    """The indices of each knob's terms in `features` (after the intercept)."""
    groups, start = [], 1
    for knob in space.knobs:
        default = space.defaults[knob.name]
        size = len(_knob_terms(knob, default, default))
        groups.append(np.arange(start, start + size))
        start += size
    return groups


def group_size(knobs: int) -> int:
    """About a sixth of the knobs per screening trial, so each pass takes at most six trials."""
    return max(1, math.ceil(knobs / 6))


def screening(space: Space, seed: int) -> list[dict]:
    """The screening trials (after the defaults): PASSES passes over the knobs in shuffled
    groups, each knob on a side of its default drawn once and flipped in the second pass; a group
    that would not fit in memory has its hungriest value moved back toward the default."""
    rng = random.Random(seed)
    sides = {k.name: rng.choice((-1, 1)) for k in space.knobs}
    firsts: dict[str, str] = {}
    size = group_size(len(space.knobs))
    design = []
    for flip in (1, -1)[:PASSES]:
        order = rng.sample(space.knobs, len(space.knobs))
        for start in range(0, len(order), size):
            group = order[start:start + size]
            params = dict(space.defaults)
            for knob in group:
                params[knob.name] = _far(space, knob, sides[knob.name] * flip, rng,
                                         firsts.get(knob.name))
                firsts.setdefault(knob.name, params[knob.name])
            _fit_memory(space, params, group)
            design.append(params)
    return design


def _far(space: Space, knob: Knob, side: int, rng: random.Random, first=None):
    """A value far on one side of the knob's default: a number in the outer half of the range
    on that side (the other side when the default sits at that end); another choice, a different
    one from `first` when there is one."""
    default = space.defaults[knob.name]
    if knob.kind == "choice":
        others = [c for c in knob.choices if c != str(default)] or [str(default)]
        fresh = [c for c in others if c != first]
        return rng.choice(fresh or others)
    u0 = unit(knob, default)
    if (side > 0 and u0 < 0.95) or u0 <= 0.05:
        return from_unit(knob, u0 + (1 - u0) * rng.uniform(0.5, 1.0))
    return from_unit(knob, u0 * rng.uniform(0.0, 0.5))


def _fit_memory(space: Space, params: dict, knobs: Sequence[Knob]) -> None:
    """Halve toward its default the moved number whose halving frees most memory, until the
    setting fits (or nothing frees any: then the defaults themselves do not fit)."""
    while not space.fits(params):
        best = None
        for knob in knobs:
            value, default = params[knob.name], space.defaults[knob.name]
            if knob.kind == "choice" or same(knob, value, default):
                continue
            u, u0 = unit(knob, value), unit(knob, default)
            nearer = default if abs(u - u0) < 0.02 else from_unit(knob, (u + u0) / 2)
            freed = space.memory(params) - space.memory({**params, knob.name: nearer})
            if freed > 0 and (best is None or freed > best[0]):
                best = (freed, knob.name, nearer)
        if best is None:
            return
        params[best[1]] = best[2]


def observations(space: Space, trials: Sequence[FrozenTrial],
                 direction: str) -> tuple[list[dict], list[float]]:
    """The trials as the model reads them: the log objective of each finished trial (negated
    when smaller is better), a trial whose setting failed (its server would not start or
    crashed, or it fell under min_qps) as FAILED_PENALTY below the worst. Left out: refused
    proposals (never measured), trials whose reference failed, and trials interrupted or failed
    because their worker died (no state of their own): they say nothing of their setting."""
    sign = 1.0 if direction == "maximize" else -1.0
    done = measured(trials)
    settings = [space.complete(t.params) for t in done]
    values = [sign * math.log(t.value) for t in done]
    failed = [t for t in trials if t.state == TrialState.FAIL and t.params and _told(t)]
    if values:
        settings += [space.complete(t.params) for t in failed]
        values += [min(values) - FAILED_PENALTY] * len(failed)
    return settings, values


def measured(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    return [t for t in trials if t.state == TrialState.COMPLETE and t.value and t.value > 0]


def believed_order(space: Space, trials: Sequence[FrozenTrial],
                   direction: str) -> list[FrozenTrial]:
    """The finished trials, the best-believed first (the model's mean less the move cost)."""
    done = measured(trials)
    if not done:
        return []
    settings, values = observations(space, trials, direction)
    model = Model(space, settings, values)
    return sorted(done, key=lambda t: model.believed(space.complete(t.params)), reverse=True)


class AdditiveSampler(optuna.samplers.BaseSampler):
    """The search above as an Optuna sampler, so that it shares perflab's studies, storage and
    workers with the others. Trial 0 (the defaults) is fixed by the tuner."""

    def __init__(self, space: Space, seed: int, direction: str):
        self.space, self.seed, self.direction = space, seed, direction
        self.design = screening(space, seed)
        self._fallback = optuna.samplers.RandomSampler(seed=seed)

    def infer_relative_search_space(self, study, trial) -> dict[str, BaseDistribution]:
        return self.space.distributions()

    def sample_relative(self, study, trial, search_space) -> dict:
        if not search_space:
            return {}
        others = [t for t in study.get_trials(deepcopy=False) if t.number != trial.number]
        return self.propose(others, trial.number)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def propose(self, trials: Sequence[FrozenTrial], number: int) -> dict:
        """The setting of trial `number`, given the study's other trials."""
        rng = random.Random(self.seed * 1_000_003 + number)
        settings, values = observations(self.space, trials, self.direction)
        done = [self.space.complete(t.params) for t in measured(trials)]
        running = [self.space.complete(t.params) for t in trials
                   if t.state == TrialState.RUNNING and t.params]
        ended = [t for t in trials if t.state == TrialState.FAIL and t.params]
        # never again: a measured, running, refused or failed setting; nor one whose trials told
        # nothing twice (interrupted, or its reference failed), lest one setting that kills its
        # worker takes every trial
        silent = [self._key(t) for t in ended if not (_told(t) or refused(t))]
        tried = ({_key(s) for s in done + running}
                 | {self._key(t) for t in ended if _told(t) or refused(t)}
                 | {key for key in silent if silent.count(key) >= 2})
        if number > 0:  # screening first, a design trial that told nothing again
            pending = [d for d in self.design if _key(self.space.complete(d)) not in tried]
            if pending:
                return dict(pending[0])
        if not values:  # nothing measured: a move of one or two knobs from the defaults
            return self._untried_near(self.space.defaults, tried, rng)
        model = Model(self.space, settings, values)
        anchor = max(done, key=model.believed)
        proposals = [self._near(anchor, rng) for _ in range(PROPOSALS)]
        proposals += [self._reverted(anchor, knob) for knob in self.space.moved(anchor)]
        proposals += [self._joined(anchor, setting) for setting in
                      sorted(done, key=model.believed)[-UNIONS:]]
        proposals = [p for p in proposals if self.space.fits(p) and _key(p) not in tried]
        if not proposals:
            return self._untried_near(self.space.defaults, tried, rng)
        jump = max(proposals, key=model.believed)
        if model.believed(jump) - model.believed(anchor) > JUMP * model.noise:
            return jump  # a clear predicted gain (two good screening groups joined) comes first
        untold = [(model.untold(anchor, without), without)
                  for without in (self._reverted(anchor, knob)
                                  for knob in self.space.moved(anchor))
                  if _key(without) not in tried and self.space.fits(without)]
        if untold:
            sd, without = max(untold, key=lambda pair: pair[0])
            if sd > UNTOLD:
                return without
        gains = model.with_believed(running).expected_improvement(anchor, proposals)
        return proposals[int(np.argmax(gains))]

    def _near(self, params: dict, rng: random.Random) -> dict:
        """`params` with one or two knobs set to random values of their ranges."""
        near = dict(params)
        for knob in rng.sample(self.space.knobs, min(len(self.space.knobs), rng.randint(1, 2))):
            if knob.kind == "choice":
                others = [c for c in knob.choices if c != str(near[knob.name])]
                near[knob.name] = rng.choice(others) if others else near[knob.name]
            else:
                near[knob.name] = from_unit(knob, rng.random())
        return near

    def _key(self, trial: FrozenTrial) -> tuple:
        return _key(self.space.complete(trial.params))

    def _untried_near(self, params: dict, tried: set, rng: random.Random) -> dict:
        """A setting near `params` that fits and was not tried, when one turns up among
        PROPOSALS draws (else the last draw: the tuner refuses it if it does not fit)."""
        near = params
        for _ in range(PROPOSALS):
            near = self._near(params, rng)
            if self.space.fits(near) and _key(near) not in tried:
                break
        return near

    def _joined(self, params: dict, other: dict) -> dict:
        """`params` with the knobs `other` moves set as `other` sets them."""
        return {**params, **{k.name: other[k.name] for k in self.space.moved(other)}}

    def _reverted(self, params: dict, knob: Knob) -> dict:
        return {**params, knob.name: self.space.defaults[knob.name]}


def refused(trial: FrozenTrial) -> bool:
    """Whether a trial was refused before start (its setting would not fit in memory)."""
    return trial.state == TrialState.FAIL and trial.user_attrs.get("state") == "refused"


def _told(trial: FrozenTrial) -> bool:
    """Whether a failed trial says its setting fails (not: interrupted, its reference failed,
    refused before start)."""
    return trial.user_attrs.get("state") == "failed" and \
        trial.user_attrs.get("cause") != REFERENCE


def _key(params: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))
