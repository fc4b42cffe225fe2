"""The default search of `perflab tune --method bayes`: screen the knobs in groups, follow up
a clear gain at once, and let a Bayesian model of the knobs' effects pick the rest, a few knobs
away from the setting it believes best.

Why this and not TPE or random search: on a server the defaults suit most knobs, a few matter,
and one trial is noisy (2-10% side by side on a 2-core machine, 10-15% once a large gain makes
the server fast). Drawing every knob at random, as random search, TPE's start-up and TPE's prior
do, changes twenty harmless-looking knobs per trial and leaves some harmful ones in the winner;
changing one knob at a time (the MySQL 5.5 sysbench tuning study's method, `ofat`) finds the few
that matter only after trying every knob alone. Here:

1. Screening: two passes over the knobs in groups of about a sixth of them, each group moving its
   knobs far from their defaults: a number to the longer side of its default's range in the
   first pass and to the other side in the second, a choice to another choice. A large effect
   anywhere shows within a dozen trials. A group is moved on the best-believed setting once that
   one holds a clear gain (predicted better than the defaults by JUMP noise sds and FOLLOW), so
   that what acts where the gain is shows (its own knobs keep their values); before, on the
   defaults. A screening trial that told nothing (interrupted, its reference failed) is run
   again first.
2. The model: log objective = intercept + a sum of one effect per knob (a choice: one term per
   non-default choice; a number: a piecewise-linear curve over its search scale, plus a step for
   being set at all, since some variables change the server by being set: query_cache_size
   switches the query cache on). Each knob has its own prior scale and the trials one noise, both
   fitted to the trials by EM (empirical Bayes with automatic relevance): knobs the trials show
   harmless shrink to almost nothing, the few that matter keep their size. Once one knob's effect
   is clear, every other knob also gets an interaction with it (Regime): pool-of-threads is
   harmless at the default buffer pool and costs 40% once the data fit in a large one.
3. Jump: among settings one or two knobs from the best-believed one, with one of its knobs put
   back, or joined with the moves of another good setting (two screening groups that both
   helped), one predicted better by more than JUMP noise sds is measured first.
4. Attribution: when the best-believed setting holds a clear gain, or the screening is over, a
   knob it moves (typically one that came in with others in a screening group) whose own effect
   there the trials cannot tell is put back to its default, as group screening follows up a
   group that moved. Untold: the posterior sd of what putting it back changes is above UNTOLD and
   its mean within TOLD sds of nothing. A knob whose effect is known to be large (the buffer pool
   on a dataset larger than it) is told even while its size is uncertain, or the noise of a fast
   server would have it put back again after every change of the best-believed setting.
5. Then the screening's next group (step 1), and once it is over, the candidate of largest
   expected improvement over the best-believed setting (the trials still running counted at
   their believed value, so that workers sharing a study spread). Every moved knob costs a
   little, so that a recommendation changes only what the trials support.

The answer is the best-believed tried setting (the model's mean, not the luckiest figure), and
the final re-measure (search.py) judges it. The proposals depend on the seed, the trial number
and the trials so far (a trial records the screening group it measures), so a resumed study and
workers sharing one go on as one search.
"""

from __future__ import annotations

import functools
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
FOLLOW = 0.1  # a gain over the defaults (log) this large, and JUMP sds, is followed up at once
UNTOLD = 0.05  # posterior sd of a knob's own effect (log) above which it may be attributed
INTERACTION_SCALE = 0.2  # prior sd (log) of a knob's interaction with the dominant one
TOLD = 3.0  # a knob's own effect this many posterior sds from nothing is told, whatever its sd
PROPOSALS = 400  # settings one or two knobs from the best-believed one, scored each trial
UNIONS = 12  # the best-believed settings whose moves are tried joined to the best one
FAILED_PENALTY = 1.0  # a trial that failed counts as this much below the worst (log)
SCALES = (0.02, 1.0)  # bounds of a knob's prior effect scale (log objective)
NOISES = (0.03, 0.5)  # bounds of the noise's
START_SCALE, START_NOISE = 0.2, 0.1
EM_ROUNDS = 40
INTERCEPT_SCALE = 10.0
SCREENING = "additive:screening"  # a trial's system attribute: the screening group it measures
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


