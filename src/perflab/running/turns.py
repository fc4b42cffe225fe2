"""How much of each fleet server's CPU time falls in the other servers' turns.

In the fleet, servers take turns in time slices, but a server's background work (an event,
InnoDB's flushing and purge, a checkpoint) runs whenever it is due, also in another server's
slice, where it takes that server's CPU and is charged to it: the ratio then leans toward the
server that works in the background. bench/validity's background-writes A/A measures that
lean. This probe shows it on every fleet point: it samples each server's process CPU time
(/proc/PID/stat, all its threads) every SAMPLE_SECONDS of the measured window.

Only samples wholly inside one turn, past its first GUARD_MS (`guard_ms`), are counted, and
the share is made of CPU *rates* (CPU seconds per second of turn), each scaled to the turns'
full length.
At a turn's edges two things are not background work: the queries a server started late in its
own turn finish in the next one (their CPU is its own), and a sample across an edge cannot say
on which side its CPU was spent. Counted, they gave every server of the key-cache demo a floor
of about 3% and 6-8% at 64-128 threads, where many queries are in flight at a turn's end.
"""

from __future__ import annotations

import math
import threading

from perflab.load.sysbench import Slicing, monotonic_ms
from perflab.probes.status import cpu_seconds

SAMPLE_SECONDS = 0.02
GUARD_MS = 40.0  # a turn's start, where the queries of the turn before still finish ...
GUARD_SHARE = (0.15, 0.5)  # ... or this share of a longer slice, at most half a short one


class TurnCpu:
    """A context manager around a sliced run: per server (pid, in the slicing's order), the
    CPU seconds it used and the milliseconds counted, in its own turns and in the others', over
    the measured window (turns' edges left out)."""

    def __init__(self, pids: list[int], slicing: Slicing):
        self.pids = pids
        self.slicing = slicing
        self.own = [0.0] * len(pids)
        self.others = [0.0] * len(pids)
        self.own_ms = [0.0] * len(pids)
        self.others_ms = [0.0] * len(pids)
        self.failed = False  # the watch stopped on an error: no shares to give
        self._guard_ms = guard_ms(slicing.slice_ms)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="turn-cpu", daemon=True)

    def __enter__(self) -> TurnCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def off_turn(self, index: int) -> float | None:
        """The share of server `index`'s CPU time that fell in the other servers' turns, from
        its CPU rate in its own turns and in theirs (None: no rate measured, or no CPU)."""
        if self.failed or not self.own_ms[index] or not self.others_ms[index]:
            return None
        own = self.own[index] / self.own_ms[index]
        others = self.others[index] / self.others_ms[index] * (self.slicing.count - 1)
        return others / (own + others) if own + others > 0 else None

    def _watch(self) -> None:
        try:
            self._credit()
        except Exception:  # a probe must never fail the point it watches
            self.failed = True

    def _credit(self) -> None:
        s = self.slicing
        start, end = s.epoch_ms + s.lead_ms, s.epoch_ms + s.lead_ms + s.measure_ms
        before, at = _cpu(self.pids), monotonic_ms()
        while not self._done.wait(SAMPLE_SECONDS) and at < end:
            now, used = monotonic_ms(), _cpu(self.pids)
            owner = self._inside(at, now) if start <= at and now <= end else None
            if owner is not None:
                for index, (old, new) in enumerate(zip(before, used, strict=True)):
                    spent = max(new - old, 0.0)
                    if index == owner:
                        self.own[index] += spent
                        self.own_ms[index] += now - at
                    else:
                        self.others[index] += spent
                        self.others_ms[index] += now - at
            before, at = used, now

    def _inside(self, begin: float, end: float) -> int | None:
        """Whose turn [begin, end) lies in, past the turn's guard (`guard_ms`); None for a
        sample across an edge or in a guard."""
        s = self.slicing
        turn = math.floor((begin - s.epoch_ms) / s.slice_ms)
        turn_start = s.epoch_ms + turn * s.slice_ms
        if begin < turn_start + self._guard_ms or end > turn_start + s.slice_ms:
            return None
        return turn % s.count


def guard_ms(slice_ms: float) -> float:
    """The start of a turn left out: GUARD_MS, more in long slices (whose events may run
    longer, up to a tenth of the slice), at most half a short slice (so samples still fit)."""
    low, high = GUARD_SHARE
    return min(max(GUARD_MS, low * slice_ms), high * slice_ms)


def _cpu(pids: list[int]) -> list[float]:
    """Each process's user and system CPU seconds so far (0 for one that is gone)."""
    return [cpu_seconds(pid) or 0.0 for pid in pids]
