"""The round policy (rounds.py) as a pure function: what round N measures, or that the study
stops, from the plan, the points stored and the design; no server, milliseconds."""

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.running.rounds import Measure, Stop, fitted_looks, next_round
from perflab.running.runner import budget_spent, latest_round_seconds
from perflab.store.records import Metrics, StoredPoint
from perflab.studies import resolve_plan

pytestmark = pytest.mark.fast


def plan(tmp_path: Path, run: str):
    path = tmp_path / "plan.toml"
    path.write_text(f"""
[study]
name = "p"
baseline = "base"
[workload]
name = "oltp_point_select"
[run]
threads = [1, 4]
{run}
[configs.base]
[configs.fast]
key_buffer_size = "64M"
[configs.same]
key_buffer_size = "8M"
""")
    return resolve_plan(path)


def point(config: str, threads: int, repeat: int, qps: float) -> StoredPoint:
    figures = dict.fromkeys(Metrics.names(), 0)
    figures.update(qps=qps, rows_per_query=None, client_cpu=None)
    return StoredPoint(0, "p", "", config, "oltp_point_select", threads, repeat, "ok", 1, None,
                       0.0, 0.0, Metrics(**figures))


def measured(rounds: range, noise: float, seed: int = 1) -> list[StoredPoint]:
    """Three configurations alike, each point off by log-normal noise of sd `noise`."""
    rng = random.Random(seed)
    return [point(config, threads, r, 1000 * math.exp(rng.gauss(0, noise)))
            for r in rounds for threads in (1, 4) for config in ("base", "fast", "same")]


def names(step: Measure) -> dict[int, list[str]]:
    return {t: [c.name for c in cs] for t, cs in step.points.items()}


def test_the_planned_rounds_measure_everything_and_resume_where_they_stopped(tmp_path):
    study = plan(tmp_path, "rounds = 2")
    design = study.run.design()
    first = next_round(study, [], design, 1)
    assert names(first) == {1: ["base", "fast", "same"], 4: ["base", "fast", "same"]}
    stored = [point("base", 1, 2, 1.0), point("fast", 1, 2, 1.0)]  # round 2 cut short
    # a thread count is measured whole: its ratios never pair points of two runs
    assert names(next_round(study, stored, design, 2)) == {1: ["base", "fast", "same"],
                                                           4: ["base", "fast", "same"]}
    stored += [point(c, 1, 2, 1.0) for c in ("same",)]
    assert names(next_round(study, stored, design, 2)) == {4: ["base", "fast", "same"]}
    done = measured(range(1, 3), 0.0)
    assert next_round(study, done, design, 2).points == {}  # stored by an earlier run
    assert next_round(study, done, design, 3) == Stop(3)


def test_a_budget_measures_only_the_undecided_comparisons_with_their_baseline(tmp_path):
    study = plan(tmp_path, 'rounds = 3\ntime = "10m"\nmax_rounds = 12\nmargin = 0.05')
    design = study.run.design()
    # fast is 40% faster everywhere (decided); same is within 3% but noisy (not yet decided)
    rng, stored = random.Random(1), []
    for r in range(1, 4):
        for t in (1, 4):
            base = 1000 * math.exp(rng.gauss(0, 0.05))
            stored += [point("base", t, r, base), point("fast", t, r, base * 1.4),
                       point("same", t, r, base * math.exp(rng.gauss(0, 0.05)))]
    step = next_round(study, stored, design, 4)
    assert isinstance(step, Measure)
    assert names(step) == {1: ["base", "same"], 4: ["base", "same"]}
    assert "after round 3: 2 of 4 comparisons decided" == step.note
    # a round's comparisons come from the rounds before it: a half-stored round 4 changes
    # nothing, and its thread count is measured again whole
    half = [point("base", 1, 4, 1000.0)]
    assert names(next_round(study, stored + half, design, 4)) == {1: ["base", "same"],
                                                                  4: ["base", "same"]}
    whole = half + [point("same", 1, 4, 1000.0)]
    assert names(next_round(study, stored + whole, design, 4)) == {4: ["base", "same"]}