def _hats(u: float) -> list[float]:
    """The weights of the GRID points of a curve at u (plain floats: this runs for every knob
    of every setting the model reads, hundreds per proposal)."""
    return [max(0.0, 1 - abs(u * (GRID - 1) - i)) for i in range(GRID)]


@functools.lru_cache(maxsize=65536, typed=True)
def _knob_terms(knob: Knob, value, default) -> tuple[float, ...]:
    """One knob's terms: a choice's indicator per non-default choice; a number's curve over
    GRID points, then its step for being set at all. All zero at the default. (Cached: the
    settings a proposal scores share most of their values.)"""
    if knob.kind == "choice":
        return tuple(float(str(value) == c) for c in knob.choices if c != str(default))
    at, zero = _hats(unit(knob, value)), _hats(unit(knob, default))
    return (*(a - z for a, z in zip(at, zero, strict=True)), float(int(value) != int(default)))


def features(space: Space, params: dict, regime: Regime | None = None) -> np.ndarray:
    """The model's terms for a setting: all zero but the intercept at the defaults. With a
    regime, each other knob's terms again, scaled by where the setting stands on the dominant
    knob's effect (its interaction with that knob)."""
    terms = [1.0]
    scale = regime.of(params) if regime else 0.0
    for knob in space.knobs:
        own = _knob_terms(knob, params[knob.name], space.defaults[knob.name])
        terms += own
        if regime and knob.name != regime.knob.name:
            terms += [term * scale for term in own]
    return np.array(terms)


@dataclass(frozen=True)
class Regime:
    """The knob whose fitted effect is largest, and where a setting stands on it: 0 at its
    worst measured value, 1 at its best (clipped between). Other knobs may act otherwise there
    (pool-of-threads was harmless at the default buffer pool and cost 40% once the data fitted
    in it); the model gives each an interaction with this scale, the effect heredity of
    designed experiments (interactions go with large main effects)."""

    knob: Knob
    default: object
    weights: np.ndarray  # the dominant knob's fitted terms
    low: float
    high: float

    def of(self, params: dict) -> float:
        effect = _effect(self.knob, params[self.knob.name], self.default, self.weights)
        return min(1.0, max(0.0, (effect - self.low) / (self.high - self.low)))


def _effect(knob: Knob, value, default, weights: np.ndarray) -> float:
    """A knob's fitted effect at `value` (log objective; 0 at its default)."""
    return float(np.dot(_knob_terms(knob, value, default), weights))


