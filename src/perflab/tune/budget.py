"""The whole tune's time: the trials that find an answer and the end phases that check it
(the re-measure and the put-back), within one budget that the user sets and the run keeps.

A user who asks for 12 trials expects minutes. Before this budget, a 4-minute search was
followed by 26 minutes of checks, and the run was stopped from outside before any my.cnf was
printed. The checks stay, because they make the answer honest, but each phase now starts only
with budget left, and a study stops at its deadline once it has the rounds an interval needs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from perflab.errors import PerflabError
from perflab.output.text import duration

TRIALS_SHARE = 1 / 3  # of a time budget, the trials' share at most; the rest checks the answer
CHECK_FACTOR = 2.0  # with a trial count only: checking takes at most this times the trials'
# of the checks' budget, the re-measure's share at most: the put-back, which makes the my.cnf
# small, needs the rest (12 re-measure rounds of 6 servers took 8 of a check's 9 minutes)
REMEASURE_SHARE = 0.5
# the time line's name for the end phases' time in a resumed tune's earlier runs
EARLIER_CHECKS = "checks before resuming"


class CheckEnded(Exception):
    """The tune's budget ended before an end phase's study could start."""


class CheckInterrupted(KeyboardInterrupt):
    """A Ctrl-C (or SIGTERM, SIGHUP) while the answer was checked: a KeyboardInterrupt, so
    that it stops the tune as any other does, carrying the result as far as it was decided so
    that the my.cnf is printed before perflab stops."""

    def __init__(self, result) -> None:
        super().__init__(result.ended)
        self.result = result


@dataclass
class TuneBudget:
    """`trials` (a count, any worker's) and/or `seconds` (this worker's whole tune, trials and
    checks together). With seconds, the trials stop at TRIALS_SHARE of them and the checks get
    the rest; without, the checks get CHECK_FACTOR times the trials' own measured time."""

    trials: int | None = None
    seconds: float | None = None
    started: float = field(default_factory=time.monotonic)
    check_until: float | None = None  # set when the trials end (`start_checking`)
    # the seconds one point took in the end phases' latest study, its servers' starts included
    # (`paced`): what a study not yet started is expected to need
    point_seconds: float | None = None
    # the trials' own wall time, every run's (search.trials_time), set when they end: with a
    # trial count only, the checks get CHECK_FACTOR times it. Not this run's clock: resumed
    # after its trials, a tune counted its own read-back (bench/tune: 12 s, where the first run
    # had 3 s left) as trials' time, twice over.
    trials_time: float = 0.0
    # a resumed tune's earlier work, for `spent`: its trials' wall time (search.trials_time)
    # and its checks', charged study by study as each is read back (`replayed`)
    earlier_trials: float = 0.0
    earlier_checks: float = 0.0

    def __post_init__(self) -> None:
        if self.seconds is not None and not self.seconds > 0:
            raise PerflabError(f"seconds must be a positive number, got {self.seconds}",
                               option="seconds")
        if self.trials is not None and self.trials < 1:
            raise PerflabError(f"budget must be at least 1 trial, got {self.trials}",
                               option="budget")
        if not self.trials and not self.seconds:
            raise PerflabError("give the search a budget (trials) or a time limit (seconds)",
                               option="budget")

    def trial_seconds(self) -> float | None:
        """The trials' time limit (from the start), when the budget has one."""
        return self.seconds * TRIALS_SHARE if self.seconds else None

    def trials_over(self, done: int) -> bool:
        """Whether the search should start no more trials (`done`: the study's so far)."""
        if self.trials and done >= self.trials:
            return True
        limit = self.trial_seconds()
        return limit is not None and time.monotonic() - self.started >= limit

    def split(self) -> str:
        """How the budget splits, said before the run starts."""
        count = f"{self.trials} trial(s)" if self.trials else ""
        if self.seconds:
            trials = duration(self.seconds * TRIALS_SHARE)
            limit = f"{count}, at most {trials}" if count else f"trials ≤ {trials}"
            return (f"budget {duration(self.seconds)}: {limit}; checking the answer "
                    f"(re-measure, put-back) gets the rest, at least "
                    f"{duration(self.seconds * (1 - TRIALS_SHARE))}")
        return (f"budget {count}; checking the answer (re-measure, put-back) at most "
                f"{CHECK_FACTOR:g} times the trials' own time")

    def spent(self) -> float:
        """The tune's seconds so far, a resumed tune's earlier runs included."""
        return time.monotonic() - self.started + self.earlier_trials + self.earlier_checks

    def start_checking(self) -> float:
        """The trials are over: the end phases' deadline from now, which is returned in
        seconds. A time budget counts from this run's start: a resumed run gets its `seconds`
        again, as a new run of the command would."""
        now = time.monotonic()
        self.check_until = self.started + self.seconds if self.seconds else \
            now + CHECK_FACTOR * self.trials_time
        return self.check_until - now

    def replayed(self, seconds: float) -> None:
        """An end phase's study was read back from storage, where earlier runs of the tune
        spent `seconds` on it (final.spent_before). With a trial count they are charged now,
        once it is read back, so that the next study starts with what it had in the first
        run. Charged before, they left a resumed tune a few seconds for the studies it read
        back, and a study's pace (`paced`) refused them where the first run had measured
        them. A time budget is each run's own (`start_checking`): nothing is charged."""
        self.earlier_checks += seconds
        if self.check_until is not None and not self.seconds:
            self.check_until -= seconds

    def left(self) -> float:
        """Seconds the end phases have left (infinite before `start_checking`)."""
        if self.check_until is None:
            return float("inf")
        return max(0.0, self.check_until - time.monotonic())

    def until(self, share: float = 1.0, earlier: float = 0.0) -> float | None:
        """The deadline (time.monotonic()) of a phase given `share` of what is left, None
        before `start_checking`; with a trial count, less the `earlier` seconds its study's
        earlier runs spent on it, so that a resumed study stops where its first run did."""
        if self.check_until is None:
            return None
        return time.monotonic() + share * self.left() - (0.0 if self.seconds else earlier)

    def paced(self, seconds: float, points: int) -> None:
        """A study of the end phases has `points` that took `seconds` of wall time, this run's
        and its earlier runs' (a study read back from storage measures none, and its pace is
        the one its first run measured it at)."""
        if points:
            self.point_seconds = seconds / points

    def before_study(self, what: str, points: int = 0) -> None:
        """Raise CheckEnded, naming `what` was not measured, when no budget is left, or too
        little for the `points` its first rounds need (an interval needs two) at the latest
        study's pace: a study that cannot reach an interval would only spend past the end."""
        left = self.left()
        if left <= 0:
            raise CheckEnded(what)
        needed = points * (self.point_seconds or 0.0)
        if needed > left:
            raise CheckEnded(f"{what} (its first {points} points need about "
                             f"{duration(needed)} at the last study's pace, "
                             f"{duration(left)} left)")
