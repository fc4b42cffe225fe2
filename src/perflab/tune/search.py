"""`perflab tune`: search server settings safely, frugally and honestly.

- Safe: every proposal is checked against a memory budget (global buffers + max_connections x
  per-connection buffers) before a server starts; durability knobs are left out unless allowed;
  a trial whose server fails to start or crashes is recorded with its error and scored failed,
  never retried.
- Frugal: the study lives in an Optuna storage (the lab's by default, or one at a URL that
  workers on several hosts share with its budget, tune/workers.py) and resumes where it
  stopped; dynamic knobs are applied with SET GLOBAL by the measurer when possible.
- Honest: unless the plan asks for a serial schedule (or two servers would not fit), each trial
  is measured side by side with a reference (the plan's baseline on a server of its own, taking
  turns in time slices) and scored as its ratio to it, so that the machine's drift over
  seconds, tens of percent on a shared 2-core machine, does not rank the trials; the best
  trials are measured again at the end (tune/final.py), interleaved with the defaults and the
  plan's baseline over several rounds, and their gains are reported with intervals and
  verdicts instead of the lucky trial's figure.

`Tuner` runs the search; what each trial measures is its method's choice (tune/methods.py):
`ofat` (the MySQL 5.5 sysbench tuning study's one-factor-at-a-time), `bayes` (by default
perflab's additive search, tune/additive.py, or an Optuna sampler by name: TPE, QMC, ...) and
`random` (the control).
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import replace

import optuna
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from perflab.domain import Plan, Schedule, ServerConfig
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.probes import busy
from perflab.running.measurer import Measurer
from perflab.say import Say
from perflab.server.flavor import flavor_of
from perflab.store import ResultStore, RunEnd
from perflab.store.records import covered
from perflab.tune import workers
from perflab.tune.additive import AdditiveSearch
from perflab.tune.budget import TuneBudget
from perflab.tune.final import check_answer
from perflab.tune.methods import (
    SAMPLER_NEEDS,
    Method,
    OneFactorAtATime,
    OptunaSampling,
    Sampler,
    SearchMethod,
    Step,
    interleaved,
    ofat_first_round,
)
from perflab.tune.result import (
    REFERENCE,
    Measured,
    Outcome,
    TrialOutcome,
    TuneResult,
    best_so_far,
    interrupted,
    moved,
    outcome,
    refused,
    spends_budget,
    uninformative,
)
from perflab.tune.settings import Objective, TuneSettings, better
from perflab.tune.space import Space, knob_space, memory_budget, startup_values
from perflab.tune.trial import Trials

# importable from here, where they were defined before tune/ had its other modules
__all__ = ["MAX_REFUSALS_IN_A_ROW", "Measured", "Method", "Sampler", "TrialOutcome", "Tuner",
           "TuneResult", "TuneSettings", "best_so_far", "better", "interleaved", "moved",
           "ofat_first_round", "startup_values"]

# A proposal refused before start (it would not fit in memory) costs no measurement, so it does
# not count in the budget and another is drawn; in perflab's curated space about half of random
# proposals bust half the RAM, which would otherwise spend half the budget on nothing. This many
# refusals in a row mean the space barely fits: the search stops and says so.
MAX_REFUSALS_IN_A_ROW = 50
# Nor does a trial that said nothing of its setting (result.spends_budget); this many of them
# in a row mean the trouble is the lab's, not the settings': the search stops and says so.
MAX_UNINFORMATIVE_IN_A_ROW = 3
STARTED = (TrialState.COMPLETE, TrialState.FAIL, TrialState.RUNNING)  # in this worker or another
FINISHED = (TrialState.COMPLETE, TrialState.FAIL)


class Tuner:
    """One worker's search for a plan's best server settings: `method` ("ofat", "bayes" or
    "random") chooses the trials, within a `budget` of trials (the study's, shared with other
    workers) or a time limit (`seconds`, this worker's); `storage`: the URL of a study shared
    with workers elsewhere; `allow_unsafe`: search the durability knobs too; `put_back`: False
    leaves the re-measured winner whole, its knobs not put back one at a time (bench/tune's
    comparison methods, whose my.cnf nobody is given)."""

    def __init__(self, plan: Plan, lab: Lab, settings: TuneSettings, method: str, *,
                 budget: int | None = None, seconds: float | None = None,
                 storage: str | None = None, sampler: str | None = None, seed: int = 0,
                 allow_unsafe: bool = False, put_back: bool = True, say: Say = print):
        method, sampler = _checked(method, sampler, seed)
        self.budget = TuneBudget(budget, seconds)
        _tunable(plan)
        self.plan, self.lab, self.settings, self.method = plan, lab, settings, method
        self.seed, self.say = seed, say
        # the sampler the study records (ofat's proposals fix every knob: it records random)
        self.sampler = sampler if method is Method.BAYES else Sampler.RANDOM
        # the study lives in the lab's results database (opened once the lab exists) unless
        # workers share one elsewhere; a URL that cannot be opened fails here, before any start
        self.storage = workers.open_storage(storage) if storage else None
        self.allow_unsafe, self.put_back = allow_unsafe, put_back
        self.baseline = plan.config(plan.baseline)
        self.measured = Measured.ALONE if plan.run.schedule == Schedule.SERIAL \
            else Measured.SIDE_BY_SIDE

    def run(self) -> TuneResult:
        self.budget.started, self.started_at = time.monotonic(), time.time()
        with self.lab.locked(), self.lab.store() as store:
            return self._run(store)

    def _run(self, store: ResultStore) -> TuneResult:
        watch = busy.Watch()  # other work on the machine while the search sets up
        self.say(self.budget.split())
        say_set_aside(self.plan, self.say)
        self.measurer = Measurer(self.plan, self.lab, store, self.say)
        own = self.storage is None  # the study lives in this lab's results database
        if self.storage is None:
            self.storage = workers.open_storage(f"sqlite:///{self.lab.db_path}")
        self.catalog = self.measurer.catalog  # the baseline's build's, read by its backend
        # the engines of the tables the trials measure (an sql workload's file names its own)
        engines = self.measurer.workload.family.engines(self.plan.dataset_for(self.baseline))
        self.knobs = knob_space(self.catalog, list(self.settings.knobs), self.allow_unsafe, engines,
                                self.say, list(self.settings.exclude), self.baseline.as_dict())
        self.trials = Trials(self.plan, self.settings, self.measurer, self.method, self.catalog,
                             self.knobs, self.say)
        # the knob space as the methods read it
        self.space = Space(tuple(self.knobs), startup_values(self.knobs, self.catalog),
                           self.trials.memory, memory_budget(self.settings.memory_share))
        self.trials.space = self.space
        if busy_now := watch.warning():
            self.say(f"WARNING: {busy_now}; the trials' readings would rank the load, not the "
                     "settings")
        self.trials.first_fits()
        self.measurer.add_config(self.trials.reference)
        self.no_pair = self._no_pair_fits()
        self.measured = Measured.ALONE if self.no_pair else self.measured
        study = self._study()  # it may keep the way of measuring it started with
        # a round's noise, the way the trials are measured: how far from the reference a
        # reading must land to be measured again before the search believes it (reading.py)
        self.trials.measured, self.trials.round_sd = self.measured, self.measurer.noise(
            Schedule.FLEET if self.measured is Measured.SIDE_BY_SIDE else Schedule.SERIAL)[0]
        session = self.measurer.open_session()
        outcome_of_session = RunEnd.INTERRUPTED
        try:
            while True:  # another worker's trial reaped while this one waits is not counted
                spent = self._search(study, session)
                workers.wait_for_others(self.storage, study, self.lab.root, self.say)
                if not spent or self._spent(study.get_trials(deepcopy=False, states=STARTED)):
                    break
            outcome_of_session = RunEnd.COMPLETE
        finally:
            self.measurer.close_session(session, outcome_of_session)
        result = self._result(study)
        if result.best is not None:
            key = f"final@{len(result.trials)}"
            with workers.study_lock(self.storage, study.study_name):
                taken = workers.claim(study, key, self.lab.root, own=own)
            if taken is None:
                self.budget.trials_time = trials_time(study.trials)
                self.budget.earlier_trials = trials_time(study.trials, self.started_at)
                check_answer(store, result, self.plan, self.settings, self.trials, self.lab,
                             self.say, self.budget, self.put_back)
                workers.done(study, key)
            else:
                result.final_by = taken
                self.say(f"the best trial is re-measured by the worker on {taken['host']} "
                         f"(lab {taken['lab']})")
        result.seconds = self.budget.spent()
        return result

    def _no_pair_fits(self) -> str | None:
        """With schedule auto, why a trial beside its reference would not fit (two servers of
        the plan's settings: memory, or disk for two copies of the data), if it would not: a
        new study then measures its trials alone, else every one would be refused."""
        if self.measured is not Measured.SIDE_BY_SIDE or self.plan.run.schedule != Schedule.AUTO:
            return None
        # a trial of the plan's own settings is the reference's twin
        return self.measurer.side_by_side_fits([self.trials.reference] * 2)

    def _study(self) -> optuna.Study:
        """The study, created or resumed; a resumed one keeps how it measures and searches."""
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        assert self.storage is not None, "the storage is opened once the lab exists"
        self.search = self._method(self.sampler)
        name = f"{self.plan.name}:{self.method}"
        with workers.study_lock(self.storage, name):  # two workers starting at once
            study = optuna.create_study(study_name=name, storage=self.storage,
                                        # Optuna's member of the same name
                                        direction=StudyDirection[self.settings.direction.name],
                                        sampler=self.search.sampler(0), load_if_exists=True)
            check_same_figures(study, self.plan, self.baseline, self.settings.objective)
            measured, searched = _recorded(study, self.measured, self.sampler, self.seed)
        changed = space_changed(study, self.space.distributions())
        if changed:
            raise PerflabError(
                f"tune: the study {name} in this lab searched {changed} over other values, or "
                "on another scale, than this perflab does: its trials cannot be resumed",
                hint="tune in a new lab, or give the plan another study.name to start afresh")
        if measured is not self.measured:
            self.say(f"study {study.study_name} measures its trials {measured}: going on so")
        self.measured = measured
        if searched is not self.sampler:
            self.say(f"study {study.study_name} is searched with {searched}: going on so")
            self.sampler, self.search = searched, self._method(searched)
            study.sampler = self.search.sampler(0)
        done = len(study.get_trials(deepcopy=False, states=FINISHED))
        if done:
            self.say(f"resuming study {study.study_name}: {done} trial(s) already done")
        self.say(f"trials measured {measured}" + (
            f" with the reference {self.baseline.name} (scores are ratios to it)"
            if measured is Measured.SIDE_BY_SIDE else
            f" (a trial beside its reference would not fit: {self.no_pair})" if self.no_pair
            else ""))
        description = self.search.describe()
        if description:
            self.say(description)
        return study

    def _method(self, sampler: Sampler) -> SearchMethod:
        """What chooses the trials: ofat's rule, or bayes's and random's sampler."""
        args = (self.space, self.settings.direction, self.seed, self.budget.trials)
        if self.method is Method.OFAT:
            return OneFactorAtATime(*args)
        if sampler is Sampler.ADDITIVE:
            return AdditiveSearch(*args)
        return OptunaSampling(*args, kind=sampler)

    def _search(self, study: optuna.Study, session: int) -> bool:
        """Trials until the budget is spent (True) or the search stops (False)."""
        assert self.storage is not None, "the storage is opened once the lab exists"
        while True:
            with workers.study_lock(self.storage, study.study_name):
                workers.reap(study, self.lab.root, self.say)
                every = study.get_trials(deepcopy=False)  # read once: the lock keeps it current
                trials = [t for t in every if t.state in STARTED]
                if self._spent(trials):
                    return True
                if why := stop_reason(trials, self.started_at):
                    self.say(f"stopping: {why}")
                    return False
                proposal = self.search.next(trials, len(every))
                if proposal.step is Step.MEASURE:
                    study.sampler = self.search.sampler(len(trials))
                    trial, trial_id = workers.take_trial(
                        self.storage, study, self.space.draws(proposal.params), proposal.attrs,
                        self.space.distributions(), self.lab.root)
            if proposal.step is Step.DONE:
                self.say(f"{self.method}: {proposal.reason}; stopping early")
                return False
            if proposal.step is Step.WAIT:  # for other workers' trials
                time.sleep(workers.POLL_SECONDS)
                continue
            with workers.heartbeat(self.storage, trial_id):
                self.trials.run(study, session, trial)

    def _spent(self, trials: list) -> bool:
        """The study's trials that spend the budget (`spends_budget`), running ones included,
        whichever worker ran them; the time is this worker's."""
        return self.budget.trials_over(sum(map(spends_budget, trials)))

    def _result(self, study: optuna.Study) -> TuneResult:
        finished = study.get_trials(deepcopy=False, states=FINISHED)
        trials = [outcome(t, self.space.within) for t in finished]
        numbered = {t.number: t for t in trials}
        ranked = [numbered[t.number] for t in self.search.rank(finished)]
        importance = {}
        if sum(t.state is Outcome.OK for t in trials) >= 4:
            try:
                importance = dict(optuna.importance.get_param_importances(
                    study, evaluator=optuna.importance.PedAnovaImportanceEvaluator()))
            except (RuntimeError, ValueError) as exc:  # too little variety to tell
                self.say(f"knob importance not available: {exc}")
        return TuneResult(self.plan.name, self.method, self.knobs, trials,
                          ranked[0] if ranked else None, importance=importance,
                          defaults=self.trials.startup(), measured=self.measured, ranked=ranked,
                          baseline=self.trials.baseline_values(), ranked_by=self.search.ranking,
                          objective=self.settings.objective, direction=self.settings.direction,
                          option_group=flavor_of(self.catalog.version).option_group)


def trials_time(trials: Sequence[FrozenTrial], before: float = math.inf) -> float:
    """The wall time a study's trials covered (those finished `before`, a wall-clock time:
    a resumed study's earlier runs'): Optuna's start and end of each, overlaps once. An
    interrupted trial is left out: its end is when a later run failed it, maybe the next
    morning."""
    return covered([(t.datetime_start.timestamp(), t.datetime_complete.timestamp())
                    for t in trials if t.state in FINISHED and not interrupted(t)
                    and t.datetime_start and t.datetime_complete
                    and t.datetime_complete.timestamp() < before])


def _checked(method: str, sampler: str | None, seed: int) -> tuple[Method, Sampler]:
    """The method and the sampler (bayes's: additive unless given), once the search's
    arguments are checked (before any server starts)."""
    if method not in set(Method):
        raise PerflabError(f"method {method!r}: use ofat, bayes or random", option="method")
    if sampler is not None and method != Method.BAYES:
        raise PerflabError(f"a sampler chooses bayes's proposals; {method} has its own",
                           hint="leave the sampler out, or use the method bayes",
                           option="sampler")
    sampler = Sampler.ADDITIVE if sampler is None else sampler
    if sampler not in set(Sampler):
        raise PerflabError(f"sampler {sampler!r} is not known",
                           hint=f"samplers: {', '.join(Sampler)}", option="sampler")
    method, sampler = Method(method), Sampler(sampler)
    needs = SAMPLER_NEEDS.get(sampler) if method is Method.BAYES else None
    if needs and importlib.util.find_spec(needs) is None:
        raise PerflabError(f"sampler {sampler} needs the Python package {needs}, which "
                           "perflab's environment does not install",
                           hint="sampler additive (the default), tpe, qmc or random",
                           option="sampler")
    if not 0 <= seed < 2**32:
        raise PerflabError(f"seed must be from 0 to {2**32 - 1}, got {seed}", option="seed")
    return method, sampler


def space_changed(study: optuna.Study, distributions: dict) -> str | None:
    """The first knob whose stored trials were drawn from a distribution Optuna cannot resume
    with `distributions` (a study made by an earlier perflab: one that drew key_buffer_size
    linearly over 0..1 GiB), else None."""
    for trial in study.get_trials(deepcopy=False):
        for name, old in trial.distributions.items():
            if name in distributions:
                try:
                    optuna.distributions.check_distribution_compatibility(
                        old, distributions[name])
                except ValueError:
                    return name
    return None


def _tunable(plan: Plan) -> None:
    """Refuses a plan tune cannot measure: its trials restart a server of their own on this
    machine and warm it up from here."""
    if plan.run.clients:
        raise PerflabError(
            "tune measures from this machine, not from several client machines "
            "(run.clients): its trials restart one server and warm it up from here",
            hint="tune without run.clients, then run the winner's plan with it",
            option="clients")
    if plan.dataset.existing:
        raise PerflabError(
            f"tune starts a server of its own for every trial; dataset.existing = "
            f"{plan.dataset.existing!r} names data on a server perflab did not start",
            hint="give the plan a [dataset] perflab loads (rows, or an sql workload's "
                 "file), or measure that server with perflab run --socket or --host")


def say_set_aside(plan: Plan, say: Say) -> None:
    """Says which of the plan's configurations tune leaves aside: it searches knobs over the
    baseline alone, so the other configurations ([configs], [axes], [[steps]]) are not
    measured, and a plan written for `perflab run` should not look searched over them."""
    others = [config.name for config in plan.configs if config.name != plan.baseline]
    if others:
        shown = ", ".join(others[:4]) + (f" and {len(others) - 4} more" if len(others) > 4 else "")
        say(f"tune searches the knobs over the baseline {plan.baseline} alone: the plan's other "
            f"configurations ({shown}) are not measured; to compare them, perflab run the plan")


def check_same_figures(study: optuna.Study, plan: Plan, baseline: ServerConfig,
                  objective: Objective) -> None:
    """Refuses to resume a study whose trials' figures meant something else: another
    objective (Optuna would rank them in its own direction), thread counts, workload, dataset,
    run length or reference. A study records these at its start; one begun before they were
    recorded is taken as it is. (Its knobs may change: trials lacking a knob read its
    default; and its schedule: it keeps measuring as it began, `_recorded`.)"""
    any_schedule = replace(plan, run=replace(plan.run, schedule=Schedule.AUTO, slice_seconds=0.0))
    now = {"objective": objective, "thread counts": sorted(plan.run.threads),
           "workload, dataset, run length or reference": any_schedule.config_hash(baseline)}
    recorded = study.user_attrs.get("figures")
    if recorded is None:
        if objective != Objective.THROUGHPUT and len(plan.run.threads) > 1 and study.get_trials(
                deepcopy=False, states=STARTED):
            raise PerflabError(
                f"tune: the study {study.study_name} in this lab scored its trials' latency "
                "over several thread counts as an earlier perflab did (an arithmetic mean; "
                "now a geometric one): its figures cannot be resumed",
                hint="give the plan another study.name to start afresh, or tune in a new lab")
        study.set_user_attr("figures", now)
        return
    changed = [what for what, value in now.items() if recorded.get(what) != value]
    if changed:
        raise PerflabError(
            f"tune: the study {study.study_name} in this lab measured its trials with another "
            f"{' and '.join(changed)} than this plan: its figures cannot be resumed under it",
            hint="give the plan another study.name to start afresh, or tune in a new lab")


def _recorded(study: optuna.Study, measured: Measured, sampler: Sampler,
              seed: int) -> tuple[Measured, Sampler]:
    """How the study measures its trials and which sampler searches it (a design indexed by
    trial number, a model's answer): as it recorded, for all its trials, or for a new study as
    asked. A study from before these were recorded measured its trials alone, with TPE. A study
    of another seed is refused (check_same_seed)."""
    check_same_seed(study, seed)
    begun = bool(study.get_trials(deepcopy=False, states=STARTED))
    recorded = study.user_attrs.get("measured")
    if recorded is None:
        recorded = Measured.ALONE if begun else measured
        study.set_user_attr("measured", str(recorded))
    searched = study.user_attrs.get("sampler")
    if searched is None:
        searched = Sampler.TPE if begun else sampler
        study.set_user_attr("sampler", str(searched))
    return Measured(recorded), Sampler(searched)


def check_same_seed(study: optuna.Study, seed: int) -> None:
    """A PerflabError when the study was searched with another seed: its trials would be taken
    as this seed's (a second seed's tune in the same lab would print the first one's answer,
    having measured nothing). A new study, or one from before seeds were recorded, records it."""
    recorded = study.user_attrs.get("seed")
    if recorded is None:
        study.set_user_attr("seed", seed)
    elif recorded != seed:
        raise PerflabError(
            f"tune: the study {study.study_name} in this lab was searched with seed {recorded}, "
            f"not {seed}: its trials would be resumed as if they were this seed's",
            hint=f"seed {recorded} resumes it; tune another seed in a new lab, or give the "
                 "plan another study.name", option="seed")


def stop_reason(trials: Sequence[FrozenTrial], since: float) -> str | None:
    """Why the search stops before its budget is spent, if it must: proposals that keep not
    fitting, or trials started since `since` (this run: a lab mended and the run resumed goes
    on) that keep saying nothing of their settings."""
    if in_a_row(trials, refused) >= MAX_REFUSALS_IN_A_ROW:
        return f"the last {MAX_REFUSALS_IN_A_ROW} proposals would not fit {refusal_advice(trials)}"
    this_run = [t for t in trials if t.datetime_start and t.datetime_start.timestamp() >= since]
    if in_a_row(this_run, uninformative, passing=refused) >= MAX_UNINFORMATIVE_IN_A_ROW:
        return (f"the last {MAX_UNINFORMATIVE_IN_A_ROW} trials said nothing of their settings "
                "(interrupted, or their reference failed: see above); the lab's servers, not "
                "the settings, are failing")
    return None


def refusal_advice(trials: Sequence[FrozenTrial]) -> str:
    """Where proposals kept not fitting, and what to change, by the latest refusal's cause:
    the tune's memory budget (tune.memory_share), or a trial beside its reference, whose pair
    must fit in half the RAM, whatever the budget allows one server, and on the lab's disk."""
    latest = max((t for t in trials if refused(t)), key=lambda t: t.number)
    beside = latest.user_attrs.get("cause") == REFERENCE
    alone = 'or measure trials alone (schedule = "serial" in [run])'
    if beside and "disk" in str(latest.user_attrs.get("error", "")):
        return f"beside their reference on the lab's disk (a dataset copy each); free space {alone}"
    if beside:
        return ("beside their reference in half the RAM, whatever tune.memory_share allows one "
                f"server; narrow the largest buffers (tune.knobs) {alone}")
    return ("in the memory budget; narrow the largest buffers (tune.knobs) or raise "
            "tune.memory_share")


def in_a_row(trials: Sequence[FrozenTrial], kind: Callable[[FrozenTrial], bool],
             passing: Callable[[FrozenTrial], bool] = lambda trial: False) -> int:
    """How many of the study's latest trials are of `kind`, back to the last that is neither
    of it nor `passing` (passed over, not counted)."""
    count = 0
    for trial in sorted(trials, key=lambda t: t.number, reverse=True):
        if kind(trial):
            count += 1
        elif not passing(trial):
            break
    return count
