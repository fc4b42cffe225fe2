"""The default search of `perflab tune --method bayes`: screen the knobs in groups, follow up
a clear gain in the trials the screening leaves, and let a Bayesian model of the knobs'
effects pick the rest, a few knobs away from the setting it believes best.

Why this and not TPE or random search: on a server the defaults suit most knobs, a few matter,
and one trial is noisy (2-10% side by side on a 2-core machine, 10-15% once a large gain makes
the server fast). Drawing every knob at random, as random search, TPE's start-up and TPE's prior
do, changes twenty harmless-looking knobs per trial and leaves some harmful ones in the winner;
changing one knob at a time (the MySQL 5.5 sysbench tuning study's method, `ofat`) finds the few
that matter only after trying every knob alone. The search has two parts:

- The screening (`screening`): two passes over the knobs in groups of about a sixth of them,
  each group moving its knobs far from their defaults: a number to the longer side of its
  default's range in the first pass and to the other side in the second, a choice to another
  choice. A large effect anywhere shows within a dozen trials. A group is moved on what
  carries the best-believed setting's gain once that one holds a clear gain (predicted better
  than the defaults by CLEAR_SDS noise sds and by MIN_FOLLOWED_GAIN), so that what acts where
  the gain is shows (its own knobs keep their values); before, on the defaults. What carries
  it: that setting less the knobs that rode in with a group's noise (`carrying`).
- The model (`Model`): log objective = intercept + a sum of one effect per knob (a choice: one
  term per non-default choice; a number: a piecewise-linear curve over its search scale, plus a
  step for being set at all, since some variables change the server by being set:
  query_cache_size switches the query cache on). Each knob has its own prior scale and the
  trials one noise, both fitted to the trials by EM (empirical Bayes with automatic relevance):
  knobs the trials show harmless shrink to almost nothing, the few that matter keep their size.
  Once one knob's effect is clear, every other knob also gets an interaction with it
  (`DominantKnob`): pool-of-threads is harmless at the default buffer pool and costs 40% once
  the data fit in a large one.

Before each trial, `AdditiveSearch.propose` takes the first of these steps that proposes
something:

1. First screening: while nothing is measured, the screening's next group, on the defaults.
2. Screening again: a screening trial that was uninformative (interrupted, its reference
   failed) is run again, once, before anything else.
3. Nowhere near: when no untried setting near the best-believed one fits, an untried one near
   the defaults.
4. Jump: among settings one or two knobs from the best-believed one, with one of its knobs put
   back, or joined with the moves of another good setting (two screening groups that both
   helped), one predicted better by more than CLEAR_SDS noise sds.
5. Attribution: when the best-believed setting holds a clear gain, or the screening is over, a
   knob it moves (typically one that came in with others in a screening group) whose own effect
   there the trials leave unresolved is put back to its default, as group screening follows up
   a group that moved. While the screening goes on (a group is left that moves something on
   the base), only a knob that carries the gain, and only while the budget leaves a trial for
   each such group (every one when the budget covers the whole screening, else the first
   pass's): on the held-out MyISAM join at 12 trials, following up a x1.8 gain knob by knob
   left the group with the query cache's x300 unmeasured. A knob that rode in is put back once
   the screening is over. Unresolved: the posterior sd of what putting it back changes is above
   UNRESOLVED_SD and its mean within RESOLVED_SDS sds of nothing. A knob whose effect is known
   to be large (the buffer pool on a dataset larger than it) is resolved even while its size is
   uncertain, or the noise of a fast server would have it put back again after every change of
   the best-believed setting.
6. Next screening: the screening's next group.
7. Best improvement: the setting near the best-believed one of largest expected improvement
   over it (the trials still running counted at their believed value, so that workers sharing a
   study spread). Every moved knob costs a little, so that a recommendation changes only what
   the trials support.

Never proposed again: a setting measured, running, refused or failed, nor one whose trials were
uninformative twice. The answer is the best-believed tried setting (the model's mean, not the
luckiest figure), and the final re-measure (tune/final.py) judges it. The proposals depend on
the seed, the trial number and the trials so far (a trial records the screening group it
measures), so a resumed study and workers sharing one go on as one search.
"""