class Model:
    """Bayesian linear regression of the log objective on the additive terms, with a prior
    scale per knob fitted to the trials (automatic relevance determination by EM, Tipping
    2001): most knobs' effects shrink to nothing while the few that matter keep theirs, where
    one scale for all would read the large effects as noise.

    Once one knob's effect is clear (its fitted range above JUMP noise sds), the model is fitted
    again with every other knob's interaction with it (Regime). Those keep a fixed prior scale,
    INTERACTION_SCALE: relevance determination would give a gain seen only with several knobs
    moved together to one of them and call the others told, which is how a harmful companion of
    the gain stayed in the answer."""

    def __init__(self, space: Space, settings: Sequence[dict], values: Sequence[float],
                 failed: int = 0):
        """`failed`: how many of the settings, the last ones, are failures (observations)."""
        self.space = space
        self.settings = list(settings)
        self.measured = self.settings[:len(self.settings) - failed]
        self.y = np.array(values, dtype=float)
        self.regime: Regime | None = None
        self._fit()
        self.regime = self._dominant()
        if self.regime is not None:
            self._fit()

    def _fit(self) -> None:
        self.x = np.array([features(self.space, s, self.regime) for s in self.settings])
        self.groups, interactions = _groups(self.space, self.regime)
        self.variances = np.full(self.x.shape[1], START_SCALE ** 2)
        self.variances[0] = INTERCEPT_SCALE ** 2
        self.variances[interactions] = INTERACTION_SCALE ** 2
        self.noise = START_NOISE
        for _ in range(EM_ROUNDS):
            self._posterior()
            for group in self.groups:
                spread = (self.mean[group] ** 2 + np.diag(self.cov)[group]).mean()
                self.variances[group] = min(max(spread, SCALES[0] ** 2), SCALES[1] ** 2)
            residual = self.y - self.x @ self.mean
            explained = float(np.sum((self.x @ self.cov) * self.x))
            noise2 = (residual @ residual + explained) / len(self.y)
            self.noise = min(max(math.sqrt(noise2), NOISES[0]), NOISES[1])
        self._posterior()

    def _dominant(self) -> Regime | None:
        """The knob whose fitted effect spans most over the values measured (a setting that
        failed would make a knob look dominant by the failure's penalty), when that span is
        clear."""
        spans = []
        for knob, group in zip(self.space.knobs, self.groups, strict=True):
            default = self.space.defaults[knob.name]
            weights = self.mean[group]
            values = {default, *(setting[knob.name] for setting in self.measured)}
            effects = [_effect(knob, value, default, weights) for value in values]
            spans.append((max(effects) - min(effects),
                          Regime(knob, default, weights, min(effects), max(effects))))
        span, regime = max(spans, key=lambda pair: pair[0])
        return regime if span > JUMP * self.noise and span > 0 else None

    def _posterior(self) -> None:
        precision = self.x.T @ self.x / self.noise ** 2 + np.diag(1 / self.variances)
        self.cov = np.linalg.inv(precision)
        self.cov = (self.cov + self.cov.T) / 2
        self.mean = self.cov @ self.x.T @ self.y / self.noise ** 2

    def features(self, params: dict) -> np.ndarray:
        return features(self.space, params, self.regime)

    def with_believed(self, settings: Sequence[dict]) -> Model:
        """The model with `settings` (trials still running) added at their predicted values,
        so that the next proposal looks elsewhere (the "kriging believer")."""
        if not settings:
            return self
        other = object.__new__(Model)
        other.space, other.groups, other.regime = self.space, self.groups, self.regime
        other.variances, other.noise = self.variances, self.noise
        believed = np.array([self.features(s) for s in settings])
        other.x = np.vstack([self.x, believed])
        other.y = np.concatenate([self.y, believed @ self.mean])
        other._posterior()
        return other

    def predict(self, params: dict) -> float:
        return float(self.features(params) @ self.mean)

    def believed(self, params: dict) -> float:
        """The predicted log objective less the cost of the knobs moved."""
        return self.predict(params) - MOVE_COST * len(self.space.moved(params))

    def difference(self, params: dict, without: dict) -> tuple[float, float]:
        """The posterior mean and sd of the difference the change from `without` to `params`
        makes (log objective)."""
        d = self.features(params) - self.features(without)
        return float(d @ self.mean), math.sqrt(max(0.0, float(d @ self.cov @ d)))

    def untold(self, params: dict, without: dict) -> float:
        """The posterior sd of that difference when the trials cannot tell it (sd above UNTOLD,
        mean within TOLD sds of nothing), else 0."""
        mean, sd = self.difference(params, without)
        return sd if sd > UNTOLD and abs(mean) < TOLD * sd else 0.0

    def expected_improvement(self, anchor: dict, proposals: Sequence[dict]) -> np.ndarray:
        """For each proposal, the expected gain over `anchor` that is above zero, under the
        posterior of their difference (less the cost of the knobs it moves beyond the
        anchor's): large for a predicted jump, about 0.4 sd for a change whose effect the trials
        cannot tell (a knob that came in with others, put back), about 0 for a known one."""
        base = self.features(anchor)
        d = np.array([self.features(p) for p in proposals]) - base
        cost = MOVE_COST * (np.array([len(self.space.moved(p)) for p in proposals])
                            - len(self.space.moved(anchor)))
        mean = d @ self.mean - cost
        sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, self.cov, d), 1e-18))
        z = mean / sd
        return mean * special.ndtr(z) + sd * np.exp(-z * z / 2) / math.sqrt(2 * math.pi)


