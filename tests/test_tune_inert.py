"""Knobs that cannot act beside the winner's other settings (tune/inert.py)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
