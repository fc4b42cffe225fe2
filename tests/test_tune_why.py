"""Why the winner wins (tune/why.py): the counters' story, from status deltas; no server."""

import pytest

from perflab.tune.why import NOTHING_COUNTED, explain, summed

pytestmark = pytest.mark.fast


def test_a_query_cache_answering_one_repeated_statement_is_said_plainly():
    default = summed([{"Questions": 5000, "Com_select": 5000, "Qcache_hits": 0,
                       "Qcache_inserts": 0, "Key_read_requests": 90000, "Key_reads": 10}] * 2)
    winner = summed([{"Questions": 2000, "Com_select": 998002, "Qcache_hits": 998000,
                      "Qcache_inserts": 1, "Key_read_requests": 36, "Key_reads": 0}] * 2)
    why = explain(default, winner)
    first = why.changes[0]
    assert first.indicator == "query cache hits per SELECT"
    assert (first.default, round(first.winner, 4)) == (0.0, 1.0)
    assert "query cache hits per SELECT: 0 → 1" in why.lines()[0]
    assert "answered 100.0% of the SELECTs" in why.query_cache
    assert "only 2 new statement(s)" in why.query_cache and "varied literals" in why.query_cache


def test_a_key_cache_switched_off_shows_in_its_requests_and_small_moves_are_not_named():
    default = {"Questions": 10000, "Key_read_requests": 180000, "Key_reads": 20,
               "Table_locks_waited": 3, "Rows_read": 250000, "Com_select": 10000}
    winner = {"Questions": 16000, "Key_read_requests": 0, "Key_reads": 0,
              "Table_locks_waited": 4, "Rows_read": 410000, "Com_select": 16000}
    why = explain(default, winner)
    assert [c.indicator for c in why.changes] == [
        "key read requests per statement (the MyISAM key cache's work)"]
    assert why.changes[0].text().endswith("18 → 0")
    assert why.query_cache is None
    assert explain(default, default).lines() == [NOTHING_COUNTED]
    assert "no status counters" in explain({}, winner).lines()[0]  # an older lab's points
