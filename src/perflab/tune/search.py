"""`perflab tune`: search server settings safely, frugally and honestly.

- Safe: every proposal is checked against a memory budget (global buffers + max_connections x
  per-connection buffers) before a server starts; durability knobs are left out unless allowed;
  a trial whose server fails to start or crashes is recorded with its error and scored failed,
  never retried.
- Frugal: the study lives in an Optuna storage (the lab's by default, or --storage URL so
  workers on several hosts share it and its budget, tune/workers.py) and resumes where it
  stopped; dynamic knobs are applied with SET GLOBAL by the runner when possible.
- Honest: unless the plan asks for a serial schedule, each trial is measured side by side with
  a reference (the plan's baseline on a server of its own, taking turns in time slices) and
  scored as its ratio to it, so that the machine's drift over seconds, tens of percent on a
  shared 2-core machine, does not rank the trials; the best trials are measured again at the
  end, interleaved with the server defaults and the plan's baseline over several rounds, and
  their gains are reported with intervals and verdicts instead of the lucky trial's figure.

Methods: `ofat` (the MySQL 5.5 sysbench tuning study's one-factor-at-a-time: vary each knob from
the baseline, adopt the most important change, repeat with the knobs that mattered), `bayes`
(by default perflab's additive search, tune/additive.py: screening in groups, then an
additive model with a relevance per knob joins, attributes and explores near the best-believed
setting; or an Optuna sampler by name: TPE with every third trial after its start-up drawn at
random, QMC, ...) and `random` (the control).
"""

from __future__ import annotations

import importlib.util
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum

import optuna
from optuna.trial import TrialState

from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.plan import Plan, Point
from perflab.runner import Runner
from perflab.server.memory import configured_sizes, memory_estimate
from perflab.server.variables import Catalog
from perflab.stats.decide import Verdict, decide, half_width
from perflab.stats.design import Design
from perflab.store import Metrics, ResultStore
from perflab.tune import workers
from perflab.tune.additive import (
    REFERENCE,
    AdditiveSampler,
    Space,
    believed_order,
    group_size,
    refused,
)
from perflab.tune.space import Knob, knob_space, memory_budget

OBJECTIVES = ("throughput", "p95", "p99")


