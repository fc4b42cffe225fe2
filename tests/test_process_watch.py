"""The server process's CPU time and context switches over a point's window (probes/status.py),
read here on this test's own process: a thread that ends inside the window keeps its count."""

import os
import threading
import time

import pytest

from perflab.probes.status import ProcessWatch
from perflab.store.records import CONTEXT_SWITCHES, CPU_SECONDS, per_query

pytestmark = pytest.mark.fast


def sleeper(naps: int) -> None:
    for _ in range(naps):
        time.sleep(0.002)  # each nap gives the CPU up: one voluntary switch at least


def test_a_thread_that_ends_inside_the_window_keeps_its_switches_and_cpu_is_counted():
    pid = os.getpid()
    with ProcessWatch([pid]) as watch:
        worker = threading.Thread(target=sleeper, args=(400,))  # ~1 s: sampled, then gone
        worker.start()
        worker.join()
        deadline = time.process_time() + 0.2
        while time.process_time() < deadline:  # some CPU of this process's own
            pass
    counters = watch.counters(pid)
    # its naps but the last SAMPLE_SECONDS' at most (a thread counted only while alive: ~0)
    assert counters[CONTEXT_SWITCHES] >= 400 * (1 - ProcessWatch.SAMPLE_SECONDS / 0.8)
    assert counters[CPU_SECONDS] >= 0.15


def test_a_process_that_cannot_be_read_gives_no_counters_and_no_figure():
    with ProcessWatch([2**22 + 1]) as watch:  # above any pid_max: no such process
        pass
    assert watch.counters(2**22 + 1) == {} and watch.counters(None) == {}
    assert per_query({"Questions": 10}, CPU_SECONDS) is None
    assert per_query({"Questions": 0, CPU_SECONDS: 1.0}, CPU_SECONDS) is None
    assert per_query({"Questions": 4, CPU_SECONDS: 2.0}, CPU_SECONDS, 1e6) == 5e5
