"""The whole tune's budget (tune/budget.py) and the put-back's smallest-my.cnf-first check
(final._smallest_first): issue 68, checking the answer in proportion to finding it."""

from __future__ import annotations

import datetime
import math
import time
from dataclasses import replace
from types import SimpleNamespace

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from optuna.trial import FrozenTrial, TrialState, create_trial

from perflab.domain import RunSettings
from perflab.errors import PerflabError
from perflab.stats.decide import EQUIVALENT, FASTER, INCONCLUSIVE, SLOWER, Verdict
from perflab.store import PointStatus, RunEnd, Session, StoredPoint
from perflab.store.records import covered
from perflab.tune.budget import CHECK_FACTOR, TRIALS_SHARE, CheckEnded, TuneBudget
from perflab.tune.final import (
    KEEP,
    _looks_on,
    _smallest_first,
    by_the_trials,
    keep_margin,
    spent_before,
)
from perflab.tune.render import render_text
from perflab.tune.result import REFERENCE, Outcome, TrialOutcome, TuneResult
from perflab.tune.search import trials_time
from perflab.tune.settings import Objective, TuneSettings

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast


def verdict(kind: str, change: float, low: float, high: float) -> Verdict:
    return Verdict(kind, 6, change, low, high, 0.05, sd=0.01)


COSTS = verdict(SLOWER, -0.6, -0.7, -0.5)
NOTHING = verdict(EQUIVALENT, 0.0, -0.02, 0.02)
UNDECIDED = verdict(INCONCLUSIVE, -0.03, -0.09, 0.03)


@given(trials=st.one_of(st.none(), st.integers(1, 500)),
       seconds=st.one_of(st.none(), st.floats(1.0, 1e5)),
       spent=st.floats(0.0, 1e4), trials_time=st.floats(0.0, 1e4))
def test_the_checks_deadline_keeps_the_budget_the_user_set(trials, seconds, spent, trials_time):
    """With a time budget, the trials stop at their share and the checks end with the whole
    budget; with a trial count only, the checks get at most CHECK_FACTOR times the trials'
    own time, whatever the run's clock says (a resumed run's is spent reading them back)."""
    if not trials and not seconds:
        with pytest.raises(PerflabError, match="give the search a budget"):
            TuneBudget(trials, seconds)
        return
    now = time.monotonic()
    budget = TuneBudget(trials, seconds, started=now - spent, trials_time=trials_time)
    assert budget.left() == float("inf")  # the trials are not over yet
    left = budget.start_checking()
    assert budget.check_until is not None
    if seconds:
        assert budget.trial_seconds() == pytest.approx(seconds * TRIALS_SHARE)
        assert budget.check_until == pytest.approx(now - spent + seconds, abs=1.0)
        assert budget.trials_over(0) == (spent >= seconds * TRIALS_SHARE)
    else:
        assert budget.trial_seconds() is None and not budget.trials_over(trials - 1)
        assert left == pytest.approx(CHECK_FACTOR * trials_time, rel=0.01, abs=1.0)
    assert 0 <= budget.left() <= max(left, 0) + 1e-6
    if trials:
        assert budget.trials_over(trials)
    # a study read back: a trial count charges what it spent then; a time budget is this run's
    deadline, until = budget.check_until, budget.until(1.0, 5.0)
    budget.replayed(5.0)
    assert budget.check_until == deadline - (0.0 if seconds else 5.0)
    assert budget.earlier_checks == 5.0 and until is not None
    assert until == pytest.approx(deadline - (0.0 if seconds else 5.0), abs=0.5) or left <= 0
    said = budget.split()
    assert ("checking the answer" in said) and (str(trials) in said if trials else True)


studies = st.lists(st.tuples(st.integers(1, 60), st.floats(0.5, 60.0)), min_size=1, max_size=6)


