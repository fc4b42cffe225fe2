"""The knob space for the data at hand (tune/space.py), on a recorded MariaDB 10.11 catalog: no
server, milliseconds."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.errors import PerflabError
from perflab.server.variables import Catalog
from perflab.tune.additive import screening
from perflab.tune.space import (
    ZERO_BAND,
    ZERO_OFF,
    Space,
    engine_of,
    knob_space,
    startup_values,
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
    own knob."""
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
    alone = {k.name: k for k in knob_space(CATALOG, ["max_heap_table_size"])}
    assert alone["max_heap_table_size"].followers == ()
