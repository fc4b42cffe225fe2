"""How `perflab tune` chooses its trials: one interface, `SearchMethod`, and its methods.

Before each trial the tuner asks its method what to do after the trials so far (every worker's,
finished and running): measure a setting (`Step.MEASURE`: the knobs it leaves open are drawn by
the method's Optuna sampler), wait for trials other workers are running (`Step.WAIT`), or stop,
nothing being left to try (`Step.DONE`). Every method measures the server's defaults first.

- `OneFactorAtATime` (`ofat`): the MySQL 5.5 sysbench tuning study's method, replayed from the
  trials so far.
- `AdditiveSearch` (tune/additive.py, `bayes`'s default): screening, then an additive model.
- `OptunaSampling`: an Optuna sampler draws each trial: TPE (with every third trial after its
  start-up drawn at random), QMC, ... for `bayes`, and random search, the control (`random`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum, StrEnum, auto

import optuna
from optuna.trial import FrozenTrial, TrialState

from perflab.tune.result import Ranking, figure
from perflab.tune.settings import Direction, better
from perflab.tune.space import Knob, KnobKind, Space, setting_key


class Method(StrEnum):
    """How `perflab tune` searches (its value names the study: `PLAN:ofat`)."""

    OFAT = "ofat"  # one factor at a time, replayed from the trial history
    BAYES = "bayes"  # a sampler's choice: the additive search or one of Optuna's
    RANDOM = "random"  # the control


class Sampler(StrEnum):
    """What proposes a trial (stored with the study, so that a resumed one keeps it)."""

    ADDITIVE = "additive"  # tune/additive.py, bayes's default; the others are Optuna's
    TPE = "tpe"
    RANDOM = "random"
    CMAES = "cmaes"
    QMC = "qmc"
    GP = "gp"


class Step(Enum):
    """What a method says to do before the next trial."""

    MEASURE = auto()  # a trial of `Next.params`
    WAIT = auto()  # for the results of trials other workers are running
    DONE = auto()  # nothing is left to try


@dataclass(frozen=True)
class Next:
    """A method's answer before a trial."""

    step: Step
    params: dict = field(default_factory=dict)  # the knobs fixed; the sampler draws the others
    attrs: dict = field(default_factory=dict)  # user attributes recorded with the trial
    reason: str = ""  # why DONE


WAIT = Next(Step.WAIT)


class SearchMethod(ABC):
    """A way of choosing trials over `space`, the study's direction ("maximize" or
    "minimize"), its seed and its budget in trials (None: a time budget)."""

    ranking = Ranking.FIGURE  # what ranks the trials for the answer

    def __init__(self, space: Space, direction: Direction, seed: int = 0,
                 budget: int | None = None):
        self.space, self.direction, self.seed, self.budget = space, direction, seed, budget
        # for the methods whose proposals fix every knob: it draws nothing
        self._sampler: optuna.samplers.BaseSampler = optuna.samplers.RandomSampler(seed=seed)

    def next(self, trials: Sequence[FrozenTrial], number: int) -> Next:
        """What to do before trial `number`, given the study's trials so far, finished and
        running. The server's defaults come first."""
        if not trials:
            return Next(Step.MEASURE, dict(self.space.defaults))
        return self.after(trials, number)

    @abstractmethod
    def after(self, trials: Sequence[FrozenTrial], number: int) -> Next:
        """`next` once a trial has started."""

    def sampler(self, started: int) -> optuna.samplers.BaseSampler:
        """The Optuna sampler that draws what the next proposal leaves open, `started` being
        the study's trials so far."""
        return self._sampler

    def rank(self, finished: Sequence[FrozenTrial]) -> list[FrozenTrial]:
        """The measured trials, the best first: by their own figures."""
        complete = [t for t in finished if t.state == TrialState.COMPLETE]
        return sorted(complete, key=figure, reverse=self.direction == Direction.MAXIMIZE)

    def describe(self) -> str | None:
        """What the tuner says of the method as the search starts, if anything."""
        return None


# -- one factor at a time -----------------------------------------------------------------------

MIN_EFFECT = 0.02  # OFAT adopts a change only when it beats the baseline by this much


class OneFactorAtATime(SearchMethod):
    """The MySQL 5.5 sysbench tuning study's method (`ofat_next`)."""

    def after(self, trials: Sequence[FrozenTrial], number: int) -> Next:
        return ofat_next(self.space, trials, self.direction)

    def describe(self) -> str | None:
        first_round = ofat_first_round(list(self.space.knobs), self.space.defaults)
        if not self.budget or self.budget >= first_round:
            return None
        return (f"warning: ofat's first round varies each knob alone: {first_round} trials "
                f"with these {len(self.space.knobs)} knobs; a budget of {self.budget} trials "
                "ends it before every knob was tried")


