"""Study plans: TOML in, validated dataclasses out, expanded into the ordered list of points.

A plan names server configurations (one is the baseline), one workload, one dataset, the thread
counts, warm-up and run seconds and the number of repeats. This module checks everything that can
be checked without a server: unknown keys, wrong types, impossible numbers. Server variables are
checked later against the installed server's catalog (see server/variables.py).
"""

from __future__ import annotations

import difflib
import hashlib
import json
import math
import re
import tomllib
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any

from perflab.errors import PerflabError
from perflab.stats.design import FITTED_SHAPE, MARGIN, Design, checked_margin

HOST_BUILD = "host"  # the installed mariadb-server, as server/builds.py names it
BUILD_NAME = re.compile(r"[a-z][a-z0-9.-]*")

ENGINES = ("InnoDB", "MyISAM", "Aria", "MEMORY", "RocksDB")

SECTION_KEYS: dict[str, tuple[str, ...]] = {
    "study": ("name", "description", "baseline", "source", "layout"),
    "dataset": ("engine", "tables", "rows", "existing"),
    "workload": ("name", "options"),
    "run": ("threads", "warmup_seconds", "run_seconds", "repeats", "warmup_threads",
            "profile", "time", "margin", "max_rounds", "slice_seconds", "schedule", "alpha",
            "clients"),
}
TOP_KEYS = (*SECTION_KEYS, "server", "configs", "steps", "axes", "tune")
# Keys of [server], [configs.NAME] and [[steps]] that are perflab's, not server variables.
ENVIRONMENT_KEYS = ("engine", "allocator", "server_cpus", "client_cpus", "connection", "server")
# The key of those tables naming variables set only on a build whose catalog has them.
ONLY_WHERE_PRESENT = "only_where_present"
ALLOCATORS = ("glibc", "jemalloc", "tcmalloc")
CONNECTIONS = ("socket", "tcp")
AXES = ("engine", "allocator", "connection", "pinning", "server")


class Schedule(StrEnum):
    """How a run measures the configurations of a round: FLEET, one server each taking turns in
    time slices; SERIAL, one server, back to back; AUTO, fleet when they fit side by side."""

    AUTO = "auto"
    FLEET = "fleet"
    SERIAL = "serial"


SCHEDULES = tuple(Schedule)

Scalar = int | float | bool | str


@dataclass(frozen=True)
class Dataset:
    engine: str = "InnoDB"
    tables: int = 1
    rows: int = 10_000
    # The schema of a server perflab did not start whose tables and data are used as they
    # are (nothing is loaded); tables and rows then describe them for workloads that need it.
    existing: str = ""

    def describe(self) -> dict[str, Any]:
        """The dataset's fields; `existing` only when set, so that the definitions of plans
        written before it existed stay the same."""
        return {k: v for k, v in vars(self).items() if k != "existing" or v}


@dataclass(frozen=True)
class Workload:
    name: str
    options: tuple[tuple[str, Scalar], ...] = ()
    # the content (sha256) of the file a `file` option names, read once with the plan
    files: tuple[tuple[str, str], ...] = ()

    def identity(self) -> list:
        """The workload as a definition hashes it: its name and options, a `file` option by
        its content as read with the plan (the data and statements it holds), not its path, so
        that a file edited in place is another workload and a file moved is the same one."""
        digests = dict(self.files)
        return [self.name, [(key, f"sha256:{digests[key]}" if key in digests else value)
                            for key, value in self.options]]

    @property
    def label(self) -> str:
        if not self.options:
            return self.name
        inner = ",".join(f"{k}={_show(v)}" for k, v in self.options)
        return f"{self.name}({inner})"


@dataclass(frozen=True)
class Environment:
    """How the server and the client run, apart from server variables (the MySQL 5.5 sysbench
    tuning study's dimensions).

    allocator: malloc of mariadbd (glibc, or jemalloc/tcmalloc through LD_PRELOAD);
    server_cpus / client_cpus: taskset CPU lists for mariadbd and sysbench;
    connection: Unix socket or TCP on 127.0.0.1;
    server: the server build (server/builds.py), "host" for the installed mariadb-server.
    """

    allocator: str = "glibc"
    server_cpus: str | None = None
    client_cpus: str | None = None
    connection: str = "socket"
    server: str = HOST_BUILD

    def describe(self) -> dict[str, str | None]:
        """The fields; `server` only when not the host's, so that the definitions of plans
        written before builds existed stay the same."""
        return {k: v for k, v in vars(self).items() if k != "server" or v != HOST_BUILD}