@given(trials_time=st.floats(10.0, 1e4), studies=studies, clock=st.floats(0.0, 1e4))
def test_a_resumed_tune_starts_and_refuses_the_studies_its_first_run_did(
        trials_time, studies, clock):
    """bench/tune resumes its five-seed labs after their end phases: reading them back, a run
    must start the studies its first run measured and refuse the one it refused. Each study
    here needs `points` at its own pace; the first run spends them, the resumed one (its clock
    spent on reading back) charges their stored time as it reads each back."""
    first = TuneBudget(20, started=time.monotonic() - clock, trials_time=trials_time)
    first.start_checking()
    measured, stored = [], []
    for number, (points, pace) in enumerate(studies):
        needed, left = points * (first.point_seconds or 0.0), first.check_until - time.monotonic()
        assume(abs(left - needed) > 1.0 and abs(left) > 1.0)  # no tie a microsecond decides
        try:
            first.before_study(f"study {number}", points)
        except CheckEnded:
            break
        first.check_until -= points * pace  # the seconds it took
        first.paced(points * pace, points)
        measured.append(number)
        stored.append(points * pace)
    again = TuneBudget(20, started=time.monotonic() - 2 * clock, trials_time=trials_time)
    again.start_checking()
    read_back = []
    for number, (points, _) in enumerate(studies):
        try:
            again.before_study(f"study {number}", points)
        except CheckEnded:
            break
        read_back.append(number)
        seconds = stored[number] if number < len(stored) else 0.0  # not stored: measured now
        again.replayed(seconds)
        again.paced(seconds, points)
    assert read_back == measured
    assert again.earlier_checks == pytest.approx(sum(stored))
    assert again.left() == pytest.approx(first.left(), abs=1.0)


runs = st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 1e3), st.booleans(),
                          st.lists(st.floats(0, 1), max_size=4)), max_size=5)


@given(runs, st.floats(0, 2e6))
def test_a_study_read_back_is_charged_each_earlier_runs_whole_span(sessions, since):
    """A study's earlier runs cost their sessions' spans, the servers' starts before the first
    point included; a killed run's (no end recorded) runs to its last point; a run that read
    every point back spent nothing; a run begun at or after `since` is this run's own."""
    stored, points, expected = [], [], 0.0
    for number, (start, length, killed, at) in enumerate(sessions):
        stored.append(Session(number, "s", 1, start, None if killed else start + length,
                              None if killed else RunEnd.COMPLETE, {}))
        points += [StoredPoint(0, "s", "d", "c", "w", 1, 1, PointStatus.OK, number, None,
                               start, start + f * length, None) for f in at]
        if start < since and at:  # a run that measured no point spent nothing on it
            expected += max(at) * length if killed else length
    assert spent_before(stored, points, since) == pytest.approx(expected, abs=1e-3)


spans = st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 1e3)).map(
    lambda s: (s[0], s[0] + s[1])), max_size=30)


@given(spans)
def test_the_trials_time_counts_overlapping_trials_once(intervals):
    """Trials of several workers overlap; the wall time they cover counts each second once."""
    total = covered(intervals)
    lengths = [end - start for start, end in intervals]
    assert max(lengths, default=0.0) - 1e-6 <= total <= sum(lengths) + 1e-6
    assert total == pytest.approx(covered(intervals[::-1]))
    assert covered(intervals + intervals) == pytest.approx(total)
    if intervals:  # one span reaching over all of them covers exactly its own length
        start, end = min(s for s, _ in intervals), max(e for _, e in intervals)
        assert covered([*intervals, (start, end)]) == pytest.approx(end - start)


def frozen(state: TrialState, start: float, end: float, attrs: dict | None = None) -> FrozenTrial:
    trial = create_trial(state=TrialState.COMPLETE, value=1.0, user_attrs=attrs or {})
    trial.state, trial.values = state, [1.0] if state == TrialState.COMPLETE else None
    trial.datetime_start = datetime.datetime.fromtimestamp(start)
    trial.datetime_complete = datetime.datetime.fromtimestamp(end)
    return trial


