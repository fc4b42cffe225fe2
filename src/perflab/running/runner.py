"""Running a study: from a validated plan to stored points, round after round.

A round measures every comparison still open once: at each thread count, the baseline and the
configurations compared with it are measured close in time, in an order drawn for the round,
so that each round gives one paired ratio per comparison (stats/decide.py). With a fleet (one
server per configuration, _fleet.py) they take turns in time slices within one run; serially,
they run back to back on one server, switched by SET GLOBAL when every changed variable is
dynamic and restarted otherwise, each change followed by a warm-up.

Without a time budget a study runs its `rounds` rounds. With one, rounds go on after those only
for the comparisons still inconclusive, until every one is decided, the budget is spent or
max_rounds is reached. A point whose server dies is stored as failed with the error-log tail.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from perflab.domain import Plan, Schedule, ServerConfig
from perflab.lab import Lab
from perflab.probes import busy
from perflab.procs import check_stop
from perflab.running._fleet import Fleet
from perflab.running._progress import Progress
from perflab.running.measurer import Measurer, rotated
from perflab.running.noise import budget_reach, forecast, frozen_dependence, save_noise
from perflab.running.rounds import Stop, fitted_looks, next_round
from perflab.say import Say
from perflab.server.existing import ExistingServer, restore_pending
from perflab.stats.design import Design
from perflab.store import PointRecord, PointStatus, ResultStore, RunEnd, StoredPoint


@dataclass
class RunSummary:
    study: str
    schedule: Schedule  # FLEET or SERIAL, as chosen before the first round
    rounds: int  # rounds with at least one point measured by this run
    already_stored: int
    measured: int
    failed: int
    seconds: float
    stopped: RunEnd = RunEnd.COMPLETE

    def describe(self) -> str:
        """One line: what this run measured, and why it stopped."""
        return (f"{self.measured} point(s) measured in {self.rounds} round(s) ({self.failed} "
                f"failed, {self.schedule}), {self.already_stored} already stored, in "
                f"{self.seconds:.0f} s: {self.stopped}")


def run_study(plan: Plan, lab: Lab, say: Say = print, server: ExistingServer | None = None
              ) -> RunSummary:
    """The study in `lab`: its rounds not stored yet, within its time budget if it has one; on
    managed servers, or on `server`, a server perflab did not start.

    On `server` with permission to set variables, first puts back what an earlier perflab that
    was killed left changed on it (and refuses to run when the lab's journal belongs to another
    server); without, the journal is left alone (the command line has said it is there).
    """
    with lab.locked(), lab.store() as store:
        if server is None:
            return Runner(plan, lab, store, say).run()
        try:
            if server.permissions.set_variables:
                server.claim()  # first: another perflab changing this server stops this run
                restore_pending(lab.root, server.endpoint, say, claimed=True)
                server.refuse_another_journal()
            return Runner(plan, lab, store, say, server).run()
        finally:
            server.release()


class Budget:
    """When a run's rounds stop for time: the study's time budget (run.time) for its rounds,
    what its earlier runs spent on them taken off (`budget_spent`: a resumed study measures
    for what is left), and a limit of the run's own.

    `after_planned`: the budget starts once the planned rounds (run.rounds) are done, instead
    of once the data is there; they are always measured whole, and the budget is only for the
    rounds that decide what they left open (tune's put-back, whose planned rounds come from the
    lab's noise, not from its user).

    `stop_at` (time.monotonic()): no round starts that would end after it, at the pace of the
    study's last round, once the study has `at_least` rounds (stored ones too: a study resumed
    with them stops where its first run did), whatever the study's own budget (a tune's whole
    budget, tune/budget.py)."""

    def __init__(self, seconds: float, say: Say, after_planned: bool = False,
                 stop_at: float | None = None, at_least: int = 0):
        self.seconds, self.say, self.after_planned = seconds, say, after_planned
        self.stop_at, self.at_least = stop_at, at_least
        self.deadline: float | None = None  # once the budget has started (start)

    def start(self, done: int, planned: int, stored: Iterable[StoredPoint]) -> bool:
        """Whether the budget starts now, after round `done` (0: after the set-up; with
        `after_planned`, after the `planned` rounds); if so, its deadline: what is left of it
        once the `stored` points' runs' spend on the rounds after `done` is taken off (said
        when they spent any)."""
        if not self.seconds or self.deadline is not None or \
                done != (planned if self.after_planned else 0):
            return False
        spent = budget_spent(stored, done)
        if spent:
            self.say(f"time budget: {spent:.0f} s of {self.seconds:g} s spent by earlier runs "
                     f"of this study, {max(self.seconds - spent, 0):.0f} s left")
        self.deadline = time.monotonic() + self.seconds - spent
        return True

    def spent(self) -> bool:
        """Whether the budget has started and its deadline has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def holds(self, seconds: float) -> bool:
        """Whether `seconds` from now end before the deadline (always, before it starts)."""
        return self.deadline is None or time.monotonic() + seconds <= self.deadline

    def stops(self, rounds: int, next_seconds: float = 0.0) -> bool:
        """Whether no round starts now: the budget is spent, or the study has its `at_least`
        rounds (it has `rounds`) and one more, of `next_seconds`, would end after `stop_at`."""
        return self.spent() or (self.stop_at is not None and rounds >= self.at_least
                                and time.monotonic() + next_seconds >= self.stop_at)


