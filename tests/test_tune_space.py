"""The knob space for the data at hand (tune/space.py), on a recorded MariaDB 10.11 catalog: no
server, milliseconds."""

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import TUNE_PLAN
from perflab.errors import PerflabError
from perflab.server.variables import Catalog, parse_integer
from perflab.tune.additive import screening
from perflab.tune.result import moved
from perflab.tune.space import (
    ZERO_BAND,
    ZERO_OFF,
    Knob,
    Space,
    engine_of,
    knob_space,
    setting_key,
    startup_values,
    uncurated_range,
)

pytestmark = pytest.mark.fast

CATALOG = Catalog.from_json(json.loads(
    (Path(__file__).parent / "data" / "tune_catalog.json").read_text()))


def names(engines=None, said=None, **kwargs) -> set[str]:
    return {k.name for k in knob_space(CATALOG, engines=engines, say=said, **kwargs)}


def test_knobs_of_engines_without_tables_are_left_out_and_said():
    said: list[str] = []
    order = [k.name for k in knob_space(CATALOG, engines={"MyISAM"})]
    assert order[:5] == ["key_buffer_size", "key_cache_segments", "key_cache_division_limit",
                         "key_cache_age_threshold", "key_cache_block_size"]  # theirs first
    myisam = names({"MyISAM"}, said.append)
    assert not any(n.startswith(("innodb_", "aria_")) for n in myisam)
    assert {"key_buffer_size", "key_cache_segments", "key_cache_division_limit",
            "key_cache_age_threshold", "key_cache_block_size"} <= myisam
    assert {"table_open_cache", "query_cache_size", "sort_buffer_size"} <= myisam  # the server's
    assert len(said) == 1 and "InnoDB (" in said[0] and "innodb_buffer_pool_size" in said[0]
    assert "Aria (1: aria_pagecache_buffer_size)" in said[0] and "--knobs" in said[0]
    innodb = names({"InnoDB"})
    assert "innodb_buffer_pool_size" in innodb
    assert not {"key_buffer_size", "key_cache_segments"} & innodb
    # named knobs are searched whatever their engine; an unknown engine set keeps everything
    assert names({"MyISAM"}, names=["innodb_buffer_pool_size"]) == {"innodb_buffer_pool_size"}
    assert {"innodb_buffer_pool_size", "key_cache_segments"} <= names(None)


def test_the_thread_pools_knobs_come_with_pool_of_threads():
    every = names({"InnoDB"})
    assert {"thread_handling", "thread_pool_size", "thread_pool_stall_limit"} <= every
    without = names({"InnoDB"}, exclude=["thread_handling"])
    assert not {"thread_handling", "thread_pool_size", "thread_pool_stall_limit"} & without


def test_excluded_knobs_are_left_out_and_a_misspelt_one_is_an_error():
    kept = names({"MyISAM"}, exclude=["query_cache_type", "query_cache_size"])
    assert not {"query_cache_type", "query_cache_size"} & kept and "key_buffer_size" in kept
    with pytest.raises(PerflabError, match="unknown server variable"):
        names({"MyISAM"}, exclude=["query_cache_sise"])
    with pytest.raises(PerflabError, match="names the knobs to search exactly"):
        names({"MyISAM"}, names=["key_buffer_size"], exclude=["query_cache_size"])


def test_key_buffer_size_0_switches_the_key_cache_off():
    (knob,) = knob_space(CATALOG, ["key_buffer_size"])
    assert knob.zero_off and knob.low == 8 << 20 and knob.log
    assert "0 (off)" in knob.describe()
    assert knob.value_at(0.0) == 0 and knob.value_at(ZERO_BAND / 2) == 0
    assert knob.value_at(ZERO_BAND) == knob.low and knob.value_at(1.0) == knob.high
    assert knob.position(0) == 0.0 and knob.position(knob.low) == pytest.approx(ZERO_BAND)
    assert knob.within(0, None) == 0 and knob.within(1 << 20, None) == knob.low
    for value in (knob.low, 128 << 20, knob.high):  # positions and values agree
        assert knob.value_at(knob.position(value)) == pytest.approx(value, rel=1e-6)


