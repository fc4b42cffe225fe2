"""SHOW GLOBAL STATUS snapshots and their deltas over a measured window."""

from __future__ import annotations

import pymysql

from perflab.server.connection import query


def global_status(conn: pymysql.Connection) -> dict[str, float]:
    """The numeric status counters and gauges, by name."""
    values = {}
    for name, value in query(conn, "SHOW GLOBAL STATUS"):
        try:
            values[name] = float(value)
        except (TypeError, ValueError):
            continue
    return values


def delta(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """after - before for every counter present in both (gauges give their change too)."""
    return {name: after[name] - before[name] for name in after if name in before}


def rows_per_query(status_delta: dict[str, float], statements: int) -> float | None:
    """Rows the server read per statement that touched a table.

    Rows_read counts row reads across engines (MyISAM, InnoDB, Aria...), so the same figure
    works whatever the dataset engine. It exposes workload artefacts such as sysbench's
    select_random_points returning far more rows per query at 1 thread than at 2.
    """
    if statements <= 0 or "Rows_read" not in status_delta:
        return None
    return status_delta["Rows_read"] / statements
