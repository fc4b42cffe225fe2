"""Running a study: from a validated plan to stored points, round after round.

A round measures every comparison still open once: at each thread count, the baseline and the
configurations compared with it are measured close in time, in an order drawn for the round,
so that each round gives one paired ratio per comparison (stats/decide.py). With a fleet (one
server per configuration, _fleet.py) they take turns in time slices within one run; serially,
they run back to back on one server, switched by SET GLOBAL when every changed variable is
dynamic and restarted otherwise, each change followed by a warm-up.

Without a time budget a study runs its `repeats` rounds. With one, rounds go on after those only
for the comparisons still inconclusive, until every one is decided, the budget is spent or
max_rounds is reached. A point whose server dies is stored as failed with the error-log tail.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Iterable
from dataclasses import dataclass, replace

from perflab.lab import Lab
from perflab.plan import Plan, Schedule
from perflab.probes import busy
from perflab.procs import check_stop
from perflab.running._fleet import Fleet
from perflab.running._progress import Progress
from perflab.running.measurer import Measurer
from perflab.running.noise import budget_reach, forecast, frozen_dependence, save_noise
from perflab.running.rounds import Stop, fitted_looks, next_round
from perflab.say import Say
from perflab.server.existing import ExistingServer, restore_pending
from perflab.stats.design import Design
from perflab.store import PointStatus, ResultStore, RunEnd, StoredPoint


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


class Runner(Measurer):
    """The round loop of one plan: every round not stored yet, or with a time budget the rounds
    that decide (rounds.py), over what the Measurer measures.

    `budget_after_planned`: the time budget starts once the planned rounds (run.repeats) are
    done, instead of once the data is there; they are always measured whole, and the budget
    is only for the rounds that decide what they left open (tune's put-back, whose planned
    rounds come from the lab's noise, not from its user). A resumed study measures for what
    is left of its budget (`budget_spent`).

    `noise_source`: what the lab's stored noise figure of this study is called ("run",
    "calibrate"); None stores none, for a study whose comparisons were chosen for their effects
    (tune's re-measure and put-back): their drift is not the machine's noise.

    `stop_at` (time.monotonic()): no round starts after it once this run has measured
    `at_least` rounds, whatever the study's own budget (a tune's whole budget, tune/budget.py)."""

    def __init__(self, plan: Plan, lab: Lab, store: ResultStore, say: Say = print,
                 existing: ExistingServer | None = None, *, budget_after_planned: bool = False,
                 noise_source: str | None = "run", stop_at: float | None = None,
                 at_least: int = 0):
        super().__init__(plan, lab, store, say, existing)
        self.budget_after_planned = budget_after_planned
        self.noise_source = noise_source
        self.stop_at, self.at_least = stop_at, at_least

    def run(self) -> RunSummary:
        """Every round not stored yet; with a time budget, the rounds that decide."""
        try:
            return self._rounds()
        finally:
            if self.clients is not None:
                self.clients.close()

    def _existing_pid(self) -> list[int]:
        """The existing server this run measures, when it runs on this machine: its work (the
        dataset loading into it, the load) is not other work (probes/busy.py)."""
        if self.existing is None:
            return []
        with self.existing.connect() as conn:
            pid = busy.server_pid(conn)
        return [pid] if pid else []

    def _rounds(self) -> RunSummary:
        started = time.monotonic()
        design, deadline = self._set_up()
        schedule = self.schedule
        assert schedule is not None, "chosen by _set_up"
        run = self.plan.run
        summary = RunSummary(self.plan.name, schedule, 0, len(self._stored_ok()), 0, 0, 0.0)
        if summary.already_stored:
            planned = len(self.plan.configs) * len(run.threads) * run.repeats
            self.say(f"resuming: {summary.already_stored} of {planned} points already stored")
        session = self.open_session()
        fleet = self._fleet(session, self.plan) if schedule == Schedule.FLEET else None
        try:
            summary.stopped = self._loop(session, fleet, design, deadline, summary)
        except BaseException:
            summary.stopped = RunEnd.INTERRUPTED
            raise
        finally:
            if fleet is not None:
                fleet.stop()
            self.close_session(session, summary.stopped)
            summary.seconds = time.monotonic() - started
            save_noise(self.store, self.plan, self.workload, schedule, self._stored_ok(),
                       self.noise_source)
        if not summary.rounds and summary.stopped == RunEnd.BUDGET_SPENT:
            self.say(f"the time budget of {self.plan.name} ({self.plan.run.time:g} s) was "
                     "spent by its earlier runs: nothing measured (a larger budget measures on)")
        elif not summary.rounds and summary.already_stored:
            self.say(f"all {summary.already_stored} points of {self.plan.name} are already "
                     "stored")
        return summary

    def _set_up(self) -> tuple[Design, float | None]:
        """Before the first round: the datasets ready, the schedule chosen, the dependence
        allowance and the looks frozen (a study's first run sets them, later runs keep them),
        the forecast said. Returns the design and the budget's deadline, which starts once all
        that is done (the looks' boundaries of a long max_rounds take minutes to simulate):
        the budget is for the rounds (with budget_after_planned, None: it
        starts once the planned rounds are done, in `_loop`)."""
        watch = busy.Watch(self._existing_pid())  # other work while the study sets up
        for config in self.plan.configs:
            self.backend.ensure_dataset(config)
        run = self.plan.run
        self.schedule, why = self.backend.schedule()
        self.say(f"schedule: {self.schedule} ({why})")
        self.plan = frozen_dependence(self.store, self.plan, self.workload, self.schedule)
        self.plan = replace(self.plan, run=replace(  # looks fitted by an earlier run stay
            self.plan.run, planned_rounds=self.store.planned_rounds(self.plan.name)))
        self.plan_id = self.store.save_plan(
            self.plan, self.workload.family.describe(self.plan.dataset))
        design = self.store.design(self.plan.name)  # this plan's looks and earlier runs'
        if design.fitted and run.repeats > design.last_look:
            self.say(f"the looks were fitted to rounds {design.first_look}..{design.last_look} "
                     f"at this study's first run: it stops there, not at {run.repeats} rounds "
                     "(a longer study is a new study: give the plan another name)")
            self.plan = replace(self.plan, run=replace(self.plan.run,
                                                       repeats=design.last_look))
        for line in forecast(self.plan, design, self.noise()):
            self.say(line)
        busy_now = watch.warning()
        if busy_now:
            self.say(f"WARNING: {busy_now}")
        deadline = time.monotonic() + self._budget_left(0) \
            if run.time and not self.budget_after_planned else None
        return design, deadline

    def _loop(self, session: int, fleet: Fleet | None, design: Design,
              deadline: float | None, summary: RunSummary) -> RunEnd:
        """Round after round until the round policy stops or the budget is spent, counting
        what was measured in `summary`; returns why it stopped. A budgeted study's looks are
        fitted once its planned rounds are done, to the rounds the budget holds at their
        pace."""
        run = self.plan.run
        progress = Progress(self.plan, self.say, deadline)
        round_number = 0
        timed: list[float] = []  # seconds of each whole round
        while True:
            check_stop()
            round_number += 1
            if self.budget_after_planned and run.time and round_number - 1 == run.repeats:
                deadline = progress.deadline = time.monotonic() + self._budget_left(
                    run.repeats)
            stored = self._stored_ok()
            if self._first_look_unfitted(round_number - 1, deadline, timed):
                assert deadline is not None
                self.plan, design = fit_looks(self.store, self.plan, round_number - 1,
                                              deadline, timed, self.say)
                reach = budget_reach(self.plan, design, stored, statistics.mean(timed))
                if reach:
                    self.say(reach)
            step = next_round(self.plan, stored, design, round_number)
            if step.note:
                self.say(step.note)
            if isinstance(step, Stop):
                return RunEnd.ALL_DECIDED if step.decided else RunEnd.COMPLETE
            if not step.points:
                continue  # stored by an earlier run
            if deadline is not None and time.monotonic() >= deadline or self._stopped(summary):
                return RunEnd.BUDGET_SPENT
            summary.rounds += 1
            progress.round(round_number, step.points)
            began, self.sizing_seconds = time.monotonic(), 0.0
            records = (self._fleet_round(fleet, session, round_number, step.points, deadline,
                                         progress)
                       if fleet else
                       self._serial_round(session, round_number, step.points, deadline,
                                          progress))
            if sum(map(len, step.points.values())) == len(run.threads) * len(
                    self.plan.configs):  # a whole round: the pace of the rounds to come
                timed.append(time.monotonic() - began - self.sizing_seconds)
            summary.measured += len(records)
            summary.failed += sum(r.status == PointStatus.FAILED for r in records)
            if deadline is not None and time.monotonic() >= deadline:
                if self._first_look_unfitted(round_number, deadline, timed):
                    fit_looks(self.store, self.plan, round_number, deadline, timed, self.say)
                return RunEnd.BUDGET_SPENT

    def _fleet(self, session: int, plan: Plan) -> Fleet:
        fleet = super()._fleet(session, plan)
        fleet.probe_every = self.noise_source is None  # comparisons chosen for their effects
        return fleet

    def _stopped(self, summary: RunSummary) -> bool:
        """Whether `stop_at` has passed and this run has its `at_least` rounds."""
        return (self.stop_at is not None and summary.rounds >= self.at_least
                and time.monotonic() >= self.stop_at)

    def _budget_left(self, after_round: int) -> float:
        """The seconds left of the study's time budget for its rounds after `after_round`,
        what its earlier runs spent on them taken off (said when they spent any)."""
        spent = budget_spent(self._stored_ok(), after_round)
        if spent:
            self.say(f"time budget: {spent:.0f} s of {self.plan.run.time:g} s spent by earlier "
                     f"runs of this study, {max(self.plan.run.time - spent, 0):.0f} s left")
        return self.plan.run.time - spent

    def _first_look_unfitted(self, done: int, deadline: float | None, timed: list[float]
                             ) -> bool:
        """Whether a budgeted study has just done its planned rounds, at its first look, and
        its looks are not fitted yet. A budget spent by then fits them too (to the rounds
        done: one look at the family's full level), rather than leaving that look judged as
        one of max_rounds."""
        run = self.plan.run
        return (done == run.repeats and bool(timed) and deadline is not None
                and not run.planned_rounds
                and all(p.round <= run.repeats for p in self._stored_ok()))


def budget_spent(points: Iterable[StoredPoint], after_round: int) -> float:
    """The seconds earlier runs of a study spent on its rounds after `after_round`: each run's
    span from the first such point's start to the last one's end, so that the work between
    rounds (server starts, slice sizing) counts as it did in the run, and the time between
    two runs does not. A resumed study measures on for what is left of its budget, not for
    the whole budget again."""
    spans: dict[int, tuple[float, float]] = {}
    for point in points:
        if point.round > after_round:
            first, last = spans.get(point.session_id, (point.started_at, point.finished_at))
            spans[point.session_id] = (min(first, point.started_at),
                                       max(last, point.finished_at))
    return sum(last - first for first, last in spans.values())


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