@pytest.mark.parametrize("kind", ["random", "tpe", "qmc"])
def test_every_optuna_sampler_measures_every_knob_off(kind):
    """Issue 44: Optuna's samplers drew key_buffer_size linearly over 0..1 GiB and the tuner
    clamped a draw under 8 MiB to 8 MiB, so tpe, qmc and random never measured "off"; a linear
    0..1024 thread_cache_size gave 0 once in 1,025 draws. Now each zero-off knob's drawn range
    reaches ZERO_BAND of the log scale below its own, and a draw there is 0."""
    import optuna

    from perflab.tune.methods import OptunaSampling, Sampler

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    knobs = knob_space(CATALOG, sorted(ZERO_OFF))
    assert all(knob.zero_off for knob in knobs) and len(knobs) == len(ZERO_OFF)
    space = Space(tuple(knobs), startup_values(knobs, CATALOG), lambda _: 0, 1)
    method = OptunaSampling(space, "maximize", seed=3, budget=30, kind=Sampler(kind))
    study = optuna.create_study(direction="maximize", sampler=method.sampler(0))
    measured: dict[str, list[int]] = {knob.name: [] for knob in knobs}
    for started in range(30):
        study.sampler = method.sampler(started)
        trial = study.ask(space.distributions())
        setting = space.within(trial.params)
        for name, values in measured.items():
            values.append(int(setting[name]))
        study.tell(trial, 2.0 if setting["key_buffer_size"] == 0 else 1.0)
    for knob in knobs:
        values = measured[knob.name]
        assert 0 in values, knob.name
        assert all(v == 0 or knob.low <= v <= knob.high for v in values), knob.name
        assert any(v >= knob.low for v in values), knob.name


@given(st.sampled_from(sorted(ZERO_OFF)), st.floats(0.0, 1.0))
def test_a_zero_off_knobs_draws_stand_for_its_settings_and_back(name, position):
    (knob,) = knob_space(CATALOG, [name])
    setting = knob.value_at(position)
    draw = knob.to_draw(setting)
    assert knob.drawn_low <= draw <= knob.high  # inside what the samplers draw
    assert knob.drawn(draw, None) == setting
    # the band below the range is ZERO_BAND of the drawn log scale, as it is of the positions
    # (within a whole number's rounding, for a range that starts at 2 or 8)
    low, high, drawn_low = (math.log(v) for v in (knob.low, knob.high, knob.drawn_low))
    assert (low - drawn_low) / (high - drawn_low) == pytest.approx(ZERO_BAND, abs=0.02)


def test_screening_moves_the_engines_knobs_first_and_switches_the_key_cache_off():
    knobs = knob_space(CATALOG, engines={"MyISAM"},
                       exclude=["query_cache_type", "query_cache_size"])
    space = Space(tuple(knobs), startup_values(knobs, CATALOG), lambda _: 0, 1)
    for seed in range(5):
        groups = screening(space, seed)
        engine_knobs = sum(engine_of(k.name) is not None for k in knobs)
        first = [name for group in groups[:2] for name in group][:engine_knobs]
        assert all(engine_of(name) == "MyISAM" for name in first)
        # the default 128 MiB sits high in the range: its first move is to the low side, off
        first_move = next(g["key_buffer_size"] for g in groups if "key_buffer_size" in g)
        assert first_move == 0


@given(st.integers(1, 40), st.integers(0, 3))
def test_a_budget_that_ends_the_screening_before_its_second_pass_is_said(budget, seed):
    """The screening moves each knob one way in its first pass and the other way in its second
    (a larger sort buffer, whose default sits high in its range, comes in the second): a
    budget that ends before both passes is warned of, naming the budget that covers them."""
    from perflab.tune.additive import PASSES, AdditiveSearch

    knobs = knob_space(CATALOG, engines={"InnoDB"})
    space = Space(tuple(knobs), startup_values(knobs, CATALOG), lambda _: 0, 1)
    method = AdditiveSearch(space, "maximize", seed, budget)
    said, needed = method.describe(), 1 + len(method.design)
    assert len(method.design) % PASSES == 0 and len(method.design) >= PASSES
    assert ("warning" in said) == (budget < needed)
    if budget < needed:
        assert f"a budget of {needed} or more screens both ways" in said
    assert "warning" not in AdditiveSearch(space, "maximize", seed).describe()  # no budget


