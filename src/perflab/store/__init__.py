"""The results database (db.py), its typed records (records.py) and one study read whole
(study.py)."""

from perflab.store.db import ResultStore
from perflab.store.records import (
    Activation,
    ConfigDocument,
    Metrics,
    Noise,
    PointRecord,
    PointStatus,
    RunEnd,
    Sample,
    ServerState,
    Session,
    StoredPoint,
    Study,
    Symbol,
    WayOfMeasuring,
    ok_metrics,
    throughput,
)
from perflab.store.study import read_study, study_name

__all__ = [
    "Activation", "ConfigDocument", "Metrics", "Noise", "PointRecord", "PointStatus",
    "ResultStore", "RunEnd", "Sample", "ServerState", "Session", "StoredPoint", "Study", "Symbol",
    "WayOfMeasuring", "ok_metrics", "read_study", "study_name", "throughput",
]
