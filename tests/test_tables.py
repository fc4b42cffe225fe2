import dataclasses

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.analysis.tables import absolute_table, percent, relative_table
from perflab.analysis.verdicts import judge
from perflab.plan import parse_plan
from perflab.store import Metrics, StoredPoint

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

PLAN = parse_plan("""
[study]
name = "tables"
baseline = "off"
[workload]
name = "oltp_point_select"
[run]
threads = [1, 4, 8]
rounds = 3
[configs.off]
[configs.32]
[configs.64]
""")
METRICS = Metrics(**dict.fromkeys(Metrics.names(), 0))


def point(config, threads, qps, status="ok", repeat=1):
    metrics = dataclasses.replace(METRICS, qps=qps) if status == "ok" else None
    return StoredPoint(0, "tables", "d", config, "w", threads, repeat, status, 1, None, 0.0,
                       0.0, metrics)


def test_percent_matches_the_key_cache_page():
    assert percent(-0.03) == "-3%"
    assert percent(0.53) == "53%"
    assert percent(1.22) == "122%"
    assert percent(-0.003) == "-0.3%"
    assert percent(-0.0004) == "0%"
    assert percent(None) == "-"


def test_relative_table_shows_the_paired_change_per_thread_count():
    """Each round pairs a configuration with the baseline measured beside it: the table shows
    the geometric mean of those ratios, the estimate the verdicts rest on, in the page's
    format, whatever the machine's speed did between rounds."""
    ratios = {("32", 1): 0.97, ("32", 4): 1.53, ("32", 8): 2.22,
              ("64", 1): 0.94, ("64", 4): 1.55, ("64", 8): 2.30}
    points = []
    for repeat, speed in enumerate((100.0, 70.0, 130.0), 1):  # a drifting machine
        for threads in (1, 4, 8):
            base = speed * threads
            points.append(point("off", threads, base, repeat=repeat))
            for config in ("32", "64"):
                points.append(point(config, threads, base * ratios[(config, threads)],
                                    repeat=repeat))
    table = relative_table(PLAN, judge(PLAN, points, PLAN.run.design()))
    assert table.header == ["Threads", "1", "4", "8"]
    assert table.rows == [["(32/off)", "-3%", "53%", "122%"], ["(64/off)", "-6%", "55%", "130%"]]
    text = table.render()
    assert text.splitlines()[0] == "In relative numbers:"
    assert "(32/off)     -3%     53%    122%" in text


def test_failed_points_are_left_out_and_missing_cells_show_a_dash():
    points = [point("off", 1, 100), point("32", 1, 1e9, status="failed"), point("32", 4, 10)]
    table = relative_table(PLAN, judge(PLAN, points, PLAN.run.design()))
    assert table.rows[0] == ["(32/off)", "-", "-", "-"]
    absolute = absolute_table(PLAN, points)
    assert absolute.rows[0] == ["off", "100", "-", "-"]
    assert absolute.rows[1] == ["32", "-", "10", "-"]


def test_a_server_working_in_the_others_turns_is_flagged_against_the_least_at_its_threads():
    """A fleet server that spent 12% of its CPU time in the other servers' turns, where the
    baseline spent 2% in the same turns, leans the ratio toward itself: flagged. 4% against 2%
    is within the flag's 3 points; a share compared with its own round's
    least, not with another round's (fewer servers take turns once comparisons are decided,
    and each share falls with them); points without the probe (serial, older labs) are never
    flagged."""
    from perflab.analysis.quality import off_turn_flags
    from perflab.report.flags import flag_text

    def shared(config, threads, share, repeat):
        p = point(config, threads, 1000.0, repeat=repeat)
        return dataclasses.replace(p, metrics=dataclasses.replace(p.metrics,
                                                                   off_turn_cpu=share))

    points = [shared(c, t, share, r) for r in (1, 2, 3)
              for c, t, share in (("base", 8, 0.02), ("bg", 8, 0.12), ("base", 32, 0.02),
                                  ("bg", 32, 0.04), ("old", 32, None))]
    # rounds 4-6 at 64 threads: three servers, then two; "late" measured only with three
    points += [shared(c, 64, share, r) for r, c, share in (
        (1, "base", 0.06), (1, "late", 0.07), (1, "early", 0.06),
        (2, "base", 0.05), (2, "late", 0.06), (2, "early", 0.05),
        (3, "base", 0.06), (3, "late", 0.07), (3, "early", 0.06),
        (4, "base", 0.02), (4, "late", 0.03), (5, "base", 0.02), (5, "late", 0.03))]
    found = [flag_text(f) for f in off_turn_flags(points)]
    assert len(found) == 1
    assert found[0].startswith("bg at 8 threads: 12% of its server's CPU time fell in the "
                               "other servers' turns, 10 points more than the least in the "
                               "same turns")


