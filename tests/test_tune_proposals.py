"""Each tuning method's proposals on a simulated server, trial by trial, against those recorded
in tests/data/tune_proposals.json before the methods became objects (issue 30): a change of the
search's code that is meant to keep its behaviour must keep these sequences.

The whole `Tuner.run()` runs, with its Optuna study in the lab's SQLite, but no server: the lab's
catalog is a recorded one (tests/data/tune_catalog.json, MariaDB 10.11), the machine has 8 GiB,
and a simulated runner answers each measurement from `response` with a noise seeded by what is
measured, so that the figures, and so the proposals, are the same on every machine.

To record the sequences again (only when a change of the proposals is meant):
    PERFLAB_RECORD_PROPOSALS=1 .venv/bin/pytest tests/test_tune_proposals.py
"""

from __future__ import annotations

import datetime
import hashlib
import itertools
import json
import math
import os
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from optuna.trial import TrialState, create_trial

from perflab.lab import Lab
from perflab.load.workloads import resolve
from perflab.plan import parse_plan
from perflab.server.variables import Catalog
from perflab.tune.methods import OneFactorAtATime, Step
from perflab.tune.result import REFERENCE, refused, spends_budget, uninformative
from perflab.tune.search import (
    MAX_UNINFORMATIVE_IN_A_ROW,
    Tuner,
    TuneSettings,
    in_a_row,
    refusal_advice,
    stop_reason,
)
from perflab.tune.space import Space, knob_space, startup_values