def test_a_study_drawn_on_another_scale_is_named_before_it_is_resumed():
    """A tune study made by an earlier perflab searched key_buffer_size on a log scale; Optuna
    refuses to mix scales, so resuming it is refused first, naming the knob."""
    import optuna
    from optuna.distributions import CategoricalDistribution, IntDistribution

    from perflab.tune.search import space_changed

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    trial = study.ask({"key_buffer_size": IntDistribution(8 << 20, 1 << 30, log=True),
                       "query_cache_type": CategoricalDistribution(["OFF", "ON"])})
    study.tell(trial, 1.0)
    now = {"key_buffer_size": IntDistribution(0, 1 << 30),
           "query_cache_type": CategoricalDistribution(["OFF", "ON"])}
    assert space_changed(study, now) == "key_buffer_size"
    now["key_buffer_size"] = IntDistribution(1 << 20, 2 << 30, log=True)  # a wider range: fine
    assert space_changed(study, now) is None
    now["query_cache_type"] = CategoricalDistribution(["OFF", "ON", "DEMAND"])
    assert space_changed(study, now) == "query_cache_type"


def test_two_limits_that_act_only_together_are_searched_as_one():
    """tmp_table_size and max_heap_table_size: the smaller is the in-memory limit of a
    temporary table. One knob is searched, and its value sets both; named alone, each is its
    own knob, and the tuner says what the other one bounds."""
    knobs = {k.name: k for k in knob_space(CATALOG, engines={"InnoDB"})}
    assert "max_heap_table_size" not in knobs
    leader = knobs["tmp_table_size"]
    assert leader.followers == ("max_heap_table_size",)
    assert "max_heap_table_size with it" in leader.describe()
    space = Space(tuple(knobs.values()), startup_values(list(knobs.values()), CATALOG),
                  lambda _: 0, 1)
    setting = space.within({"tmp_table_size": 64 << 20, "sort_buffer_size": 1 << 20})
    assert setting["max_heap_table_size"] == setting["tmp_table_size"] == 64 << 20
    assert "max_heap_table_size" not in space.complete(setting)  # not a knob of the models
    said: list[str] = []
    alone = {k.name: k for k in knob_space(CATALOG, ["max_heap_table_size"], say=said.append)}
    assert alone["max_heap_table_size"].followers == ()
    assert len(said) == 1 and said[0].startswith("max_heap_table_size is searched alone")
    assert "search tmp_table_size too" in said[0]
    said.clear()
    both = knob_space(CATALOG, ["tmp-table-size", "max_heap_table_size"], say=said.append)
    assert [k.followers for k in both] == [("max_heap_table_size",)] and not said
    # the curated set with one of the two excluded: the other is searched alone, and said so
    left = {k.name: k for k in knob_space(CATALOG, engines={"InnoDB"}, say=said.append,
                                          exclude=["tmp_table_size"])}
    assert left["max_heap_table_size"].followers == ()
    alone_notes = [line for line in said if "searched alone" in line]
    assert len(alone_notes) == 1 and alone_notes[0].startswith("max_heap_table_size is")
    said.clear()
    knob_space(CATALOG, engines={"InnoDB"}, say=said.append)
    assert not [line for line in said if "searched alone" in line]  # the two as one


def test_the_thread_pool_knobs_come_with_a_baseline_that_runs_the_pool():
    """thread_pool_size and thread_pool_stall_limit act only under pool-of-threads: searched
    when thread_handling may take it, or when it is not searched and the baseline runs it;
    left out, and said, when no trial runs the pool. A pair's other half left out is named at
    the baseline's value when it sets one."""
    pool = {"thread_pool_size", "thread_pool_stall_limit"}
    assert pool <= names(engines={"InnoDB"})  # with thread_handling, pool-of-threads a choice
    said: list[str] = []
    assert not pool & names({"InnoDB"}, said.append, exclude=["thread_handling"])
    assert any("thread_pool_size (only with thread_handling = pool-of-threads)" in line
               for line in said)
    said.clear()
    runs_pool = {"Thread-Handling": "pool-of-threads", "max_heap_table_size": "1G"}
    assert pool <= names({"InnoDB"}, said.append, fixed=runs_pool,
                         exclude=["thread_handling", "max_heap_table_size"])
    assert not [line for line in said if "no trial runs" in line]
    assert [line for line in said if "searched alone" in line] == [
        "tmp_table_size is searched alone: max_heap_table_size, left at the baseline's 1G, "
        "bounds it (the smaller of the two is the limit); search max_heap_table_size too (name "
        "it in tune.knobs, or do not exclude it) to search them as one knob"]