def test_a_difference_found_is_measured_on_until_its_size_is_known_to_the_margin(tmp_path):
    study = plan(tmp_path, 'rounds = 3\ntime = "10m"\nmax_rounds = 20\nmargin = 0.05')
    design = study.run.design()
    # fast is 8% faster with 2% noise per round, same equal within 0.5%: decided in 6 rounds
    # (each cell on its own variance: the two kinds of noise differ too much to be pooled)
    stored = []
    for r, z in zip(range(1, 7), (-1, 0.6, -0.2, 1, -0.6, 0.2), strict=True):
        for t in (1, 4):
            stored += [point("base", t, r, 1000.0), point("fast", t, r, 1080 * math.exp(0.02 * z)),
                       point("same", t, r, 1000 * math.exp(0.005 * z))]
    step = next_round(study, stored, design, 7)
    # "faster" is known, whether it matters (beyond ±5%) is not
    assert isinstance(step, Measure)
    assert names(step) == {1: ["base", "fast"], 4: ["base", "fast"]}
    assert step.note == ("after round 6: 4 of 4 comparisons decided, 2 of them measured on "
                         "until their size is known against ±5%")


def test_asked_one_sided_a_study_measures_on_only_what_may_lose_more_than_the_margin(tmp_path):
    """Tune's checks against its winner ask one question of a setting: does it lose more than
    the margin? A gain whose size is unknown (+8%, as above) answers it, and a setting that
    may lose 12% or nothing (-1% [-12%, +12%] after 6 rounds) is measured on; asked two-sided,
    the gain is the one measured on."""
    study = plan(tmp_path, 'rounds = 3\ntime = "10m"\nmax_rounds = 20\nmargin = 0.05')
    one_sided = replace(study, run=replace(study.run, one_sided=True))
    assert one_sided.run.design().one_sided and not study.run.design().one_sided
    stored = []
    for r, z in zip(range(1, 7), (-1, 0.6, -0.2, 1, -0.6, 0.2), strict=True):
        for t in (1, 4):
            stored += [point("base", t, r, 1000.0), point("fast", t, r, 1080 * math.exp(0.02 * z)),
                       point("same", t, r, 990 * math.exp(0.05 * z))]
    two = next_round(study, stored, study.run.design(), 7)
    assert isinstance(two, Measure) and names(two) == {1: ["base", "fast", "same"],
                                                      4: ["base", "fast", "same"]}
    one = next_round(one_sided, stored, one_sided.run.design(), 7)
    assert isinstance(one, Measure) and names(one) == {1: ["base", "same"], 4: ["base", "same"]}
    quiet = [p if p.config != "same" else
             replace(p, metrics=replace(p.metrics, qps=1000.0 + p.round))
             for p in stored]  # same about equal to the baseline: every question is answered
    done = next_round(one_sided, quiet, one_sided.run.design(), 7)
    assert isinstance(done, Stop) and done.decided



def at(change: float, noise: float, rounds: range) -> list[StoredPoint]:
    """"same" at `change` from the baseline, "fast" 20% faster, at both thread counts, "same"
    off by `noise` times a pattern whose every four rounds sum to nothing: its estimate is
    `change` after every fourth round."""
    pattern = (1.0, -1.0, 0.5, -0.5)
    return [point(config, t, r, qps * math.exp(noise * pattern[(r - 1) % 4] * (config == "same")))
            for r in rounds for t in (1, 4)
            for config, qps in (("base", 1000.0), ("fast", 1200.0), ("same", 1000 * (1 + change)))]


@given(st.floats(0.01, 0.03))
def test_asked_one_sided_what_its_last_look_could_not_tell_is_left_open(tmp_path_factory, noise):
    """A setting whose eight rounds put it at the margin (-5%) is unlikely to be told from it by
    the last look, round 20: the study stops measuring it (a futility stop: no verdict), where
    one at -1% or -10% is measured on until told, and so is one at the margin after 3 rounds
    (too few to predict by). Asked two-sided, a study is never stopped so: its question is the
    size, not the side of the margin."""
    study = plan(tmp_path_factory.mktemp("p"), 'rounds = 3\ntime = "10m"\nmax_rounds = 20\n'
                 'margin = 0.05')
    one_sided = replace(study, run=replace(study.run, one_sided=True))
    design = one_sided.run.design()
    assert design.last_look == 20
    at_margin = next_round(one_sided, at(-0.05, noise, range(1, 9)), design, 9)
    assert isinstance(at_margin, Stop) and not at_margin.decided
    assert "left open" in (at_margin.note or "")
    early = next_round(one_sided, at(-0.05, noise, range(1, 4)), design, 4)
    assert isinstance(early, Measure) and "same" in names(early)[1]
    for change in (-0.01, -0.10):
        step = next_round(one_sided, at(change, noise, range(1, 5)), design, 5)
        assert isinstance(step, Stop) and step.decided or \
            isinstance(step, Measure) and names(step) == {1: ["base", "same"], 4: ["base", "same"]}
    both = next_round(study, at(-0.05, noise, range(1, 9)), study.run.design(), 9)
    assert isinstance(both, Measure) or \
        isinstance(both, Stop) and both.decided and "left open" not in (both.note or "")


