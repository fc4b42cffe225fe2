"""The results database (db.py), its typed records (records.py) and one study read whole
(study.py)."""

from perflab.store.db import ResultStore
from perflab.store.records import (
    HealthReport,
    HealthView,
    Metrics,
    Noise,
    PointRecord,
    PointStatus,
    RuleResult,
    Sample,
    ServerState,
    Session,
    StoredHealth,
    StoredPoint,
    Study,
    Symbol,
    VariableRow,
    ok_metrics,
    throughput,
)
from perflab.store.study import read_study, study_name

__all__ = [
    "HealthReport", "HealthView", "Metrics", "Noise", "PointRecord", "PointStatus", "ResultStore",
    "RuleResult", "Sample",
    "ServerState", "Session", "StoredHealth", "StoredPoint", "Study", "Symbol", "VariableRow",
    "ok_metrics", "read_study", "study_name", "throughput",
]
