"""The backend of a run (its server side): where its measured server comes from and how a
configuration gets onto it. The Measurer (measurer.py) holds one and never asks which kind it
is.

- `ManagedBackend`: mariadbd started by perflab on a copy of the dataset, one configuration after
  another, switched by SET GLOBAL when every changed variable is dynamic and restarted on a
  restored datadir otherwise; or, when the plan allows it, a fleet of one server per
  configuration (_fleet.py).
- `ExistingBackend` (existing_backend.py): someone else's server, never started or stopped,
  configurations applied through the lab's journal and put back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Protocol, runtime_checkable

import pymysql

from perflab.domain import Plan, Schedule, ServerConfig
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.load.family import LOADER_OPTIONS
from perflab.load.preload import preload
from perflab.load.workloads import ResolvedWorkload
from perflab.running._fleet import fits
from perflab.running._progress import pairs
from perflab.say import Say
from perflab.server import builds
from perflab.server import environment as env
from perflab.server.flavor import server_label
from perflab.server.managed import ManagedServer
from perflab.server.protocol import Server
from perflab.server.variables import Catalog
from perflab.store import Activation


@runtime_checkable
class Backend(Protocol):
    """What a run needs of the place its points are measured.

    `catalog` the measured server's variables (the baseline's build's, when configurations
    run on several builds: `catalog_of`); `options` every checked configuration's server
    options, by configuration name; `server` the running server (None until a point needs
    it). What a backend cannot do (profile with perf, run configurations side by side, set
    variables without permission) it refuses when made, or answers with the reason.
    """

    catalog: Catalog
    options: dict[str, dict[str, str]]

    @property
    def server(self) -> Server | None:
        """The running server, None until a point needs it."""

    def catalog_of(self, config: ServerConfig) -> Catalog:
        """The catalog of the server `config` runs on."""

    def add(self, config: ServerConfig) -> None:
        """A configuration not in the plan (a tuning trial): checked, its dataset ready."""

    def schedule(self) -> tuple[Schedule, str]:
        """(FLEET or SERIAL, why)."""

    def side_by_side_fits(self, configs: list[ServerConfig]) -> str | None:
        """None when `configs` (already added) can run on servers side by side; else why not."""

    def ensure_dataset(self, config: ServerConfig) -> None:
        """The configuration's dataset is where its server will find it."""

    def activate(self, config: ServerConfig) -> Activation | None:
        """The server runs `config`: how it got there, or None when it already ran it
        (nothing changed, no warm-up needed)."""

    def preload(self) -> str:
        """The engines' own preload of the dataset, when the backend allows it; what it did."""

    def after_writes(self) -> None:
        """The workload wrote: what is needed for the next configuration's equal footing."""

    def death_report(self) -> str | None:
        """After a failed point: the server's exit and log tail when it died, else None."""

    def stop(self) -> None:
        """Leave the server as perflab found it: stopped, or its variables put back."""


def check_configs(plan: Plan, catalog_of: Callable[[ServerConfig], Catalog],
                  workload: ResolvedWorkload, say: Say | None = None) -> dict[str, dict[str, str]]:
    """Every configuration's variables as command-line strings, each checked against the
    catalog of its own server; a PerflabError on the first bad one. Nothing has started when
    this raises. A variable only_where_present names is left out where the catalog lacks it,
    and `say` is told."""
    checked = {}
    for config in plan.configs:
        where = f"configs.{config.name}"
        catalog = catalog_of(config)
        absent = sorted(config.only_where_present - catalog.variables.keys())
        if absent and say:
            say(f"{where}: {', '.join(absent)} left out: not a variable of "
                f"{server_label(catalog.version)} (only_where_present)")
        workload.family.check(plan.dataset_for(config), where)
        engine = plan.dataset_for(config).engine
        plugin = env.engine_options(engine, f"{where}: dataset engine", config.environment.server)
        if not plugin:
            catalog.require_engine(engine, f"{where}: dataset engine")
        env.check(config.environment, where)
        checked[config.name] = {
            **plugin,
            **{name: catalog.check(name, value, where) for name, value in config.variables
               if name in catalog.variables or name not in config.only_where_present},
        }
        asked = checked[config.name].get("max_connections")
        if not asked:
            asked = catalog.variables["max_connections"].startup_value
            assert asked is not None, "every server reports its max_connections"
        limit = int(asked)
        needed = max(plan.run.threads + (plan.run.effective_warmup_threads,))
        if needed + 2 > limit:  # perflab's own status connection needs one more
            raise PerflabError(
                f"{where}: max_connections = {limit} is too small for {needed} threads",
                hint=f"set max_connections to at least {needed + 2} in [server]",
            )
    return checked


def check_config(plan: Plan, config: ServerConfig, catalog_of: Callable[[ServerConfig], Catalog],
                 workload: ResolvedWorkload) -> dict[str, str]:
    """One configuration not in the plan (a tuning trial) checked as the plan's are."""
    single = replace(plan, configs=(config,), baseline=config.name)
    return check_configs(single, catalog_of, workload)[config.name]