from __future__ import annotations

import copy
import functools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from optuna.trial import FrozenTrial, TrialState
from scipy import stats

from perflab.tune.methods import Next, SearchMethod, Step
from perflab.tune.result import (
    Ranking,
    failed_by_setting,
    figure,
    spends_budget,
    uninformative,
)
from perflab.tune.settings import Direction
from perflab.tune.space import Knob, KnobKind, Space, engine_of, setting_key

GRID = 5  # points of each number's piecewise-linear curve
PASSES = 2  # screening passes over the knobs
MOVE_COST = 0.01  # in log objective, per knob moved from its default
# A difference of this many noise sds is clear: a predicted gain over the best-believed setting
# is measured at once, a knob whose effect spans this much is the dominant one, and a gain over
# the defaults this large (and MIN_FOLLOWED_GAIN) is followed up at once.
CLEAR_SDS = 2.0
MIN_FOLLOWED_GAIN = 0.1  # in log objective
UNRESOLVED_SD = 0.05  # posterior sd of a knob's own effect (log) above which it may be put back
RESOLVED_SDS = 3.0  # a knob's own effect this many posterior sds from nothing is resolved
INTERACTION_SCALE = 0.2  # prior sd (log) of a knob's interaction with the dominant one
PROPOSALS = 400  # settings one or two knobs from the best-believed one, scored each trial
UNIONS = 12  # the best-believed settings whose moves are tried joined to the best one
FAILED_PENALTY = 1.0  # a trial that failed counts as this much below the worst (log)
SCALES = (0.02, 1.0)  # bounds of a knob's prior effect scale (log objective)
NOISES = (0.03, 0.5)  # bounds of the noise's
START_SCALE, START_NOISE = 0.2, 0.1
EM_ROUNDS = 40
INTERCEPT_SCALE = 10.0
SCREENING = "additive:screening"  # a trial's user attribute: the screening group it measures


def _interpolation_weights(u: float) -> list[float]:
    """The weights of the GRID points of a curve at u, 0..1: the hat functions of linear
    interpolation (plain floats: this runs for every knob of every setting the model reads,
    hundreds per proposal)."""
    return [max(0.0, 1 - abs(u * (GRID - 1) - i)) for i in range(GRID)]


@functools.lru_cache(maxsize=65536, typed=True)
def _knob_terms(knob: Knob, value, default) -> tuple[float, ...]:
    """One knob's terms: a choice's indicator per non-default choice; a number's curve over
    GRID points, then its step for being set at all. All zero at the default. (Cached: the
    settings a proposal scores share most of their values.)"""
    if knob.kind == KnobKind.CHOICE:
        return tuple(float(str(value) == c) for c in knob.choices if c != str(default))
    at = _interpolation_weights(knob.position(value))
    zero = _interpolation_weights(knob.position(default))
    return (*(a - z for a, z in zip(at, zero, strict=True)), float(int(value) != int(default)))


def features(space: Space, params: dict, dominant: DominantKnob | None = None) -> np.ndarray:
    """The model's terms for a setting: all zero but the intercept at the defaults. With a
    dominant knob, each other knob's terms again, scaled by how much of the dominant knob's
    effect the setting reaches (its interaction with that knob)."""
    terms = [1.0]
    scale = dominant.reached(params) if dominant else 0.0
    for knob in space.knobs:
        own = _knob_terms(knob, params[knob.name], space.defaults[knob.name])
        terms += own
        if dominant and knob.name != dominant.knob.name:
            terms += [term * scale for term in own]
    return np.array(terms)


