"""Study plans: TOML in, checked, the study's types (domain.py) out.

A plan names server configurations (one is the baseline), one workload, one dataset, the thread
counts, warm-up and run seconds and the number of rounds. This module checks everything that can
be checked without a server: unknown keys, wrong types, impossible numbers; and the overrides of
a plan's keys (`with_overrides`) and the builds it is crossed with (`across_builds`), each
checked like its TOML twin. Server variables are checked later against the installed server's
catalog (see server/variables.py).
"""

from __future__ import annotations

import difflib
import hashlib
import math
import re
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from perflab.domain import (
    ALLOCATORS,
    AXES,
    CONNECTIONS,
    ENGINES,
    HOST_BUILD,
    RENAMED_KEYS,
    SCHEDULES,
    Dataset,
    Environment,
    Plan,
    RunSettings,
    Scalar,
    Schedule,
    ServerConfig,
    Workload,
    canonical_engine,
    normalize_variable_name,
    show,
)
from perflab.errors import PerflabError
from perflab.stats.design import checked_margin

BUILD_NAME = re.compile(r"[a-z][a-z0-9.-]*")

SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "study": ("name", "description", "baseline", "source", "layout"),
    "dataset": ("engine", "tables", "rows", "existing"),
    "workload": ("name", "options"),
    "run": ("threads", "warmup_seconds", "run_seconds", "rounds", "warmup_threads",
            "profile", "time", "margin", "max_rounds", "slice_seconds", "schedule", "alpha",
            "clients"),
}
TOP_KEYS = (*SECTION_KEYS, "server", "configs", "steps", "axes", "tune")
# Keys of [server], [configs.NAME] and [[steps]] that are perflab's, not server variables.
ENVIRONMENT_KEYS = ("engine", "allocator", "server_cpus", "client_cpus", "connection", "server")
# The key of those tables naming variables set only on a build whose catalog has them.
ONLY_WHERE_PRESENT = "only_where_present"


def load_plan(path: Path) -> Plan:
    try:
        text = path.read_text()
    except OSError as exc:
        raise PerflabError(f"cannot read plan {path}: {exc.strerror}",
                           hint="give a plan .toml file, or a built-in study name "
                           "(see: perflab studies)") from None
    except UnicodeDecodeError:
        raise PerflabError(f"cannot read plan {path}: not UTF-8 text",
                           hint="a plan is a TOML text file saved as UTF-8") from None
    return parse_plan(text, origin=str(path))


def parse_plan(text: str, origin: str = "plan") -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PerflabError(f"{origin}: not valid TOML: {exc}") from None
    return _build(data, origin)


def across_builds(plan: Plan, builds: list[str]) -> Plan:
    """Every configuration of `plan` on each of `builds` (as [axes] server crosses them, each
    build's name checked); the baseline is the baseline's on the first."""
    configs = _cross(list(plan.configs), {"server": builds}, f"study {plan.name}")
    crossed = {c.name for c in configs}
    alone = builds[0] if builds[0] in crossed else f"{plan.baseline} {builds[0]}"
    return replace(plan, configs=tuple(configs), baseline=alone)


def with_overrides(
    plan: Plan,
    *,
    scale: float | None = None,
    rounds: int | None = None,
    run_seconds: int | None = None,
    warmup_seconds: int | None = None,
    threads: tuple[int, ...] | None = None,
    time: float | None = None,
    margin: float | None = None,
    clients: str | None = None,
    build: str | None = None,
) -> Plan:
    """`plan` with overrides of its keys applied, each checked like its TOML twin; an error
    names the plan key and the argument (the CLI shows its flag)."""
    dataset, run = plan.dataset, plan.run
    if scale is not None:
        if not (math.isfinite(scale) and scale > 0):
            raise PerflabError(f"scale must be positive, got {scale}", option="scale")
        dataset = replace(dataset, rows=max(1, round(dataset.rows * scale)))
    if rounds is not None:
        run = replace(run, rounds=_overriding("rounds", _positive, "run.rounds",
                                               rounds))
    if run_seconds is not None:
        run = replace(run, run_seconds=_overriding("run_seconds", _positive,
                                                   "run.run_seconds", run_seconds))
    if warmup_seconds is not None:
        if warmup_seconds < 0:
            raise PerflabError(f"run.warmup_seconds must be 0 or more, got {warmup_seconds}",
                               option="warmup_seconds")
        run = replace(run, warmup_seconds=warmup_seconds)
    if threads is not None:
        run = replace(run, threads=_overriding("threads", _thread_list, "run.threads",
                                               list(threads)))
    if time is not None:
        run = replace(run, time=_overriding("time", _seconds, "run.time", time))
    if margin is not None:
        run = replace(run, margin=_overriding("margin", checked_margin, "run.margin", margin))
    if clients is not None:
        run = replace(run, clients=_overriding("clients", _clients, clients, "clients"))
        _overriding("clients", _check_clients, run, plan.configs, "clients")
    configs = plan.configs
    if build is not None:  # every configuration on that server build
        server = _overriding("build", _server_build, build, "build")
        configs = tuple(replace(c, environment=replace(c.environment, server=server))
                        for c in configs)
    return replace(plan, dataset=dataset, run=run, configs=configs)