def tpe_startup(budget: int | None) -> int:
    """TPE samples at random for its first n_startup_trials (10 by default); a frugal budget
    lets the model take over after a third of it instead."""
    return min(10, max(3, (budget or 30) // 3))


# After its start-up, TPE goes where its best few trials are (the best tenth: one trial of the
# first ten); under a trial noise of ~10% one lucky early trial can hold it in its corner
# (bench/tune: two runs of three spent 15 and 18 trials with the adaptive hash index ON, 10-15%
# slower there, and tried OFF once). As SMAC interleaves random configurations with its
# model's, every RANDOM_EVERY-th trial after the start-up is drawn at random: the model still
# sees every trial, and the search keeps looking elsewhere.
RANDOM_EVERY = 3


def interleaved(sampler: Sampler, started: int, budget: int | None) -> bool:
    """The trial begun after `started` others is one drawn at random between TPE's. Counted in
    started trials (failed and running ones too, which TPE's own start-up does not count), so
    that every worker of a study with the same --budget agrees on the pattern."""
    after = started - tpe_startup(budget)
    return sampler is Sampler.TPE and after >= 0 and after % RANDOM_EVERY == RANDOM_EVERY - 1


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


class Measured(StrEnum):
    """How a study's trials are measured (stored with the study)."""

    SIDE_BY_SIDE = "side by side"  # with the reference on a second server: values are ratios
    ALONE = "alone"


class _Wait:
    """OFAT's answer when its round needs trials other workers are running."""


WAIT = _Wait()
SAMPLERS = {
    Sampler.TPE: lambda seed, budget: optuna.samplers.TPESampler(
        seed=seed, n_startup_trials=tpe_startup(budget)),
    Sampler.RANDOM: lambda seed, budget: optuna.samplers.RandomSampler(seed=seed),
    Sampler.CMAES: lambda seed, budget: optuna.samplers.CmaEsSampler(seed=seed),
    Sampler.QMC: lambda seed, budget: optuna.samplers.QMCSampler(seed=seed),
    Sampler.GP: lambda seed, budget: optuna.samplers.GPSampler(seed=seed),
}
SAMPLER_NEEDS = {Sampler.CMAES: "cmaes", Sampler.GP: "torch"}  # modules perflab lacks
MIN_EFFECT = 0.02  # OFAT adopts a change only when it beats the baseline by this much
CANDIDATES = 3  # the best trials re-measured at the end
# A proposal refused before start (it would not fit in memory) costs no measurement, so it does
# not count in the budget and another is drawn; in perflab's curated space about half of random
# proposals bust half the RAM, which would otherwise spend half the budget on nothing. This many
# refusals in a row mean the space barely fits: the search stops and says so.
MAX_REFUSALS_IN_A_ROW = 50
Say = Callable[[str], None]


@dataclass(frozen=True)
class TuneSettings:
    """The [tune] section of a plan."""

    objective: str = "throughput"
    min_qps: float = 0.0  # trials below this throughput fail (a floor for latency objectives)
    knobs: tuple[str, ...] = ()  # empty: the curated set
    memory_share: float = 0.5  # of this machine's RAM
    final_repeats: int = 3  # the re-measure's rounds: at least these, more if the noise
    final_max_repeats: int = 12  # needs them to resolve run.margin, up to these

    @classmethod
    def from_plan(cls, raw: dict) -> TuneSettings:
        allowed = {"objective", "min_qps", "knobs", "memory_share", "final_repeats",
                   "final_max_repeats"}
        unknown = set(raw) - allowed
        if unknown:
            raise PerflabError(f"tune: unknown key tune.{sorted(unknown)[0]} "
                               f"(allowed: {', '.join(sorted(allowed))})")
        knobs = raw.get("knobs", ())
        if not isinstance(knobs, list | tuple) or not all(isinstance(k, str) for k in knobs):
            raise PerflabError(f"tune.knobs must be a list of server variable names, got {knobs!r}",
                               hint='e.g. knobs = ["key_buffer_size", "table_open_cache"]')
        for key, kinds in (("min_qps", int | float), ("memory_share", int | float),
                           ("final_repeats", int), ("final_max_repeats", int)):
            value = raw.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, kinds):
                kind = "an integer" if kinds is int else "a number"
                raise PerflabError(f"tune.{key} must be {kind}, got {value!r}")
        settings = cls(**{**raw, "knobs": tuple(knobs)})
        if settings.objective not in OBJECTIVES:
            raise PerflabError(f"tune.objective = {settings.objective!r} is not allowed "
                               f"(allowed: {', '.join(OBJECTIVES)})")
        if not 0 < settings.memory_share <= 1:
            raise PerflabError("tune.memory_share must be a fraction of RAM, e.g. 0.5")
        if settings.final_repeats < 2:
            raise PerflabError("tune.final_repeats must be at least 2 (an interval needs two)")
        if settings.final_max_repeats < settings.final_repeats:
            raise PerflabError("tune.final_max_repeats must be at least tune.final_repeats")
        return settings

    @property
    def direction(self) -> str:
        return "maximize" if self.objective == "throughput" else "minimize"


def better(direction: str, a: float, b: float, by: float = 0.0) -> bool:
    """The one "is this better" test of the search: a beats b by more than the fraction `by`
    (throughput higher, latency lower)."""
    return a > b * (1 + by) if direction == "maximize" else a < b * (1 - by)


@dataclass
class TrialOutcome:
    number: int
    params: dict[str, str]
    state: str  # "ok", "failed" or "refused"
    value: float | None
    error: str | None = None


@dataclass
class TuneResult:
    study: str
    method: str
    knobs: list[Knob]
    trials: list[TrialOutcome]
    best: TrialOutcome | None
    # config -> round -> the objective, re-measured in rounds with default, baseline and best
    final: dict[str, dict[int, float]] = field(default_factory=dict)
    gain_vs_default: Verdict | None = None  # paired by round; for latency a gain is a drop
    gain_vs_baseline: Verdict | None = None
    importance: dict[str, float] = field(default_factory=dict)
    defaults: dict[str, str | None] = field(default_factory=dict)  # the knobs at startup
    final_by: dict | None = None  # the worker that re-measured, when it was another one
    candidates: dict[int, Verdict | None] = field(default_factory=dict)  # trial -> vs default
    searched_best: int | None = None  # the search's best trial, when re-measured
    seconds: float = 0.0
    measured: Measured = Measured.ALONE  # or SIDE_BY_SIDE: values are ratios to the reference
    ranked: list[TrialOutcome] = field(default_factory=list)  # ok trials, the search's best first
    ranked_by: str = "figure"  # or "model": the additive search's belief, not single figures

    @property
    def relative(self) -> bool:
        """Trial values are ratios to the reference measured side by side."""
        return self.measured is Measured.SIDE_BY_SIDE

    def mycnf(self) -> str:
        """The best trial's knobs that differ from the server's startup values: what its
        server was measured with, over the baseline's."""
        if self.best is None:
            return ""
        lines = ["[mariadbd]"]
        for name, value in sorted(moved(self.best.params, self.defaults).items()):
            unsafe = "  # trades durability for speed" if name in _durability(self.knobs) else ""
            lines.append(f"{name} = {value}{unsafe}")
        if len(lines) == 1:
            lines.append("# the defaults were best: nothing to change")
        return "\n".join(lines)


class Tuner:
    def __init__(self, plan: Plan, lab: Lab, settings: TuneSettings, method: str, *,
                 budget: int | None = None, seconds: float | None = None,
                 storage: str | None = None, sampler: str = Sampler.ADDITIVE, seed: int = 0,
                 allow_unsafe: bool = False, say: Say = print):
        if method not in set(Method):
            raise PerflabError(f"--method {method!r}: use ofat, bayes or random")
        method = Method(method)
        if sampler not in set(Sampler):
            raise PerflabError(f"--sampler {sampler!r} is not known",
                               hint=f"samplers: {', '.join(Sampler)}")
        sampler = Sampler(sampler)
        needs = SAMPLER_NEEDS.get(sampler) if method is Method.BAYES else None
        if needs and importlib.util.find_spec(needs) is None:
            raise PerflabError(f"--sampler {sampler} needs the Python package {needs}, which "
                               "perflab's environment does not install",
                               hint="use --sampler additive (the default), tpe, qmc or random")
        if budget is not None and budget < 1:
            raise PerflabError(f"--budget must be at least 1 trial, got {budget}")
        if seconds is not None and not seconds > 0:
            raise PerflabError(f"--time must be a positive number of seconds, got {seconds}")
        if not 0 <= seed < 2**32:
            raise PerflabError(f"--seed must be from 0 to {2**32 - 1}, got {seed}")
        if not budget and not seconds:
            raise PerflabError("give the search a --budget (trials) or a --time (seconds)")
        self.plan, self.lab, self.settings, self.method = plan, lab, settings, method
        self.budget, self.seconds, self.seed, self.say = budget, seconds, seed, say
        # ofat's fixed trials come from its own rule; what it leaves open is drawn at random
        self.sampler = sampler if method is Method.BAYES else Sampler.RANDOM
        # the study lives in the lab's results database, beside the points of its trials
        # (opened once the lab exists), unless workers share one elsewhere; a URL that cannot
        # be opened fails here, before any server starts
        self.storage = workers.open_storage(storage) if storage else None
        self.allow_unsafe = allow_unsafe
        self.baseline = plan.config(plan.baseline)
        # the baseline again, under a name of this method's: the trials' reference
        self.reference = replace(self.baseline, name=f"{method}-reference")
        self.measured = Measured.ALONE if plan.run.schedule == "serial" \
            else Measured.SIDE_BY_SIDE

    # -- the search ----------------------------------------------------------------------------

    def run(self) -> TuneResult:
        started = time.monotonic()
        with self.lab.locked(), self.lab.store() as store:
            return self._run(store, started)

    def _run(self, store: ResultStore, started: float) -> TuneResult:
        self.runner = Runner(self.plan, self.lab, store, self.say)
        if self.storage is None:
            self.storage = workers.open_storage(f"sqlite:///{self.lab.db_path}")
        self.catalog = self.lab.catalog()
        self.knobs = knob_space(self.catalog, list(self.settings.knobs), self.allow_unsafe)
        self.budget_bytes = memory_budget(self.settings.memory_share)
        self.runner.add_config(self.reference)
        if self.method is Method.OFAT and self.budget:
            first_round = ofat_first_round(self.knobs, self._defaults())
            if self.budget < first_round:
                self.say(f"warning: ofat's first round varies each knob alone: {first_round} "
                         f"trials with these {len(self.knobs)} knobs; --budget {self.budget} "
                         "ends it before every knob was tried")
        study = self._study()
        session = self.runner.open_session()
        outcome = "interrupted"
        try:
            while True:
                with workers.study_lock(self.storage, study.study_name):
                    workers.reap(study, self.lab.root, self.say)
                    trials = _started(study)  # read once: the lock keeps it current
                    if self._spent(trials, started):
                        break
                    if refusals_in_a_row(trials) >= MAX_REFUSALS_IN_A_ROW:
                        self.say(f"stopping: the last {MAX_REFUSALS_IN_A_ROW} proposals would "
                                 "not fit in the memory budget; narrow the largest buffers "
                                 "(tune.knobs) or raise tune.memory_share")
                        break
                    params = self._next(trials)
                    if params is not None and params is not WAIT:
                        trial, trial_id = self._ask(study, params, len(trials))
                if params is None:
                    self.say("ofat: no knob left that mattered; stopping early")
                    break
                if params is WAIT:  # ofat waits for other workers' trials of this round
                    time.sleep(2)
                    continue
                with workers.heartbeat(self.storage, trial_id):
                    self._trial(study, session, trial)
            outcome = "complete"
        finally:
            self.runner.close_session(session, outcome)
        workers.wait_for_others(self.storage, study, self.lab.root, self.say)
        result = self._result(study)
        if result.best is not None:
            key = f"final@{len(result.trials)}"
            with workers.study_lock(self.storage, study.study_name):
                taken = workers.claim(study, key, self.lab.root)
            if taken is None:
                self._final(store, result)
                workers.done(study, key)
            else:
                result.final_by = taken
                self.say(f"the best trial is re-measured by the worker on {taken['host']} "
                         f"(lab {taken['lab']})")
        result.seconds = time.monotonic() - started
        return result

    def _study(self) -> optuna.Study:
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        sampler = self._sampler(self.sampler, self.seed)
        name = f"{self.plan.name}:{self.method}"
        with workers.study_lock(self.storage, name):  # two workers starting at once
            study = optuna.create_study(study_name=name, storage=self.storage,
                                        direction=self.settings.direction, sampler=sampler,
                                        load_if_exists=True)
            # a study measures all its trials one way; one from before this choice existed
            # measured them alone
            measured = study.user_attrs.get("measured")
            if measured is None:
                measured = Measured.ALONE if _started(study) else self.measured
                study.set_user_attr("measured", str(measured))
            # and searches with one sampler (a design indexed by trial number, a model's answer)
            # (one from before this choice existed was drawn by TPE, the default then)
            searched = study.user_attrs.get("sampler")
            if searched is None:
                searched = Sampler.TPE if _started(study) else self.sampler
                study.set_user_attr("sampler", str(searched))
        measured, searched = Measured(measured), Sampler(searched)
        if measured is not self.measured:
            self.say(f"study {study.study_name} measures its trials {measured}: going on so")
        self.measured = measured
        if searched is not self.sampler:
            self.say(f"study {study.study_name} is searched with {searched}: going on so")
            self.sampler = searched
            study.sampler = sampler = self._sampler(searched, self.seed)
        done = len(_finished(study))
        if done:
            self.say(f"resuming study {study.study_name}: {done} trial(s) already done")
        self.say(f"trials measured {measured}" + (
            f" with the reference {self.baseline.name} (scores are ratios to it)"
            if measured is Measured.SIDE_BY_SIDE else ""))
        if self.sampler is Sampler.TPE:
            self.say(f"bayes: TPE takes over after {tpe_startup(self.budget)} random trials; "
                     f"1 trial in {RANDOM_EVERY} after them is still drawn at random, so that a "
                     "trial lucky under noise cannot hold the search in its corner")
        if self.sampler is Sampler.ADDITIVE:
            self.say(f"bayes: {len(sampler.design)} screening trials move the {len(self.knobs)} "
                     f"knobs in groups of {group_size(len(self.knobs))} (each knob to one side "
                     "of its default, then the other); a clear gain is followed up at once (a "
                     "knob that came in with it put back) and the screening goes on from it; "
                     "an additive model of the knobs' effects (with their interactions with the "
                     "knob that matters most) picks the other trials: a setting it predicts "
                     "clearly better, a knob whose own effect is not yet told put back, or the "
                     "best expected improvement near the best-believed setting")
        return study

    def _spent(self, trials: list, started: float) -> bool:
        """The budget counts the study's trials, running ones included, whichever worker ran
        them, but not the proposals refused before start; the time is this worker's."""
        if self.budget and sum(not refused(t) for t in trials) >= self.budget:
            return True
        return bool(self.seconds) and time.monotonic() - started >= self.seconds

    def _next(self, trials: list) -> dict | _Wait | None:
        """Fixed parameters for the next trial (OFAT, or the defaults first), or {} to let
        the sampler choose, or None when OFAT has nothing left to try, or WAIT when it needs
        the results of trials other workers are running. `trials`: finished and running."""
        if not trials:
            return self._defaults()  # every method starts from the server's defaults
        if self.method is not Method.OFAT:
            return {}
        return ofat_next(self.knobs, trials, self._defaults(), self.settings.direction)

    def _defaults(self) -> dict:
        return startup_values(self.knobs, self.catalog)

    def _memory(self, params: dict) -> int:
        """Worst-case bytes of a trial's server: the baseline's variables, then its knobs."""
        values = {name: str(value) for name, value in params.items()}
        return memory_estimate(configured_sizes(
            self.catalog, {**self.runner.server_options(self.baseline.name), **values}))

    def space(self) -> Space:
        """The knob space as the additive search and its model read it."""
        return Space(tuple(self.knobs), self._defaults(), self._memory, self.budget_bytes)

    def _sampler(self, name: Sampler, seed: int) -> optuna.samplers.BaseSampler:
        if name is Sampler.ADDITIVE:
            return AdditiveSampler(self.space(), seed, self.settings.direction)
        return SAMPLERS[name](seed, self.budget)

    def _variables(self, params: dict) -> tuple[tuple[str, str], ...]:
        """A trial's server variables: the baseline's, then the knobs the trial moves from
        their startup values. A knob at its startup value is left unset, not set to that
        value: some variables change the server by being set at all (query_cache_size set to
        its default 1 MiB cost 8-10% of oltp_read_only here), and the defaults must be
        measured as the defaults, a winner as the my.cnf printed for it."""
        base = self.baseline.as_dict()
        over_base = {name: str(value) for name, value in params.items() if name in base}
        return tuple(sorted({**base, **over_base, **moved(params, self._startup())}.items()))

    def _startup(self) -> dict[str, str | None]:
        return {k.name: self.catalog.variables[k.name].startup_value for k in self.knobs}

    def _ask(self, study: optuna.Study, params: dict,
             started: int) -> tuple[optuna.Trial, int]:
        """A new trial (under the study lock). Workers share the seed, so the sampler is seeded
        anew from it and the number of trials so far: each trial draws differently, whichever
        worker asks, and one worker's run is still reproducible. (QMC and the additive search
        keep their seed: they follow the trial number already.) `started`: the study's trials so
        far."""
        if self.sampler not in (Sampler.QMC, Sampler.ADDITIVE):  # they follow the trial number
            seed = (self.seed * 1_000_003 + started) % 2**32
            name = Sampler.RANDOM if interleaved(self.sampler, started, self.budget) \
                else self.sampler
            study.sampler = self._sampler(name, seed)
        return workers.take_trial(self.storage, study, params, self.space().distributions(),
                                  self.lab.root)

    def _trial(self, study: optuna.Study, session: int, trial: optuna.Trial) -> None:
        values = {name: str(value) for name, value in trial.params.items()}
        number = trial.number
        label = " ".join(f"{k}={v}" for k, v in values.items())
        estimate = self._memory(values)
        if estimate > self.budget_bytes:
            reason = (f"worst-case memory {estimate / 2**30:.1f} GiB exceeds the budget of "
                      f"{self.budget_bytes / 2**30:.1f} GiB")
            self.say(f"trial {number}: refused before start (not counted in the budget): "
                     f"{reason}")
            self._tell(study, trial, "refused", None, reason)
            return
        config = replace(self.baseline, name=f"{self.method}-trial-{number}",
                         variables=self._variables(values))
        try:
            self.runner.add_config(config)
        except PerflabError as exc:
            self._tell(study, trial, "failed", None, exc.message)
            return
        if self.measured is Measured.SIDE_BY_SIDE:
            why_not = self.runner.side_by_side_fits([self.reference, config])
            if why_not is not None:
                self.say(f"trial {number}: refused before start (not counted in the budget): "
                         f"{why_not}")
                self._tell(study, trial, "refused", None, f"with its reference: {why_not}")
                return
            records = self.runner.measure_side_by_side(session, [self.reference, config],
                                                       number + 1)
        else:
            records = [self.runner.measure_point(session, Point(
                config, self.plan.workload, threads, 1, self.plan.definition(config)))
                for threads in self.plan.run.threads]
        failed = [(r, r.error or "failed") if r.status != "ok" else (r, "no query completed")
                  for r in records if r.status != "ok" or not r.metrics.qps > 0]
        if failed:
            # the setting is blamed unless only its reference failed
            own = [f for f in failed if f[0].point.config.name == config.name]
            record, error = (own or failed)[0]
            whose = "" if own else "its reference "
            self.say(f"trial {number}: failed ({whose}{error.splitlines()[0]}) with {label}")
            self._tell(study, trial, "failed", None, f"{whose}{error}",
                       cause=REFERENCE if whose else None)
            return
        measured = [r.metrics for r in records if r.point.config.name == config.name]
        if self.settings.min_qps and min(m.qps for m in measured) < self.settings.min_qps:
            error = f"throughput under the floor of {self.settings.min_qps} qps"
            self.say(f"trial {number}: failed ({error}) with {label}")
            self._tell(study, trial, "failed", None, error)
            return
        value = self._objective(measured)
        figures = f"{value:.2f}"
        if self.measured is Measured.SIDE_BY_SIDE:
            reference = self._objective(
                [r.metrics for r in records if r.point.config.name == self.reference.name])
            value, figures = value / reference, f"{figures} against the reference's " \
                                                 f"{reference:.2f}: ×{value / reference:.3f}"
        self.say(f"trial {number}: {self.settings.objective} {figures} with {label}")
        self._tell(study, trial, "ok", value, None)

    def _objective(self, metrics: list[Metrics]) -> float:
        """Throughput: geometric mean of qps over the thread counts; latency: mean p95/p99."""
        if self.settings.objective == "throughput":
            return math.exp(statistics.fmean(math.log(m.qps) for m in metrics))
        key = f"latency_{self.settings.objective}_ms"
        return statistics.fmean(getattr(m, key) for m in metrics)

    def _tell(self, study: optuna.Study, trial: optuna.Trial, state: str, value: float | None,
              error: str | None, cause: str | None = None) -> None:
        """Record a trial's end; `cause` REFERENCE when the reference, not the trial's setting,
        failed (the additive model then learns nothing from it)."""
        told = TrialState.COMPLETE if state == "ok" else TrialState.FAIL
        try:
            trial.set_user_attr("state", state)
            if error:
                trial.set_user_attr("error", error[:2000])
            if cause:
                trial.set_user_attr("cause", cause)
            frozen = study.tell(trial, value if state == "ok" else None,
                                state=told, skip_if_finished=True)
            dropped = frozen.state != told or (state == "ok" and frozen.value != value)
        except optuna.exceptions.UpdateFinishedTrialError:
            dropped = True
        if dropped:
            self.say(f"trial {trial.number}: another worker failed it while it ran (no "
                     f"heartbeat reached the storage for {workers.GRACE_SECONDS} s); its "
                     "result is dropped")

    # -- the honest result ---------------------------------------------------------------------

    def _result(self, study: optuna.Study) -> TuneResult:
        finished = _finished(study)
        trials = [_outcome(t) for t in finished]
        ok = [t for t in trials if t.state == "ok"]
        if self.sampler is Sampler.ADDITIVE:  # what the model believes, not the luckiest figure
            numbered = {t.number: t for t in ok}
            ranked = [numbered[t.number] for t in believed_order(self.space(), finished,
                                                                 self.settings.direction)]
        else:
            ranked = sorted(ok, key=lambda t: t.value,
                            reverse=self.settings.direction == "maximize")
        importance = {}
        if len(ok) >= 4:
            try:
                importance = dict(optuna.importance.get_param_importances(study))
            except (RuntimeError, ValueError) as exc:  # too little variety to tell
                self.say(f"knob importance not available: {exc}")
        return TuneResult(self.plan.name, self.method, self.knobs, trials,
                          ranked[0] if ranked else None, importance=importance,
                          defaults=self._startup(), measured=self.measured, ranked=ranked,
                          ranked_by="model" if self.sampler is Sampler.ADDITIVE else "figure")

    def _final(self, store: ResultStore, result: TuneResult) -> None:
        """Before believing the search: measure its best CANDIDATES again, interleaved with the
        defaults and the plan's baseline, for as many rounds as the lab's measured noise needs
        to resolve the plan's margin; the winner is the best re-measured one, and every gain
        is a paired interval with a verdict (one error rate across the comparisons)."""
        candidates = self._candidates(result)
        configs = [replace(self.baseline, name="default", variables=())]
        if self.baseline.variables:
            configs.append(replace(self.baseline, name="baseline"))
        for trial in candidates:
            configs.append(replace(self.baseline, name=f"trial-{trial.number}",
                                   variables=self._variables(trial.params)))
        cells = len(candidates) * (len(configs) - len(candidates))
        final_plan = replace(
            # named after the trial count, so a longer resumed search re-measures afresh
            self.plan, name=f"{self.plan.name}:{self.method}:final@{len(result.trials)}",
            configs=tuple(configs), baseline="default",
            run=replace(self.plan.run, target_interval=0.0, max_repeats=0, time=0.0),
        )
        rounds, why = self._final_rounds(store, final_plan, cells)
        final_plan = replace(final_plan, run=replace(final_plan.run, repeats=rounds))
        self.say(f"re-measuring the {len(candidates)} best trial(s) with the defaults"
                 f"{' and the baseline' if self.baseline.variables else ''}, side by side: "
                 f"{rounds} rounds ({why})")
        Runner(final_plan, self.lab, store, self.say).run()
        by_round: dict[str, dict[int, list]] = {}  # config -> round -> its points' metrics
        definitions = [final_plan.definition(c) for c in final_plan.configs]
        for point in store.points(final_plan.name, definitions):
            if point.ok:
                by_round.setdefault(point.config, {}).setdefault(point.repeat, []).append(
                    point.metrics)
        threads = len(self.plan.run.threads)
        for config, measured in by_round.items():
            result.final[config] = {r: self._objective(metrics) for r, metrics in
                                    measured.items() if len(metrics) == threads}
        comparisons = {(trial.number, base): self._gains(result.final.get(base, {}),
                                                          result.final.get(f"trial-{trial.number}",
                                                                           {}))
                       for trial in candidates for base in ("default", "baseline")
                       if base in result.final}
        verdicts = decide(comparisons, Design(self.plan.run.alpha, self.plan.run.margin,
                                              first_look=rounds, last_look=rounds))
        result.candidates = {trial.number: verdicts.get((trial.number, "default"))
                             for trial in candidates}
        measured_gain = {n: v.change for n, v in result.candidates.items()
                         if v is not None and math.isfinite(v.change)}
        if measured_gain:
            winner = max(measured_gain, key=measured_gain.get)
            result.searched_best = result.best.number
            result.best = next(t for t in candidates if t.number == winner)
            result.gain_vs_default = verdicts.get((winner, "default"))
            result.gain_vs_baseline = verdicts.get((winner, "baseline"))

    def _candidates(self, result: TuneResult) -> list[TrialOutcome]:
        """The search's best ok trials with distinct settings, its best first; the defaults
        only when nothing else succeeded (they are re-measured anyway)."""
        others = [t for t in result.ranked if moved(t.params, result.defaults)]
        chosen: dict[tuple, TrialOutcome] = {}
        for trial in others or result.ranked:
            chosen.setdefault(_key(moved(trial.params, result.defaults)), trial)
            if len(chosen) == CANDIDATES:
                break
        return list(chosen.values())

    def _final_rounds(self, store: ResultStore, final_plan: Plan, cells: int) -> tuple[int, str]:
        """Rounds for intervals of about ±margin at the family's level, from the noise this lab
        measured for the workload measured the way the re-measure will be (side by side, or
        one after another), or the assumed one, from final_repeats to final_max_repeats."""
        sd, source = Runner(final_plan, self.lab, store, lambda _: None).noise()
        level = self.plan.run.alpha / max(1, cells)
        low, high = self.settings.final_repeats, self.settings.final_max_repeats
        for rounds in range(low, high + 1):
            if math.expm1(half_width(sd, rounds, level)) <= self.plan.run.margin:
                return rounds, f"noise {sd:.1%} per round, {source}: intervals about " \
                               f"±{self.plan.run.margin:.0%}"
        return high, (f"noise {sd:.1%} per round, {source}: intervals wider than "
                      f"±{self.plan.run.margin:.0%} at the cap")

    def _gains(self, base: dict[int, float], best: dict[int, float]) -> dict[int, float]:
        """Per round, the log of the best configuration's gain over `base` (for latency, a
        gain is a drop)."""
        gains = {}
        for round_number, value in best.items():
            other = base.get(round_number)
            if other and value:
                ratio = value / other if self.settings.direction == "maximize" else other / value
                gains[round_number] = math.log(ratio)
        return gains


def startup_values(knobs: list[Knob], catalog: Catalog) -> dict:
    """Each knob at the server's startup value, clamped into its search range."""
    return {knob.name: knob.within(catalog.variables[knob.name].startup_value, knob.choices[0]
                                   if knob.kind == "choice" else None) for knob in knobs}


def moved(params: dict, startup: dict[str, str | None]) -> dict[str, str]:
    """The params whose values differ from the knobs' startup values, as strings."""
    return {name: str(value) for name, value in params.items()
            if startup.get(name) is None or str(value).upper() != startup[name].upper()}


def ofat_first_round(knobs: list[Knob], defaults: dict) -> int:
    """The trials of one-factor's first round: the defaults, then each knob varied alone."""
    return 1 + sum(len(candidates(knob, defaults[knob.name])) for knob in knobs)


def ofat_next(knobs: list[Knob], trials: list, defaults: dict,
              direction: str) -> dict | str | None:
    """The MySQL 5.5 sysbench tuning study's method, replayed from the trials so far (so a
    resumed study goes on).

    Round 1 varies every knob alone from the defaults; each later round starts from the
    baseline plus the most important change found so far and varies the knobs that mattered.
    `trials` may include running ones (other workers'): their settings are not proposed again,
    and a round that needs their results returns WAIT. A trial whose worker died before it
    finished (failed with no state of its own) is proposed again.
    """
    tried = {_key(t.params) for t in trials
             if not (t.state == TrialState.FAIL and "state" not in t.user_attrs)}
    pending = {_key(t.params) for t in trials if t.state == TrialState.RUNNING}
    scores = {_key(t.params): t.value for t in trials if t.state == TrialState.COMPLETE}
    baseline, active = dict(defaults), [k.name for k in knobs]
    while active:
        base_score = scores.get(_key(baseline))
        mattered, best_change = [], None
        round_keys = {_key(baseline)}
        for knob in knobs:
            if knob.name not in active:
                continue
            for value in candidates(knob, baseline[knob.name]):
                params = {**baseline, knob.name: value}
                key = _key(params)
                if key not in tried:
                    return params
                round_keys.add(key)
                score = scores.get(key)
                if score is not None and base_score is not None and \
                        better(direction, score, base_score, MIN_EFFECT):
                    mattered.append(knob.name)
                    if best_change is None or better(direction, score, best_change[0],
                                                     MIN_EFFECT):
                        best_change = (score, knob.name, value)
        if round_keys & pending:
            return WAIT
        if best_change is None:
            return None
        baseline[best_change[1]] = best_change[2]
        active = sorted(set(mattered) - {best_change[1]})
    return None


def _key(params: dict) -> tuple:
    """A trial's parameters in a form that compares equal however they were typed."""
    return tuple(sorted((k, str(v)) for k, v in params.items()))


def candidates(knob: Knob, current) -> list:
    """The values OFAT tries for a knob: every other choice, or 3 points across the range."""
    if knob.kind == "choice":
        return [c for c in knob.choices if c != current]
    if knob.log:
        lo, hi = math.log(knob.low), math.log(knob.high)
        points = [round(math.exp(lo + f * (hi - lo))) for f in (0.1, 0.5, 0.9)]
    else:
        points = [round(knob.low + f * (knob.high - knob.low)) for f in (0.1, 0.5, 0.9)]
    return [p for p in dict.fromkeys(points) if p != int(current)]


def best_so_far(trials: list[TrialOutcome], direction: str) -> list[float | None]:
    out, best = [], None
    for t in trials:
        if t.value is not None and (best is None or better(direction, t.value, best)):
            best = t.value
        out.append(best)
    return out


def _outcome(trial: optuna.trial.FrozenTrial) -> TrialOutcome:
    """A finished trial as perflab reports it. Only a COMPLETE trial is "ok": one whose worker
    died after recording its state but before telling Optuna is failed, whatever it said."""
    params = {k: str(v) for k, v in trial.params.items()}
    if trial.state == TrialState.COMPLETE:
        return TrialOutcome(trial.number, params, "ok", trial.value)
    state = trial.user_attrs.get("state", "failed")
    error = trial.user_attrs.get("error")
    if state == "ok" or error is None:
        state, error = "failed", "interrupted before the trial finished"
    return TrialOutcome(trial.number, params, state, None, error)


def _finished(study: optuna.Study) -> list:
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL))


def _started(study: optuna.Study) -> list:
    """Finished trials and those running now, in this worker or another."""
    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL,
                                                     TrialState.RUNNING))


def refusals_in_a_row(trials: list) -> int:
    """How many of the study's latest trials were refused before start, up to the last
    measured or running one."""
    count = 0
    for trial in sorted(trials, key=lambda t: t.number, reverse=True):
        if not refused(trial):
            break
        count += 1
    return count


def _durability(knobs: list[Knob]) -> set[str]:
    return {k.name for k in knobs if k.durability}