def test_knobs_are_named_as_a_my_cnf_or_the_command_line_spells_them():
    """Dashes, capitals and spaces as in a my.cnf; a name given twice is one knob."""
    named = [k.name for k in knob_space(CATALOG, ["Key-Buffer-Size", "key_buffer_size",
                                                  " table_open_cache "])]
    assert named == ["key_buffer_size", "table_open_cache"]
    assert "query_cache_type" not in names({"MyISAM"}, exclude=["Query-Cache-Type"])


FEW_CHOICES = ["query_cache_type", "innodb_adaptive_hash_index", "thread_handling"]


@settings(max_examples=12, deadline=None)
@given(st.lists(st.sampled_from(FEW_CHOICES), min_size=1, max_size=2, unique=True),
       st.integers(0, 99))
def test_the_additive_search_measures_a_small_space_once_then_stops(chosen, seed):
    """Knobs of a few choices each: the default method never measures a setting twice, and
    once nothing untried is left near its best it stops and says why, instead of spending
    the rest of the budget on settings already measured."""
    import optuna

    from perflab.tune.additive import AdditiveSearch
    from perflab.tune.methods import Step

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    knobs = knob_space(CATALOG, chosen)
    space = Space(tuple(knobs), startup_values(knobs, CATALOG), lambda _: 0, 1)
    every = math.prod(len(k.choices) for k in knobs)
    study = optuna.create_study(direction="maximize")
    method = AdditiveSearch(space, "maximize", seed)
    noise, seen = random.Random(seed), []
    for _ in range(every + 2):
        trials = study.get_trials(deepcopy=False)
        proposal = method.next(trials, len(trials))
        if proposal.step is Step.DONE:
            break
        study.enqueue_trial(space.draws(proposal.params), user_attrs=proposal.attrs)
        trial = study.ask(space.distributions())
        seen.append(setting_key(space.complete(trial.params)))
        study.tell(trial, math.exp(noise.gauss(0, 0.05)))
    assert proposal.step is Step.DONE and "no untried setting" in proposal.reason
    assert len(seen) == len(set(seen)) <= every


PLAN = TUNE_PLAN.format(name="resumed", knobs='["table_open_cache"]', extra="")


@pytest.mark.parametrize("edit", [('"oltp_point_select"', '"oltp_read_only"'),
                                  ("threads = [2]", "threads = [2, 8]"),
                                  ("rows = 5000", "rows = 6000"),
                                  ("[configs.default]", "[configs.default]\nsort_buffer_size = 1")])
def test_a_study_whose_figures_meant_something_else_is_not_resumed(edit, tmp_path):
    """A study's trial figures are ratios to one reference on one workload, under one
    objective: resumed under another objective (Optuna would rank them the other way round),
    workload, dataset, thread counts or reference, it is refused, naming what changed; the same
    plan resumes, and so does one with another schedule (the study keeps its own)."""
    import optuna

    from perflab.plan import parse_plan
    from perflab.tune.search import check_same_figures

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    plan = parse_plan(PLAN)
    storage = f"sqlite:///{tmp_path / 'studies.db'}"  # what it records, as stored
    check_same_figures(optuna.create_study(storage=storage, study_name="s"), plan,
                       plan.config("default"), "throughput")
    study = optuna.load_study(storage=storage, study_name="s")
    check_same_figures(study, plan, plan.config("default"), "throughput")  # the same: goes on
    serial = parse_plan(PLAN.replace("run_seconds = 1", 'run_seconds = 1\nschedule = "serial"'))
    check_same_figures(study, serial, serial.config("default"), "throughput")
    with pytest.raises(PerflabError, match="another objective than this plan") as refused:
        check_same_figures(study, plan, plan.config("default"), "p95")
    assert "another study.name" in refused.value.hint
    other = parse_plan(PLAN.replace(*edit))
    with pytest.raises(PerflabError, match="cannot be resumed under it"):
        check_same_figures(study, other, other.config("default"), "throughput")
    # a latency study begun before figures were recorded, over several thread counts: its
    # trials were scored by an arithmetic mean, which the geometric one does not continue
    several = parse_plan(PLAN.replace("threads = [2]", "threads = [2, 8]"))
    older = optuna.create_study()
    older.tell(older.ask(), 1.0)
    with pytest.raises(PerflabError, match="arithmetic mean"):
        check_same_figures(older, several, several.config("default"), "p95")
    check_same_figures(older, several, several.config("default"), "throughput")


