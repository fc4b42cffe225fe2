import dataclasses

from perflab.analysis.tables import absolute_table, percent, relative_table
from perflab.plan import parse_plan
from perflab.store import Metrics, StoredPoint

PLAN = parse_plan("""
[study]
name = "tables"
baseline = "off"
[workload]
name = "oltp_point_select"
[run]
threads = [1, 4, 8]
repeats = 3
[configs.off]
[configs.32]
[configs.64]
""")
METRICS = Metrics(**dict.fromkeys(Metrics.names(), 0))


def point(config, threads, qps, status="ok"):
    metrics = dataclasses.replace(METRICS, qps=qps) if status == "ok" else None
    return StoredPoint(0, "tables", "d", config, "w", threads, 1, status, 1, None, 0.0, 0.0,
                       metrics)


def test_percent_matches_the_key_cache_page():
    assert percent(-0.03) == "-3%"
    assert percent(0.53) == "53%"
    assert percent(1.22) == "122%"
    assert percent(-0.003) == "-0.3%"
    assert percent(-0.0004) == "0%"
    assert percent(None) == "-"


def test_relative_table_uses_median_over_repeats_per_thread_count():
    points = [point("off", 1, q) for q in (100, 90, 110)] + [
        point("off", 4, 200), point("off", 8, 400),
        point("32", 1, 97), point("32", 1, 1000), point("32", 1, 50),  # median 97
        point("32", 4, 306), point("32", 8, 888),
        point("64", 1, 94), point("64", 4, 310), point("64", 8, 920),
    ]
    table = relative_table(PLAN, points)
    assert table.header == ["Threads", "1", "4", "8"]
    assert table.rows == [["(32/off)", "-3%", "53%", "122%"], ["(64/off)", "-6%", "55%", "130%"]]
    text = table.render()
    assert text.splitlines()[0] == "In relative numbers:"
    assert "(32/off)     -3%     53%    122%" in text


def test_failed_points_are_left_out_and_missing_cells_show_a_dash():
    points = [point("off", 1, 100), point("32", 1, 1e9, status="failed"), point("32", 4, 10)]
    table = relative_table(PLAN, points)
    assert table.rows[0] == ["(32/off)", "-", "-", "-"]
    absolute = absolute_table(PLAN, points)
    assert absolute.rows[0] == ["off", "100", "-", "-"]
    assert absolute.rows[1] == ["32", "-", "10", "-"]