class ManagedBackend:
    """A server started by perflab in the lab's first slot, for one configuration at a time;
    each configuration's on its own build (the host's mariadbd unless it names another)."""

    def __init__(self, plan: Plan, lab: Lab, workload: ResolvedWorkload, say: Say):
        self.plan, self.lab, self.workload, self.say = plan, lab, workload, say
        if plan.dataset.existing:
            raise PerflabError(
                f"dataset.existing = {plan.dataset.existing!r} names the data of a server "
                "perflab did not start", hint="give that server to measure it on",
                option="server")
        self.catalogs: dict[str, Catalog] = {}  # by build, each read once (catalog_of)
        self.catalog = self.catalog_of(plan.config(plan.baseline))
        self.options = check_configs(plan, self.catalog_of, workload, say)  # every build's
        self.server: ManagedServer | None = None
        self.active: str | None = None  # name of the configuration the server runs
        self.slot = lab.slot(0)

    def catalog_of(self, config: ServerConfig) -> Catalog:
        build = config.environment.server
        if build not in self.catalogs:
            self.catalogs[build] = self.lab.catalog(builds.find(build))
        return self.catalogs[build]

    def add(self, config: ServerConfig) -> None:
        self.options[config.name] = check_config(self.plan, config, self.catalog_of,
                                                 self.workload)
        self.ensure_dataset(config)

    def dataset_key(self, config: ServerConfig) -> str:
        return self.workload.config_dataset_key(self.plan, config)

    def schedule(self) -> tuple[Schedule, str]:
        plan = self.plan
        requested = plan.run.schedule
        if plan.run.clients:
            return Schedule.SERIAL, "load from several client machines, one server at a time"
        if requested == Schedule.SERIAL or len(plan.configs) == 1:
            return Schedule.SERIAL, ("as the plan asks" if requested == Schedule.SERIAL
                                     else "one configuration")
        size = sum(self.lab.snapshot_bytes(self.dataset_key(c)) for c in plan.configs)
        why_not = fits(plan, self.catalog_of, self.options, self.lab, size // len(plan.configs))
        if why_not is None:
            return Schedule.FLEET, (f"{len(plan.configs)} servers side by side, taking turns "
                                    f"in {plan.run.effective_slice_seconds:g} s slices")
        if requested == Schedule.FLEET:
            self.say(f"warning: {why_not}; running the fleet as the plan asks")
            return Schedule.FLEET, "as the plan asks"
        return Schedule.SERIAL, f"{why_not}: one server, configurations back to back"

    def side_by_side_fits(self, configs: list[ServerConfig]) -> str | None:
        """None when `configs` (already added) can run side by side; else why not."""
        size = max(self.lab.snapshot_bytes(self.dataset_key(c)) for c in configs)
        group = replace(self.plan, configs=tuple(configs), baseline=configs[0].name)
        return fits(group, self.catalog_of, self.options, self.lab, size)

    def ensure_dataset(self, config: ServerConfig) -> None:
        dataset = self.plan.dataset_for(config)
        family = self.workload.family

        def load(server: ManagedServer) -> dict:
            report = family.load(server.endpoint, dataset)
            self.say(f"loaded {report.rows} rows in {report.seconds:.1f} s")
            return {"dataset": vars(dataset), "schema": family.schema,
                    "settings": family.dataset_settings(), "load_seconds": report.seconds}

        build = builds.find(config.environment.server)
        catalog = self.catalog_of(config)
        options = {**{name: value for name, value in LOADER_OPTIONS.items()
                      if name in catalog.variables},  # the build's own (aria_* on MariaDB)
                   **env.engine_options(dataset.engine, build=build.name)}
        if build.flavor == "MySQL":  # the loader's LOAD DATA reads a pipe outside the datadir
            options["secure_file_priv"] = ""
        self.lab.ensure_dataset(self.dataset_key(config), load, options, self.say, build)

    def activate(self, config: ServerConfig) -> Activation | None:
        server = self.server
        if server is not None and server.alive() and self.active == config.name:
            return None
        wanted = self.options[config.name]
        if server is not None and self._can_set_live(server, config):
            changed = {k: v for k, v in wanted.items() if server.options.get(k) != v}
            self.say(f"configuration {config.name}: SET GLOBAL {pairs(changed)}")
            try:
                server.set_global(changed)
                self.active = config.name
                return Activation.SET
            except pymysql.MySQLError as exc:  # e.g. key_buffer_size=0 on the default cache
                self.say(f"SET GLOBAL refused ({exc.args[-1]}): restarting instead")
        self.start_fresh(config)
        return Activation.START

    def start_fresh(self, config: ServerConfig) -> ManagedServer:
        """A just-started server for `config` on a datadir restored from its dataset (status
        counters from zero)."""
        self.stop()
        self.slot.checkout(self.dataset_key(config), self.say)
        wanted = self.options[config.name]
        self.say(f"configuration {config.name}: starting {config.environment.server}'s server "
                 f"{pairs(wanted)}")
        environment = config.environment
        if self.plan.run.clients:  # the client workers connect over the network
            environment = replace(environment, connection="tcp")
        self.server = self.slot.server(wanted, env.server_environment(environment))
        self.server.start()
        self.active = config.name
        return self.server

    def _can_set_live(self, server: ManagedServer, config: ServerConfig) -> bool:
        wanted = self.options[config.name]
        if not server.alive() or self.workload.writes:
            return False  # writing workloads restart on a restored datadir for equal footing
        if (self.slot.state().get("dataset") != self.dataset_key(config)
                or server.environment != env.server_environment(config.environment)):
            return False  # another dataset, allocator, pinning or connection: restart
        if set(server.options) != set(wanted):
            return False  # a variable would have to return to its default: restart
        changed = [k for k, v in wanted.items() if server.options.get(k) != v]
        variables = self.catalog_of(config).variables
        return all(name in variables and variables[name].dynamic for name in changed)

    def preload(self) -> str:
        assert self.server is not None, "called once a configuration is active"
        loaded = preload(self.server.endpoint, self.workload.family.schema, self.server.datadir)
        return f"caches preloaded in {loaded:.1f} s, "

    def after_writes(self) -> None:
        self.slot.set_state(dirty=True)  # the next start restores the datadir

    def death_report(self) -> str | None:
        if self.server is None or not self.server.died():
            return None
        report = self.server.death_report()
        self.slot.set_state(dirty=True)  # tables may be marked crashed: restore
        self.stop()
        return report

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.server = None
        self.active = None
