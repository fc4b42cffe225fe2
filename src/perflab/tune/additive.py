"""The default search of `perflab tune --method bayes`: screen the knobs in groups from the
defaults, then Thompson sampling on an additive Bayesian model, a few knobs away from the setting
the model believes best.

Why this and not TPE or random search: on a server the defaults suit most knobs, a few knobs
matter, and one trial is noisy (2-10% side by side on a 2-core machine). Drawing every knob at
random, as random search, TPE's start-up and TPE's prior do, changes twenty harmless-looking
knobs per trial and leaves some harmful ones in the winner; changing one knob at a time (seed
002's method, `ofat`) finds the few that matter only after trying every knob alone. Here:

1. Screening: two passes over the knobs, each trial moving a group of about a sixth of them from
   the defaults; each knob goes far to one side of its default in the first pass and to the other
   side in the second, so a large effect anywhere shows within a dozen trials.
2. The model: log objective = intercept + a sum of one effect per knob (a choice: one term per
   non-default choice; a number: a piecewise-linear curve over its search scale, plus a step for
   being set at all, since some variables change the server by being set: query_cache_size
   switches the query cache on), with a Gaussian prior whose scale, and the noise, are fitted to
   the trials by their evidence (empirical Bayes).
3. Attribution: a knob of the best-believed setting that came in with others, whose own effect
   the trials cannot tell, is put back to its default in the next trial (each such setting once),
   as group screening follows up a group that moved.
4. Otherwise Thompson sampling: one draw of the effects from the posterior picks among settings
   one or two knobs away from the best-believed one, or with one of its knobs put back. Every
   moved knob costs a little, so that a recommendation changes only what the trials support.

The answer is the best-believed tried setting (the model's mean, not the luckiest figure), and
the final re-measure (search.py) judges it. The proposals depend on the seed and the trial
number only, so workers sharing a study draw alike and a resumed study goes on as it began.
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

from perflab.tune.space import Knob

GRID = 5  # points of each number's piecewise-linear curve
PASSES = 2  # screening passes over the knobs
MOVE_COST = 0.01  # in log objective, per knob moved from its default
UNTOLD = 0.05  # posterior sd of a knob's own effect (log) above which it is attributed
PROPOSALS = 400  # settings near the best-believed one scored per Thompson draw
FAILED_PENALTY = 1.0  # a trial that failed counts as this much below the worst (log)
PRIOR_SCALES = (0.05, 0.1, 0.2, 0.4, 0.8)  # effect scales tried by the evidence
NOISE_SCALES = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32)
INTERCEPT_SCALE = 10.0


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
        """A trial's params over the defaults (a trial of a study whose knobs have changed
        since may lack some)."""
        return {**self.defaults, **{k: v for k, v in params.items() if k in self.defaults}}


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


def features(space: Space, params: dict) -> np.ndarray:
    """The model's terms for a setting: all zero but the intercept at the defaults."""
    terms = [1.0]
    for knob in space.knobs:
        value, default = params[knob.name], space.defaults[knob.name]
        if knob.kind == "choice":
            terms += [float(str(value) == c) for c in knob.choices if c != str(default)]
        else:
            terms += list(_hats(unit(knob, value)) - _hats(unit(knob, default)))
            terms.append(float(int(value) != int(default)))
    return np.array(terms)


class Model:
    """Bayesian linear regression of the log objective on the additive terms."""

    def __init__(self, space: Space, settings: Sequence[dict], values: Sequence[float]):
        self.space = space
        self.x = np.array([features(space, s) for s in settings])
        self.y = np.array(values, dtype=float)
        self.prior, self.noise = max(
            ((p, n) for p in PRIOR_SCALES for n in NOISE_SCALES),
            key=lambda pn: self._evidence(*pn))
        self._posterior()

    def _variances(self, prior: float) -> np.ndarray:
        variances = np.full(self.x.shape[1], prior ** 2)
        variances[0] = INTERCEPT_SCALE ** 2
        return variances

    def _evidence(self, prior: float, noise: float) -> float:
        """log p(y | prior, noise), up to a constant."""
        k = (self.x * self._variances(prior)) @ self.x.T + noise ** 2 * np.eye(len(self.y))
        _, logdet = np.linalg.slogdet(k)
        return -0.5 * (self.y @ np.linalg.solve(k, self.y) + logdet)

    def _posterior(self) -> None:
        precision = self.x.T @ self.x / self.noise ** 2 + np.diag(1 / self._variances(self.prior))
        self.cov = np.linalg.inv(precision)
        self.cov = (self.cov + self.cov.T) / 2
        self.mean = self.cov @ self.x.T @ self.y / self.noise ** 2

    def with_believed(self, settings: Sequence[dict]) -> Model:
        """The model with `settings` (trials still running) added at their predicted values,
        so that the next proposal looks elsewhere (the "kriging believer")."""
        if not settings:
            return self
        other = object.__new__(Model)
        other.space, other.prior, other.noise = self.space, self.prior, self.noise
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

    def draw(self, rng: np.random.Generator) -> np.ndarray:
        jitter = 1e-12 * np.eye(len(self.mean))
        return rng.multivariate_normal(self.mean, self.cov + jitter, method="cholesky")


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
    on that side (either side when the default sits at an end); another choice, a different one
    from `first` when there is one."""
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
    when smaller is better), a failed trial as FAILED_PENALTY below the worst, a refused one
    (never measured) left out."""
    sign = 1.0 if direction == "maximize" else -1.0
    done = measured(trials)
    settings = [space.complete(t.params) for t in done]
    values = [sign * math.log(t.value) for t in done]
    failed = [t for t in trials if t.state == TrialState.FAIL and t.params
              and t.user_attrs.get("state") != "refused"]
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
        if 0 < number <= len(self.design):
            return dict(self.design[number - 1])
        settings, values = observations(self.space, trials, self.direction)
        if not values:  # nothing measured yet: a screening-like move from the defaults
            return self._near(self.space.defaults, rng)
        model = Model(self.space, settings, values)
        tried = {_key(s) for s in settings}
        anchor = max((self.space.complete(t.params) for t in measured(trials)),
                     key=model.believed)
        running = [self.space.complete(t.params) for t in trials
                   if t.state == TrialState.RUNNING and t.params]
        tried |= {_key(s) for s in running}
        untold = [(model.untold(anchor, without), without)
                  for without in (self._reverted(anchor, knob)
                                  for knob in self.space.moved(anchor))
                  if _key(without) not in tried]
        if untold:
            sd, without = max(untold, key=lambda pair: pair[0])
            if sd > UNTOLD:
                return without
        draw = model.with_believed(running).draw(np.random.default_rng(rng.getrandbits(64)))
        proposals = [self._near(anchor, rng) for _ in range(PROPOSALS)]
        proposals += [self._reverted(anchor, rng.choice(moved))
                      for moved in [self.space.moved(anchor)] if moved
                      for _ in range(PROPOSALS // 8)]
        proposals = [p for p in proposals if self.space.fits(p)]
        if not proposals:
            return self._near(self.space.defaults, rng)
        return max(proposals, key=lambda p: float(features(self.space, p) @ draw)
                   - MOVE_COST * len(self.space.moved(p)))

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

    def _reverted(self, params: dict, knob: Knob) -> dict:
        return {**params, knob.name: self.space.defaults[knob.name]}


def _key(params: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))