def test_a_flag_says_which_outliers_the_trimmed_mean_leaves_out():
    """Twenty rounds of a comparison with two far out: one flag for both, which the trimmed
    mean sets aside; with a third as far on the same side, more than it trims there, the flag
    says it keeps one."""
    from perflab.analysis.quality import ratio_outlier_flags
    from perflab.report.flags import flag_text

    def rounds_of(ratios):
        return [point(config, 4, qps, repeat=number) for number, ratio in enumerate(ratios, 1)
                for config, qps in (("base", 1000.0), ("new", 1000.0 * ratio))]

    tight = [1.0 + 0.002 * (i % 5) for i in range(18)]
    (found,) = ratio_outlier_flags(rounds_of([*tight, 1.4, 0.6]), "base", 0.05)
    assert [number for number, _ in found.far] == [19, 20]  # a value: its words are the report's
    assert found.left_out == 2 and found.trimmed > 0 and found.rounds == 20
    flag = flag_text(found)
    assert "round(s) 19 (+40%), 20 (-40%) are outliers" in flag
    assert "trimmed mean leaves them out" in flag
    (flag,) = map(flag_text, ratio_outlier_flags(
        rounds_of([*tight[:15], 1.4, 1.5, 1.6, 1.7, 1.8, 0.6]), "base", 0.05))
    assert "leaves out 5 of them" in flag


def test_flags_are_where_the_verdicts_are_made_paired_by_round():
    """Issue 43: the demo's report carried 17 flags a reader could not weigh. Side by side,
    a machine that slows down for a round moves every configuration alike: no outlier of theirs,
    and a drift both share is no flag; a round whose ratio stands apart is one, and every
    server's first point after its warm-up is its own."""
    from perflab.analysis import quality
    from perflab.report.flags import flag_text
    from perflab.store.records import Sample

    def flags(*args, **kwargs):
        return [flag_text(flag) for flag in quality.flags(*args, **kwargs)]

    def with_series(p, state, start, slope):
        series = [Sample(t=i / 4, tps=0, qps=p.metrics.qps * (1 + slope * i / 8), reads_ps=0,
                         writes_ps=0, other_ps=0, errors_ps=0, reconnects_ps=0,
                         latency_p95_ms=1.0, threads=4) for i in range(8)]
        return dataclasses.replace(p, server_state_id=state, started_at=start, series=series)

    points = []
    for repeat, speed in enumerate((100.0, 100.0, 40.0, 100.0, 100.0, 100.0), 1):
        ratio = 1.5 if repeat == 5 else 1.1  # round 5: the ratio stands apart
        for n, (config, qps) in enumerate((("base", speed), ("new", speed * ratio))):
            p = point(config, 4, qps, repeat=repeat)
            # interleaved servers, a new state each round; every point drifts +40% alike
            points.append(with_series(p, repeat * 10 + n, repeat * 10.0 + n * 0.25, 0.4))
    found = flags(points, cv_threshold=1.0, baseline="base")
    outliers = [f for f in found if "outlier" in f]
    assert len(outliers) == 1 and "round(s) 5 (+50%) are outliers" in outliers[0]
    assert "the verdict's mean includes them" in outliers[0]  # 6 rounds: a mean, untrimmed
    assert not any("round's value" in f for f in found)  # the slow round 3 is no outlier
    assert not any("drifts" in f for f in found)  # a rise both share: their ratio holds
    alone = flags(points, cv_threshold=1.0)  # without a baseline, each point on its own
    assert sum("warm-up is too short" in f for f in alone) == 12  # each server's first
    rising = [with_series(p, p.server_state_id, p.started_at, 0.4 if p.config == "new" else 0)
              for p in points]
    found = flags(rising, cv_threshold=1.0, baseline="base")
    assert [f for f in found if "drifted" in f] == [
        "new vs base at 4 threads: in 6 of 6 rounds (1, 2, 3, 4, 5, 6) its throughput drifted "
        "+30% to +30% within the point while the baseline's held: the ratio depends on where "
        "in the window it is taken"]
    once = [p if p.round == 2 or p.config == "base" else
            with_series(p, p.server_state_id, p.started_at, 0) for p in rising]
    assert not any("drifted" in f for f in flags(once, cv_threshold=1.0, baseline="base"))
    assert not any("CV" in f for f in found)  # the spread of paired rounds is in the intervals