def test_a_studys_question_is_frozen_at_its_first_run_and_kept_with_its_plan(tmp_path):
    from perflab.domain import Plan
    from perflab.stats.design import Design, study_design

    study = plan(tmp_path, 'rounds = 3\ntime = "10m"')
    asked = replace(study, run=replace(study.run, one_sided=True))
    assert Plan.from_json(asked.to_json()).run.design().one_sided
    assert not Plan.from_json(study.to_json()).run.design().one_sided
    assert study_design([Design(one_sided=True), Design()]).one_sided
    assert not study_design([Design(), Design(one_sided=True)]).one_sided


def test_when_everything_is_decided_or_the_looks_are_spent_the_study_stops(tmp_path):
    study = plan(tmp_path, 'rounds = 3\ntime = "10m"\nmax_rounds = 5')
    design = study.run.design()
    decided = []
    for r in range(1, 4):
        for t in (1, 4):
            decided += [point("base", t, r, 1000.0), point("fast", t, r, 1400.0 + r),
                        point("same", t, r, 1000.0 + r)]
    step = next_round(study, decided, design, 4)
    assert isinstance(step, Stop) and step.decided and "4 of 4" in step.note
    noisy = measured(range(1, 6), 0.3)
    assert next_round(study, noisy, design, 6) == Stop(6)  # past the last look


def test_a_budget_fits_its_looks_to_the_rounds_it_holds_once_and_from_timing_only(tmp_path):
    """At the first look, 3 rounds of 60 s and 5 minutes left: 5 rounds more at that pace,
    a quarter more for the shorter rounds of open comparisons; never past max_rounds, never
    fewer than its rounds. The fitted design judges its last looks on the fitted boundary."""
    study = plan(tmp_path, 'rounds = 3\ntime = "10m"\nmax_rounds = 20')
    assert study.run.design().last_look == 20 and study.run.design().shape == 0.5
    fitted = fitted_looks(study, 3, 300.0, [55.0, 60.0, 65.0])
    assert fitted.run.planned_rounds == 3 + math.ceil(5 * 1.25)
    design = fitted.run.design()
    assert (design.first_look, design.last_look, design.shape) == (3, 10, 0.25)
    capped = fitted_looks(study, 3, 3000.0, [60.0])
    assert capped.run.planned_rounds == 20
    assert capped.run.design().shape == 0.5  # the cap, not the budget, ends it: Pocock's
    assert fitted_looks(study, 3, -5.0, [60.0]).run.design().sequential is False


def test_a_margin_chosen_after_the_data_is_labelled_exploratory(tmp_path):
    from perflab.analysis.verdicts import headline, judge

    study = plan(tmp_path, "rounds = 5\nmargin = 0.05")
    points = measured(range(1, 6), 0.01)
    own = judge(study, points, study.run.design())
    assert own.exploratory is None
    assert judge(study, points, study.run.design(), margin=0.05).exploratory is None
    later = judge(study, points, study.run.design(), margin=0.2)
    assert later.design.margin == 0.2
    assert "exploratory: margin ±20% chosen after the data" in headline(study, later)[-1]
    assert "±5%" in later.exploratory