@given(spans, st.lists(st.floats(0, 1e6), max_size=3), st.floats(0, 1e5))
def test_a_resumed_tune_counts_its_earlier_trials_not_the_one_an_interruption_cut(
        intervals, cut, overnight):
    """A trial running when a session stopped ends when the next run fails it, maybe the next
    morning: its span is not trials' time, or a second resume would check for twice a night.
    A trial that failed, by its setting or its reference's, spent its time and counts."""
    since = 2e6 + 1e5
    measured = [frozen(TrialState.COMPLETE, a, b) for a, b in intervals[::3]]
    failed = [frozen(TrialState.FAIL, a, b, {"state": "failed", "error": "crashed"})
              for a, b in intervals[1::3]]
    failed += [frozen(TrialState.FAIL, a, b, {"state": "failed", "error": "the reference "
                                              "crashed", "cause": REFERENCE})
               for a, b in intervals[2::3]]  # ran for real: this run's clock counts them too
    reaped = [frozen(TrialState.FAIL, start, start + overnight) for start in cut]
    reaped += [frozen(TrialState.FAIL, start, start + overnight, {"state": "ok"})
               for start in cut[:1]]  # its worker died between recording its state and telling
    assert trials_time([*measured, *failed, *reaped], since) == pytest.approx(
        covered(intervals), abs=1e-4)  # Optuna's times are to the microsecond
    later = [frozen(TrialState.COMPLETE, since, since + 5)]  # this run's own: not earlier
    assert trials_time([*measured, *failed, *later], since) == pytest.approx(
        covered(intervals), abs=1e-4)


def test_no_study_starts_once_the_budget_is_spent():
    budget = TuneBudget(trials=3, started=time.monotonic())
    budget.start_checking()  # no time spent on trials: nothing left to check with
    with pytest.raises(CheckEnded, match="the put-back study"):
        budget.before_study("the put-back study")
    for bad, option in ((dict(trials=0, seconds=60.0), "budget"),
                        (dict(seconds=-1.0), "seconds")):
        with pytest.raises(PerflabError) as err:
            TuneBudget(**bad)
        assert err.value.option == option


@given(left=st.floats(10.0, 3600.0), pace=st.floats(0.5, 120.0), points=st.integers(1, 60))
def test_a_study_starts_only_when_its_first_rounds_fit_at_the_last_studys_pace(left, pace,
                                                                               points):
    """The pool answer's put-back started a study of 7 servers, back to back, with 1m23s
    left, and ran 32 s past the budget: a study whose first rounds (`points`) would not fit at
    the pace of the study before is not started, and the reason is said."""
    budget = TuneBudget(trials=3, started=time.monotonic())
    budget.check_until = time.monotonic() + left
    budget.before_study("the first study", points)  # no pace yet: nothing to judge by
    budget.paced(pace * 10, 10)
    if points * pace > left + 1:
        with pytest.raises(CheckEnded, match=f"its first {points} points need about"):
            budget.before_study("the alone study", points)
    elif points * pace < left - 1:
        budget.before_study("the alone study", points)


def test_a_round_that_would_end_past_the_tunes_budget_is_not_started():
    """Runner's Budget with a tune's stop_at: once the run has its `at_least` rounds, no round
    starts that the last one's pace says would end after stop_at; before, it does."""
    from perflab.running.runner import Budget

    budget = Budget(0.0, print, stop_at=time.monotonic() + 30.0, at_least=2)
    assert not budget.stops(2, 10.0) and budget.stops(2, 40.0)
    assert not budget.stops(1, 40.0)  # an interval needs its two rounds


WIDE = {"query_cache_size": "16777216", "query_cache_type": "ON",
        **{f"knob_{i}": str(i) for i in range(17)}}  # the 19 moved knobs
BASE = dict.fromkeys(WIDE, "x")  # every knob off the winner's value


def trial(number: int, value: float, **at_winners: bool) -> TrialOutcome:
    """A trial with the named knobs at the winner's values, the others not."""
    return TrialOutcome(number, {**BASE, **{k: WIDE[k] for k in at_winners}}, Outcome.OK,
                        value)


