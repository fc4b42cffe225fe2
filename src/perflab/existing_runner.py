"""Running a study on a server perflab did not start (seed 004: a replica taken out of
rotation, its own data, its own queries).

The run is the managed one (runner.py: rounds, verdicts, budget) with the server side replaced:
the catalog is read from that server, nothing is ever started, stopped or restarted, and a
configuration is applied by SET GLOBAL through the lab's journal (server/existing.py), put back
when the run ends. What the user did not allow is refused before anything runs:

- variables that need a restart, allocators, CPU pinning or the connection type of the server;
- any SET GLOBAL without --allow-set;
- a workload that writes, or a dataset to load, without --allow-writes, and even with it
  anywhere but a schema of perflab's own (perflab_*): loaders drop and re-create their schema.
"""

from __future__ import annotations

from dataclasses import replace

from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.plan import Environment, Plan, ServerConfig
from perflab.runner import Runner, RunSummary, Say, validate
from perflab.server.connection import query
from perflab.server.existing import ExistingServer, restore_pending
from perflab.server.variables import Catalog, read_catalog
from perflab.store import ResultStore

OWN_SCHEMA_PREFIX = "perflab_"


def run_existing(plan: Plan, lab: Lab, server: ExistingServer, say: Say = print
                 ) -> RunSummary:
    """The study in `lab`, measured on `server`; first puts back what an earlier perflab that
    was killed left changed on it."""
    with lab.locked(), lab.store() as store:
        restore_pending(lab.root, server.endpoint, say)
        return ExistingRunner(plan, lab, store, say, server).run()


class ExistingRunner(Runner):
    """Runs a plan's points against `server`, one configuration after another."""

    def __init__(self, plan: Plan, lab: Lab, store: ResultStore, say: Say,
                 server: ExistingServer):
        self.existing = server
        super().__init__(plan, lab, store, say)
        self.server = server
        self.loaded: set[str] = set()  # datasets loaded into perflab's schema by this run

    def _catalog(self) -> Catalog:
        with self.existing.connect() as conn:
            return read_catalog(conn)

    def _validate(self, plan: Plan) -> dict[str, dict[str, str]]:
        allowed = self.existing.permissions
        if plan.run.profile:
            raise PerflabError("run.profile records mariadbd with perf on this machine; it "
                               "cannot profile a server perflab did not start",
                               hint="set profile = false for this run")
        schema = plan.dataset.existing or self.workload.family.schema
        if self.workload.writes and not allowed.writes:
            raise PerflabError(f"workload {plan.workload.label} writes, and this server was "
                               "not started by perflab", hint="add --allow-writes to let it "
                               f"write into schema {schema} (perflab_* schemas only)")
        if not plan.dataset.existing and not allowed.writes:
            raise PerflabError(
                f"the plan's dataset would be loaded into schema {schema} of a server perflab "
                "did not start", hint='name the data that is there: [dataset] existing = '
                '"SCHEMA", or add --allow-writes (perflab_* schemas only)')
        if (self.workload.writes or not plan.dataset.existing) and \
                not schema.startswith(OWN_SCHEMA_PREFIX):
            raise PerflabError(
                f"perflab writes only into schemas of its own (perflab_*), not {schema}",
                hint="on someone else's server, run read-only workloads on existing data, or "
                     "the sql workload, whose schema is perflab_sql")
        for config in plan.configs:
            self._check_config(config)
        self._check_schema(plan)
        return validate(plan, self.catalog, self.workload)

    def _check_config(self, config: ServerConfig) -> None:
        where = f"configs.{config.name}"
        environment = config.environment
        if replace(environment, client_cpus=None) != Environment():
            raise PerflabError(f"{where}: allocator, server_cpus and connection need a server "
                               "perflab starts", hint="only client_cpus applies here")
        if config.engine:
            raise PerflabError(f"{where}: engine = {config.engine} would load a dataset; the "
                               "data of an existing server stays on its own engine")
        for name, _ in config.variables:
            spec = self.catalog.spec(name, where)
            if not spec.dynamic:
                raise PerflabError(f"{where}: {name} can only change with a restart, and perflab "
                                   "never restarts a server it did not start",
                                   hint="remove it from the plan, or measure it on a managed "
                                        "server")
            if not self.existing.permissions.set_variables:
                raise PerflabError(f"{where}: {name} would be changed with SET GLOBAL on a "
                                   "server perflab did not start",
                                   hint="add --allow-set (changed variables are journalled in "
                                        "the lab and put back at the end)")

    def _check_schema(self, plan: Plan) -> None:
        if not plan.dataset.existing:
            return
        with self.existing.connect() as conn:
            ((tables,),) = query(conn, "SELECT COUNT(*) FROM information_schema.TABLES "
                                       "WHERE TABLE_SCHEMA = %s", (plan.dataset.existing,))
        if not tables:
            raise PerflabError(f"dataset.existing: the server has no schema "
                               f"{plan.dataset.existing!r} with tables (or this user cannot "
                               "see it)", hint="SHOW DATABASES lists the schemas")

    # -- the server side -----------------------------------------------------------------------

    def _schedule(self) -> tuple[str, str]:
        return "serial", "a server perflab did not start: configurations back to back on it"

    def _ensure_dataset(self, config: ServerConfig) -> None:
        dataset = self.plan.dataset_for(config)
        key = self._dataset_key(config)
        if dataset.existing or key in self.loaded:
            return
        self.say(f"loading dataset {key} into schema {self.workload.family.schema}")
        report = self.workload.family.load(self.existing.endpoint, dataset)
        self.say(f"loaded {report.rows} rows in {report.seconds:.1f} s")
        self.loaded.add(key)

    def _activate(self, session: int, config: ServerConfig) -> None:
        """Variables of the configuration set (and those of the one before put back), then
        the warm-up when anything changed."""
        if self.active == config.name:
            return
        wanted = self._options[config.name]
        server = self.existing
        server.put_back([name for name in server.options if name not in wanted])
        changed = {k: v for k, v in wanted.items() if server.options.get(k) != v}
        if changed:
            self.say(f"configuration {config.name}: SET GLOBAL "
                     + " ".join(f"{k}={v}" for k, v in changed.items()))
            server.set_global(changed)
        self.active = config.name
        self.server_state_id = self._record_state(session, server, config,
                                                  "set" if changed else "as is")
        self._warm_up(config)

    def _process_facts(self, server: ExistingServer) -> dict:
        return server.facts()

    def _preload(self) -> str:
        return ""  # its files are not ours to read, and its caches hold what its users need

    def stop(self) -> None:
        """Puts back what was changed; the server itself runs on."""
        self.existing.stop()
        self.active = None
