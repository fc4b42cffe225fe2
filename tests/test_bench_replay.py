"""bench/replay_search: a stored run is replayed trial by trial, and the first trial today's
search would propose otherwise is named (a bench run's "trials to 90%" stands without being
measured again only up to that trial)."""

from __future__ import annotations

import importlib.util
import json
import math
import random
import sys
from pathlib import Path

import optuna
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.server.variables import Catalog
from perflab.tune.additive import AdditiveSearch

pytestmark = [pytest.mark.fast,  # needs no server: scripts/test -m fast
              pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")]

ROOT = Path(__file__).parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # bench scripts import their neighbour common.py
spec = importlib.util.spec_from_file_location("bench_replay", ROOT / "bench" / "replay_search.py")
assert spec and spec.loader
replay = importlib.util.module_from_spec(spec)
spec.loader.exec_module(replay)

PLAN = {"tune": {"knobs": ["innodb_buffer_pool_size", "innodb_log_file_size", "query_cache_type",
                           "thread_handling", "sort_buffer_size", "table_open_cache"]},
        "dataset": {"engine": "InnoDB"}}
SPACE = replay.space_of(Catalog.from_json(json.loads(
    (ROOT / "tests" / "data" / "tune_catalog.json").read_text())), PLAN)


def stored_run(seed: int, trials: int) -> list:
    """A run as the tuner stores it: the search's proposals, each told a noisy figure of a
    response where a larger pool gains."""
    study = optuna.create_study(direction="maximize")
    search = AdditiveSearch(SPACE, "maximize", seed, trials)
    noise = random.Random(seed)
    for _ in range(trials):
        done = study.get_trials(deepcopy=False)
        proposal = search.next(done, len(done))
        study.enqueue_trial(SPACE.draws(proposal.params), user_attrs=proposal.attrs)
        trial = study.ask(SPACE.distributions())
        setting = SPACE.within(trial.params)
        pool = int(setting["innodb_buffer_pool_size"]) / int(SPACE.defaults[
            "innodb_buffer_pool_size"])
        study.tell(trial, math.exp(min(1.0, math.log(pool)) + noise.gauss(0, 0.05)))
    return study.trials


@settings(max_examples=5, deadline=None)
@given(seed=st.integers(0, 1000), changed=st.integers(1, 7))
def test_a_run_is_proposed_again_up_to_the_trial_that_differs(seed, changed):
    """A run the search made is proposed again trial by trial; with one trial's setting
    changed (as another version of the search would have chosen), that trial is named, by
    its place in the budget (trial 0 is the first)."""
    trials = stored_run(seed, 8)
    search = AdditiveSearch(SPACE, "maximize", seed, 8)
    assert replay.first_difference(search, trials) is None
    other = trials[changed]
    moved = dict(other.params)
    moved["table_open_cache"] = 777 if moved["table_open_cache"] != 777 else 778
    trials[changed] = optuna.trial.create_trial(
        params=moved, distributions=other.distributions, value=other.value,
        user_attrs=other.user_attrs)
    trials[changed].number = changed
    assert replay.first_difference(search, trials) == changed + 1