# the winner (x400), the query cache's type alone (x380) and size alone (x300), another knob
# alone (x1.1), the defaults (x1): a screening group moved the 19 together
TRIALS = [trial(0, 1.0), TrialOutcome(1, dict(WIDE), Outcome.OK, 400.0),
          trial(2, 300.0, query_cache_size=True), trial(3, 1.1, knob_3=True),
          trial(4, 380.0, query_cache_type=True)]


def test_the_trials_rank_the_knobs_that_carry_the_gain_first():
    """The winner's knobs ranked by the trials' contrast at the winner's value and off it:
    the query cache's two first, a knob whose trial gained nothing last; a knob every trial
    ran at one value is not ranked."""
    result = TuneResult("s", "bayes", [], TRIALS, TRIALS[1])
    ranked = by_the_trials(result, sorted(WIDE))
    assert ranked[:2] == ["query_cache_type", "query_cache_size"] and ranked[-1] == "knob_3"
    same = TuneResult("s", "bayes", [], [TRIALS[1], TrialOutcome(5, dict(WIDE), Outcome.OK,
                                                                 390.0)], TRIALS[1])
    assert by_the_trials(same, sorted(WIDE)) == []
    # for a latency, a gain is a drop: the ranking turns over
    latency = TuneResult("s", "bayes", [], TRIALS, TRIALS[1], direction="minimize")
    assert by_the_trials(latency, sorted(WIDE))[0] == "knob_3"


# bench/tune tmp-table, seed 3 (2026-12-03): a screening group moved the three at trial 6, and
# the search then refined the temporary-table limit (34, then 59 MB; 14 MB lost the gain)
SEED3_DEFAULTS = {"tmp_table_size": "16777216", "table_open_cache": "2000",
                  "join_buffer_size": "262144"}
SEED3 = [(1.04, 16777216, 2000, 262144)] * 6 + [
    (2.58, 34227685, 114, 3400132), (2.40, 34227685, 114, 3400132),
    (2.29, 34227685, 114, 3400132), (2.31, 34227685, 114, 262144),
    (2.39, 34227685, 2000, 3400132), (2.20, 34227685, 114, 3400132),
    (2.36, 34227685, 114, 3400132), (2.35, 34227685, 114, 3400132),
    (2.17, 34227685, 114, 3400132), (2.27, 58819595, 114, 3400132),
    (0.90, 14010148, 114, 3400132), (2.56, 58819595, 114, 3400132),
    (2.44, 58819595, 114, 3400132), (2.29, 58819595, 114, 262144)]


def seed3(rows: list[tuple[float, int, int, int]]) -> TuneResult:
    trials = [TrialOutcome(n, {"tmp_table_size": tmp, "table_open_cache": toc,
                               "join_buffer_size": jbs}, Outcome.OK, value)
              for n, (value, tmp, toc, jbs) in enumerate(rows)]
    return TuneResult("s", "bayes", [], trials, trials[17], defaults=SEED3_DEFAULTS)


def test_a_number_counts_as_the_winners_on_its_side_of_the_default():
    """Ranked by the winner's exact 59 MB, the limit that carries the gain came last, after
    the two knobs its group moved with it; on its side of the default it comes first."""
    assert by_the_trials(seed3(SEED3), sorted(SEED3_DEFAULTS))[0] == "tmp_table_size"


@given(st.lists(st.tuples(st.integers(0, 19), st.integers(16777217, 2**31)), max_size=20))
def test_a_ranking_keeps_when_a_number_moves_within_its_side(moves):
    """Any trial's limit moved to another value above the default, as a search refining it
    would: the ranking is the same."""
    rows = list(SEED3)
    for n, value in moves:
        if rows[n][1] > 16777216:
            rows[n] = (rows[n][0], value, *rows[n][2:])
    knobs = sorted(SEED3_DEFAULTS)
    assert by_the_trials(seed3(rows), knobs) == by_the_trials(seed3(SEED3), knobs)


