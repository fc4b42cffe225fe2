"""The server builds a study compared, and the defaults that differ between them: a version
comparison is also a comparison of defaults, so the report says which ones moved (from the
variables each build's server ran, as stored when it started)."""

from __future__ import annotations

from perflab.domain import HOST_BUILD
from perflab.output.table import Table
from perflab.server.flavor import server_label
from perflab.store.records import ServerState, Study

# Variables that name the server or its files, not a setting: they differ between any two
# servers and say nothing about defaults.
IDENTITY = ("version", "hostname", "server_uuid", "pid_file", "socket", "port", "datadir",
            "basedir", "tmpdir", "plugin_dir", "lc_messages_dir", "character_sets_dir",
            "log_error", "general_log_file", "slow_query_log_file", "log_bin_basename",
            "relay_log", "innodb_data_home_dir", "secure_file_priv", "system_time_zone",
            "timestamp", "server_id")


WIDEST = 40  # a list-valued variable (optimizer_switch, sql_mode) is cut to this, with "…"


def _short(value: str) -> str:
    return value if len(value) <= WIDEST else value[:WIDEST - 1] + "…"


def _same(value: str) -> str | float:
    """A value as compared: 10 and 10.000000 are one number, ON and on one word."""
    try:
        return float(value)
    except ValueError:
        return value.lower()


def first_states(study: Study) -> dict[str, ServerState]:
    """Each build's first server state, by build name, in the order they ran (a state stored
    before builds were recorded is the host's)."""
    first: dict[str, ServerState] = {}
    for state in study.server_states:
        first.setdefault((state.process.get("build") or {}).get("name", HOST_BUILD), state)
    return first


def builds_line(study: Study) -> str:
    """Each server build the study ran, when it ran more than one: its name, what the server
    said it was, and its package, as recorded when it started (server/builds.py)."""
    described = []
    for name, state in first_states(study).items():
        build = state.process.get("build") or {}
        package = f"{build['package']} {build['package_version']}".strip() \
            if build.get("package") else "?"
        described.append(f"{name}: {server_label(state.version)} ({package})")
    return "Server builds: " + "; ".join(described) if len(described) > 1 else ""


def defaults_table(study: Study) -> Table | None:
    """One row per variable that every build has and whose value differs between them (its
    value per build), when the study ran more than one build; None otherwise."""
    first = {name: state.variables for name, state in first_states(study).items()}
    if len(first) < 2:
        return None
    names = list(first)
    shared = set.intersection(*(set(variables) for variables in first.values()))
    rows = []
    for variable in sorted(shared):
        values = [str(first[build][variable]) for build in names]
        if variable.startswith(IDENTITY) or any("/" in value for value in values):
            continue
        if len({_same(value) for value in values}) > 1:
            rows.append([variable, *(_short(value) for value in values)])
    only = [f"{build} {len(set(variables) - shared)}" for build, variables in first.items()]
    return Table("Variables whose values differ between the builds (as each ran)",
                 ["Variable", *names], rows,
                 note=f"{len(shared)} variables in every build, {len(rows)} of them differ; "
                      f"variables only some builds have: {', '.join(only)}")
