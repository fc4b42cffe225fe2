"""The results database (db.py), its typed records (records.py) and one study read whole
(study.py)."""

from perflab.store.db import ResultStore
from perflab.store.records import (
    HealthReport,
    HealthView,
    Metrics,
    PointRecord,
    RuleResult,
    ServerState,
    Session,
    StoredHealth,
    StoredPoint,
    Study,
    VariableRow,
)
from perflab.store.study import load_study

__all__ = [
    "HealthReport", "HealthView", "Metrics", "PointRecord", "ResultStore", "RuleResult",
    "ServerState", "Session", "StoredHealth", "StoredPoint", "Study", "VariableRow",
    "load_study",
]