@given(st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1))
def test_a_study_searched_with_another_seed_is_not_resumed_as_this_ones(first, second):
    """The seed chooses a search's design: a second seed's tune in the same lab would resume the
    first one's trials and print its answer, having measured nothing. It is refused, naming the
    seed that resumes it; the same seed goes on."""
    import optuna

    from perflab.tune.search import check_same_seed

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name="s")
    check_same_seed(study, first)  # a new study records its seed
    check_same_seed(study, first)
    if second == first:
        return
    with pytest.raises(PerflabError, match=f"seed {first}, not {second}") as refused:
        check_same_seed(study, second)
    assert refused.value.option == "seed" and f"seed {first} resumes it" in refused.value.hint


def test_tuning_data_on_a_server_perflab_did_not_start_is_refused_with_what_to_do():
    """tune starts a server of its own for every trial: a plan over an existing schema is
    refused before anything starts, and the hint names what tune and run can do instead."""
    from perflab.plan import parse_plan
    from perflab.tune.search import Tuner, TuneSettings

    plan = parse_plan(PLAN.replace('rows = 5000', 'existing = "shop"'))
    with pytest.raises(PerflabError, match="dataset.existing = 'shop'") as refused:
        Tuner(plan, None, TuneSettings(), "bayes", budget=2)  # type: ignore[arg-type]
    assert "perflab run --socket or --host" in refused.value.hint


def test_a_named_knob_without_a_curated_range_is_searched_over_its_useful_decades():
    """binlog_cache_size goes to 2^64 on the server: named, it is searched on a log scale up to
    256 times its startup value (it was refused). A startup of 0 (off, or unlimited) gives no
    scale: a log scale to 2^32 whose lowest band is 0, the default among the settings; a
    negative one (auto) the server's range, linear, to 2^32."""
    (knob,) = knob_space(CATALOG, ["binlog_cache_size"])
    assert (knob.low, knob.high, knob.log, knob.zero_off) == (4096, 32768 * 256, True, False)
    assert uncurated_range(0, (1 << 64) - 1, 0) == (27, 1 << 32, True, True)
    assert uncurated_range(1, (1 << 64) - 1, 0) == (27, 1 << 32, True, True)  # 0: auto
    assert uncurated_range(-1, (1 << 31) - 1, -1) == (-1, (1 << 31) - 1, False, False)


@given(st.integers(-1, 1 << 40), st.integers(1001, 1 << 64), st.data())
def test_an_uncurated_knob_keeps_its_startup_value_within_the_servers_range(low, span, data):
    """Whatever the server's range and startup value: the range searched lies within the
    server's, and the startup value (the defaults every trial is measured against) is one of
    its settings: inside it, or the zero band's 0."""
    high = max(low, 1) * span
    startup = data.draw(st.one_of(st.none(), st.just("OFF"),
                                  st.integers(low, min(high, 1 << 70)).map(str)))
    start = None if startup is None else parse_integer(startup)  # as the knob reads it
    lo, hi, log, zero = uncurated_range(low, high, start)
    assert max(low, 1) <= lo < hi <= high if log else low == lo < hi <= high
    if start is not None:
        knob = Knob("k", "int", lo, hi, log, zero_off=zero)
        assert knob.within(start, None) == start


