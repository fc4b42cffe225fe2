"""Taking a server's health: two status snapshots, its variables, and the rules over both views.

Read-only by construction: the only statements sent are one SET SESSION (this connection's
temporary table limits), SHOW GLOBAL STATUS, SHOW GLOBAL VARIABLES, SELECT VERSION() and the
server's catalog for the defaults (server/variables.py: MariaDB's or MySQL's).

Order matters for honest figures. The first status snapshot is the first statement perflab sends,
so the "since start" view holds nothing of perflab but that statement; the "hot" window holds
exactly one more SHOW GLOBAL STATUS; variables are read after the window closes. The known
cost of one SHOW GLOBAL STATUS (one statement, one in-memory temporary table) is taken out of
each view, so a quiet server reports zero temporary tables rather than perflab's own.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pymysql

from perflab.errors import PerflabError
from perflab.health.results import HealthReport, HealthView, VariableRow
from perflab.health.rules import RULES, View, evaluate, human_bytes
from perflab.probes.status import delta, global_status
from perflab.probes.system import ram_bytes
from perflab.server.connection import Endpoint, query
from perflab.server.variables import read_catalog

# What one SHOW GLOBAL STATUS adds to the global counters (measured on MariaDB 10.11), and what
# the SET SESSION before the first one adds to the since-start view.
SNAPSHOT_COST = {"Questions": 1, "Queries": 1, "Com_show_status": 1, "Created_tmp_tables": 1}
SESSION_SET_COST = {"Questions": 1, "Queries": 1, "Com_set_option": 1}

# The STAR notes' variables table, in its groups, then the other variables the rules name.
VARIABLE_GROUPS = (
    ("per-thread buffers", ("preload_buffer_size", "read_buffer_size", "read_rnd_buffer_size",
                            "sort_buffer_size", "myisam_sort_buffer_size", "join_buffer_size",
                            "thread_stack")),
    ("global buffers", ("key_buffer_size", "query_cache_size", "query_cache_type",
                        "max_heap_table_size", "tmp_table_size", "innodb_buffer_pool_size",
                        "innodb_log_buffer_size")),
    ("write operations", ("bulk_insert_buffer_size", "concurrent_insert")),
)
SIZE_SUFFIXES = ("_size", "_length", "thread_stack", "_res_unit")
COUNTS_NAMED_SIZE = {"thread_cache_size", "host_cache_size", "thread_pool_size"}


def take_health(endpoint: Endpoint, interval: float, server_label: str | None = None,
                during_interval: Callable[[], None] | None = None) -> HealthReport:
    """Both views of a running server. `during_interval` (perflab's own load, for a lab server)
    runs between the snapshots instead of a sleep; with neither interval nor load there is only
    the since-start view."""
    with _connect(endpoint) as conn:
        # Session-only: keeps perflab's own snapshot in an in-memory temporary table whatever
        # the server's limits, so that its cost below is exact. Nothing global changes.
        query(conn, "SET SESSION tmp_table_size = 16777216, max_heap_table_size = 16777216")
        first = global_status(conn)
        taken = time.time()
        started = time.monotonic()
        if during_interval is not None:
            during_interval()
        elif interval > 0:
            time.sleep(interval)
        second = global_status(conn) if during_interval or interval > 0 else None
        seconds = time.monotonic() - started
        variables = {name.lower(): value for name, value in
                     query(conn, "SHOW GLOBAL VARIABLES")}
        version = query(conn, "SELECT VERSION()")[0][0]
        defaults = _defaults(conn, _table_names())
    ram = ram_bytes()
    views = [_view("since start", first.get("Uptime", 0.0),
                   _less(_less(first, SNAPSHOT_COST), SESSION_SET_COST), first, variables, ram)]
    if second is not None:
        views.append(_view("hot", seconds, _less(delta(first, second), SNAPSHOT_COST), second,
                           variables, ram))
    where = server_label or (endpoint.socket or f"{endpoint.host}:{endpoint.port}")
    return HealthReport(where, version, taken, tuple(views), _variables(variables, defaults))


def _connect(endpoint: Endpoint) -> pymysql.Connection:
    try:
        return endpoint.connect()
    except pymysql.MySQLError as exc:
        where = endpoint.socket or f"{endpoint.host}:{endpoint.port}"
        raise PerflabError(
            f"cannot connect to the server at {where}: {exc.args[-1]}",
            hint="check --socket or --host/--port and --user; a password comes from "
            "--defaults-file or --password (prompted)",
        ) from None


def _less(counters: dict[str, float], cost: dict[str, int]) -> dict[str, float]:
    return {name: value - cost.get(name, 0) for name, value in counters.items()}


def _view(name: str, seconds: float, counters: dict[str, float], gauges: dict[str, float],
          variables: dict[str, str], ram: int) -> HealthView:
    view = View(name, seconds, counters, gauges, variables, ram)
    return HealthView(name, seconds, tuple(v.record() for v in evaluate(view)))


def _table_names() -> list[str]:
    names = [name for _, group in VARIABLE_GROUPS for name in group]
    for rule in RULES:
        names += [name for name in rule.governs if name not in names]
    return names


def _defaults(conn: pymysql.Connection, names: list[str]) -> dict[str, str]:
    """The variables' defaults, as the server's catalog gives them: MariaDB's does; MySQL's
    names none (its table then shows "-")."""
    catalog = read_catalog(conn)
    return {name: spec.default for name in names
            if (spec := catalog.variables.get(name)) is not None and spec.default is not None}


def _variables(values: dict[str, str], defaults: dict[str, str]) -> tuple[VariableRow, ...]:
    grouped = {name: group for group, names in VARIABLE_GROUPS for name in names}
    rows = []
    for name in _table_names():
        if name not in values:
            continue  # e.g. a variable of an engine this server does not load
        value = values[name]
        rows.append(VariableRow(grouped.get(name, "governing the rules"), name, value,
                                _human(name, value), defaults.get(name) or "-"))
    return tuple(rows)


def _human(name: str, value: str) -> str:
    if name.endswith(SIZE_SUFFIXES) and name not in COUNTS_NAMED_SIZE and value.isdigit():
        return human_bytes(int(value))
    return value