class Runner:
    """Drives one plan's study: its job is the rounds (every round not stored yet, or with a
    time budget the rounds that decide: rounds.py), in the order and on the schedule they
    follow, when they stop (the round policy, the looks, its `budget`), the progress said and
    the noise kept. Its `measurer` measures and stores each point it asks for.

    `noise_source`: what the lab's stored noise figure of this study is called ("run",
    "calibrate"); None stores none, for a study whose comparisons were chosen for their effects
    (tune's re-measure and put-back): their drift is not the machine's noise. The other
    keywords are the Budget's."""

    def __init__(self, plan: Plan, lab: Lab, store: ResultStore, say: Say = print,
                 existing: ExistingServer | None = None, *, budget_after_planned: bool = False,
                 noise_source: str | None = "run", stop_at: float | None = None,
                 at_least: int = 0):
        self.plan, self.store, self.say = plan, store, say
        self.measurer = Measurer(plan, lab, store, say, existing)
        self.budget = Budget(plan.run.time, say, budget_after_planned, stop_at, at_least)
        self.noise_source = noise_source

    def run(self) -> RunSummary:
        """Every round not stored yet; with a time budget, the rounds that decide."""
        try:
            return self._rounds()
        finally:
            self.measurer.close()

    def _rounds(self) -> RunSummary:
        started = time.monotonic()
        schedule, design = self._set_up()
        run = self.plan.run
        summary = RunSummary(self.plan.name, schedule, 0, len(self._stored_ok()), 0, 0, 0.0)
        if summary.already_stored:
            planned = len(self.plan.configs) * len(run.threads) * run.rounds
            self.say(f"resuming: {summary.already_stored} of {planned} points already stored")
        session = self.measurer.open_session()
        # comparisons chosen for their effects (noise_source None): slices sized on every server
        fleet = (self.measurer.fleet(session, self.plan, probe_every=self.noise_source is None)
                 if schedule == Schedule.FLEET else None)
        try:
            summary.stopped = self._loop(session, fleet, design, summary)
        except BaseException:
            summary.stopped = RunEnd.INTERRUPTED
            raise
        finally:
            self.measurer.close_session(session, summary.stopped)
            summary.seconds = time.monotonic() - started
            save_noise(self.store, self.plan, self.measurer.workload, schedule,
                       self._stored_ok(), self.noise_source)
        if not summary.rounds and summary.stopped == RunEnd.BUDGET_SPENT:
            self.say(f"the time budget of {self.plan.name} ({self.plan.run.time:g} s) was "
                     "spent by its earlier runs: nothing measured (a larger budget measures on)")
        elif not summary.rounds and summary.already_stored:
            self.say(f"all {summary.already_stored} points of {self.plan.name} are already "
                     "stored")
        return summary

    def _set_up(self) -> tuple[Schedule, Design]:
        """Before the first round: the datasets ready, the schedule chosen, the dependence
        allowance and the looks frozen (a study's first run sets them, later runs keep them),
        the forecast said; returns the schedule and the design. The budget starts once all
        that is done (the looks' boundaries of a long max_rounds take minutes to simulate):
        it is for the rounds (with after_planned, it starts in `_loop`)."""
        watch = busy.Watch(self.measurer.own_pids())  # other work while the study sets up
        schedule, why = self.measurer.get_ready()
        run = self.plan.run
        self.say(f"schedule: {schedule} ({why})")
        self.plan = frozen_dependence(self.store, self.plan, self.measurer.workload, schedule)
        self.plan = replace(self.plan, run=replace(  # looks fitted by an earlier run stay
            self.plan.run, planned_rounds=self.store.planned_rounds(self.plan.name)))
        self.measurer.save_plan(self.plan)
        design = self.store.design(self.plan.name)  # this plan's looks and earlier runs'
        if design.fitted and run.rounds > design.last_look:
            self.say(f"the looks were fitted to rounds {design.first_look}..{design.last_look} "
                     f"at this study's first run: it stops there, not at {run.rounds} rounds "
                     "(a longer study is a new study: give the plan another name)")
            self.plan = replace(self.plan, run=replace(self.plan.run,
                                                       rounds=design.last_look))
        for line in forecast(self.plan, design, self.measurer.noise(schedule)):
            self.say(line)
        busy_now = watch.warning()
        if busy_now:
            self.say(f"WARNING: {busy_now}")
        self.budget.start(0, run.rounds, self._stored_ok())
        return schedule, design

    def _loop(self, session: int, fleet: Fleet | None, design: Design, summary: RunSummary
              ) -> RunEnd:
        """Round after round until the round policy stops or the budget is spent, counting
        what was measured in `summary`; returns why it stopped. A budgeted study's looks are
        fitted once its planned rounds are done, to the rounds the budget holds at their
        pace."""
        run = self.plan.run
        progress = Progress(self.plan, self.say, self.budget.deadline)
        round_number = 0
        timed: list[float] = []  # seconds of each whole round
        # the wall seconds of the latest round, its servers' set-up included (a resumed
        # study's first: its latest stored round's, latest_round_seconds)
        last = latest_round_seconds(self._stored_ok())
        while True:
            check_stop()
            round_number += 1
            stored = self._stored_ok()
            if self.budget.start(round_number - 1, run.rounds, stored):
                progress.deadline = self.budget.deadline
            if self._first_look_unfitted(round_number - 1, timed):
                self.plan, design = self._fit_looks(round_number - 1, timed)
                reach = budget_reach(self.plan, design, stored, statistics.mean(timed))
                if reach:
                    self.say(reach)
            step = next_round(self.plan, stored, design, round_number)
            if step.note:
                self.say(step.note)
            if isinstance(step, Stop):
                return RunEnd.ALL_DECIDED if step.decided else \
                    RunEnd.LEFT_OPEN if step.left_open else RunEnd.COMPLETE
            if not step.points:
                continue  # stored by an earlier run
            if self.budget.stops(round_number - 1, last):
                return RunEnd.BUDGET_SPENT
            summary.rounds += 1
            progress.round(round_number, step.points)
            began = time.monotonic()
            records, set_up = self._round(session, fleet, round_number, step.points, progress)
            last = time.monotonic() - began
            if sum(map(len, step.points.values())) == len(run.threads) * len(
                    self.plan.configs):  # a whole round: the pace of the rounds to come
                timed.append(last - set_up)
            summary.measured += len(records)
            summary.failed += sum(r.status == PointStatus.FAILED for r in records)
            if self.budget.spent():
                if self._first_look_unfitted(round_number, timed):
                    self._fit_looks(round_number, timed)
                return RunEnd.BUDGET_SPENT

    def _round(self, session: int, fleet: Fleet | None, round_number: int,
               needed: dict[int, list[ServerConfig]], progress: Progress
               ) -> tuple[list[PointRecord], float]:
        """Round `round_number`'s `needed` points, on `fleet` or serially (`_steps`); with the
        seconds spent sizing the fleet's slices, set-up that is not the round's pace."""
        if fleet is None:
            return self._steps(session, None, round_number, needed, progress), 0.0
        configs = list(dict.fromkeys(c for cs in needed.values() for c in cs))
        with self.measurer.fleet_round(fleet, round_number, rotated(configs, round_number),
                                       list(needed)) as sizing:
            return self._steps(session, fleet, round_number, needed, progress), sizing

    def _steps(self, session: int, fleet: Fleet | None, round_number: int,
               needed: dict[int, list[ServerConfig]], progress: Progress) -> list[PointRecord]:
        """The round's points in its order, rotated by one each round (thread counts, and the
        configurations at each), said as they are stored: at each thread count one sliced run
        on `fleet`, or one point after another. Once one is measured, none starts that the
        budget would not hold at the pace of the last."""
        records: list[PointRecord] = []
        step = 0.0
        for threads in rotated([t for t in self.plan.run.threads if t in needed], round_number):
            configs = rotated(needed[threads], round_number)
            for group in [configs] if fleet else [[c] for c in configs]:
                if records and not self.budget.holds(step):
                    return records
                begun = time.monotonic()
                if fleet is not None:
                    measured = self.measurer.measure_turns(fleet, session, round_number, threads,
                                                           group)
                else:
                    point = self.plan.point(group[0], threads, round_number)
                    measured = [self.measurer.measure_point(session, point, replace=True)]
                for record in measured:
                    progress.done(record)
                records += measured
                step = time.monotonic() - begun
        return records

    def _stored_ok(self) -> list[StoredPoint]:
        definitions = [self.plan.config_hash(c) for c in self.plan.configs]
        return [p for p in self.store.points(self.plan.name, definitions) if p.ok]

    def _first_look_unfitted(self, done: int, timed: list[float]) -> bool:
        """Whether a budgeted study has just done its planned rounds, at its first look, and
        its looks are not fitted yet. A budget spent by then fits them too (to the rounds
        done: one look at the family's full level), rather than leaving that look judged as
        one of max_rounds."""
        run = self.plan.run
        return (done == run.rounds and bool(timed) and self.budget.deadline is not None
                and not run.planned_rounds
                and all(p.round <= run.rounds for p in self._stored_ok()))

    def _fit_looks(self, done: int, timed: list[float]) -> tuple[Plan, Design]:
        """The looks fitted after round `done` to the rounds the budget's deadline holds."""
        assert self.budget.deadline is not None, "looks are fitted to a budget that started"
        return fit_looks(self.store, self.plan, done, self.budget.deadline, timed, self.say)