@given(rows=st.lists(st.floats(0.0, 1e4), min_size=2, max_size=6))
def test_work_per_query_that_changes_with_the_thread_count_is_flagged_and_explained(rows):
    """Issue 43: the demo read 960 rows a query at 1 thread and 2.2 at 4, and the report did
    not say so. Rows per query that differ between thread counts by 3 times or more are
    flagged (at least one a row or more), with the reason where the workload is known to
    partition its keys by thread; alike figures are not."""
    from perflab.analysis import quality
    from perflab.report.flags import flag_text

    def uneven_work_flags(points):
        return [flag_text(flag) for flag in quality.uneven_work_flags(points)]

    def reading(threads, per_query, workload):
        p = point("off", threads, 1000.0)
        return dataclasses.replace(p, workload=workload, metrics=dataclasses.replace(
            p.metrics, rows_per_query=per_query))

    points = [reading(2 ** i, r, "oltp_read_only") for i, r in enumerate(rows)]
    found = uneven_work_flags(points)
    assert bool(found) == (max(rows) >= 1 and max(rows) >= 3 * min(rows))
    demo = [reading(1, 960.0, "select_random_points(random_points=10)"),
            reading(4, 2.25, "select_random_points(random_points=10)"),
            reading(4, None, "select_random_points(random_points=10)")]
    flag, = uneven_work_flags(demo)
    assert "(960 at 1, 2.25 at 4 threads)" in flag
    assert "Why: select_random_points draws each key from its thread's own 1/threads" in flag
    assert uneven_work_flags(demo[:1]) == []  # one thread count: nothing to compare


def test_points_measured_under_load_are_flagged_with_how_much():
    """Points during which other processes used more than 5% of the machine's CPU time are
    not evidence: one flag counts them and gives the worst share; points without the probe
    (older labs) and quiet ones are not flagged."""
    from perflab.analysis import quality
    from perflab.report.flags import flag_text

    def load_flags(points):
        return [flag_text(flag) for flag in quality.load_flags(points)]

    def loaded(repeat, share):
        p = point("off", 4, 1000.0, repeat=repeat)
        return dataclasses.replace(p, metrics=dataclasses.replace(p.metrics, other_cpu=share))

    assert load_flags([loaded(1, 0.01), loaded(2, None), loaded(3, 0.05)]) == []
    flag, = load_flags([loaded(1, 0.01), loaded(2, 0.48), loaded(3, 0.12), loaded(4, None)])
    assert flag.startswith("2 of 4 points were measured while other processes or the "
                           "hypervisor used more than 5% of the machine's CPU time (up to 48%; "
                           "rounds 2, 3)")
    # the hypervisor's steal, where measured, is told apart
    stolen = dataclasses.replace(loaded(5, 0.3), metrics=dataclasses.replace(
        loaded(5, 0.3).metrics, steal_cpu=0.25))
    assert "steal was up to 25% of it" in load_flags([loaded(1, 0.01), stolen])[0]


def test_compare_judges_at_the_reference_studys_plan_margin_unless_given_one():
    """perflab compare: "equivalent" within the margin of lab A's stored plan (not lab B's, not
    a fixed one) unless a margin is given. The two labs' rounds differ by about 1%: within A's
    ±10% they are equivalent; at ±2%, given or B's, the interval reaches past the margin."""
    from perflab.analysis.compare import compare_labs
    from perflab.report.compare import compare_table
    from perflab.store import Study

    def study(lab, margin, speeds):
        plan = parse_plan(f'[study]\nname = "{lab}"\nbaseline = "off"\n[workload]\n'
                          f'name = "oltp_point_select"\n[run]\nthreads = [4]\nmargin = {margin}\n'
                          "[configs.off]\n")
        points = [point("off", 4, qps, repeat=n) for n, qps in enumerate(speeds, 1)]
        return Study(lab, plan, points, [], [], [], plan.run.design())

    a = study("a", 0.1, [1000.0, 1020.0, 980.0, 1010.0, 990.0])
    b = study("b", 0.02, [1015.0, 995.0, 1005.0, 1025.0, 1010.0])
    wide = compare_table(compare_labs(a, b))
    assert "within ±10%" in wide.note and wide.rows[0][-1] == "equivalent"
    narrow = compare_table(compare_labs(a, b, 0.02))
    assert "within ±2%" in narrow.note and narrow.rows[0][-1] != "equivalent"
    assert compare_table(compare_labs(b, a)).rows[0][-1] != "equivalent"  # A is b: its ±2%


def test_two_labs_compare_as_a_typed_result_the_table_words():
    """compare_labs gives each shared (configuration, workload, threads) with both medians and
    B's verdict against A; the table (report/compare.py) shows them, with the error rate and
    margin of the comparison."""
    from perflab.analysis.compare import compare_labs
    from perflab.report.compare import compare_table
    from perflab.stats.decide import Decision
    from perflab.stats.design import Design
    from perflab.store import Study

    def study(lab, speed):
        points = [point(config, 4, speed * (1 + 0.01 * (r % 3)), repeat=r)
                  for config in ("off", "32") for r in range(1, 7)]
        return Study(lab, PLAN, points, [], [], [], Design())

    compared = compare_labs(study("a", 1000.0), study("b", 1500.0), 0.05)
    assert [(m.config, m.threads, m.median_a, m.median_b) for m in compared.matches] == [
        ("32", 4, 1010.0, 1515.0), ("off", 4, 1010.0, 1515.0)]
    assert all(m.verdict.verdict == Decision.FASTER for m in compared.matches)
    table = compare_table(compared)
    assert table.rows[0][:5] == ["32", "w", "4", "1010", "1515"]
    assert table.rows[0][-1] == "faster" and "within ±5%" in table.note
