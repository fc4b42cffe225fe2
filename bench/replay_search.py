"""bench/replay_search: would today's additive search have proposed what a stored bench run
measured? For each stored `bayes` run of a bench/tune results database, the search is asked for
each trial given the run's trials before it (their stored figures), and the first trial it
proposes otherwise is printed. A run's "trials to 90%" depends only on its answers up to the
trial that reached (and on R): a run replayed identically past that trial keeps its figure
without being measured again; a run that differs sooner must be measured anew.

The knob space is rebuilt as the tune built it: the plan's knobs (stored with the study), the
host server's catalog (the lab's), the study's seed and budget, and the memory rule with the
machine's share of RAM (the baseline's own server options are not added: they are the
defaults in bench/tune's plans). Nothing is measured; it takes seconds a run.

    xz -dc bench/saved/tune-<stamp>.sqlite.xz > /tmp/replay.sqlite
    .venv/bin/python bench/replay_search.py /tmp/replay.sqlite --budget 20
"""

from __future__ import annotations

import argparse
import json
import sqlite3
from collections.abc import Sequence
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial

from common import ROOT
from perflab.lab import Lab
from perflab.server.memory import configured_sizes, memory_estimate
from perflab.server.variables import Catalog
from perflab.tune.additive import AdditiveSearch
from perflab.tune.result import spends_budget
from perflab.tune.space import Space, knob_space, memory_budget, setting_key, startup_values


def first_difference(search: AdditiveSearch, trials: Sequence[FrozenTrial]) -> int | None:
    """The first trial (its place in the budget, counted from 1 with trial 0) whose setting the
    search proposes otherwise given the trials before it; None when it proposes every one."""
    space, counted = search.space, 0
    ordered = sorted(trials, key=lambda t: t.number)
    for n, trial in enumerate(ordered[1:], 1):
        counted += spends_budget(ordered[n - 1])
        proposed, _ = search.propose(ordered[:n], n)
        if setting_key(proposed) != setting_key(space.complete(trial.params)):
            return counted + 1
    return None


def space_of(catalog: Catalog, plan: dict) -> Space:
    """The knob space a stored plan's tune searched, on this machine's memory rule."""
    knobs = knob_space(catalog, plan["tune"]["knobs"], False, {plan["dataset"]["engine"]})

    def memory(params: dict) -> int:
        return memory_estimate(configured_sizes(catalog, {k: str(v) for k, v in params.items()}))

    return Space(tuple(knobs), startup_values(knobs, catalog), memory, memory_budget())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("database", help="a bench/tune lab's perflab.sqlite (decompressed)")
    parser.add_argument("--budget", type=int, default=20, help="the runs' --budget (20)")
    parser.add_argument("--lab", type=Path, default=ROOT / "out" / "tune",
                        help="a lab whose host catalog to read (bench/out/tune)")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    catalog = Lab(args.lab).catalog()
    storage = f"sqlite:///{args.database}"
    with sqlite3.connect(args.database) as db:
        plans = {study: json.loads(text)
                 for study, text in db.execute("SELECT study, plan_json FROM plans")}
    for name in sorted(optuna.study.get_all_study_names(storage)):
        study_name, _, method = name.partition(":")
        if method != "bayes" or study_name not in plans:
            continue
        seed = int(study_name.rsplit("-s", 1)[1].split("-")[0])
        search = AdditiveSearch(space_of(catalog, plans[study_name]), "maximize", seed,
                                args.budget)
        trials = optuna.load_study(study_name=name, storage=storage).trials
        differs = first_difference(search, trials)
        print(f"{study_name}: {len(trials)} trials, "
              + ("every one proposed again" if differs is None
                 else f"proposed otherwise from trial {differs} (counted from 1)"), flush=True)


if __name__ == "__main__":
    main()
