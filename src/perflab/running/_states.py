"""What a server runs, stored each time a configuration starts on it or is set: every global
variable as the server reports it, and the facts of its process (server/protocol.py)."""

from __future__ import annotations

from collections.abc import Callable

from perflab.domain import Plan, ServerConfig
from perflab.load.workloads import ResolvedWorkload
from perflab.server.connection import query
from perflab.server.protocol import Server
from perflab.server.variables import Catalog, overridden
from perflab.store import Activation, ResultStore


class ServerStates:
    """Stores server states for one plan's run, and says once per configuration and variable
    when MariaDB runs another value than the one asked (the lab records what it runs)."""

    def __init__(self, store: ResultStore, plan: Plan, workload: ResolvedWorkload,
                 catalog_of: Callable[[ServerConfig], Catalog], say: Callable[[str], None]):
        self.store, self.plan, self.workload = store, plan, workload
        self.catalog_of, self.say = catalog_of, say
        self.overrides_said: set[tuple[str, str, str]] = set()  # (config, variable, running)

    def record(self, session: int, server: Server, config: ServerConfig, how: Activation
               ) -> int:
        """The state of `server` running `config`, reached by `how`."""
        with server.connect() as conn:
            variables = dict(query(conn, "SHOW GLOBAL VARIABLES"))
        catalog = self.catalog_of(config)
        for name, (asked, runs) in overridden(catalog, server.options, variables).items():
            if (config.name, name, runs) not in self.overrides_said:  # once, not every round
                self.overrides_said.add((config.name, name, runs))
                self.say(f"configuration {config.name}: the server runs {name}={runs}, not "
                         f"{asked} as asked (the server overrides it; the lab records what it "
                         "runs)")
        process = server.facts()
        process["environment"] = config.environment.describe()
        process["dataset"] = self.workload.config_dataset_key(self.plan, config)
        return self.store.save_server_state(session, config.name, how, catalog.version,
                                            variables, process)