@dataclass(frozen=True)
class ServerConfig:
    """A named set of server variables (the plan's shared [server] ones plus its own), the
    environment the server runs in, and the dataset engine when the configuration sets one."""

    name: str
    variables: tuple[tuple[str, Scalar], ...] = ()
    environment: Environment = Environment()
    engine: str | None = None
    # Variables among `variables` set only on a build that has them (the query cache, which
    # MySQL 8+ lacks): on another, the configuration runs without them.
    only_where_present: frozenset[str] = frozenset()

    def as_dict(self) -> dict[str, Scalar]:
        return dict(self.variables)


@dataclass(frozen=True)
class RunSettings:
    threads: tuple[int, ...]
    warmup_seconds: int = 30
    run_seconds: int = 10
    repeats: int = 3
    warmup_threads: int = 0  # 0: the largest thread count of the plan, capped at 16
    profile: bool = False  # perf record mariadbd during every point, when perf works here
    # Deciding within a budget: with `time` (seconds), rounds go on after `repeats` only for the
    # comparisons not yet resolved (undecided, or a difference not yet measured to the margin),
    # until all are resolved, the time is spent or max_rounds.
    time: float = 0.0
    margin: float = MARGIN  # "equivalent" means within ±margin
    alpha: float = 0.05  # the chance of any false verdict in a table
    # A safety cap: a budget that holds fewer rounds fits its looks to those (as budgets on
    # this machine do: 30 minutes held ~70 rounds of the small-effects plan, which a cap of 60
    # left at Pocock's level, its last look's interval 14% wider than the fitted one's).
    max_rounds: int = 200
    # How configurations are measured side by side: "fleet" (one server each, taking turns in
    # time slices of slice_seconds), "serial" (one server, back to back) or "auto" (fleet when
    # the servers fit in memory and disk).
    schedule: Schedule = Schedule.AUTO
    slice_seconds: float = 0.25
    # A Dask scheduler's address: each point's threads spread over its workers, several
    # client machines (load/clients.py); "" for load from this machine.
    clients: str = ""
    # Not a plan key: the lag-1 autocorrelation of rounds the intervals allow for, set at a
    # study's first run from what the lab measured (noise.frozen_dependence).
    lag1: float = Design.lag1
    # Not a plan key: with a time budget, the rounds it holds, fitted at the study's first look
    # from how long its first rounds took (rounds.fitted_looks); 0 until then.
    planned_rounds: int = 0

    @property
    def effective_slice_seconds(self) -> float:
        """The fleet's slice, never more than a quarter of a run, so that every configuration
        has at least four turns to average over."""
        return min(self.slice_seconds, self.run_seconds / 4)

    @property
    def effective_warmup_threads(self) -> int:
        return self.warmup_threads or min(max(self.threads), 16)

    def design(self) -> Design:
        """How the verdicts are judged: one look after `repeats` rounds, or with a time budget
        a look after every round up to the rounds the budget holds once they are fitted (on a
        boundary that judges the last looks nearly at the fixed-sample level), up to
        max_rounds before, or when the budget holds max_rounds or more (Pocock's constant
        level: the last look is only a cap, and a study that decides long before it should
        not pay for looks it will not need)."""
        if self.time and 0 < self.planned_rounds < self.max_rounds:
            return Design(self.alpha, self.margin, self.repeats,
                          max(self.planned_rounds, self.repeats), self.lag1, FITTED_SHAPE)
        last = self.max_rounds if self.time else self.repeats
        return Design(self.alpha, self.margin, self.repeats, max(last, self.repeats),
                      self.lag1)


