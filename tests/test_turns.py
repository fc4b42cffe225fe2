"""The fleet's probe of background work (running/turns.py) on real processes: CPU time is
credited to the turn it was spent in."""

import subprocess
import sys
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.load.sysbench import MIN_TURNS, Slicing, _slice_series, monotonic_ms, turns_window_ms
from perflab.probes.status import TICKS
from perflab.running.turns import TurnCpu, guard_ms

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

# Spins only in the turns of process 1 of 2 (100-ms slices from the epoch given) and the first
# DRAIN ms after them (as the queries started late in a turn finish), sleeps else, looking at
# the clock every 10 ms: a tighter poll is itself CPU in the other's turns (at 2 ms, 1 or 2
# ticks in 1 run of 8)
IN_TURN = """
import sys, time
drain, epoch = float(sys.argv[1]), float(sys.argv[2])
while True:
    at = time.clock_gettime(time.CLOCK_MONOTONIC) * 1000 - epoch
    if at >= 0 and (at - 100) % 200 < 100 + drain:
        continue
    time.sleep(0.01)
"""


def watched(code: list[str]) -> TurnCpu:
    """1 s of 100-ms turns between two servers, of which the process running `code` (with
    the epoch as its last argument) is the second (index 1); the first is nobody, so nothing it
    does competes with the process. The window opens 0.3 s after the process starts, so
    Python's own start is not in it. On a machine too busy to give the process 0.1 s of CPU,
    once more (twice at most)."""
    for _ in range(3):
        epoch = monotonic_ms() + 100
        process = subprocess.Popen([sys.executable, "-c", *code, str(epoch)])
        try:
            with TurnCpu([0, process.pid], Slicing(epoch, 100, 2, 200, 1000)) as turns:
                time.sleep(1.4)
        finally:
            process.kill()
            process.wait()
        if turns.own[1] + turns.others[1] >= 0.1:
            break
    return turns


def test_cpu_is_credited_to_the_turn_it_was_spent_in():
    """A process that spins all the time spends about half its CPU in the other's turns
    (whatever else loads the machine, it does so in both turns alike); one that spins only in
    its own turns next to none, even when it goes on for 30 ms into the next turn, as the queries
    in flight at a turn's end do (the turn's first GUARD_MS are not counted); a pid that is
    gone has no CPU time to share."""
    spinning = watched(["import sys\nwhile True: pass"])
    assert 0.35 < spinning.off_turn(1) < 0.65
    assert spinning.off_turn(0) is None
    for drain in ("0", "30"):
        in_turn = watched([IN_TURN, drain])
        assert in_turn.own[1] > 0.02  # it did spin, in its own turns
        # CPU time moves in clock ticks: a tick may land on its polling in a counted stretch of
        # the other's turns (counting the 30 ms after its turns gave 0.15 s)
        assert in_turn.others[1] <= 2 / TICKS, drain


def test_the_guard_fits_the_slice():
    """40 ms of a quarter-second turn; a longer share of a long slice (its events may run up to
    a tenth of it); half of a short one, so that a 20-ms sample still fits past it."""
    assert guard_ms(250) == 40
    assert guard_ms(1000) == 150
    assert guard_ms(60) == 30


@given(slice_ms=st.integers(1, 100).map(lambda k: 50.0 * k), count=st.integers(1, 6),
       run_seconds=st.integers(1, 30))
def test_every_server_gets_as_many_turns_as_its_seconds_say(slice_ms, count, run_seconds):
    """A point's measured window is whole rotations: each server's turns, as its series counts
    them, last exactly the seconds its rate is divided by, at least run_seconds and MIN_TURNS,
    and no turn more than that needs. (Three servers in 0.3-s slices over 6 s had 7, 7 and 6
    turns, each credited 2 s.)"""
    slicing = Slicing(0.0, slice_ms, count, 0.0, turns_window_ms(run_seconds, slice_ms, count))
    slices = round(slicing.measure_ms / slice_ms)
    windows = [{"slices": {str(s): 1.0 for s in range(slices)}}]
    total = {"reads": slices, "writes": 0, "other": 0}
    turns = {len(_slice_series(total, windows, slicing, index, slices))
             for index in range(count)}
    assert len(turns) == 1
    mine = turns.pop()
    assert mine * slice_ms == pytest.approx(slicing.seconds * 1000)
    assert mine >= MIN_TURNS and mine * slice_ms >= run_seconds * 1000
    assert (mine - 1) * slice_ms < max(run_seconds * 1000, MIN_TURNS * slice_ms)
