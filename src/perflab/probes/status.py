"""SHOW GLOBAL STATUS snapshots and their deltas over a measured window, and the server
process's own counters over the same window (CPU_SECONDS, CONTEXT_SWITCHES), kept beside
them."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pymysql

from perflab.server.connection import query
from perflab.store.records import CONTEXT_SWITCHES, CPU_SECONDS


def global_status(conn: pymysql.Connection) -> dict[str, float]:
    """The numeric status counters and gauges, by name."""
    values = {}
    for name, value in query(conn, "SHOW GLOBAL STATUS"):
        try:
            values[name] = float(value)
        except (TypeError, ValueError):
            continue
    return values


TICKS = os.sysconf("SC_CLK_TCK")


class ProcessWatch:
    """A context manager around a window: per local server process (pid), its CPU seconds and
    context switches over it (CPU_SECONDS, CONTEXT_SWITCHES; `counters(pid)`).

    CPU time is the process's own total, which keeps its ended threads'. Context switches are
    counted per thread, and a thread that ends inside the window (a connection's, when the
    thread cache is full: MySQL keeps 8 or 9 by default) takes its count with it; so every
    thread is read every SAMPLE_SECONDS and keeps the last count seen: such a thread's last
    SAMPLE_SECONDS at most go uncounted. A pid that cannot be read (a server elsewhere) gives
    no counters."""

    SAMPLE_SECONDS = 0.2  # a server of ~60 threads: ~1 ms of reading /proc per sample

    def __init__(self, pids: list[int]):
        self.pids = pids
        self._started: dict[int, float] = {}  # per pid: its CPU seconds at the start
        self._spent: dict[int, float] = {}  # and over the window, once it is over
        self._first: dict[int, dict[str, int]] = {}  # per pid: thread id -> count at start
        self._last: dict[int, dict[str, int]] = {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="process-watch", daemon=True)

    def __enter__(self) -> ProcessWatch:
        for pid in self.pids:
            cpu = cpu_seconds(pid)
            if cpu is not None:
                self._started[pid] = cpu
                self._first[pid] = _switches(pid)
                self._last[pid] = dict(self._first[pid])
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._done.set()
        self._thread.join()
        self._sample()
        for pid, started in self._started.items():
            cpu = cpu_seconds(pid)
            if cpu is not None:  # else it ended: no counters
                self._spent[pid] = cpu - started

    def _watch(self) -> None:
        while not self._done.wait(self.SAMPLE_SECONDS):
            self._sample()

    def _sample(self) -> None:
        for pid, last in self._last.items():
            last.update(_switches(pid))

    def counters(self, pid: int | None) -> dict[str, float]:
        if pid not in self._spent:
            return {}
        first, last = self._first[pid], self._last[pid]
        switches = sum(count - first.get(task, 0) for task, count in last.items())
        return {CPU_SECONDS: self._spent[pid], CONTEXT_SWITCHES: float(switches)}


def cpu_seconds(pid: int) -> float | None:
    """A process's user and system CPU seconds so far (None for one that is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime: every thread's
    except (OSError, IndexError, ValueError):
        return None


def _switches(pid: int) -> dict[str, int]:
    """Each live thread's voluntary and involuntary context switches so far."""
    counts: dict[str, int] = {}
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return counts
    for task in tasks:
        try:
            status = task.joinpath("status").read_text()
        except OSError:  # a thread that ended meanwhile
            continue
        counts[task.name] = sum(int(line.split()[1]) for line in status.splitlines()
                                if "ctxt_switches:" in line)
    return counts


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """after - before for every counter present in both (gauges give their change too)."""
    return {name: after[name] - before[name] for name in after if name in before}


def rows_per_query(status_delta: dict[str, float], statements: int) -> float | None:
    """Rows the server read per statement that touched a table.

    Rows_read counts row reads across engines (MyISAM, InnoDB, Aria...), so the same figure
    works whatever the dataset engine. It exposes workload artefacts such as sysbench's
    select_random_points returning far more rows per query at 1 thread than at 2. MySQL has no
    Rows_read: there the handler's row reads (Handler_read_*, every engine's, index lookups
    included) stand for it, so a MySQL figure compares with MySQL's, not with MariaDB's.
    """
    if statements <= 0:
        return None
    if "Rows_read" in status_delta:
        return status_delta["Rows_read"] / statements
    handler = [value for name, value in status_delta.items() if name.startswith("Handler_read_")]
    return sum(handler) / statements if handler else None
