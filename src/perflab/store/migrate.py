"""Labs written by earlier perflab versions, brought to this version's schema when opened, and
their stored plans read with this version's key names (domain.RENAMED_KEYS): the one place that
knows what changed in the results database. Every change is additive or a rename, so an
upgraded lab loses nothing and a lab opened twice is upgraded once."""

from __future__ import annotations

import sqlite3
from typing import Any

from perflab.domain import RENAMED_KEYS

# Columns added after the first labs were made: an older lab gets them, empty.
LATER_COLUMNS = {
    "points": {"profile_json": "TEXT", "client_cpu": "REAL", "clients_json": "TEXT",
               "off_turn_cpu": "REAL", "other_cpu": "REAL", "steal_cpu": "REAL"},
    "noise": {"lag1": "REAL", "skew": "REAL", "loaded": "REAL"},
}
# Columns renamed so that one idea has one name in code, columns and docs (a round is a round,
# a configuration's hash is its config_hash): (table, old name, new name).
RENAMED_COLUMNS = (("points", "repeat", "round"), ("points", "definition", "config_hash"))


def stored_plan(data: dict[str, Any]) -> dict[str, Any]:
    """A plan as an earlier version stored it (Plan.to_json), with this version's key names."""
    renamed = dict(data)
    for section, keys in RENAMED_KEYS.items():
        if isinstance(data.get(section), dict):
            renamed[section] = {keys.get(key, key): value for key, value in data[section].items()}
    return renamed


def upgrade(db: sqlite3.Connection) -> None:
    """Bring an open results database to this version's schema (its tables already created
    where missing)."""
    for table, old, new in RENAMED_COLUMNS:
        if old in _columns(db, table) and new not in _columns(db, table):
            db.execute(f'ALTER TABLE {table} RENAME COLUMN "{old}" TO "{new}"')
    for table, later in LATER_COLUMNS.items():
        present = _columns(db, table)
        for name, kind in later.items():
            if name not in present:
                db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {row[1] for row in db.execute(f"PRAGMA table_info({table})")}