@dataclass(frozen=True)
class DominantKnob:
    """The knob whose fitted effect is largest. Other knobs may act otherwise where it gains
    (pool-of-threads was harmless at the default buffer pool and cost 40% once the data fitted
    in it); the model gives each an interaction with it, the effect heredity of designed
    experiments (interactions go with large main effects)."""

    knob: Knob
    default: object
    weights: np.ndarray  # its fitted terms
    low: float  # its effect at its worst measured value
    high: float  # and at its best

    def reached(self, params: dict) -> float:
        """How much of this knob's measured effect a setting reaches: 0 at its worst measured
        value, 1 at its best (clipped between)."""
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

    Once one knob's effect is clear (its fitted range above CLEAR_SDS noise sds), the model is
    fitted again with every other knob's interaction with it (DominantKnob). Those keep a fixed
    prior scale, INTERACTION_SCALE: relevance determination would give a gain seen only with
    several knobs moved together to one of them and call the others resolved, which is how a
    harmful companion of the gain stayed in the answer."""

    def __init__(self, space: Space, settings: Sequence[dict], values: Sequence[float],
                 failed: int = 0):
        """`failed`: how many of the settings, the last ones, are failures (observations)."""
        self.space = space
        self.settings = list(settings)
        self.measured = self.settings[:len(self.settings) - failed]
        self.y = np.array(values, dtype=float)
        self.dominant: DominantKnob | None = None
        self._fit()
        self.dominant = self._dominant()
        if self.dominant is not None:
            self._fit()

    def _fit(self) -> None:
        self.x = np.array([features(self.space, s, self.dominant) for s in self.settings])
        self.groups, interactions = _groups(self.space, self.dominant)
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

    def _dominant(self) -> DominantKnob | None:
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
                          DominantKnob(knob, default, weights, min(effects), max(effects))))
        span, dominant = max(spans, key=lambda pair: pair[0])
        return dominant if span > CLEAR_SDS * self.noise and span > 0 else None

    def _posterior(self) -> None:
        """The weights' posterior mean and covariance. With fewer trials than features (a
        search's usual case: tens of trials, hundreds of features) it is solved in the trials'
        space (Woodbury): with D the prior variances and K = X D Xᵀ + noise² I = L Lᵀ,
        covariance = D - Aᵀ A and mean = Aᵀ L⁻¹ y, where A = L⁻¹ X D; an n x n factor in
        place of a features x features one, ten times faster at 20 trials. Otherwise from the
        Cholesky factor R of the precision: covariance = R⁻ᵀ R⁻¹. (numpy's, not scipy's:
        scipy brings its own BLAS, whose threads and numpy's would take turns spinning on the
        tuner's few cores.)"""
        n, p = self.x.shape
        if n < p:
            scaled = self.x * self.variances  # X D
            root = np.linalg.cholesky(scaled @ self.x.T + self.noise ** 2 * np.eye(n))
            a = np.linalg.solve(root, scaled)
            self.cov = np.diag(self.variances) - a.T @ a
            self.mean = a.T @ np.linalg.solve(root, self.y)
            return
        precision = self.x.T @ self.x / self.noise ** 2 + np.diag(1 / self.variances)
        root = np.linalg.inv(np.linalg.cholesky(precision))  # R⁻¹, lower triangular
        self.cov = root.T @ root
        self.mean = self.cov @ (self.x.T @ self.y) / self.noise ** 2

    def features(self, params: dict) -> np.ndarray:
        return features(self.space, params, self.dominant)

    def with_believed(self, settings: Sequence[dict]) -> Model:
        """The model with `settings` (trials still running) added at their predicted values,
        so that the next proposal looks elsewhere (the "kriging believer")."""
        if not settings:
            return self
        other = copy.copy(self)
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

    def unresolved(self, params: dict, without: dict) -> float:
        """The posterior sd of that difference when the trials leave it unresolved (sd above
        UNRESOLVED_SD, mean within RESOLVED_SDS sds of nothing), else 0."""
        mean, sd = self.difference(params, without)
        return sd if sd > UNRESOLVED_SD and abs(mean) < RESOLVED_SDS * sd else 0.0

    def expected_improvement(self, anchor: dict, proposals: Sequence[dict]) -> np.ndarray:
        """For each proposal, the expected gain over `anchor` that is above zero, under the
        posterior of their difference (less the cost of the knobs it moves beyond the
        anchor's): large for a predicted jump, about 0.4 sd for a change whose effect the trials
        leave unresolved (a knob that came in with others, put back), about 0 for a known one."""
        base = self.features(anchor)
        d = np.array([self.features(p) for p in proposals]) - base
        cost = MOVE_COST * (np.array([len(self.space.moved(p)) for p in proposals])
                            - len(self.space.moved(anchor)))
        mean = d @ self.mean - cost
        sd = np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", d, self.cov, d), 1e-18))
        z = mean / sd
        return mean * stats.norm.cdf(z) + sd * stats.norm.pdf(z)


def _groups(space: Space,
            dominant: DominantKnob | None) -> tuple[list[np.ndarray], np.ndarray]:
    """The indices of each knob's own terms in `features` (after the intercept), and those of
    the interaction terms."""
    groups: list[np.ndarray] = []
    interactions: list[int] = []
    start = 1
    for knob in space.knobs:
        default = space.defaults[knob.name]
        size = len(_knob_terms(knob, default, default))
        groups.append(np.arange(start, start + size))
        start += size
        if dominant and knob.name != dominant.knob.name:
            interactions += range(start, start + size)
            start += size
    return groups, np.array(interactions, dtype=int)


def group_size(knobs: int) -> int:
    """About a sixth of the knobs per screening trial, so each pass takes at most six trials."""
    return max(1, math.ceil(knobs / 6))


def short_budget(design: int, budget: int | None) -> str:
    """A warning when the budget ends the screening (`design` trials) before both of its
    passes: a knob whose gain lies on the side its second pass moves it to (a larger sort
    buffer, whose default sits high in its range) may then never be measured there."""
    needed = 1 + design  # trial 0 runs the defaults
    if not budget or budget >= needed:
        return ""
    one_pass = design // PASSES
    return (f"\nwarning: a budget of {budget} trials ends the screening before it moved every "
            f"knob both ways (its first {one_pass} trials move each knob one way, the next "
            f"{one_pass} the other, after trial 0's defaults): a gain on a knob's other side "
            f"may be missed; a budget of {needed} or more screens both ways")


def screening(space: Space, seed: int) -> list[dict]:
    """The screening groups: PASSES passes over the knobs in shuffled groups, each a move of its
    knobs far from their defaults, each number to a side of its default (the longer one first:
    it holds more of the range) and to the other side in the second pass, each choice to another
    choice. The storage engine's own knobs come first in each pass (shuffled among themselves):
    they are where a study's data is, and they then share groups with each other, not with a
    server-wide knob whose harm could hide their gain."""
    rng = random.Random(seed)
    sides = {k.name: 1 if k.kind == KnobKind.CHOICE or
             k.position(space.defaults[k.name]) <= 0.5 else -1 for k in space.knobs}
    firsts: dict[str, str] = {}
    size = group_size(len(space.knobs))
    design = []
    engine = [k for k in space.knobs if engine_of(k.name)]
    server = [k for k in space.knobs if not engine_of(k.name)]
    for flip in (1, -1)[:PASSES]:
        order = rng.sample(engine, len(engine)) + rng.sample(server, len(server))
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
    on that side (the other side when the default sits at that end), 0 on the low side of a
    number whose 0 switches its feature off (the farthest move there is); another choice, a
    different one from `first` when there is one."""
    default = space.defaults[knob.name]
    if knob.kind == KnobKind.CHOICE:
        others = [c for c in knob.choices if c != str(default)] or [str(default)]
        fresh = [c for c in others if c != first]
        return rng.choice(fresh or others)
    u0 = knob.position(default)
    if (side > 0 and u0 < 0.95) or u0 <= 0.05:
        return knob.value_at(u0 + (1 - u0) * rng.uniform(0.5, 1.0))
    if knob.zero_off:
        return 0
    return knob.value_at(u0 * rng.uniform(0.0, 0.5))


def _fit_memory(space: Space, params: dict, knobs: Sequence[Knob]) -> None:
    """Halve toward its default the moved number whose halving frees most memory, until the
    setting fits (or nothing frees any: then the defaults themselves do not fit)."""
    while not space.fits(params):
        best = None
        for knob in knobs:
            value, default = params[knob.name], space.defaults[knob.name]
            if knob.kind == KnobKind.CHOICE or knob.same(value, default):
                continue
            u, u0 = knob.position(value), knob.position(default)
            nearer = default if abs(u - u0) < 0.02 else knob.value_at((u + u0) / 2)
            freed = space.memory(params) - space.memory({**params, knob.name: nearer})
            if freed > 0 and (best is None or freed > best[0]):
                best = (freed, knob.name, nearer)
        if best is None:
            return
        params[best[1]] = best[2]


def observations(space: Space, trials: Sequence[FrozenTrial],
                 direction: Direction) -> tuple[list[dict], list[float], int]:
    """The trials as the model reads them: the log objective of each finished trial (negated
    when smaller is better), then each trial whose setting failed (its server would not start or
    crashed, or it fell under min_qps) as FAILED_PENALTY below the worst, and how many of those
    there are. Left out: refused proposals (never measured), trials whose reference failed, and
    trials interrupted or failed because their worker died (no state of their own): they say
    nothing of their setting."""
    sign = 1.0 if direction == Direction.MAXIMIZE else -1.0
    done = measured(trials)
    settings = [space.complete(t.params) for t in done]
    values = [sign * math.log(figure(t)) for t in done]
    failed = [t for t in trials
              if t.state == TrialState.FAIL and t.params and failed_by_setting(t)]
    if values:
        settings += [space.complete(t.params) for t in failed]
        values += [min(values) - FAILED_PENALTY] * len(failed)
        return settings, values, len(failed)
    return settings, values, 0


def measured(trials: Sequence[FrozenTrial]) -> list[FrozenTrial]:
    return [t for t in trials if t.state == TrialState.COMPLETE and t.value and t.value > 0]


def believed_order(space: Space, trials: Sequence[FrozenTrial],
                   direction: Direction) -> list[FrozenTrial]:
    """The finished trials, the best-believed first (the model's mean less the move cost)."""
    done = measured(trials)
    if not done:
        return []
    model = Model(space, *observations(space, trials, direction))
    return sorted(done, key=lambda t: model.believed(space.complete(t.params)), reverse=True)


def clear_gain(space: Space, model: Model, params: dict) -> bool:
    """Whether the model believes `params` clearly better than the defaults."""
    gain = model.believed(params) - model.believed(space.defaults)
    return gain > max(CLEAR_SDS * model.noise, MIN_FOLLOWED_GAIN)


def carrying(space: Space, model: Model, anchor: dict) -> dict:
    """What carries the anchor's clear gain: the anchor with every knob put back whose own
    gain there the model believes under MIN_FOLLOWED_GAIN, when what is left still holds a
    clear gain (else the whole anchor: a gain not yet shared out among its knobs). The
    screening moves its groups on this, not on what rode in with the gain: a rider holds its
    knob where the screening cannot move it (query_cache_type=DEMAND riding in kept a later
    group's query_cache_type=ON off, and the query cache was never found)."""
    riders = [k for k in space.moved(anchor)
              if model.difference(anchor, reverted(space, anchor, k))[0] < MIN_FOLLOWED_GAIN]
    kept = {**anchor, **{k.name: space.defaults[k.name] for k in riders}}
    return kept if clear_gain(space, model, kept) else anchor


def reserved(design: int, budget: int | None, pending: list[int]) -> list[int]:
    """The pending screening groups (of `design`) a trial budget keeps a trial for: every one
    when it covers the whole screening, else those of the first pass (each knob moved one
    way); none without a trial budget."""
    if not budget:
        return []
    if budget >= 1 + design:
        return pending
    return [i for i in pending if i < design // PASSES]


def reverted(space: Space, params: dict, knob: Knob) -> dict:
    """`params` with `knob` put back to its default."""
    return {**params, knob.name: space.defaults[knob.name]}


Proposal = tuple[dict, int | None]  # a setting, and the screening group it measures if any


@dataclass
class _Situation:
    """The study's trials as the steps of `AdditiveSearch.propose` read them."""

    rng: random.Random  # seeded by the trial number: every worker proposes alike
    tried: set[tuple]  # the settings never proposed again
    pending: list[int]  # the screening groups not measured yet (nor running, refused, failed)
    retry: list[int]  # those of them whose trial was uninformative once: run again first
    running: list[dict]  # the settings of the trials running now
    left: float  # the trials the budget leaves, this one included (inf: no trial budget)
    # the pending groups that move something on the base: the screening goes on while one is
    screenable: list[int] = field(default_factory=list)
    # once a trial is measured:
    model: Model | None = None
    anchor: dict = field(default_factory=dict)  # the best-believed measured setting
    clear: bool = False  # it holds a clear gain over the defaults
    base: dict = field(default_factory=dict)  # where screening groups move: the anchor if clear
    near: list[dict] = field(default_factory=list)  # untried settings near the anchor that fit

    @property
    def fitted(self) -> Model:
        """The model, which every step after the first screening has (a trial is measured)."""
        assert self.model is not None, "no trial is measured yet"
        return self.model


class AdditiveSearch(SearchMethod):
    """The search above. Its proposals fix every knob; a screening trial records the group it
    measures (the user attribute SCREENING)."""

    ranking = Ranking.MODEL

    def __init__(self, space: Space, direction: Direction, seed: int = 0,
                 budget: int | None = None):
        super().__init__(space, direction, seed, budget)
        self.design = screening(space, seed)

    def after(self, trials: Sequence[FrozenTrial], number: int) -> Next:
        now = self._read(trials, number)
        params, group = self._proposal(now)
        if setting_key(params) in now.tried:  # a space of few settings, all tried
            return Next(Step.DONE, reason="no untried setting near the best-believed one, nor "
                        f"among {PROPOSALS} draws near the defaults ({len(now.tried)} settings "
                        "measured, running or refused): a setting is not measured twice")
        return Next(Step.MEASURE, params, {} if group is None else {SCREENING: group})

    def rank(self, finished: Sequence[FrozenTrial]) -> list[FrozenTrial]:
        """What the model believes, not the luckiest figures."""
        return believed_order(self.space, finished, self.direction)

    def describe(self) -> str:
        return (f"bayes: {len(self.design)} screening trials move the {len(self.space.knobs)} "
                f"knobs in groups of {group_size(len(self.space.knobs))} (each knob to one side "
                "of its default, then the other); a clear gain is followed up (a knob that came "
                "in with it put back) in the trials the budget leaves beside the screening, "
                "which goes on from what carries the gain; an additive "
                "model of the knobs' effects (with their interactions with the knob that "
                "matters most) picks the other trials: a setting it predicts clearly better, a "
                "knob whose own effect is not yet resolved put back, or the best expected "
                "improvement near the best-believed setting"
                + short_budget(len(self.design), self.budget))

    def propose(self, trials: Sequence[FrozenTrial], number: int) -> Proposal:
        """The setting of trial `number`, given the study's other trials, and the index of the
        screening group it measures (None for the model's proposals), from the first of these
        steps that proposes something (the module's docstring says why each):

        1. first screening: while nothing is measured, a screening group on the defaults;
        2. screening again: a screening group whose trial was uninformative;
        3. nowhere near: when nothing untried fits near the best-believed setting, a setting
           near the defaults;
        4. jump: a setting predicted clearly better than the best-believed one;
        5. attribution: the best-believed setting with a knob of unresolved effect put back
           (while the screening goes on, a knob that carries the gain, within the trials the
           pending screening groups leave);
        6. next screening: the screening's next group;
        7. best improvement: the largest expected improvement near the best-believed setting.
        """
        return self._proposal(self._read(trials, number))

    def _proposal(self, now: _Situation) -> Proposal:
        for step in (self._first_screening, self._screening_again, self._nowhere_near,
                     self._jump, self._attribution, self._next_screening):
            proposal = step(now)
            if proposal is not None:
                return proposal
        return self._best_improvement(now)

    def _read(self, trials: Sequence[FrozenTrial], number: int) -> _Situation:
        """What the trials say, for the steps; the model once a trial is measured."""
        space = self.space
        done = [space.complete(t.params) for t in measured(trials)]
        running = [space.complete(t.params) for t in trials
                   if t.state == TrialState.RUNNING and t.params]
        ended = [t for t in trials if t.state == TrialState.FAIL and t.params]
        again = [self._setting(t) for t in ended if uninformative(t)]
        tried = ({setting_key(s) for s in done + running}
                 | {self._setting(t) for t in ended if not uninformative(t)}
                 | _uninformative_twice(again))
        pending, retry = self._pending(trials)
        left = self.budget - sum(map(spends_budget, trials)) if self.budget else math.inf
        now = _Situation(random.Random(self.seed * 1_000_003 + number), tried, pending, retry,
                         running, left)
        settings, values, failed = observations(space, trials, self.direction)
        if values:
            now.model = model = Model(space, settings, values, failed)
            now.anchor = max(done, key=model.believed)
            now.clear = clear_gain(space, model, now.anchor)
            now.base = carrying(space, model, now.anchor) if now.clear else space.defaults
            now.near = self._near_anchor(now, done)
        now.screenable = [i for i in pending if self._screen([i], now.base, tried) is not None]
        return now

    def _near_anchor(self, now: _Situation, done: list[dict]) -> list[dict]:
        """Untried settings that fit, one or two knobs from the anchor: drawn at random, with
        one of its knobs put back, or joined with the moves of the best-believed settings."""
        anchor, model = now.anchor, now.fitted
        near = [self._near(anchor, now.rng) for _ in range(PROPOSALS)]
        near += [reverted(self.space, anchor, knob) for knob in self.space.moved(anchor)]
        near += [self._joined(anchor, setting)
                 for setting in sorted(done, key=model.believed)[-UNIONS:]]
        return [p for p in near if self.space.fits(p) and setting_key(p) not in now.tried]

    def _first_screening(self, now: _Situation) -> Proposal | None:
        if now.model is not None:
            return None
        defaults = self.space.defaults
        return self._screen(now.retry or now.pending, defaults, now.tried) or \
            (self._untried_near(defaults, now.tried, now.rng), None)

    def _screening_again(self, now: _Situation) -> Proposal | None:
        """(As it was proposed, when nothing was measured since.)"""
        return self._screen(now.retry, now.base, now.tried)

    def _nowhere_near(self, now: _Situation) -> Proposal | None:
        if now.near:
            return None
        return self._untried_near(self.space.defaults, now.tried, now.rng), None

    def _jump(self, now: _Situation) -> Proposal | None:
        model = now.fitted
        jump = max(now.near, key=model.believed)
        if model.believed(jump) - model.believed(now.anchor) > CLEAR_SDS * model.noise:
            return jump, None
        return None

    def _attribution(self, now: _Situation) -> Proposal | None:
        """The knob put back is the one whose effect is the most uncertain. While the screening
        goes on, one of the base's knobs: none before a clear gain, and none of its riders (a
        group that can no longer move anything on the base, its knobs all moved there, does not
        hold the riders back, nor a trial of the budget)."""
        if now.left <= len(reserved(len(self.design), self.budget, now.screenable)):
            return None
        knobs = self.space.moved(now.base if now.screenable else now.anchor)
        unresolved = [(now.fitted.unresolved(now.anchor, without), without)
                      for without in (reverted(self.space, now.anchor, knob) for knob in knobs)
                      if setting_key(without) not in now.tried and self.space.fits(without)]
        if unresolved:
            sd, without = max(unresolved, key=lambda pair: pair[0])
            if sd > 0:
                return without, None
        return None

    def _next_screening(self, now: _Situation) -> Proposal | None:
        """On the base: where the gain is, so that what acts there shows (the first group that
        moves something there: `screenable` holds them, in order)."""
        return self._screen(now.screenable, now.base, now.tried)

    def _best_improvement(self, now: _Situation) -> Proposal:
        model = now.fitted.with_believed(now.running)
        gains = model.expected_improvement(now.anchor, now.near)
        return now.near[int(np.argmax(gains))], None

    def _pending(self, trials: Sequence[FrozenTrial]) -> tuple[list[int], list[int]]:
        """The screening groups not measured yet (nor running, refused or failed), and those of
        them whose trial was uninformative (interrupted, its reference failed): run again
        first, but not a third time."""
        taken = [(group, t) for t in trials if (group := _screening_group(t)) is not None]
        again = [i for i, t in taken if uninformative(t)]
        screened = {i for i, t in taken if not uninformative(t)} | _uninformative_twice(again)
        pending = [i for i in range(len(self.design)) if i not in screened]
        return pending, [i for i in pending if i in again]

    def _screen(self, pending: list[int], base: dict, tried: set) -> Proposal | None:
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
            if group and setting_key(params) not in tried and self.space.fits(params):
                return params, index
        return None

    def _near(self, params: dict, rng: random.Random) -> dict:
        """`params` with one or two knobs set to random values of their ranges."""
        near = dict(params)
        for knob in rng.sample(self.space.knobs, min(len(self.space.knobs), rng.randint(1, 2))):
            if knob.kind == KnobKind.CHOICE:
                others = [c for c in knob.choices if c != str(near[knob.name])]
                near[knob.name] = rng.choice(others) if others else near[knob.name]
            else:
                near[knob.name] = knob.value_at(rng.random())
        return near

    def _setting(self, trial: FrozenTrial) -> tuple:
        return setting_key(self.space.complete(trial.params))

    def _untried_near(self, params: dict, tried: set, rng: random.Random) -> dict:
        """A setting near `params` that fits and was not tried, when one turns up among
        PROPOSALS draws (else the last draw: the tuner refuses it if it does not fit)."""
        near = params
        for _ in range(PROPOSALS):
            near = self._near(params, rng)
            if self.space.fits(near) and setting_key(near) not in tried:
                break
        return near

    def _joined(self, params: dict, other: dict) -> dict:
        """`params` with the knobs `other` moves set as `other` sets them."""
        return {**params, **{k.name: other[k.name] for k in self.space.moved(other)}}


def _screening_group(trial: FrozenTrial) -> int | None:
    """The screening group a trial measures (a system attribute in studies begun before the
    search recorded it as a user attribute)."""
    return trial.user_attrs.get(SCREENING, trial.system_attrs.get(SCREENING))


def _uninformative_twice(items: list) -> set:
    """The settings (or screening groups) listed twice in `items`, those of uninformative
    trials: not run a third time, lest one setting that kills its worker takes every trial."""
    return {item for item in items if items.count(item) >= 2}