def _groups(space: Space, regime: Regime | None) -> tuple[list[np.ndarray], np.ndarray]:
    """The indices of each knob's own terms in `features` (after the intercept), and those of
    the interaction terms."""
    groups, interactions, start = [], [], 1
    for knob in space.knobs:
        default = space.defaults[knob.name]
        size = len(_knob_terms(knob, default, default))
        groups.append(np.arange(start, start + size))
        start += size
        if regime and knob.name != regime.knob.name:
            interactions += range(start, start + size)
            start += size
    return groups, np.array(interactions, dtype=int)


def group_size(knobs: int) -> int:
    """About a sixth of the knobs per screening trial, so each pass takes at most six trials."""
    return max(1, math.ceil(knobs / 6))


def screening(space: Space, seed: int) -> list[dict]:
    """The screening groups: PASSES passes over the knobs in shuffled groups, each a move of its
    knobs far from their defaults, each number to a side of its default (the longer one first:
    it holds more of the range) and to the other side in the second pass, each choice to another
    choice."""
    rng = random.Random(seed)
    sides = {k.name: 1 if k.kind == "choice" or unit(k, space.defaults[k.name]) <= 0.5 else -1
             for k in space.knobs}
    firsts: dict[str, str] = {}
    size = group_size(len(space.knobs))
    design = []
    for flip in (1, -1)[:PASSES]:
        order = rng.sample(space.knobs, len(space.knobs))
        for start in range(0, len(order), size):
            moves = {}
            for knob in order[start:start + size]:
                moves[knob.name] = _far(space, knob, sides[knob.name] * flip, rng,
                                        firsts.get(knob.name))
                firsts.setdefault(knob.name, moves[knob.name])
            design.append(moves)
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
                 direction: str) -> tuple[list[dict], list[float], int]:
    """The trials as the model reads them: the log objective of each finished trial (negated
    when smaller is better), then each trial whose setting failed (its server would not start or
    crashed, or it fell under min_qps) as FAILED_PENALTY below the worst, and how many of those
    there are. Left out: refused proposals (never measured), trials whose reference failed, and
    trials interrupted or failed because their worker died (no state of their own): they say
    nothing of their setting."""
    sign = 1.0 if direction == "maximize" else -1.0
    done = measured(trials)
    settings = [space.complete(t.params) for t in done]
    values = [sign * math.log(t.value) for t in done]
    failed = [t for t in trials if t.state == TrialState.FAIL and t.params and _told(t)]
    if values:
        settings += [space.complete(t.params) for t in failed]
        values += [min(values) - FAILED_PENALTY] * len(failed)
        return settings, values, len(failed)
    return settings, values, 0