def test_a_choice_that_trades_durability_is_left_out_unless_allowed():
    """delay_key_write = ALL leaves every MyISAM table's index blocks unflushed after writes
    (a crash leaves them to repair): not searched unless unsafe knobs are allowed."""
    data = json.loads((Path(__file__).parent / "data" / "tune_catalog.json").read_text())
    data["variables"]["delay_key_write"] = {
        "name": "delay_key_write", "type": "ENUM", "values": ["OFF", "ON", "ALL"],
        "default": "ON", "startup_value": "ON", "scope": "GLOBAL", "read_only": False,
        "command_line": "OPTIONAL", "minimum": None, "maximum": None, "block_size": None}
    catalog = Catalog.from_json(data)
    (knob,) = knob_space(catalog, ["delay_key_write"])
    assert knob.choices == ("OFF", "ON")
    (unsafe,) = knob_space(catalog, ["delay_key_write"], allow_unsafe=True)
    assert unsafe.choices == ("OFF", "ON", "ALL")


@given(st.decimals(0, 1000, places=3), st.decimals(0, 1000, places=3), st.data())
def test_a_decimal_is_searched_on_its_whole_numbers_and_left_unset_at_its_startup(low, span,
                                                                                  data):
    """A plan may name a DOUBLE (innodb_max_dirty_pages_pct, 0 to 99.999, starting at 90; it
    was refused as a fraction). Whatever its range and startup value: it is searched on the
    whole numbers of its range, its startup value (as the server prints it: "90.000000") one
    of them and left unset, never given as "90" beside the server's "90.000000"; or it is
    refused with the reason (fewer than 10 whole numbers, a startup between two), no
    traceback."""
    high = low + span
    startup = data.draw(st.decimals(low, high, places=3))
    data_ = json.loads((Path(__file__).parent / "data" / "tune_catalog.json").read_text())
    data_["variables"]["d"] = {
        "name": "d", "type": "DOUBLE", "values": [], "default": f"{startup:.6f}",
        "startup_value": f"{startup:.6f}", "scope": "GLOBAL", "read_only": False,
        "command_line": "REQUIRED", "minimum": str(low), "maximum": str(high),
        "block_size": None}
    catalog = Catalog.from_json(data_)
    try:
        (knob,) = knob_space(catalog, ["d"])
    except PerflabError as refused:
        assert "remove d" in refused.hint and "whole numbers" in refused.message
        assert math.floor(high) - math.ceil(low) < 10 or startup != int(startup)
        return
    assert knob.kind == "int" and low <= knob.low < knob.high <= high
    start = startup_values([knob], catalog)["d"]
    assert start == startup and knob.within(start, None) == start
    printed = {"d": catalog.variables["d"].startup_value}
    assert moved({"d": start}, printed) == {}
    other = knob.high if start != knob.high else knob.low
    assert moved({"d": other}, printed) == {"d": str(other)}


@pytest.mark.parametrize(("name", "startup", "why"), [
    ("sql_select_limit", str((1 << 64) - 1), "no limit"),
    ("insert_id", None, "no global value")])
def test_a_limit_left_off_or_a_sessions_own_value_is_not_a_knob(name, startup, why):
    """Named, a limit whose startup is its type's maximum (lower, statements fail or return
    less) or a variable with no global value is refused with the reason, not a traceback."""
    data = json.loads((Path(__file__).parent / "data" / "tune_catalog.json").read_text())
    data["variables"][name] = {
        "name": name, "type": "BIGINT UNSIGNED", "values": [], "default": startup,
        "startup_value": startup, "scope": "SESSION", "read_only": False,
        "command_line": "REQUIRED", "minimum": "0", "maximum": str((1 << 64) - 1),
        "block_size": "1"}
    with pytest.raises(PerflabError, match=why) as refused:
        knob_space(Catalog.from_json(data), [name])
    assert f"remove {name}" in refused.value.hint


