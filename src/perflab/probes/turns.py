"""How much of each fleet server's CPU time falls in the other servers' turns.

In the fleet, servers take turns in time slices, but a server's background work (an event,
InnoDB's flushing and purge, a checkpoint) runs whenever it is due, also in another server's
slice, where it takes that server's CPU and is charged to it: the ratio then leans toward the
server that works in the background. bench/validity's background-writes A/A measures that
lean. This probe shows it on every fleet point: it samples each server's process CPU time
(/proc/PID/stat, all its threads) every SAMPLE_SECONDS of the measured window and shares each
sample out to the turns it overlapped, by time.
"""

from __future__ import annotations

import math
import os
import threading
from pathlib import Path

from perflab.load.sysbench import Slicing, monotonic_ms

SAMPLE_SECONDS = 0.02
TICKS = os.sysconf("SC_CLK_TCK")


class TurnCpu:
    """A context manager around a sliced run: per server (pid, in the slicing's order), the
    CPU seconds it used in its own turns and in the others', over the measured window."""

    def __init__(self, pids: list[int], slicing: Slicing):
        self.pids = pids
        self.slicing = slicing
        self.own = [0.0] * len(pids)
        self.others = [0.0] * len(pids)
        self.failed = False  # the watch stopped on an error: no shares to give
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="turn-cpu", daemon=True)

    def __enter__(self) -> TurnCpu:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()

    def off_turn(self, index: int) -> float | None:
        """The share of server `index`'s CPU time in the measured window that fell in the
        other servers' turns (None: no CPU time seen)."""
        total = self.own[index] + self.others[index]
        return self.others[index] / total if total > 0 and not self.failed else None

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
            for owner, part in self._portions(max(at, start), min(now, end), now - at):
                for index, (old, new) in enumerate(zip(before, used, strict=True)):
                    spent = max(new - old, 0.0) * part
                    if index == owner:
                        self.own[index] += spent
                    else:
                        self.others[index] += spent
            before, at = used, now

    def _portions(self, begin: float, end: float, length: float):
        """(whose turn, share of a sample `length` ms long) for each turn that [begin, end)
        overlaps: a sample across a turn's edge is shared out by time."""
        s = self.slicing
        while begin < end:
            turn = math.floor((begin - s.epoch_ms) / s.slice_ms)
            edge = min(end, s.epoch_ms + (turn + 1) * s.slice_ms)
            yield turn % s.count, (edge - begin) / length
            begin = edge


def _cpu(pids: list[int]) -> list[float]:
    """Each process's user and system CPU seconds so far (0 for one that is gone)."""
    out = []
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            out.append(0.0)
            continue
        out.append((int(fields[11]) + int(fields[12])) / TICKS)  # utime, stime
    return out
