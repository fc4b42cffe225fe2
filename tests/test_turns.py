"""The fleet's probe of background work (probes/turns.py) on real processes: CPU time is
credited to the turn it was spent in."""

import subprocess
import sys
import time

import pytest

from perflab.load.sysbench import Slicing, monotonic_ms
from perflab.probes.turns import TurnCpu

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

# Spins only in the turns of process `index` (0 of 2, 100-ms slices from EPOCH), sleeps else.
IN_TURN = """
import math, sys, time
epoch, index = float(sys.argv[1]), int(sys.argv[2])
while True:
    at = time.clock_gettime(time.CLOCK_MONOTONIC) * 1000 - epoch
    if at >= 0 and math.floor(at / 100) % 2 == index:
        continue
    time.sleep(0.002)
"""


def test_cpu_is_credited_to_the_turn_it_was_spent_in():
    """Over 1.5 s of 100-ms turns between two processes: one that spins all the time spends
    about half its CPU in the other's turns, one that spins only in its own turns almost
    none."""
    epoch = monotonic_ms() + 100
    processes = [subprocess.Popen([sys.executable, "-c", "while True: pass"]),
                 subprocess.Popen([sys.executable, "-c", IN_TURN, str(epoch), "1"])]
    try:
        with TurnCpu([p.pid for p in processes], Slicing(epoch, 100, 2, 0, 1500)) as turns:
            time.sleep(1.8)
    finally:
        for process in processes:
            process.kill()
            process.wait()
    assert 0.35 < turns.off_turn(0) < 0.65
    assert turns.own[1] > 0.3  # it did spin, in its own turns
    assert turns.off_turn(1) < 0.15