def ofat_next(space: Space, trials: Sequence[FrozenTrial], direction: Direction) -> Next:
    """One factor at a time, replayed from the trials (so a resumed study goes on).

    Round 1 varies every knob alone from the defaults; each later round starts from the
    baseline plus the most important change found so far and varies the knobs that mattered.
    `trials` may include running ones (other workers'): their settings are not proposed again,
    and a round that needs their results WAITs. A trial whose worker died before it finished
    (failed with no state of its own) is proposed again.
    """
    def key(trial: FrozenTrial) -> tuple:  # the setting measured, not the sampler's draw
        return setting_key(space.within(trial.params))

    knobs = list(space.knobs)
    tried = {key(t) for t in trials
             if not (t.state == TrialState.FAIL and "state" not in t.user_attrs)}
    pending = {key(t) for t in trials if t.state == TrialState.RUNNING}
    scores = {key(t): t.value for t in trials if t.state == TrialState.COMPLETE}
    baseline, active = dict(space.defaults), [k.name for k in knobs]
    while active:
        base_score = scores.get(setting_key(baseline))
        mattered, best_change = [], None
        round_keys = {setting_key(baseline)}
        for knob in knobs:
            if knob.name not in active:
                continue
            for value in candidates(knob, baseline[knob.name]):
                params = {**baseline, knob.name: value}
                setting = setting_key(params)
                if setting not in tried:
                    return Next(Step.MEASURE, params)
                round_keys.add(setting)
                score = scores.get(setting)
                if score is not None and base_score is not None and \
                        better(direction, score, base_score, MIN_EFFECT):
                    mattered.append(knob.name)
                    if best_change is None or better(direction, score, best_change[0],
                                                     MIN_EFFECT):
                        best_change = (score, knob.name, value)
        if round_keys & pending:
            return WAIT
        if best_change is None:
            break
        baseline[best_change[1]] = best_change[2]
        active = sorted(set(mattered) - {best_change[1]})
    return Next(Step.DONE, reason="no knob left that mattered")


def candidates(knob: Knob, current) -> list:
    """The values OFAT tries for a knob: every other choice, or 3 points across the range."""
    if knob.kind == KnobKind.CHOICE:
        return [c for c in knob.choices if c != current]
    points = [knob.value_at(f) for f in (0.1, 0.5, 0.9)]
    return [p for p in dict.fromkeys(points) if p != int(current)]


def ofat_first_round(knobs: list[Knob], defaults: dict) -> int:
    """The trials of one-factor's first round: the defaults, then each knob varied alone."""
    return 1 + sum(len(candidates(knob, defaults[knob.name])) for knob in knobs)


# -- Optuna's samplers --------------------------------------------------------------------------

SAMPLERS = {
    Sampler.TPE: lambda seed, budget: optuna.samplers.TPESampler(
        seed=seed, n_startup_trials=tpe_startup(budget)),
    Sampler.RANDOM: lambda seed, budget: optuna.samplers.RandomSampler(seed=seed),
    Sampler.CMAES: lambda seed, budget: optuna.samplers.CmaEsSampler(seed=seed),
    Sampler.QMC: lambda seed, budget: optuna.samplers.QMCSampler(seed=seed),
    Sampler.GP: lambda seed, budget: optuna.samplers.GPSampler(seed=seed),
}
SAMPLER_NEEDS = {Sampler.CMAES: "cmaes", Sampler.GP: "torch"}  # modules perflab lacks
# After its start-up, TPE goes where its best few trials are (the best tenth: one trial of the
# first ten); under a trial noise of ~10% one lucky early trial can hold it in its corner
# (bench/tune: two runs of three spent 15 and 18 trials with the adaptive hash index ON, 10-15%
# slower there, and tried OFF once). As SMAC interleaves random configurations with its
# model's, every RANDOM_EVERY-th trial after the start-up is drawn at random: the model still
# sees every trial, and the search keeps looking elsewhere.
RANDOM_EVERY = 3


def tpe_startup(budget: int | None) -> int:
    """TPE samples at random for its first n_startup_trials (10 by default); a frugal budget
    lets the model take over after a third of it instead."""
    return min(10, max(3, (budget or 30) // 3))


def interleaved(sampler: Sampler, started: int, budget: int | None) -> bool:
    """The trial begun after `started` others is one drawn at random between TPE's. Counted in
    started trials (failed and running ones too, which TPE's own start-up does not count), so
    that every worker of a study with the same budget agrees on the pattern."""
    after = started - tpe_startup(budget)
    return sampler is Sampler.TPE and after >= 0 and after % RANDOM_EVERY == RANDOM_EVERY - 1


class OptunaSampling(SearchMethod):
    """Every trial after the defaults drawn by one of Optuna's samplers, `kind`."""

    def __init__(self, space: Space, direction: Direction, seed: int = 0, budget: int | None = None,
                 kind: Sampler = Sampler.RANDOM):
        super().__init__(space, direction, seed, budget)
        self.kind = kind
        if kind is Sampler.QMC:  # one for every trial: it follows the trial number
            self._sampler = SAMPLERS[kind](seed, budget)

    def after(self, trials: Sequence[FrozenTrial], number: int) -> Next:
        return Next(Step.MEASURE)  # the sampler draws every knob

    def sampler(self, started: int) -> optuna.samplers.BaseSampler:
        """Workers share the seed, so the sampler is seeded anew from it and the number of
        trials so far: each trial draws differently, whichever worker asks, and one worker's
        run is still reproducible. QMC keeps its seed: it follows the trial number already."""
        if self.kind is Sampler.QMC:
            return self._sampler
        seed = (self.seed * 1_000_003 + started) % 2**32
        kind = Sampler.RANDOM if interleaved(self.kind, started, self.budget) else self.kind
        return SAMPLERS[kind](seed, self.budget)

    def describe(self) -> str | None:
        if self.kind is not Sampler.TPE:
            return None
        return (f"bayes: TPE takes over after {tpe_startup(self.budget)} random trials; "
                f"1 trial in {RANDOM_EVERY} after them is still drawn at random, so that a "
                "trial lucky under noise cannot hold the search in its corner")