def _clients(value: Any, where: str) -> str:
    """A Dask scheduler's address (tcp://HOST:PORT, tls://..., or HOST:PORT), or ""."""
    if value == "":
        return ""
    if not isinstance(value, str) or ":" not in value or any(c.isspace() for c in value):
        raise PerflabError(f"{where} = {value!r} is not a Dask scheduler's address",
                           hint="e.g. tcp://10.0.0.5:8786 (`dask scheduler` prints it)")
    return value


def _check_clients(run: RunSettings, configs, where: str) -> None:
    """Load from several machines is measured serially and never pinned on this machine."""
    if not run.clients:
        return
    if run.schedule == Schedule.FLEET:
        raise PerflabError(
            f"{where}: run.schedule = \"fleet\" cannot take load from several client machines: "
            "the fleet's servers take turns in quarter-second slices timed on one machine's "
            "clock", hint='drop run.clients, or set schedule = "serial" (or "auto")')
    pinned = [c.name for c in configs if c.environment.client_cpus]
    if pinned:
        raise PerflabError(
            f"{where}: configuration(s) {', '.join(pinned)} pin the client (client_cpus), "
            "which means this machine's CPUs; the load comes from the client workers",
            hint="drop client_cpus, or run.clients")


def _overriding(option: str, check, *args):
    """`check(*args)`, its error marked as one of the override `option` (for the CLI's flag)."""
    try:
        return check(*args)
    except PerflabError as exc:
        exc.option = option
        raise


def _build(data: dict[str, Any], origin: str) -> Plan:
    _known(data, TOP_KEYS, "", origin)
    sections = {}
    for section, keys in SECTION_KEYS.items():
        value = data.get(section, {})
        if not isinstance(value, dict):
            raise PerflabError(f"{origin}: [{section}] must be a table",
                               hint=f"write a [{section}] header, then key = value lines")
        _known(value, keys, f"{section}.", origin)
        sections[section] = value

    study = sections["study"]
    name = _required_string(study, "name", f"{origin}: study.name")
    description = _string(study, "description", f"{origin}: study.description") or ""
    source = _string(study, "source", f"{origin}: study.source") or ""

    shared, shared_optional = _server_table(data.get("server", {}), "server", origin)
    if "steps" in data:
        if "configs" in data:
            raise PerflabError(
                f"{origin}: a plan has either [configs.NAME] or [[steps]], not both",
                hint="[configs.NAME] for independent configurations, [[steps]] for a ladder "
                "whose steps add up; keep one of them",
            )
        configs, changes = _ladder(data["steps"], shared, shared_optional, origin)
    else:
        configs, changes = _configs(data.get("configs"), shared, shared_optional, origin), ()
    configs = _cross(configs, data.get("axes", {}), origin)
    names = [c.name for c in configs]

    baseline = _string(study, "baseline", f"{origin}: study.baseline") or names[0]
    if baseline not in names:
        raise PerflabError(
            f"{origin}: study.baseline = {baseline!r} names no configuration",
            hint=f"configurations: {', '.join(names)}",
        )

    workload = _workload(sections["workload"], origin)
    dataset = _dataset(sections["dataset"], origin)
    run = _run_settings(sections["run"], origin)
    _check_clients(run, configs, origin)
    layout = _string(study, "layout", f"{origin}: study.layout") or "configs-down"
    if layout not in ("configs-down", "threads-down"):
        raise PerflabError(f"{origin}: study.layout = {layout!r} is not allowed "
                           "(allowed: configs-down, threads-down)")
    tune = data.get("tune", {})
    if not isinstance(tune, dict):
        raise PerflabError(f"{origin}: [tune] must be a table",
                           hint="write a [tune] header, then key = value lines")
    tune_items = tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in tune.items())
    return Plan(name, description, baseline, tuple(configs), workload, dataset, run, source,
                ladder=bool(changes), changes=changes, layout=layout, tune=tune_items)