def smallest(trials: list[TrialOutcome], carries: set[str],
             undecided: frozenset = frozenset()) -> tuple[bool, TuneResult, list, list[str]]:
    """_smallest_first over the 19 knobs, the sets named in `carries` no slower than the
    winner, those in `undecided` inconclusive, the others costing its gain."""
    result = TuneResult("s", "bayes", [], trials, TRIALS[1],
                        gain_vs_default=verdict(FASTER, 100.0, 80.0, 130.0))
    studies, said = [], []

    def measure(kind: str, others: dict[str, dict], saying: str):
        assert (kind, "the smallest my.cnf first" in saying) in (("smallest", True),
                                                                 ("smallest-both", False))
        studies.append({name: sorted(setting) for name, setting in others.items()})
        for setting in others.values():  # each set at the winner's values
            assert all(WIDE[k] == v for k, v in setting.items())
        return {name: NOTHING if name in carries else UNDECIDED if name in undecided
                else COSTS for name in others}, 0.05

    decided = _smallest_first(result, WIDE, sorted(WIDE), measure, said.append)
    return decided, result, studies, said


def test_the_smallest_my_cnf_the_search_points_at_is_measured_first():
    """One or two studies settle a gain carried by one or two of 19 moved knobs: the two the
    trials rank first alone against the winner, then, each alone shown slower, the two
    together; the smallest set shown no slower by more than the margin is the my.cnf, alone
    before together, the first-ranked first."""
    alone = {"first": ["query_cache_type"], "second": ["query_cache_size"]}
    decided, result, studies, said = smallest(TRIALS, {"first", "second", "both"})
    assert decided and result.kept == ["query_cache_type"]
    assert studies == [alone]  # the question answered, the two together are not measured
    assert [(c.kind, c.knobs) for c in result.kept_checks] == [
        ("smallest", ("query_cache_type",))]
    assert "without its other 18 knob(s)" in said[-1]
    # the search's top knob rode along: the second alone carries the gain, not both
    decided, result, _, _ = smallest(TRIALS, {"second", "both"})
    assert decided and result.kept == ["query_cache_size"]
    decided, result, studies, _ = smallest(TRIALS, {"both"})
    assert decided and result.kept == ["query_cache_size", "query_cache_type"]
    assert studies == [alone, {"both": ["query_cache_size", "query_cache_type"]}]
    assert [(c.kind, c.knobs) for c in result.kept_checks] == [
        ("smallest-both", ("query_cache_size", "query_cache_type"))]
    # the two together only once each alone is shown slower: one left undecided alone is the
    # put-back's to decide, and the second study is not measured
    decided, result, studies, _ = smallest(TRIALS, {"both"}, undecided={"second"})
    assert not decided and result.kept is None and studies == [alone]
    # none carries it: nothing decided, the put-back goes on
    decided, result, _, said = smallest(TRIALS, set())
    assert not decided and result.kept is None and not result.kept_checks
    assert "the knobs are put back" in said[-1]
    # one knob ranked: measured alone, and shown slower it leaves the put-back to decide
    # (every trial ran the size at the winner's value: only the type is ranked)
    one = [TRIALS[1], TrialOutcome(5, {**WIDE, "query_cache_type": "x"}, Outcome.OK, 1.0)]
    ranked = by_the_trials(TuneResult("s", "bayes", [], one, TRIALS[1]), ["query_cache_size",
                                                                          "query_cache_type"])
    assert ranked == ["query_cache_type"]
    result = TuneResult("s", "bayes", [], one, TRIALS[1],
                        gain_vs_default=verdict(FASTER, 100.0, 80.0, 130.0))
    measured = []

    def costs(kind, others, saying):
        measured.append(sorted(others))
        return dict.fromkeys(others, COSTS), 0.05

    assert not _smallest_first(result, WIDE, ["query_cache_size", "query_cache_type"], costs,
                               lambda _: None)
    assert measured == [["first"]] and result.kept is None
    # no trials to rank by (every one ran the winner's values): no study
    decided, _, studies, _ = smallest([TRIALS[1]], {"first"})
    assert not decided and studies == []


