"""The additive search (bayes's default) on a response with a known answer, over perflab's
curated knob space as this server has it: the server gives the space, the response is
synthetic so that the answer is known and many seeds run in seconds. The real server runs
the search in test_tune.py."""

from __future__ import annotations

import dataclasses
import itertools
import math
import random

import optuna
import pytest
from optuna.trial import FrozenTrial, TrialState

from perflab.probes.system import ram_bytes
from perflab.server.memory import configured_sizes, memory_estimate
from perflab.tune.additive import (
    SCREENING,
    AdditiveSearch,
    Model,
    believed_order,
    group_size,
    observations,
)
from perflab.tune.space import Space, knob_space, startup_values

POOL = "innodb_buffer_pool_size"


@pytest.fixture(scope="module")
def space(shared_lab) -> Space:
    catalog = shared_lab.catalog()
    knobs = knob_space(catalog)

    def memory(params: dict) -> int:
        return memory_estimate(configured_sizes(catalog, {k: str(v) for k, v in params.items()}))

    return Space(tuple(knobs), startup_values(knobs, catalog), memory, ram_bytes() // 2)


def response(space: Space, params: dict) -> float:
    """The log gain over the defaults: a pool three times the default's or more gives most of
    it (as a dataset twice the default pool does), the query cache costs 20% wherever it is
    switched on (query_cache_size set at all switches it on in MariaDB), pool-of-threads costs
    40% where the data fit in the pool and nothing at the default pool (bench/tune measured
    both), the rest is noise."""
    pool = int(params[POOL]) / int(space.defaults[POOL])
    gain = min(1.0, max(-0.5, math.log(pool) / math.log(3)))
    query_cache = params["query_cache_type"] == "ON" or (
        int(params["query_cache_size"]) != int(space.defaults["query_cache_size"])
        and params["query_cache_type"] != "DEMAND")
    pool_of_threads = params["thread_handling"] == "pool-of-threads"
    return gain - 0.2 * query_cache - 0.5 * pool_of_threads * max(0.0, gain)


def ask(study: optuna.Study, method: AdditiveSearch) -> optuna.Trial:
    """The study's next trial as the tuner takes it: the method's proposal, with the user
    attributes it records (the defaults first, as every method starts)."""
    trials = study.get_trials(deepcopy=False)
    proposal = method.next(trials, len(trials))
    study.enqueue_trial(method.space.draws(proposal.params), user_attrs=proposal.attrs)
    return study.ask(method.space.distributions())


def search(space: Space, seed: int, trials: int, fast_noise: float = 0.05) -> optuna.Study:
    """`trials` trials of the search on `response`, with a noise sd (log) of 0.05 at the
    defaults growing to `fast_noise` at the full gain (a fast server is noisier here)."""
    study = optuna.create_study(direction="maximize")
    method = AdditiveSearch(space, "maximize", seed)
    noise = random.Random(seed)
    for _ in range(trials):
        trial = ask(study, method)
        setting = space.within(trial.params)  # what the tuner measures
        assert space.fits(setting), "a proposal that does not fit in memory"
        gain = response(space, setting)
        sd = 0.05 + (fast_noise - 0.05) * min(1.0, max(0.0, gain))
        study.tell(trial, math.exp(gain + noise.gauss(0, sd)))
    return study


_SEARCHED: dict[tuple[int, float], list] = {}


def searched(space: Space, seed: int, trials: int, fast_noise: float = 0.05) -> list:
    """search's first `trials` trials, each seed's run made once per module: with no budget
    given, a seed's search and noise draw the same sequence, so a shorter run is a prefix of a
    longer one."""
    known = _SEARCHED.get((seed, fast_noise))
    if known is None or len(known) < trials:
        known = _SEARCHED[(seed, fast_noise)] = search(space, seed, trials, fast_noise).trials
    return known[:trials]


def test_screening_moves_every_knob_to_both_sides_within_two_dozen_trials(space):
    """Each pass of the screening moves every knob once, a number to the longer side of its
    default first, then to the other; every group is measured within 24 trials, follow-ups of a
    clear gain between them, in 3 seeds of 4 at least."""
    method = AdditiveSearch(space, "maximize", 1)
    groups = math.ceil(len(space.knobs) / group_size(len(space.knobs)))  # per pass
    assert len(method.design) == 2 * groups
    for screened in (method.design[:groups], method.design[groups:]):
        assert sorted(k for moves in screened for k in moves) == \
            sorted(k.name for k in space.knobs)  # each knob once
    for knob in (k for k in space.knobs if k.kind == "int"):
        first, second = (next(moves[knob.name] for moves in method.design[i * groups:]
                              if knob.name in moves) for i in (0, 1))
        default = int(space.defaults[knob.name])
        u0 = knob.position(default)
        if 0.05 < u0 < 0.95:  # a default near an end: both go the long way
            assert (first - default) * (second - default) < 0, knob.name
            assert (first > default) == (u0 <= 0.5), knob.name  # the longer side first
    # a clear gain found early is followed up first (attribution, jumps), which can push a
    # seed's last groups past 24 trials: seed 1 of 1..8 on the curated space of 2026-11-27
    screened = [{t.user_attrs.get(SCREENING) for t in searched(space, seed, 24)}
                >= set(range(2 * groups)) for seed in range(1, 5)]
    assert sum(screened) >= 3, screened


def test_the_best_believed_setting_has_the_gain_and_not_the_harm(space):
    """Within 20 trials, in 9 seeds of 10: the pool large, the query cache off. Without the
    attribution step (a knob that came in with the pool put back once) 7 seeds of 10 keep a
    knob that rode in with the gain."""
    good = 0
    for seed in range(10):
        trials = searched(space, seed, 20)
        best = space.within(believed_order(space, trials, "maximize")[0].params)
        good += response(space, best) >= 0.99
    assert good >= 9


def test_a_knob_known_to_matter_is_not_put_back_again_and_again(space):
    """With 15% noise at the gain (as a server four times faster reads on 2 cores), the effect
    of reverting the pool stays uncertain in size but not in sign: the attribution step must
    not put the pool back after every change of the best-believed setting (the bench of
    2026-11-25 spent 6-8 trials of 66 per seed so, each losing the whole gain)."""
    pool_back = 0
    for seed in range(3):
        study = search(space, seed, trials=36, fast_noise=0.15)
        design = len(AdditiveSearch(space, "maximize", seed).design)
        pool_back += sum(int(space.within(t.params)[POOL]) < 2 * int(space.defaults[POOL])
                         for t in study.trials[design + 3:])
    assert pool_back <= 3


def test_a_companion_of_the_gain_harmful_only_with_it_is_put_back(space):
    """pool-of-threads costs nothing at the default pool and 40% once the data fit in the pool:
    when it comes in with the pool in a screening group, its harm is seen only there. An
    additive model learned it was harmless from the trial that moved it at the default pool
    and kept it in the answer (bench/tune, 2026-11-25: 5 trials spent elsewhere, the answer
    at +170..+245% instead of +300%); the interaction with the dominant knob puts it back."""
    good = 0
    # the engines' knobs are screened first, so a server-wide knob shares the pool's group only
    # in the group where the engines' knobs run out: about one seed in sixty
    seeds = list(itertools.islice((seed for seed in range(2000)
                                   if _rides_with_the_pool(space, seed)), 4))
    for seed in seeds:
        study = search(space, seed, trials=22)
        best = space.within(believed_order(space, study.trials, "maximize")[0].params)
        good += best["thread_handling"] != "pool-of-threads" and response(space, best) >= 0.99
    assert len(seeds) == 4 and good >= 3


@pytest.fixture(scope="module")
def myisam_space(shared_lab) -> Space:
    """The curated knobs a MyISAM study searches (bench/heldout/tune_myisam_join.toml's)."""
    catalog = shared_lab.catalog()
    knobs = knob_space(catalog, engines={"MyISAM"})
    return Space(tuple(knobs), startup_values(knobs, catalog), lambda _: 0, 1)


def join_response(space: Space, params: dict) -> float:
    """The held-out MyISAM join's log gain, as measured on the 2-core VM: no key buffer gains
    x1.8 (the join reads its index from the OS cache without the key cache's mutex), the query
    cache x300 (switched on with memory for it), the rest is noise."""
    kind, size = params["query_cache_type"], int(params["query_cache_size"])
    query_cache = size > 0 and (kind == "ON" or kind == space.defaults["query_cache_type"]
                                and size != int(space.defaults["query_cache_size"]))
    return 5.7 if query_cache else 0.6 * (int(params["key_buffer_size"]) == 0)


def test_a_short_budget_screens_every_group_past_a_small_gain(myisam_space):
    """The held-out MyISAM join at --budget 12 (10 screening groups): the key buffer's x1.8
    turns up in the first group, the query cache's x300 in one of the last. Following up the
    small gain knob by knob, and screening on settings that carried a group's noise
    (query_cache_type=DEMAND riding in kept a later group's ON off), the search missed the
    query cache in 12 of 40 seeds; the budget now keeps a trial for every pending group and
    the screening moves them on what carries the gain. 19 seeds of 20 at least."""
    space, found = myisam_space, 0
    for seed in range(20):
        study = optuna.create_study(direction="maximize")
        method = AdditiveSearch(space, "maximize", seed, budget=12)
        noise = random.Random(seed)
        for _ in range(12):
            trial = ask(study, method)
            study.tell(trial, math.exp(join_response(space, space.within(trial.params))
                                       + noise.gauss(0, 0.1)))
        best = space.within(believed_order(space, study.trials, "maximize")[0].params)
        found += join_response(space, best) > 5
    assert found >= 19, found


def made_trial(space: Space, number: int, params: dict, value: float | None = None,
               state: str | None = "ok", index: int | None = None) -> FrozenTrial:
    """A trial as the tuner leaves it: measured (a value), or failed with the user attribute
    `state` ("refused", "failed", or None: interrupted, no state of its own), with the
    screening group it measured when `index` is given."""
    made = optuna.trial.create_trial(
        params=space.draws(params), distributions=space.distributions(), value=value,
        user_attrs={**({} if state is None else {"state": state}),
                    **({} if index is None else {SCREENING: index})},
        state=TrialState.COMPLETE if value is not None else TrialState.FAIL)
    made.number = number
    return made


def _rides_with_the_pool(space: Space, seed: int) -> bool:
    """Whether the first screening group that moves the pool up also moves pool-of-threads."""
    for moves in AdditiveSearch(space, "maximize", seed).design:
        if POOL in moves:
            return int(moves[POOL]) > int(space.defaults[POOL]) and \
                moves.get("thread_handling") == "pool-of-threads"
    return False


def test_an_interrupted_screening_trial_is_run_again_once(space):
    """A screening trial whose worker died (failed with no state of its own) told nothing: its
    group is measured next, as it was proposed; interrupted twice, the screening goes on."""
    method = AdditiveSearch(space, "maximize", 2)

    def trial(number, params, value=None, state="ok", index=None):
        return made_trial(space, number, params, value, state, index)

    trials = [trial(0, dict(space.defaults), 1.0)]
    first, index = method.propose(trials, 1)
    changed = {name for name, value in first.items() if value != space.defaults[name]}
    assert index == 0 and changed and changed <= set(method.design[0])  # shrunk to fit, maybe
    trials.append(trial(1, first, state=None, index=0))  # interrupted
    assert method.propose(trials, 2) == (first, 0)
    trials.append(trial(2, first, state=None, index=0))  # interrupted again
    assert method.propose(trials, 3)[1] == 1


def test_a_screening_group_with_nothing_to_move_waits(space):
    """A group whose knobs the best-believed setting all moves (the pool's second-pass group once
    the pool gained) moves nothing there: the screening takes the next group, and with none
    left the model's steps go on (a group that cannot be used must not hold the search)."""
    method = AdditiveSearch(space, "maximize", 4)
    pool_group = next(i for i, moves in enumerate(method.design) if POOL in moves)
    base = {**space.defaults, **method.design[pool_group]}
    untried: set = set()
    later = [i for i in range(len(method.design)) if i != pool_group]
    assert method._screen([pool_group], base, untried) is None
    params, index = method._screen([pool_group, *later], base, untried)
    assert index == later[0] and all(params[k] == v for k, v in base.items()
                                     if k in method.design[pool_group])
    # on a machine where nothing fits, no group can shrink a setting into memory: none is
    # proposed (the tuner would refuse it, and the group would count as screened without a
    # measurement)
    tight = dataclasses.replace(space, limit=space.memory(space.defaults) // 4)
    method = AdditiveSearch(tight, "maximize", 4)
    assert method._screen(later, base, untried) is None



def test_a_group_with_nothing_left_to_move_holds_back_no_trial(space):
    """A screening group whose knobs the base all moves can never be screened there: it must
    neither hold a trial of the budget nor keep the attribution to the base's knobs (it did,
    until the end of the budget, in review of 5d5f307). Here one trial moved every knob and
    gained x7: every group is pending, none can move anything, and with 3 trials left the
    next one puts a knob back."""
    roomy = dataclasses.replace(space, limit=2**62)
    method = AdditiveSearch(roomy, "maximize", 6, budget=5)
    everything = dict(space.defaults)
    for moves in method.design[:len(method.design) // 2]:  # the first pass moves every knob
        everything.update(moves)
    trials = [made_trial(roomy, 0, dict(space.defaults), 1.0),
              made_trial(roomy, 1, everything, math.exp(2), index=0)]
    now = method._read(trials, 2)
    assert now.pending and not now.screenable and now.left == 3
    proposal, group = method.propose(trials, 2)
    assert group is None
    assert len(roomy.moved(proposal)) == len(roomy.moved(everything)) - 1
    assert all(proposal[k.name] == everything[k.name] for k in roomy.moved(proposal))


def test_a_failed_setting_is_believed_far_worse(space):
    """A trial whose server failed counts as far worse than the worst: the model learns from it
    (and so never believes it best)."""
    study = optuna.create_study(direction="maximize")
    method = AdditiveSearch(space, "maximize", 3)
    for _ in range(16):
        trial = ask(study, method)
        if trial.params["thread_handling"] == "pool-of-threads":
            trial.set_user_attr("state", "failed")
            study.tell(trial, None, state=TrialState.FAIL)
        else:
            study.tell(trial, math.exp(response(space, space.within(trial.params))))
    assert any(t.state == TrialState.FAIL for t in study.trials)  # the screening tried it
    model = Model(space, *observations(space, study.trials, "maximize"))
    pool_of_threads = {**space.defaults, "thread_handling": "pool-of-threads"}
    assert model.believed(pool_of_threads) < model.believed(space.defaults) - 0.5


def test_attribution_skips_refused_settings_and_retries_interrupted_ones(space):
    """After a screening trial that moved the pool and the sort buffer together gained a lot
    (the other screening trials gained nothing; those that moved either knob were refused), the
    search puts one of them back to tell which did it. A setting refused before start is
    never proposed again (a refused revert used to come back every trial until 50 refusals
    stopped the search); one whose worker died says nothing of it and is proposed again, once."""
    method = AdditiveSearch(space, "maximize", 5)
    group = {**space.defaults, POOL: int(space.defaults[POOL]) * 8, "sort_buffer_size": 65536}

    def trial(number, params, value=None, state="ok", index=None):
        return made_trial(space, number, params, value, state, index)

    screened = [trial(n, {**space.defaults, **moves}, index=i, state="refused")
                if {POOL, "sort_buffer_size"} & set(moves)
                else trial(n, {**space.defaults, **moves}, 1.0, index=i)
                for i, (n, moves) in enumerate(enumerate(method.design, 1))]
    after = len(method.design) + 1
    trials = [trial(0, dict(space.defaults), 1.0), *screened, trial(after, group, math.e)]
    after += 1
    first, _ = method.propose(trials, after)
    reverts = [{**group, POOL: space.defaults[POOL]},
               {**group, "sort_buffer_size": space.defaults["sort_buffer_size"]}]
    assert first in reverts
    refused = trial(after, first, state="refused")
    second, _ = method.propose([*trials, refused], after + 1)
    assert second in reverts and second != first
    # failed by workers.reap: no state of its own
    interrupted = [trial(after + 1 + n, second, state=None) for n in (0, 1)]
    assert method.propose([*trials, refused, interrupted[0]], after + 2)[0] == second
    # but not a third time: a setting that kills its worker must not take every trial
    assert method.propose([*trials, refused, *interrupted], after + 3)[0] != second