def _workload(workload_table: dict[str, Any], origin: str) -> Workload:
    workload_name = _required_string(workload_table, "name", f"{origin}: workload.name")
    options = workload_table.get("options", {})
    if not isinstance(options, dict):
        raise PerflabError(f"{origin}: workload.options must be a table of option = value",
                           hint="e.g. options = { random_points = 10 } under [workload]")
    for key, value in options.items():
        if not isinstance(value, int | float | bool | str):
            raise PerflabError(f"{origin}: workload.options.{key} must be a number, bool or string")
    return Workload(workload_name, tuple(sorted(options.items())), _file_digests(options))


def _file_digests(options: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The content of the file a `file` option names, read once here, so that every point of a
    run is defined by the file as it was read then (a file that cannot be read is named by
    its path; its workload says why it cannot run)."""
    if "file" not in options:
        return ()
    try:
        return (("file", hashlib.sha256(Path(str(options["file"])).read_bytes()).hexdigest()),)
    except OSError:
        return ()


def _dataset(ds: dict[str, Any], origin: str) -> Dataset:
    engine = _string(ds, "engine", f"{origin}: dataset.engine") or Dataset.engine
    return Dataset(
        engine=_engine(engine, f"{origin}: dataset.engine"),
        tables=_int(ds, "tables", Dataset.tables, f"{origin}: dataset.tables", minimum=1),
        rows=_int(ds, "rows", Dataset.rows, f"{origin}: dataset.rows", minimum=1),
        existing=_identifier(ds, "existing", f"{origin}: dataset.existing"),
    )


def _run_settings(run_table: dict[str, Any], origin: str) -> RunSettings:
    if "threads" not in run_table:
        raise PerflabError(f"{origin}: run.threads is required, e.g. threads = [1, 2, 4, 8]")
    def run_int(key: str, default: int, minimum: int) -> int:
        return _int(run_table, key, default, f"{origin}: run.{key}", minimum)

    run = RunSettings(
        threads=_thread_list(f"{origin}: run.threads", run_table["threads"]),
        warmup_seconds=run_int("warmup_seconds", RunSettings.warmup_seconds, 0),
        run_seconds=run_int("run_seconds", RunSettings.run_seconds, 1),
        rounds=run_int("rounds", RunSettings.rounds, 1),
        warmup_threads=run_int("warmup_threads", 0, 0),
        profile=_bool(run_table, "profile", f"{origin}: run.profile"),
        time=_seconds(f"{origin}: run.time", run_table.get("time", 0)),
        margin=checked_margin(f"{origin}: run.margin",
                              run_table.get("margin", RunSettings.margin)),
        alpha=_alpha(f"{origin}: run.alpha", run_table.get("alpha", RunSettings.alpha)),
        max_rounds=run_int("max_rounds", RunSettings.max_rounds, 2),
        slice_seconds=_positive_number(f"{origin}: run.slice_seconds",
                                       run_table.get("slice_seconds", RunSettings.slice_seconds)),
        schedule=Schedule(_choice(f"{origin}: run.schedule",
                                  run_table.get("schedule", Schedule.AUTO), SCHEDULES)),
        clients=_clients(run_table.get("clients", ""), f"{origin}: run.clients"),
    )
    if run.time and run.max_rounds < run.rounds:
        raise PerflabError(f"{origin}: run.max_rounds ({run.max_rounds}) is below run.rounds "
                           f"({run.rounds})", hint="max_rounds caps the rounds a budget adds")
    return run


def _configs(table: Any, shared: dict[str, Scalar], shared_optional: frozenset[str],
             origin: str) -> list[ServerConfig]:
    if not isinstance(table, dict) or not table:
        raise PerflabError(
            f"{origin}: the plan has no server configurations",
            hint="add at least one [configs.NAME] table (or [[steps]] for a ladder)",
        )
    configs = []
    for config_name, own in table.items():
        where = f"configs.{config_name}"
        settings, optional = _server_table(own, where, origin)
        configs.append(_config(config_name, {**shared, **settings}, shared_optional | optional,
                               where, origin))
    return configs


def _config(name: str, settings: dict[str, Scalar], optional: frozenset[str], where: str,
            origin: str) -> ServerConfig:
    """Split a table's settings into server variables and perflab's environment keys."""
    variables = {k: v for k, v in settings.items() if k not in ENVIRONMENT_KEYS}
    unset = sorted(optional - variables.keys())
    if unset:
        raise PerflabError(f"{origin}: {where}.{ONLY_WHERE_PRESENT} names {', '.join(unset)}, "
                           "which this configuration does not set",
                           hint=f"set it too, or take it out of {ONLY_WHERE_PRESENT}")
    env: dict[str, str] = {}
    for key, value in settings.items():
        if key in ENVIRONMENT_KEYS:
            if not isinstance(value, str) or not value.strip():
                raise PerflabError(f"{origin}: {where}.{key} must be a non-empty string")
            env[key] = value
    engine = _engine(env.pop("engine"), f"{origin}: {where}.engine") if "engine" in env else None
    allocator = env.get("allocator", "glibc")
    if allocator not in ALLOCATORS:
        raise PerflabError(f"{origin}: {where}.allocator = {allocator!r} is not supported "
                           f"(allowed: {', '.join(ALLOCATORS)})")
    connection = env.get("connection", "socket")
    if connection not in CONNECTIONS:
        raise PerflabError(f"{origin}: {where}.connection = {connection!r} is not supported "
                           f"(allowed: {', '.join(CONNECTIONS)})")
    environment = Environment(allocator, env.get("server_cpus"), env.get("client_cpus"),
                              connection, _server_build(env.get("server", HOST_BUILD),
                                                 f"{origin}: {where}.server"))
    return ServerConfig(name, tuple(sorted(variables.items())), environment, engine, optional)


def _cross(configs: list[ServerConfig], axes: Any, origin: str) -> list[ServerConfig]:
    """Every configuration crossed with every value of every [axes] entry.

    [axes] allocator = ["glibc", "jemalloc"], connection = ["socket", "tcp"],
    pinning = ["none", "0/1"] (server CPUs / client CPUs), engine = ["MyISAM", "InnoDB"],
    server = ["host", "mysql-9.7"] (server builds).
    """
    if not isinstance(axes, dict):
        raise PerflabError(f"{origin}: [axes] must be a table of axis = [values]",
                           hint=f"axes: {', '.join(AXES)}; e.g. [axes] then "
                           'allocator = ["glibc", "jemalloc"]')
    _known(axes, AXES, "axes.", origin)
    for axis, values in axes.items():
        if not isinstance(values, list) or not values or not all(
            isinstance(v, str) and v for v in values
        ):
            raise PerflabError(f"{origin}: axes.{axis} must be a non-empty list of strings")
        if len(set(values)) != len(values):
            raise PerflabError(f"{origin}: axes.{axis} lists a value twice: {values}")
        crossed = []
        for config in configs:
            for value in values:
                crossed.append(_apply_axis(config, axis, value, len(configs) == 1, origin))
        configs = crossed
    return configs


def _apply_axis(config: ServerConfig, axis: str, value: str, alone: bool, origin: str
                ) -> ServerConfig:
    where = f"{origin}: axes.{axis}"
    env = config.environment
    if axis == "engine":
        changed = replace(config, engine=_engine(value, where))
    elif axis == "allocator":
        if value not in ALLOCATORS:
            raise PerflabError(f"{where}: {value!r} is not an allocator "
                               f"(allowed: {', '.join(ALLOCATORS)})")
        changed = replace(config, environment=replace(env, allocator=value))
    elif axis == "connection":
        if value not in CONNECTIONS:
            raise PerflabError(f"{where}: {value!r} is not a connection "
                               f"(allowed: {', '.join(CONNECTIONS)})")
        changed = replace(config, environment=replace(env, connection=value))
    elif axis == "server":
        changed = replace(config, environment=replace(env, server=_server_build(value, where)))
    else:  # pinning: "none" or "SERVER_CPUS/CLIENT_CPUS", either side may be empty
        if value == "none":
            server, client = None, None
        elif value.count("/") == 1:
            server, client = (part or None for part in value.split("/"))
        else:
            raise PerflabError(f"{where}: {value!r} is not 'none' or 'SERVER_CPUS/CLIENT_CPUS' "
                               "(e.g. '0/1' or '0-2/3')")
        changed = replace(config, environment=replace(env, server_cpus=server,
                                                      client_cpus=client))
    if axis == "pinning":
        label = "nopin" if value == "none" else f"pin {value}"
    else:
        label = value
    name = label if alone and config.name == "default" else f"{config.name} {label}"
    return replace(changed, name=name)


def _server_build(value: str, where: str) -> str:
    """A build's name as builds are named; whether it is one is the backend's to say, before
    anything starts (server/environment.check)."""
    if not isinstance(value, str) or not BUILD_NAME.fullmatch(value):
        raise PerflabError(f"{where}: {value!r} is not a server build's name",
                           hint=f"{HOST_BUILD} (the installed mariadb-server), or one that "
                           "perflab servers lists, e.g. mysql-9.7")
    return value


def _engine(value: str, where: str) -> str:
    engine = canonical_engine(value)
    if engine is None:
        raise PerflabError(f"{where} = {value!r} is not supported",
                           hint=f"allowed: {', '.join(ENGINES)}")
    return engine


def _ladder(steps: Any, shared: dict[str, Scalar], shared_optional: frozenset[str], origin: str
            ) -> tuple[list[ServerConfig], tuple[tuple[str, str], ...]]:
    """[[steps]] tables, each `name = "..."` plus the variables that step changes."""
    if not isinstance(steps, list) or not steps or not all(isinstance(s, dict) for s in steps):
        raise PerflabError(f"{origin}: steps must be an array of tables ([[steps]])")
    configs: list[ServerConfig] = []
    changes: list[tuple[str, str]] = []
    applied, optional = dict(shared), shared_optional
    for number, step in enumerate(steps, 1):
        where = f"steps[{number}]"
        step = dict(step)
        name = step.pop("name", None)
        if not isinstance(name, str) or not name.strip():
            raise PerflabError(f"{origin}: {where}.name is required (what this step changes)")
        if name in (c.name for c in configs):
            raise PerflabError(f"{origin}: {where}.name = {name!r} is used twice")
        own, own_optional = _server_table(step, where, origin)
        applied.update(own)
        optional |= own_optional
        configs.append(_config(name, applied, optional, where, origin))
        changes.append((name, ", ".join(f"{k}={show(v)}" for k, v in own.items()) or "-"))
    return configs, tuple(changes)


def _server_table(table: Any, where: str, origin: str) -> tuple[dict[str, Scalar],
                                                                 frozenset[str]]:
    """A [server]-like table's settings, and the variables its only_where_present names."""
    if not isinstance(table, dict) or ONLY_WHERE_PRESENT not in table:
        return _settings(table, where, origin), frozenset()
    names = table[ONLY_WHERE_PRESENT]
    if not isinstance(names, list) or not all(isinstance(n, str) and n.strip() for n in names):
        raise PerflabError(f"{origin}: {where}.{ONLY_WHERE_PRESENT} must be a list of server "
                           "variable names",
                           hint=f'e.g. {ONLY_WHERE_PRESENT} = ["query_cache_type"]')
    rest = {k: v for k, v in table.items() if k != ONLY_WHERE_PRESENT}
    return _settings(rest, where, origin), frozenset(map(normalize_variable_name, names))


def _settings(table: Any, where: str, origin: str) -> dict[str, Scalar]:
    if not isinstance(table, dict):
        raise PerflabError(f"{origin}: [{where}] must be a table of variable = value")
    out: dict[str, Scalar] = {}
    for key, value in table.items():
        if isinstance(value, dict):
            raise PerflabError(
                f"{origin}: {where}.{key} is a table; a server variable takes a number, "
                "bool or string"
            )
        if not isinstance(value, int | float | bool | str):
            raise PerflabError(f"{origin}: {where}.{key} must be a number, bool or string")
        out[normalize_variable_name(key)] = value
    return out


def _known(table: dict[str, Any], allowed: tuple[str, ...], prefix: str, origin: str) -> None:
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            renamed = RENAMED_KEYS.get(prefix.rstrip("."), {}).get(key)
            hint = (f"{prefix}{key} is called {prefix}{renamed} now" if renamed
                    else f"did you mean {prefix}{close[0]}?" if close else None)
            raise PerflabError(
                f"{origin}: unknown key {prefix}{key} (allowed: {', '.join(allowed)})", hint=hint
            )


def _string(table: dict[str, Any], key: str, where: str) -> str | None:
    if key not in table:
        return None
    return _required_string(table, key, where)


def _required_string(table: dict[str, Any], key: str, where: str) -> str:
    if key not in table:
        raise PerflabError(f"{where} is required")
    value = table[key]
    if not isinstance(value, str) or not value.strip():
        raise PerflabError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _int(table: dict[str, Any], key: str, default: int, where: str, minimum: int) -> int:
    value = table.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise PerflabError(f"{where} must be an integer, got {value!r}")
    if value < minimum:
        raise PerflabError(f"{where} must be at least {minimum}, got {value}")
    return value


def _bool(table: dict[str, Any], key: str, where: str) -> bool:
    value = table.get(key, False)
    if not isinstance(value, bool):
        raise PerflabError(f"{where} must be true or false, got {value!r}")
    return value


def duration(option: str, value: Any) -> float:
    """A duration given as the API argument `option` (seconds, or "10m" as run.time takes it),
    its error naming that argument."""
    return _overriding(option, _seconds, option, value)


def _seconds(where: str, value: Any) -> float:
    """A duration: seconds as a number, or a string such as "90s", "10m", "1h", "1h30m"."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*(\d+(\.\d+)?\s*[hms]?\s*)+", value):
        seconds = 0.0
        for number, unit in re.findall(r"(\d+(?:\.\d+)?)\s*([hms]?)", value):
            seconds += float(number) * {"h": 3600, "m": 60, "s": 1, "": 1}[unit]
    else:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise PerflabError(f"{where} = {value!r} is not a duration",
                           hint='seconds, or e.g. "90s", "10m", "1h30m"')
    return seconds


def _alpha(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 0.2:
        raise PerflabError(f"{where} must be a probability such as 0.05, got {value!r}",
                           hint="the chance of any false verdict in a table; from 0 to 0.2")
    return float(value)


def _positive_number(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise PerflabError(f"{where} must be a positive number, got {value!r}")
    return float(value)


def _choice(where: str, value: Any, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise PerflabError(f"{where} = {value!r} is not allowed (allowed: {', '.join(allowed)})")
    return value


def _positive(where: str, value: int) -> int:
    if value < 1:
        raise PerflabError(f"{where} must be at least 1, got {value}")
    return value


def _thread_list(where: str, value: Any) -> tuple[int, ...]:
    if not isinstance(value, list) or not value:
        raise PerflabError(f"{where} must be a non-empty list of thread counts, e.g. [1, 2, 4]")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= 4096:
            raise PerflabError(f"{where}: {item!r} is not a thread count (allowed: 1 to 4096)")
    if len(set(value)) != len(value):
        raise PerflabError(f"{where} lists a thread count twice: {value}")
    return tuple(value)


def _identifier(table: dict, key: str, where: str) -> str:
    """A schema name, or "" when the key is absent."""
    value = _string(table, key, where) or ""
    if value and not re.fullmatch(r"[A-Za-z0-9_$]{1,64}", value):
        raise PerflabError(f"{where} = {value!r} is not a schema name",
                           hint="letters, digits, _ and $ only, as the server names databases")
    return value