def latest_round_seconds(points: list[StoredPoint]) -> float:
    """The wall seconds the latest round of `points` took in the run that measured its last
    point, from the end of that run's round before (the servers' starts between count) or, if
    it had none, from the round's first point (0 without points)."""
    runs = _rounds_by_run(points)
    if not runs:
        return 0.0
    latest = max(r for rounds in runs.values() for r in rounds)
    run = max((rounds for rounds in runs.values() if latest in rounds),
              key=lambda rounds: rounds[latest][1])
    return _span(run, latest - 1, latest)


def budget_spent(points: Iterable[StoredPoint], after_round: int) -> float:
    """The seconds earlier runs of a study spent on its rounds after `after_round`: each run's
    span from the end of its round `after_round` (or, if it had none, the first later point's
    start) to its last point's end, so that the work between rounds (server starts, slice
    sizing) counts as it did in the run, and the time between two runs does not. A resumed
    study measures on for what is left of its budget, not for the whole budget again."""
    return sum(_span(rounds, after_round, math.inf) for rounds in _rounds_by_run(points).values())


def _rounds_by_run(points: Iterable[StoredPoint]) -> dict[int, dict[int, tuple[float, float]]]:
    """Each run's (session's) rounds: their first point's start and their last one's end."""
    runs: dict[int, dict[int, tuple[float, float]]] = {}
    for point in points:
        rounds = runs.setdefault(point.session_id, {})
        first, last = rounds.get(point.round, (point.started_at, point.finished_at))
        rounds[point.round] = (min(first, point.started_at), max(last, point.finished_at))
    return runs