@pytest.mark.fast
def test_looks_fitted_to_a_budget_stay_fitted_when_a_later_run_asks_for_more_rounds():
    """Issue 43: a study fitted to looks 3..11, re-run with --rounds 15, was judged on looks
    3..15 at levels drawn for 3..11 (6.2% false verdicts against 4.7%)."""
    from perflab.stats.design import FITTED_SHAPE, Design, study_design

    fitted = Design(first_look=3, last_look=11, shape=FITTED_SHAPE)
    longer = Design(first_look=15, last_look=15, shape=FITTED_SHAPE)  # --rounds 15 later
    joined = study_design([fitted, longer])
    assert (joined.first_look, joined.last_look, joined.shape) == (3, 11, FITTED_SHAPE)
    capped = Design(first_look=3, last_look=30)  # Pocock's cap: later runs may look further
    assert study_design([capped, Design(first_look=3, last_look=40)]).last_look == 40


def timed_point(repeat: int, started: float, seconds: float, session: int = 1) -> StoredPoint:
    return replace(point("base", 1, repeat, 1000.0), started_at=started,
                   finished_at=started + seconds, session_id=session)


def in_order(drawn: list[tuple[int, int, float, float]]) -> list[StoredPoint]:
    """Points of (run, round, gap, seconds), each run measuring its rounds in order, a gap
    (a server start) before each point."""
    clock: dict[int, float] = {}
    points = []
    for session, repeat, gap, seconds in sorted(drawn, key=lambda d: d[:2]):
        start = clock.get(session, 1e5 * session) + gap  # runs far apart
        points.append(timed_point(repeat, start, seconds, session))
        clock[session] = start + seconds
    return points


runs_of_rounds = st.lists(st.tuples(st.integers(1, 3), st.integers(1, 6), st.floats(0, 100),
                                    st.floats(0, 100)), max_size=30)


@given(runs_of_rounds, st.integers(0, 6))
def test_a_resumed_budget_counts_what_each_earlier_run_spent_after_the_round(drawn, after):
    """A resumed study's time budget is what is left (budget_spent): each run's span from the
    end of its round `after`, when it measured one (its budget started there: the server
    starts before the next round count), else from its first later point's start, to its last
    point's end, whatever order the points come in; a run with no later point spent nothing."""
    points = in_order(drawn)
    expected = 0.0
    for session in {p.session_id for p in points}:
        mine = [p for p in points if p.session_id == session]
        later = [p for p in mine if p.round > after]
        if later:
            before = [p.finished_at for p in mine if p.round <= after]
            start = max(before) if before else min(p.started_at for p in later)
            expected += max(p.finished_at for p in later) - start
    assert budget_spent(points, after) == pytest.approx(expected)
    assert budget_spent(points[::-1], after) == pytest.approx(expected)
    assert budget_spent(points, after) <= budget_spent(points, 0) + 1e-9  # fewer rounds


@given(runs_of_rounds)
def test_a_resumed_study_paces_its_next_round_by_its_latest_stored_one(drawn):
    """The pace a resumed study's first round is judged by (latest_round_seconds): its latest
    round in the run that ended it last, from that run's round before (the servers' starts
    between count), never the time between two runs."""
    points = in_order(drawn)
    if not points:
        assert latest_round_seconds(points) == 0
        return
    latest = max(p.round for p in points)
    last = max((p for p in points if p.round == latest), key=lambda p: p.finished_at)
    mine = [p for p in points if p.session_id == last.session_id]
    before = [p.finished_at for p in mine if p.round < latest]
    start = max(before) if before else min(p.started_at for p in mine if p.round == latest)
    assert latest_round_seconds(points) == pytest.approx(last.finished_at - start)
    assert 0 <= latest_round_seconds(points) <= 200 * len(points) + 1e-6  # within one run


def test_a_run_spends_its_rounds_and_the_work_between_them():
    points = [timed_point(1, 100.0, 3.0), timed_point(1, 100.5, 3.0),  # round 1: 100-103.5
              timed_point(2, 110.0, 3.0)]  # a server start between, round 2: 110-113
    assert budget_spent(points, 0) == pytest.approx(13.0)
    # the planned round 1 not counted, the server start after it is: the budget starts there
    assert budget_spent(points, 1) == pytest.approx(9.5)
    assert budget_spent(points, 2) == 0


def test_a_round_finished_by_a_later_run_spends_its_two_parts_not_the_time_between():
    """An interrupted run left round 2 half done; a run a day later measured its other half."""
    points = [timed_point(2, 100.0, 3.0, session=1), timed_point(2, 86_500.0, 3.0, session=2)]
    assert budget_spent(points, 0) == pytest.approx(6.0)