@pytest.mark.parametrize("stop", [CheckEnded("the put-back study"), KeyboardInterrupt()])
@pytest.mark.parametrize("in_phase", ["remeasure", "put_back"])
def test_checks_the_budget_ended_or_an_interruption_stopped_still_give_the_my_cnf(
        monkeypatch, stop, in_phase):
    """Whatever stops the end phases, the budget before a study or a Ctrl-C in either phase,
    the my.cnf is the winner's knobs and says what stopped it and what to do; an interruption
    still stops the tune (a KeyboardInterrupt), carrying the result for the CLI to print."""
    import perflab.tune.final as final

    best = TrialOutcome(4, {"query_cache_type": "ON"}, Outcome.OK, 90.0)
    result = TuneResult("s", "bayes", [], [best], best, defaults={"query_cache_type": "OFF"})

    def remeasure(*_args) -> None:
        if in_phase == "remeasure":
            raise stop
        result.gain_vs_default = verdict(FASTER, 100.0, 80.0, 130.0)

    def put_back(*_args) -> None:
        raise stop

    monkeypatch.setattr(final, "remeasure", remeasure)
    monkeypatch.setattr(final, "put_back", put_back)
    trials = SimpleNamespace(variables=None, round_sd=0.1)
    check = (None, result, None, None, trials, None, lambda _: None, TuneBudget(trials=4))
    if isinstance(stop, KeyboardInterrupt):
        with pytest.raises(KeyboardInterrupt) as raised:
            final.check_answer(*check)
        assert raised.value.result is result
        phase = {"remeasure": "re-measure", "put_back": "put-back"}[in_phase]
        said = f"interrupted in the {phase} (run the same command to resume)"
    else:
        final.check_answer(*check)
        said = "budget ended before the put-back study (perflab tune --time for more)"
    cnf = result.mycnf()
    assert "query_cache_type = ON" in cnf and said in cnf
    assert ("not reduced" if in_phase == "put_back" else "not yet evidence") in render_text(result)


@given(margin=st.floats(0.01, 0.2), gain=st.floats(-0.5, 1e4), more=st.floats(0.0, 1e3))
def test_a_smaller_my_cnf_keeps_a_share_of_the_gain_not_a_share_of_throughput(margin, gain,
                                                                              more):
    """The put-back's margin is the plan's for a small gain and grows with a large one: never
    below the plan's, never shrinking as the gain grows, and what it allows keeps 95% of the
    gain's log."""
    allowed = keep_margin(margin, gain)
    assert margin <= allowed < 1
    assert keep_margin(margin, gain + more) >= allowed
    if allowed > margin:  # the gain's share decides: the smaller set keeps 95% of its log
        kept = (1 + gain) * (1 - allowed)
        assert math.log(kept) == pytest.approx(KEEP * math.log(1 + gain))
    assert keep_margin(0.05, 0.2) == 0.05  # x1.2: the plan's ±5%
    assert keep_margin(0.05, 304.5) == pytest.approx(0.249, abs=0.001)  # x305: -25%


@pytest.mark.parametrize("threads", [(4,), (1, 4)])
@pytest.mark.parametrize("objective", ["throughput", "p95"])
@pytest.mark.parametrize("begun", [None, "fixed", "looking"])
def test_the_re_measure_looks_after_each_round_only_where_its_comparisons_are_the_tunes(
        threads, objective, begun):
    """The re-measure stops once every gain is known where the round policy's comparisons are
    the tune's own (throughput at one thread count); a re-measure an earlier run began with
    fixed rounds keeps them, its design frozen at its first run."""
    run = RunSettings(threads=threads, rounds=3)
    stored = {None: None, "fixed": run.design(),
              "looking": replace(run, max_rounds=12, time=60.0).design()}[begun]
    store = SimpleNamespace(design_of=lambda study: stored)
    plan = SimpleNamespace(run=run)
    settings = TuneSettings(objective=Objective(objective))
    assert _looks_on(store, "s:bayes:final@12", plan, settings) == (
        threads == (4,) and objective == "throughput" and begun != "fixed")