def test_a_curated_knob_whose_catalog_lists_no_choices_is_left_out_and_named_is_refused():
    """MySQL's catalog gives innodb_flush_method as a VARCHAR, with no choices: the curated
    space leaves it out (a tune on MySQL goes on); named, it is refused with the reason."""
    data = json.loads((Path(__file__).parent / "data" / "tune_catalog.json").read_text())
    data["variables"]["innodb_flush_method"].update(type="VARCHAR", values=[])
    catalog = Catalog.from_json(data)
    assert "innodb_flush_method" not in [k.name for k in knob_space(catalog)]
    assert "innodb_buffer_pool_size" in [k.name for k in knob_space(catalog)]
    with pytest.raises(PerflabError, match="VARCHAR") as refused:
        knob_space(catalog, ["innodb_flush_method"])
    assert "remove innodb_flush_method" in refused.value.hint


@given(st.lists(st.tuples(st.from_regex(r"[a-z][a-z0-9]{0,6}(-[a-z0-9]{1,6}){0,3}", fullmatch=True),
                          st.sampled_from(["=name", "[=#]", ""]), st.booleans()),
                min_size=1, max_size=12, unique_by=lambda option: option[0]))
def test_the_options_a_server_takes_at_start_are_read_from_its_help(options):
    """`mariadbd --verbose --help` lists each option (some with a short form, `-C,`), how it
    takes its value, then a table of values whose lines are not options: each listed option is
    found, as a variable name, with its kind of argument, and nothing from the table."""
    from perflab.server.variables import start_options_of

    lines = ["Usage: mariadbd [OPTIONS]", ""]
    for name, argument, short in options:
        lines.append(f"  {'-X, ' if short else ''}--{name}{argument}  Some help text, --not-this")
        lines.append("                      continued help --nor-this=1")
    lines += ["", "Variables (--variable-name=value)",
              "and boolean options {FALSE|TRUE}  Value (after reading options)",
              "  --in-the-table=1", "character-set-server  latin1"]
    found = start_options_of("\n".join(lines))
    kinds = {"=name": "REQUIRED", "[=#]": "OPTIONAL", "": "NONE"}
    assert found == {name.replace("-", "_"): kinds[argument] for name, argument, _ in options
                     if name != "version"}  # --version prints the version: not a setting
    assert "version" not in start_options_of("  -V, --version[=name] \n")


@given(st.lists(st.sampled_from(["glibc", "jemalloc", "tcmalloc"]), min_size=1, max_size=3,
                unique=True),
       st.lists(st.from_regex(r"c[a-z0-9]{0,5}", fullmatch=True), min_size=0, max_size=4,
                unique=True))
def test_tune_says_which_configurations_of_the_plan_it_leaves_aside(allocators, names):
    """tune searches over the baseline alone: a plan with other configurations or axes hears
    which are not measured, and one with the baseline alone hears nothing."""
    from perflab.plan import parse_plan
    from perflab.tune.search import say_set_aside

    configs = "".join(f"[configs.{name}]\ntable_open_cache = {400 + i}\n"
                      for i, name in enumerate(names))
    plan = parse_plan(f"""
[study]
name = "s"
[workload]
name = "oltp_point_select"
[run]
threads = [2]
[axes]
allocator = {allocators}
[configs.base]
{configs}""")
    said: list[str] = []
    say_set_aside(plan, said.append)
    others = [c.name for c in plan.configs if c.name != plan.baseline]
    assert len(others) == len(plan.configs) - 1 == len(allocators) * (len(names) + 1) - 1
    assert bool(said) == bool(others)
    if said:
        assert f"baseline {plan.baseline} alone" in said[0] and others[0] in said[0]


def test_a_boolean_whose_start_option_takes_a_name_is_not_given_at_start():
    """`--log-bin[=name]` names the binary log: `--log_bin=OFF` would switch it on, named OFF.
    A boolean variable is given at start only when its option is a flag."""
    from perflab.server.variables import _start_option

    options = {"log_bin": "OPTIONAL", "autocommit": "NONE", "collation_server": "REQUIRED"}
    assert _start_option("log_bin", "BOOLEAN", options) is None
    assert _start_option("autocommit", "BOOLEAN", options) == "NONE"
    assert _start_option("collation_server", "ENUM", options) == "REQUIRED"
    assert _start_option("hostname", "VARCHAR", options) is None
