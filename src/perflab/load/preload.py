"""Caches warmed by reading, not by load: a server measured right after a start should not
spend its first seconds (or a whole short point) filling them.

First the dataset's files are read once into the OS page cache (MyISAM and Aria read rows
through it, and a fresh copy of a datadir starts cold). Then each engine's own cache: `LOAD
INDEX INTO CACHE` for MyISAM and Aria key caches, a scan of every index for InnoDB and RocksDB
(the primary key of InnoDB is the table itself). MEMORY tables need nothing.
"""

from __future__ import annotations

import time
from pathlib import Path

import pymysql

from perflab.server.connection import Endpoint, query

CHUNK = 1 << 20
KEY_CACHED = ("MyISAM", "Aria")


def preload(endpoint: Endpoint, schema: str, datadir: Path) -> float:
    """Warm the page cache and the engines' caches for `schema`; returns the seconds taken."""
    started = time.monotonic()
    _read_files(datadir / schema)
    with endpoint.connect(schema) as conn:
        tables = query(conn, "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES "
                             "WHERE TABLE_SCHEMA = %s AND TABLE_TYPE = 'BASE TABLE'", (schema,))
        for table, engine in tables:
            if engine in KEY_CACHED:
                try:
                    query(conn, f"LOAD INDEX INTO CACHE `{table}`")
                    continue
                except pymysql.MySQLError:
                    pass  # an engine build without it: scan instead
            if engine != "MEMORY":
                _scan_indexes(conn, schema, table)
    return time.monotonic() - started


def _read_files(folder: Path) -> None:
    if not folder.is_dir():
        return
    for path in sorted(folder.iterdir()):
        if path.is_file():
            with open(path, "rb", buffering=0) as handle:
                while handle.read(CHUNK):
                    pass


def _scan_indexes(conn: pymysql.Connection, schema: str, table: str) -> None:
    indexes = [row[0] for row in query(
        conn, "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS "
              "WHERE TABLE_SCHEMA = %s AND TABLE_NAME = %s", (schema, table))]
    for index in indexes or ["PRIMARY"]:
        query(conn, f"SELECT COUNT(*) FROM `{table}` FORCE INDEX (`{index}`)")