def _span(rounds: dict[int, tuple[float, float]], after: int, upto: float) -> float:
    """The wall time one run spent on its `rounds` after `after` up to `upto`: from the end of
    its latest round at or before `after` (a run measures its rounds in order), else from the
    first such round's first point, to the last one's end."""
    inside = [span for number, span in rounds.items() if after < number <= upto]
    if not inside:
        return 0.0
    before = [end for number, (_, end) in rounds.items() if number <= after]
    start = max(before) if before else min(first for first, _ in inside)
    return max(end for _, end in inside) - start


def fit_looks(store: ResultStore, plan: Plan, done: int, deadline: float, timed: list[float],
              say: Say) -> tuple[Plan, Design]:
    """At a budgeted study's first look: its looks fitted to the rounds the budget holds
    (rounds.fitted_looks), recorded for it, and the design they give."""
    plan = fitted_looks(plan, done, deadline - time.monotonic(), timed)
    store.fit_rounds(plan.name, plan.run.planned_rounds)
    design = store.design(plan.name)
    pace = f"{statistics.mean(timed):.0f} s a round so far"
    say(f"looks: after rounds {design.first_look}..{design.last_look}, "
        + (f"what the budget holds at {pace} (levels fitted to them)" if design.fitted
           else f"max_rounds (the budget holds more at {pace}: Pocock's constant level)"))
    return plan, design


