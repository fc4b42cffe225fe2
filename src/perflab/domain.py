"""The study's types: what a plan describes, and what is computed from a valid one.

A `Plan` names server configurations (one is the baseline), one workload, one dataset and how
to run (`RunSettings`); `Point` is one measurement of it. Their own behaviour lives here: the
per-configuration `config_hash` that makes resuming exact, the JSON a results database keeps
(`to_json`, `from_json`), the dataset a configuration runs on, the design its verdicts are
judged by. Reading and checking a plan's TOML is plan.py's (`load_plan`, `parse_plan`); these
types take values already checked.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from typing import Any

from perflab.stats.design import FITTED_SHAPE, MARGIN, Design

HOST_BUILD = "host"  # the installed mariadb-server, as server/builds.py names it

ENGINES = ("InnoDB", "MyISAM", "Aria", "MEMORY", "RocksDB")
ALLOCATORS = ("glibc", "jemalloc", "tcmalloc")  # malloc of the server process
CONNECTIONS = ("socket", "tcp")
# the dimensions a plan's [axes] cross its configurations over
AXES = ("engine", "allocator", "connection", "pinning", "server")


class Schedule(StrEnum):
    """How a run measures the configurations of a round: FLEET, one server each taking turns in
    time slices; SERIAL, one server, back to back; AUTO, fleet when they fit side by side."""

    AUTO = "auto"
    FLEET = "fleet"
    SERIAL = "serial"


SCHEDULES = tuple(Schedule)
# Plan keys renamed so that one idea has one name (a round is a round): section -> {old: new}.
# A stored plan is read with the new names (store/migrate.py); a plan file is told them.
RENAMED_KEYS = {"run": {"repeats": "rounds"},
                "tune": {"final_repeats": "final_rounds", "final_max_repeats": "final_max_rounds"}}

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
        inner = ",".join(f"{k}={show(v)}" for k, v in self.options)
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
    rounds: int = 3
    warmup_threads: int = 0  # 0: the largest thread count of the plan, capped at 16
    profile: bool = False  # perf record mariadbd during every point, when perf works here
    # Deciding within a budget: with `time` (seconds), rounds go on after `rounds` only for the
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
    # Not a plan key: each comparison asks only whether it is slower than the baseline by more
    # than the margin (Design.one_sided), as tune's checks against its winner do.
    one_sided: bool = False

    @property
    def effective_slice_seconds(self) -> float:
        """The fleet's slice, never more than a quarter of a run, so that every configuration
        has at least four turns to average over."""
        return min(self.slice_seconds, self.run_seconds / 4)

    @property
    def effective_warmup_threads(self) -> int:
        return self.warmup_threads or min(max(self.threads), 16)

    def design(self) -> Design:
        """How the verdicts are judged: one look after `rounds` rounds, or with a time budget
        a look after every round up to the rounds the budget holds once they are fitted (on a
        boundary that judges the last looks nearly at the fixed-sample level), up to
        max_rounds before, or when the budget holds max_rounds or more (Pocock's constant
        level: the last look is only a cap, and a study that decides long before it should
        not pay for looks it will not need)."""
        if self.time and 0 < self.planned_rounds < self.max_rounds:
            return Design(self.alpha, self.margin, self.rounds,
                          max(self.planned_rounds, self.rounds), self.lag1, FITTED_SHAPE,
                          self.one_sided)
        last = self.max_rounds if self.time else self.rounds
        return Design(self.alpha, self.margin, self.rounds, max(last, self.rounds),
                      self.lag1, one_sided=self.one_sided)


@dataclass(frozen=True)
class Plan:
    """A study: its configurations (one the baseline), workload, dataset and run settings, as
    its TOML gives them (`load_plan`) or a results database kept them (`from_json`)."""

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

        Thread counts and rounds are not part of it: raising rounds or adding a thread count
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

    def dataset_for(self, config: ServerConfig) -> Dataset:
        """The plan's dataset, on the configuration's own engine when it names one."""
        if config.engine and config.engine != self.dataset.engine:
            return replace(self.dataset, engine=config.engine)
        return self.dataset


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


def canonical_engine(name: str) -> str | None:
    """A storage engine's name as perflab spells it (ENGINES), whatever its case; None for one
    perflab does not know."""
    return next((engine for engine in ENGINES if engine.lower() == name.lower()), None)


def normalize_variable_name(name: str) -> str:
    """A server variable's name as perflab keys it: lower case, `_` for `-`."""
    return name.strip().lower().replace("-", "_")


def show(value: Scalar) -> str:
    """A setting's value as a label shows it (a bool as on or off)."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