@dataclass(frozen=True)
class Plan:
    name: str
    description: str
    baseline: str
    configs: tuple[ServerConfig, ...]
    workload: Workload
    dataset: Dataset
    run: RunSettings
    source: str = ""
    # A ladder applies its steps cumulatively: step i runs with the changes of steps 1..i.
    # `changes` maps each step (configuration) name to what that step itself changed.
    ladder: bool = False
    changes: tuple[tuple[str, str], ...] = ()
    # "configs-down": one row per configuration (the key-cache page); "threads-down": one row
    # per thread count, one column per configuration (the MyISAM scalability page).
    layout: str = "configs-down"
    # The [tune] section, checked by perflab.tune when the plan is tuned.
    tune: tuple[tuple[str, Any], ...] = ()

    @property
    def config_names(self) -> list[str]:
        return [config.name for config in self.configs]

    def config(self, name: str) -> ServerConfig:
        for config in self.configs:
            if config.name == name:
                return config
        raise KeyError(name)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "baseline": self.baseline,
            "source": self.source,
            "configs": {c.name: c.as_dict() for c in self.configs},
            "environments": {c.name: c.environment.describe() for c in self.configs},
            "engines": {c.name: self.dataset_for(c).engine for c in self.configs},
            "workload": {"name": self.workload.name, "options": dict(self.workload.options),
                         **({"files": dict(self.workload.files)} if self.workload.files
                            else {})},
            "dataset": vars(self.dataset),
            "run": {**vars(self.run), "threads": list(self.run.threads)},
            "definitions": {c.name: self.config_hash(c) for c in self.configs},
            "ladder": self.ladder,
            "layout": self.layout,
            "changes": dict(self.changes),
            "config_engines": {c.name: c.engine for c in self.configs},
            "only_where_present": {c.name: sorted(c.only_where_present) for c in self.configs
                                   if c.only_where_present},
            "tune": {k: list(v) if isinstance(v, tuple) else v for k, v in self.tune},
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Plan:
        """The plan `to_json` wrote, also from results databases of earlier perflab versions
        (which lack the configurations' own engines and the [tune] section)."""
        dataset = Dataset(**data["dataset"])
        run_fields = {f.name for f in fields(RunSettings)}
        run = RunSettings(**{**{k: v for k, v in data["run"].items() if k in run_fields},
                             "threads": tuple(data["run"]["threads"]),
                             "schedule": Schedule(data["run"].get("schedule", Schedule.AUTO))})
        own_engines = data.get("config_engines")
        configs = []
        for name, variables in data["configs"].items():
            environment = Environment(**data.get("environments", {}).get(name, {}))
            if own_engines is not None:
                engine = own_engines.get(name)
            else:
                effective = data.get("engines", {}).get(name, dataset.engine)
                engine = effective if effective != dataset.engine else None
            optional = frozenset(data.get("only_where_present", {}).get(name, ()))
            configs.append(ServerConfig(name, tuple(variables.items()), environment, engine,
                                        optional))
        workload = Workload(data["workload"]["name"],
                            tuple(data["workload"].get("options", {}).items()),
                            tuple(data["workload"].get("files", {}).items()))
        tune = tuple((k, tuple(v) if isinstance(v, list) else v)
                     for k, v in data.get("tune", {}).items())
        return cls(data["name"], data.get("description", ""), data["baseline"], tuple(configs),
                   workload, dataset, run, data.get("source", ""),
                   ladder=data.get("ladder", False),
                   changes=tuple(data.get("changes", {}).items()),
                   layout=data.get("layout", "configs-down"), tune=tune)

    def point(self, config: ServerConfig, threads: int, round_number: int) -> Point:
        """The point of `config` at `threads` in round `round_number`: the one builder."""
        return Point(config, self.workload, threads, round_number, self.config_hash(config))

    def config_hash(self, config: ServerConfig) -> str:
        """A hash of everything that shapes one configuration's measurements.

        Thread counts and repeats are not part of it: raising repeats or adding a thread count
        keeps the points already measured.
        """
        payload = {
            "config": [config.name, list(config.variables)],
            **({"only_where_present": sorted(config.only_where_present)}
               if config.only_where_present else {}),
            "workload": self.workload.identity(),
            "dataset": self.dataset_for(config).describe(),
            "warmup_seconds": self.run.warmup_seconds,
            "warmup_threads": self.run.effective_warmup_threads,
            "run_seconds": self.run.run_seconds,
            "schedule": [self.run.schedule, self.run.slice_seconds],
        }
        if config.environment != Environment():
            payload["environment"] = config.environment.describe()
        if self.run.clients:  # not the address: a scheduler started afresh measures the same
            payload["load"] = "several client machines"
        text = json.dumps(payload, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def across_builds(self, builds: list[str]) -> Plan:
        """Every configuration on each of `builds` (as [axes] server crosses them); the
        baseline is the baseline's on the first."""
        configs = _cross(list(self.configs), {"server": builds}, f"study {self.name}")
        crossed = {c.name for c in configs}
        alone = builds[0] if builds[0] in crossed else f"{self.baseline} {builds[0]}"
        return replace(self, configs=tuple(configs), baseline=alone)

    def dataset_for(self, config: ServerConfig) -> Dataset:
        """The plan's dataset, on the configuration's own engine when it names one."""
        if config.engine and config.engine != self.dataset.engine:
            return replace(self.dataset, engine=config.engine)
        return self.dataset

    def with_overrides(
        self,
        *,
        scale: float | None = None,
        repeats: int | None = None,
        run_seconds: int | None = None,
        warmup_seconds: int | None = None,
        threads: tuple[int, ...] | None = None,
        time: float | None = None,
        margin: float | None = None,
        clients: str | None = None,
        build: str | None = None,
    ) -> Plan:
        """The plan with overrides of its keys applied, each checked like its TOML twin; an
        error names the plan key and the argument (the CLI shows its flag)."""
        dataset, run = self.dataset, self.run
        if scale is not None:
            if not (math.isfinite(scale) and scale > 0):
                raise PerflabError(f"scale must be positive, got {scale}", option="scale")
            dataset = replace(dataset, rows=max(1, round(dataset.rows * scale)))
        if repeats is not None:
            run = replace(run, repeats=_overriding("repeats", _positive, "run.repeats",
                                                   repeats))
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
            _overriding("clients", _check_clients, run, self.configs, "clients")
        configs = self.configs
        if build is not None:  # every configuration on that server build
            server = _overriding("build", _server_build, build, "build")
            configs = tuple(replace(c, environment=replace(c.environment, server=server))
                            for c in configs)
        return replace(self, dataset=dataset, run=run, configs=configs)


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


@dataclass(frozen=True)
class Point:
    """One measurement: a configuration, the workload, a thread count, a round number."""

    config: ServerConfig
    workload: Workload
    threads: int
    round: int
    config_hash: str

    @property
    def label(self) -> str:
        return f"{self.config.name} threads={self.threads} round={self.round}"


def parse_plan(text: str, origin: str = "plan") -> Plan:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PerflabError(f"{origin}: not valid TOML: {exc}") from None
    return _build(data, origin)


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
        repeats=run_int("repeats", RunSettings.repeats, 1),
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
    if run.time and run.max_rounds < run.repeats:
        raise PerflabError(f"{origin}: run.max_rounds ({run.max_rounds}) is below run.repeats "
                           f"({run.repeats})", hint="max_rounds caps the rounds a budget adds")
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


def canonical_engine(name: str) -> str | None:
    """A storage engine's name as perflab spells it (ENGINES), whatever its case; None for one
    perflab does not know."""
    return next((engine for engine in ENGINES if engine.lower() == name.lower()), None)


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
        changes.append((name, ", ".join(f"{k}={_show(v)}" for k, v in own.items()) or "-"))
    return configs, tuple(changes)


def normalize_variable_name(name: str) -> str:
    return name.strip().lower().replace("-", "_")


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
            hint = f"did you mean {prefix}{close[0]}?" if close else None
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


def _show(value: Scalar) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def _identifier(table: dict, key: str, where: str) -> str:
    """A schema name, or "" when the key is absent."""
    value = _string(table, key, where) or ""
    if value and not re.fullmatch(r"[A-Za-z0-9_$]{1,64}", value):
        raise PerflabError(f"{where} = {value!r} is not a schema name",
                           hint="letters, digits, _ and $ only, as the server names databases")
    return value
