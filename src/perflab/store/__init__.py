"""The results database (db.py), its typed records (records.py) and one study read whole
(study.py)."""

from perflab.store.db import ResultStore
from perflab.store.records import (
    Activation,
    HealthReport,
    HealthStatus,
    HealthView,
    Metrics,
    Noise,
    PointRecord,
    PointStatus,
    RuleResult,
    RunEnd,
    Sample,
    ServerState,
    Session,
    StoredHealth,
    StoredPoint,
    Study,
    Symbol,
    VariableRow,
    WayOfMeasuring,
    ok_metrics,
    throughput,
)
from perflab.store.study import load_study, study_name

__all__ = [
    "HealthReport", "HealthView", "Metrics", "Noise", "PointRecord", "PointStatus", "ResultStore",
    "RuleResult", "Sample",
    "ServerState", "Session", "StoredHealth", "StoredPoint", "Study", "Symbol", "VariableRow",
    "load_study", "ok_metrics", "study_name", "throughput",
    "Activation", "HealthStatus", "RunEnd", "WayOfMeasuring",
]
