"""The record of one finished point, the same whichever way it was measured (serial or fleet)."""

from __future__ import annotations

import time

from perflab.domain import Point
from perflab.load.sysbench import LoadResult
from perflab.probes.status import rows_per_query
from perflab.store import PointRecord, PointStatus, Symbol


def measured(point: Point, started: float, state_id: int | None, result: LoadResult,
             status_delta: dict[str, float], profile: list[Symbol] | None) -> PointRecord:
    """A point that ran: sysbench's figures, with rows per query from the status counters."""
    metrics = result.metrics(rows_per_query(status_delta, result.reads + result.writes))
    return PointRecord(point, PointStatus.OK, started, time.time(), state_id, metrics,
                       series=result.series, status_delta=status_delta,
                       histogram=result.histogram, profile=profile, clients=result.clients,
                       other_work=result.other_work)


def failed(point: Point, started: float, state_id: int | None, error: str,
           server_failed: bool = False) -> PointRecord:
    """A point that did not run, or whose run failed, with why (`server_failed`: its server
    could not start or died)."""
    return PointRecord(point, PointStatus.FAILED, started, time.time(), state_id, None, error=error,
                       server_failed=server_failed)
