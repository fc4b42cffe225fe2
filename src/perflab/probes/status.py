"""SHOW GLOBAL STATUS snapshots and their deltas over a measured window, and the server
process's own counters over the same window (CPU_SECONDS, CONTEXT_SWITCHES), kept beside
them."""

from __future__ import annotations

import os
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


def process_usage(pid: int | None) -> dict[str, float]:
    """A local server process's counters (CPU_SECONDS, CONTEXT_SWITCHES); {} when they cannot
    be read (a server elsewhere)."""
    if pid is None:
        return {}
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        switches = 0
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                status = (task / "status").read_text()
            except OSError:  # a thread that ended meanwhile
                continue
            switches += sum(int(line.split()[1]) for line in status.splitlines()
                            if "ctxt_switches:" in line)
    except (OSError, IndexError, ValueError):
        return {}
    return {CPU_SECONDS: (int(fields[11]) + int(fields[12])) / TICKS,
            CONTEXT_SWITCHES: float(switches)}


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