pytestmark = [pytest.mark.fast,  # needs no server: scripts/test -m fast
              pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")]

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "tune_proposals.json"
POOL = "innodb_buffer_pool_size"
FEW_KNOBS = [POOL, "innodb_log_file_size", "query_cache_type", "thread_handling"]
# those, and some whose moves cost memory (a setting may be refused) or fail (O_DSYNC)
KNOBS = [*FEW_KNOBS, "query_cache_size", "sort_buffer_size", "innodb_flush_method",
         "table_open_cache"]

PLAN = """
[study]
name = "{name}"
[dataset]
engine = "InnoDB"
rows = 5000
[workload]
name = "oltp_point_select"
[run]
threads = [1, 2]
warmup_seconds = 0
run_seconds = 1
rounds = 1
{schedule}
[configs.default]
[tune]
knobs = {knobs}
final_rounds = 3
final_max_rounds = 5
"""

# name: (method, Tuner's keyword arguments, tune.knobs, a serial plan)
CASES = {
    "ofat-few-knobs": ("ofat", dict(budget=14), FEW_KNOBS, False),
    "ofat": ("ofat", dict(budget=12), KNOBS, False),
    "bayes-additive": ("bayes", dict(budget=14, seed=3), KNOBS, False),
    "bayes-tpe": ("bayes", dict(budget=12, sampler="tpe", seed=3), KNOBS, False),
    "bayes-qmc": ("bayes", dict(budget=12, sampler="qmc", seed=3), KNOBS, False),
    "random": ("random", dict(budget=12, seed=3), KNOBS, False),
    "random-serial": ("random", dict(budget=6, seed=5), KNOBS, True),
}


def catalog() -> Catalog:
    return Catalog.from_json(json.loads((DATA / "tune_catalog.json").read_text()))


def response(variables: dict) -> float:
    """The log throughput of a server with these variables set (the others at their startup
    values), as test_tune_additive.py's: a larger buffer pool gains up to e, the query cache
    costs 20%, pool-of-threads 40% once the pool gains, a larger redo log gains 10%; O_DSYNC does
    not start."""
    startup = {name: spec.startup_value for name, spec in catalog().variables.items()}
    values = {**startup, **{name: str(value) for name, value in variables.items()}}
    pool = int(values[POOL]) / int(startup[POOL])
    gain = min(1.0, max(-0.5, math.log(pool) / math.log(3)))
    query_cache = values["query_cache_type"] == "ON" or (
        "query_cache_size" in variables and values["query_cache_type"] != "DEMAND")
    pool_of_threads = values["thread_handling"] == "pool-of-threads"
    larger_log = int(values["innodb_log_file_size"]) > int(startup["innodb_log_file_size"])
    return gain + 0.1 * larger_log - 0.2 * query_cache - 0.5 * pool_of_threads * max(0.0, gain)


def measured(config, threads: int, repeat: int) -> SimpleNamespace:
    """A point's record: qps from `response` with a 5% noise seeded by what is measured. The
    reference's server crashes in trial 3 (its third side-by-side round)."""
    point = SimpleNamespace(config=config, threads=threads, round=repeat)
    variables = config.as_dict()
    if variables.get("innodb_flush_method") == "O_DSYNC":
        return SimpleNamespace(point=point, status="failed", metrics=None, server_failed=True,
                               error="mariadbd exited during start-up\nsimulated")
    if config.name.endswith("-reference") and repeat == 4:
        return SimpleNamespace(point=point, status="failed", metrics=None, server_failed=True,
                               error="mariadbd died during the point\nsimulated")
    seed = hashlib.sha256(repr((config.name, sorted(variables.items()), threads,
                                repeat)).encode()).digest()
    noise = random.Random(seed).gauss(0, 0.05)
    qps = 1000.0 * threads * math.exp(response(variables) + noise)
    metrics = SimpleNamespace(qps=qps, latency_p95_ms=1000 / qps, latency_p99_ms=2000 / qps,
                              other_cpu=None)
    return SimpleNamespace(point=point, status="ok", error=None, metrics=metrics)


class SimulatedRunner:
    """What the tuner asks of perflab.running's Measurer and Runner, answered by `measured`."""

    def __init__(self, plan, lab, store, say=print, budget_after_planned=False, noise_source="run",
                 stop_at=None, at_least=0):
        self.plan, self.store = plan, store
        self.workload = resolve(plan.workload)
        self.catalog = catalog()  # the host's, whose trials are stored

    def server_options(self, config_name: str) -> dict[str, str]:
        return {k: str(v) for k, v in self.plan.config(config_name).variables}

    def add_config(self, config) -> None:
        pass

    def open_session(self) -> int:
        return 1

    def close_session(self, session: int, outcome: str) -> None:
        pass

    def side_by_side_fits(self, configs) -> None:
        return None

    def measure_side_by_side(self, session: int, configs, repeat: int) -> list:
        return [measured(c, t, repeat) for c in configs for t in self.plan.run.threads]

    def measure_point(self, session: int, point) -> SimpleNamespace:
        return measured(point.config, point.threads, point.round)

    def noise(self, schedule=None) -> tuple[float, str]:
        return 0.05, "simulated"

    def run(self) -> SimpleNamespace:  # the final re-measure: its points, for the store
        self.store.runs.append(self.plan)
        run = self.plan.run
        return SimpleNamespace(measured=len(self.plan.configs) * len(run.threads) * run.rounds)


class SimulatedStore:
    def __init__(self):
        self.runs: list = []

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def studies(self) -> list[str]:
        return [p.name for p in self.runs]

    def design(self, study: str):
        """The re-measure's design as a run stores it: its plan's, frozen at its first run."""
        return next(p for p in self.runs if p.name == study).run.design()

    def design_of(self, study: str):
        return self.design(study) if study in self.studies() else None

    def points(self, study: str, definitions) -> list:
        plan = next((p for p in self.runs if p.name == study), None)
        if plan is None:  # not run yet
            return []
        points = []
        for repeat in range(1, plan.run.rounds + 1):
            for config in plan.configs:
                for threads in plan.run.threads:
                    record = measured(config, threads, repeat)
                    points.append(SimpleNamespace(ok=record.status == "ok", config=config.name,
                                                  round=repeat, metrics=record.metrics,
                                                  status_delta={}, session_id=0,
                                                  finished_at=0.0))
        return points

    def sessions(self, study: str) -> list:
        return []  # every study's only run is this one


class SimulatedLab(Lab):
    def store(self) -> SimulatedStore:
        self._create()
        return SimulatedStore()


def proposals(tmp_path: Path, monkeypatch, name: str, say=lambda _: None) -> dict:
    """One seeded simulated study of the case `name`: its trials and its result."""
    method, options, knobs, serial = CASES[name]
    for module in [m for n, m in sys.modules.items() if n.startswith("perflab.tune.")]:
        for name_of_class in ("Measurer", "Runner"):
            if hasattr(module, name_of_class):
                monkeypatch.setattr(module, name_of_class, SimulatedRunner)
    monkeypatch.setattr("perflab.tune.space.ram_bytes", lambda: 8 << 30)
    plan = parse_plan(PLAN.format(name=name, knobs=json.dumps(knobs),
                                  schedule='schedule = "serial"' if serial else ""))
    result = Tuner(plan, SimulatedLab(tmp_path / name), TuneSettings.from_plan(dict(plan.tune)),
                   method, say=say, **options).run()

    def figure(value: float | None) -> float | None:
        return None if value is None else round(value, 9)

    # what the search and its re-measure chose, not the verdicts (perflab.stats' part)
    return {
        "trials": [[t.number, t.state, figure(t.value), dict(sorted(t.params.items()))]
                   for t in result.trials],
        "ranked": [t.number for t in result.ranked],
        "ranked_by": result.ranked_by,
        "measured": str(result.measured),
        "candidates": sorted(result.candidates),
        "final": {config: {str(r): figure(v) for r, v in rounds.items()}
                  for config, rounds in sorted(result.final.items())},
        "kept": result.kept,  # the winner's knobs with an effect of their own shown
    }


@pytest.mark.parametrize("name", CASES)
def test_the_methods_propose_what_they_proposed(tmp_path, monkeypatch, name):
    found = proposals(tmp_path, monkeypatch, name)
    if os.environ.get("PERFLAB_RECORD_PROPOSALS"):
        recorded = json.loads(RECORDED.read_text()) if RECORDED.exists() else {}
        recorded[name] = found
        RECORDED.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    recorded = json.loads(RECORDED.read_text())[name]
    assert found["trials"] == recorded["trials"]
    assert found == recorded


def test_ofat_waits_for_a_round_other_workers_run_and_says_when_it_is_done():
    """A round whose trials other workers are running is waited for; a trial whose worker died
    (failed with no state of its own) is proposed again; a round with no gain ends the search."""
    knobs = knob_space(catalog(), [POOL])
    space = Space(tuple(knobs), startup_values(knobs, catalog()), lambda _: 0, 1)
    ofat = OneFactorAtATime(space, "maximize")

    def trial(number: int, params: dict, state: TrialState, attrs: dict) -> object:
        made = create_trial(params=space.draws(params), distributions=space.distributions(),
                            state=state,
                            value=1.0 if state == TrialState.COMPLETE else None,
                            user_attrs=attrs)
        made.number = number
        return made

    first = ofat.next([], 0)
    assert first.step is Step.MEASURE and first.params == space.defaults
    trials = [trial(0, first.params, TrialState.COMPLETE, {"state": "ok"})]
    round_one = []
    while (proposal := ofat.next(trials, len(trials))).step is Step.MEASURE:
        round_one.append(proposal.params)
        trials.append(trial(len(trials), proposal.params, TrialState.RUNNING, {}))
    assert proposal.step is Step.WAIT and len(round_one) == 3  # 3 points across the range
    trials[1] = trial(1, round_one[0], TrialState.FAIL, {})  # its worker died
    assert ofat.next(trials, len(trials)).params == round_one[0]
    trials = [trial(t.number, t.params, TrialState.COMPLETE, {"state": "ok"}) for t in trials]
    done = ofat.next(trials, len(trials))
    assert done.step is Step.DONE and done.reason == "no knob left that mattered"


@pytest.mark.parametrize(("error", "cause", "advice"), [
    ("worst-case memory 32.5 GiB exceeds the budget of 11.8 GiB", None,
     "raise tune.memory_share"),
    ("with its reference: 2 servers would take up to 13.0 GiB, more than half the RAM",
     REFERENCE,
     'whatever tune.memory_share allows one server; narrow the largest buffers (tune.knobs) or '
     'measure trials alone (schedule = "serial" in [run])'),
    ("with its reference: 2 copies of the dataset would not fit on the lab's disk", REFERENCE,
     "on the lab's disk")])
def test_a_search_stopped_by_refusals_names_what_to_change(error, cause, advice):
    """The memory budget is tune.memory_share's; a pair beside its reference must fit in half
    the RAM and on the disk whatever that share: raising it cannot help there."""
    trials = [create_trial(state=TrialState.COMPLETE, value=1.0),
              create_trial(state=TrialState.FAIL, user_attrs={"state": "refused",
                                                                "error": "earlier, other"}),
              create_trial(state=TrialState.FAIL, user_attrs={
                  "state": "refused", "error": error, **({"cause": cause} if cause else {})})]
    for number, trial in enumerate(trials):
        trial.number = number
    said = refusal_advice(trials)
    assert advice in said
    assert ("memory_share" in said) != ("disk" in error)
    assert in_a_row(trials, refused) == 2  # the search stops at MAX_REFUSALS_IN_A_ROW
    measured = create_trial(state=TrialState.COMPLETE, value=1.0)
    measured.number = 3
    assert in_a_row([*trials, measured], refused) == 0  # counted back from the latest


TRIAL_KINDS = {  # what a trial can leave in the study, as perflab records it
    "measured": dict(state=TrialState.COMPLETE, value=1.0),
    "running": dict(state=TrialState.RUNNING),
    "failed by its setting": dict(state=TrialState.FAIL,
                                  user_attrs={"state": "failed", "error": "would not start"}),
    "refused": dict(state=TrialState.FAIL, user_attrs={"state": "refused", "error": "memory"}),
    "interrupted": dict(state=TrialState.FAIL),  # reaped: its worker died, no state of its own
    "reference failed": dict(state=TrialState.FAIL, user_attrs={
        "state": "failed", "error": "the reference crashed", "cause": REFERENCE}),
}
SAY_NOTHING = {"refused", "interrupted", "reference failed"}


def study_of(kinds: list[str]) -> list:
    trials = []
    for number, kind in enumerate(kinds):
        spec = dict(TRIAL_KINDS[kind])
        if spec["state"] == TrialState.RUNNING:  # create_trial wants a finished one
            trial = create_trial(state=TrialState.COMPLETE, value=1.0)
            trial.state = TrialState.RUNNING
            trial.values = None
        else:
            trial = create_trial(**spec)
        trial.number = number
        trial.datetime_start = datetime.datetime.fromtimestamp(1000.0 + number)
        trials.append(trial)
    return trials


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(sorted(TRIAL_KINDS)), max_size=30))
def test_the_budget_counts_the_trials_that_said_something_of_their_setting(kinds):
    """A run interrupted and resumed (its running trial reaped), or whose reference failed,
    still measures the trials it was given; a refusal never counts; the rest always do. The
    search stops on uninformative trials in a row of its own run (refusals between them passed
    over), and a trial that said something of its setting starts the count again."""
    trials = study_of(kinds)
    assert sum(map(spends_budget, trials)) == sum(k not in SAY_NOTHING for k in kinds)
    tail = list(itertools.takewhile(lambda k: k in SAY_NOTHING, reversed(kinds)))
    silent = sum(k != "refused" for k in tail)
    assert in_a_row(trials, uninformative, passing=refused) == silent
    assert (stop_reason(trials, since=0.0) is not None) == (silent >= MAX_UNINFORMATIVE_IN_A_ROW)
    # a run resumed after such a stop (the lab mended) counts only the trials it started
    assert stop_reason(trials, since=1000.0 + len(kinds)) is None
    assert in_a_row(trials, refused) == len(list(itertools.takewhile(
        lambda k: k == "refused", reversed(kinds))))
