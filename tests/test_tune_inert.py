"""Knobs that cannot act beside the winner's other settings (tune/inert.py), and the one that
alone carries the winner's gain (tune/final.sufficient)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.stats.decide import EQUIVALENT, FASTER, INCONCLUSIVE, SLOWER, Verdict
from perflab.tune.final import sufficient
from perflab.tune.inert import inert_knobs

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

DEFAULTS = {"key_buffer_size": "134217728", "key_cache_segments": "0",
            "key_cache_division_limit": "100", "key_cache_block_size": "1024",
            "thread_handling": "one-thread-per-connection", "thread_pool_stall_limit": "500",
            "query_cache_type": "OFF", "query_cache_size": "1048576",
            "query_cache_limit": "1048576", "table_open_cache": "2000"}


def test_the_issues_winner_keeps_only_the_knob_that_acts():
    """Issue 44's my.cnf: key_buffer_size = 0 with key-cache settings and a thread-pool knob
    under one-thread-per-connection. Only key_buffer_size can act; the others are named with
    why. The same key-cache settings with the cache on all stay in play."""
    winner = {"key_buffer_size": "0", "key_cache_division_limit": "17",
              "key_cache_segments": "59", "thread_pool_stall_limit": "30"}
    inert = inert_knobs(winner, DEFAULTS)
    assert set(inert) == {"key_cache_division_limit", "key_cache_segments",
                          "thread_pool_stall_limit"}
    assert inert["key_cache_segments"] == "the key cache (key_buffer_size = 0) is off"
    assert "pool-of-threads" in inert["thread_pool_stall_limit"]
    cache_on = {**winner, "key_buffer_size": "64M", "thread_handling": "pool-of-threads"}
    assert inert_knobs(cache_on, DEFAULTS) == {}


def test_a_block_smaller_than_myisams_index_block_and_what_the_plan_fixes():
    assert "key_cache_block_size" in inert_knobs({"key_cache_block_size": "566"}, DEFAULTS)
    assert inert_knobs({"key_cache_block_size": "4096"}, DEFAULTS) == {}
    # the query cache is left to measurement: MariaDB turns it on when its size is given
    assert inert_knobs({"query_cache_limit": "2M", "query_cache_size": "64M"}, DEFAULTS) == {}
    # a thread-pool knob, thread_handling not searched: MariaDB's default runs no pool,
    # unless the plan's server section asks for one
    searched = {"thread_pool_stall_limit": "500"}
    assert set(inert_knobs({"thread_pool_stall_limit": "30"}, searched)) == {
        "thread_pool_stall_limit"}
    assert inert_knobs({"thread_pool_stall_limit": "30"}, searched,
                       {"thread_handling": "pool-of-threads"}) == {}
    # the plan itself switches the key cache off: every key-cache setting is inert
    assert set(inert_knobs({"key_cache_segments": "8"}, {"key_cache_segments": "0"},
                           {"key_buffer_size": "0"})) == {"key_cache_segments"}


@given(st.dictionaries(st.sampled_from(sorted(DEFAULTS)),
                       st.sampled_from(["0", "1", "17", "566", "64M", "OFF", "ON",
                                        "pool-of-threads", "one-thread-per-connection"]),
                       min_size=1))
def test_only_moved_knobs_are_inert_and_a_switch_never_is(winner):
    """Whatever the winner moves: only its own knobs can be named, never a knob with no
    component (table_open_cache), and a knob is inert only if its component stays off with
    it at its default, so the knob that switched the component off is kept."""
    inert = inert_knobs(winner, DEFAULTS)
    assert set(inert) <= set(winner) - {"table_open_cache"}
    if winner.get("key_buffer_size") == "0":
        assert "key_buffer_size" not in inert


def verdict(said: str, change: float, low: float, high: float) -> Verdict:
    return Verdict(said, 6, change, low, high, 0.05)


def test_a_knob_that_alone_carries_the_gain_is_the_whole_my_cnf():
    """Issue 44's my.cnf: key_buffer_size = 0 and key_cache_segments = 59 stand in for each
    other (the winner without either costs nothing). Measured alone against the winner, the
    one shown no slower is kept; one only inconclusive, or slower beyond the margin, is not."""
    alone = {"key_buffer_size": verdict(EQUIVALENT, -0.01, -0.04, 0.02),
             "key_cache_segments": verdict(SLOWER, -0.08, -0.12, -0.04),
             "key_cache_division_limit": verdict(INCONCLUSIVE, 0.01, -0.2, 0.25)}
    assert sufficient(alone, 0.05, 0.5) == "key_buffer_size"
    del alone["key_buffer_size"]
    assert sufficient(alone, 0.05, 0.5) is None
    # a real loss smaller than the margin still carries the gain, as does a faster one: the best
    alone["key_cache_segments"] = verdict(SLOWER, -0.02, -0.04, -0.005)
    alone["key_buffer_size"] = verdict(FASTER, 0.03, 0.01, 0.05)
    assert sufficient(alone, 0.05, 0.5) == "key_buffer_size"
    del alone["key_buffer_size"]
    assert sufficient(alone, 0.05, 0.5) == "key_cache_segments"
    # a winner that barely gained: a knob alone no slower than it may carry nothing
    assert sufficient({"key_buffer_size": verdict(EQUIVALENT, -0.01, -0.04, 0.02)}, 0.05,
                      0.02) is None