def measured(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    return [t for t in trials if t.state == TrialState.COMPLETE and t.value and t.value > 0]


def believed_order(space: Space, trials: Sequence[FrozenTrial],
                   direction: str) -> list[FrozenTrial]:
    """The finished trials, the best-believed first (the model's mean less the move cost)."""
    done = measured(trials)
    if not done:
        return []
    model = Model(space, *observations(space, trials, direction))
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
        params, screened = self.propose(others, trial.number)
        if screened is not None:  # as Optuna's GridSampler records its grid point
            study._storage.set_trial_system_attr(trial._trial_id, SCREENING, screened)
        return params

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._fallback.sample_independent(study, trial, param_name, param_distribution)

    def propose(self, trials: Sequence[FrozenTrial], number: int) -> tuple[dict, int | None]:
        """The setting of trial `number`, given the study's other trials, and the index of the
        screening group it measures (None for the model's proposals)."""
        rng = random.Random(self.seed * 1_000_003 + number)
        settings, values, failed = observations(self.space, trials, self.direction)
        done = [self.space.complete(t.params) for t in measured(trials)]
        running = [self.space.complete(t.params) for t in trials
                   if t.state == TrialState.RUNNING and t.params]
        ended = [t for t in trials if t.state == TrialState.FAIL and t.params]
        # never again: a measured, running, refused or failed setting; nor one whose trials told
        # nothing twice
        silent = [self._key(t) for t in ended if _silent(t)]
        tried = ({_key(s) for s in done + running}
                 | {self._key(t) for t in ended if not _silent(t)} | _twice(silent))
        pending, retry = self._pending(trials) if number > 0 else ([], [])
        if not values:  # nothing measured yet: screening from the defaults
            screened = self._screen(retry or pending, self.space.defaults, tried)
            return screened or (self._untried_near(self.space.defaults, tried, rng), None)
        model = Model(self.space, settings, values, failed)
        anchor = max(done, key=model.believed)
        gain = model.believed(anchor) - model.believed(self.space.defaults)
        clear = gain > max(JUMP * model.noise, FOLLOW)
        base = anchor if clear else self.space.defaults
        screened = self._screen(retry, base, tried)
        if screened:  # a screening trial that told nothing, again (as it was proposed, when
            return screened  # nothing was measured since)
        proposals = [self._near(anchor, rng) for _ in range(PROPOSALS)]
        proposals += [self._reverted(anchor, knob) for knob in self.space.moved(anchor)]
        proposals += [self._joined(anchor, setting) for setting in
                      sorted(done, key=model.believed)[-UNIONS:]]
        proposals = [p for p in proposals if self.space.fits(p) and _key(p) not in tried]
        if not proposals:
            return self._untried_near(self.space.defaults, tried, rng), None
        jump = max(proposals, key=model.believed)
        if model.believed(jump) - model.believed(anchor) > JUMP * model.noise:
            return jump, None  # a clear predicted gain (two good groups joined) comes first
        if clear or not pending:  # a clear gain is followed up before screening goes on
            untold = [(model.untold(anchor, without), without)
                      for without in (self._reverted(anchor, knob)
                                      for knob in self.space.moved(anchor))
                      if _key(without) not in tried and self.space.fits(without)]
            if untold:
                sd, without = max(untold, key=lambda pair: pair[0])
                if sd > 0:
                    return without, None
        screened = self._screen(pending, base, tried)
        if screened:  # screening goes on where the gain is, so that what acts there shows
            return screened
        gains = model.with_believed(running).expected_improvement(anchor, proposals)
        return proposals[int(np.argmax(gains))], None

    def _pending(self, trials: Sequence[FrozenTrial]) -> tuple[list[int], list[int]]:
        """The screening groups not measured yet (nor running, refused or failed), and those of
        them whose trial told nothing (interrupted, its reference failed): run again first, but
        not a third time."""
        taken = [(t.system_attrs.get(SCREENING), t) for t in trials
                 if t.system_attrs.get(SCREENING) is not None]
        silent = [i for i, t in taken if _silent(t)]
        screened = {i for i, t in taken if not _silent(t)} | _twice(silent)
        pending = [i for i in range(len(self.design)) if i not in screened]
        return pending, [i for i in pending if i in silent]

    def _screen(self, pending: list[int], base: dict, tried: set) -> tuple[dict, int] | None:
        """The first pending screening group that moves something on `base` (its knobs that
        `base` moves keep their values) into an untried setting that fits in memory; None when
        no group does (a group whose knobs `base` all moves, or one shrunk back to `base` to
        fit, waits: on another best-believed setting it may move something)."""
        moved = {k.name for k in self.space.moved(base)}
        for index in pending:
            group = [k for k in self.space.knobs if k.name in self.design[index]
                     and k.name not in moved]
            params = {**base, **{k.name: self.design[index][k.name] for k in group}}
            _fit_memory(self.space, params, group)
            if group and _key(params) not in tried and self.space.fits(params):
                return params, index
        return None

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


def _silent(trial: FrozenTrial) -> bool:
    """Whether a trial failed without saying anything of its setting: interrupted (its worker
    died), or its reference failed."""
    return trial.state == TrialState.FAIL and not (_told(trial) or refused(trial))


def _twice(silent: list) -> set:
    """The settings (or screening groups) whose trials told nothing twice: not run a third
    time, lest one setting that kills its worker takes every trial."""
    return {item for item in silent if silent.count(item) >= 2}


def _key(params: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in params.items()))
