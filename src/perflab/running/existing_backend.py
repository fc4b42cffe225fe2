"""The backend of a run on a server perflab did not start (the STAR notes: a replica taken
out of rotation, its own data, its own queries).

The run is the managed one (runner.py: rounds, verdicts, budget) with this backend (backend.py):
the catalog is read from that server, nothing is ever started, stopped or restarted, and a
configuration is applied by SET GLOBAL through the lab's journal (server/existing.py), put back
when the run ends. What the user did not allow is refused before anything runs:

- variables that need a restart, allocators, CPU pinning or the connection type of the server;
- any SET GLOBAL without --allow-set;
- a workload that writes, or a dataset to load, without --allow-writes, and even with it
  anywhere but a schema of perflab's own (perflab_*): loaders drop and re-create their schema,
  and every table a writing statement names must be in one;
- the user's statements that are not plain reads (load/classify.py): several statements in one,
  files written or read on the database host and executable comments always, locking reads
  without --allow-locks, writes without --allow-writes; and what they reach on the server
  (load/reach.py): a view through its definition, a stored function through its body, with
  the same rules, and any function the server does not show perflab.

A run whose workload does not write keeps every session read-only at the server (perflab's own
and each of sysbench's), so what the checks above missed still cannot change a row.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from dataclasses import replace

from perflab.domain import HOST_BUILD, Environment, Plan, Schedule, ServerConfig
from perflab.errors import PerflabError
from perflab.load.classify import Classified, Kind, classify
from perflab.load.family import Family
from perflab.load.reach import Reached, ServerObjects, prepare_refusal, reached
from perflab.load.sqlworkload import shown
from perflab.load.workloads import ResolvedWorkload
from perflab.procs import forget_sessions, watch_sessions
from perflab.running._progress import pairs
from perflab.running.backend import Say, check_config, check_configs
from perflab.server.connection import query
from perflab.server.existing import (
    SET_BY_VALUE,
    WITH_COLLATION,
    ExistingServer,
    Permissions,
    unrestorable,
)
from perflab.server.variables import Catalog, VariableSpec, read_catalog
from perflab.store import Activation

OWN_SCHEMA_PREFIX = "perflab_"
# What an account may hold and still change nothing a read-only run promises to keep.
READ_ONLY_PRIVILEGES = {"USAGE", "SELECT", "SHOW VIEW", "SHOW DATABASES", "PROCESS",
                        "REPLICATION CLIENT", "BINLOG MONITOR", "SLAVE MONITOR",
                        "REPLICA MONITOR"}
GRANT_LINE = re.compile(r"^GRANT (.+?) ON (\S+) TO ", re.S)
STATEMENT_SLACK_SECONDS = 30  # a statement may run this much longer than a point or warm-up


def not_settable(spec: VariableSpec) -> str | None:
    """Why --allow-set may not change the dynamic variable `spec` (None when it may): what it
    does is more than a value put back (existing.unrestorable), it is a character set held
    with a collation (WITH_COLLATION), or the server takes no command-line option for it and
    it is not one SET GLOBAL sets by value (SET_BY_VALUE, which read_catalog gives one)."""
    if spec.name in WITH_COLLATION:
        collation = WITH_COLLATION[spec.name]
        return (f"shares its value with {collation}, which putting it back would not restore "
                f"(set {collation}: a collation names its character set)")
    why = unrestorable(spec.name)
    if why is None and spec.command_line is None:
        why = ("has no command-line option, and of those perflab sets only the defaults a "
               "value puts back (character sets of clients, results and file names, "
               "collations, default engines, lc_time_names, time_zone)")
    return why


class ExistingBackend:
    """Someone else's server, for one configuration at a time: its catalog read from it, what
    the user did not allow refused when made, every session of a non-writing workload
    read-only at the server and bounded in time."""

    def __init__(self, server: ExistingServer, plan: Plan, workload: ResolvedWorkload,
                 say: Say):
        self.existing, self.plan, self.workload, self.say = server, plan, workload, say
        with server.connect() as conn:
            self.catalog = read_catalog(conn, dict.fromkeys(SET_BY_VALUE, "REQUIRED"))
            account = query(conn, "SELECT CURRENT_USER()")[0][0]
            powers = account_powers([row[0] for row in query(conn, "SHOW GRANTS")])
        self._check_account(account, powers)
        self._check(plan)
        self.options = check_configs(plan, self.catalog_of, workload, say)
        # the server enforces what the checks promised: read-write only for an allowed writer,
        # and no statement of the workload outlives its run (a SLEEP, a runaway join)
        run = plan.run
        handle, self.sessions = tempfile.mkstemp(prefix="perflab-sessions-", suffix=".txt")
        os.close(handle)  # mode 0600; sysbench's sessions append their ids (lua/perflab.lua)
        server.endpoint = replace(server.endpoint, read_only=not workload.writes,
                                  max_statement_seconds=max(run.run_seconds, run.warmup_seconds)
                                  + STATEMENT_SLACK_SECONDS, sessions_file=self.sessions)
        watch_sessions(self.sessions, server.endpoint)  # ended on the server if perflab dies
        server.watch()  # the tripwire's reference, checked before each point
        self.server = server
        self.active: str | None = None
        self.loaded: set[str] = set()  # datasets loaded into perflab's schema by this run

    def _check_account(self, account: str, powers: list[str]) -> None:
        """One line when the account could change what a read-only run keeps (the server then
        enforces less than perflab promises); a refusal when the user asked for an account
        that cannot."""
        if not powers:
            return
        line = (f"the account {account} can change what a read-only run keeps "
                f"({', '.join(powers[:4])}{', ...' if len(powers) > 4 else ''})")
        hint = ("run as a read-only account: docs/existing-servers.md has its GRANT lines "
                "(SELECT, SHOW VIEW, PROCESS)")
        if self.existing.permissions.read_only_account:
            raise PerflabError(f"{line}, and --read-only-account was given", hint=hint)
        self.say(f"warning: {line}: perflab's checks hold, the server itself enforces less; "
                 f"{hint}")

    def _check(self, plan: Plan) -> None:
        allowed = self.existing.permissions
        check_no_build(plan)
        if plan.run.profile:
            raise PerflabError("run.profile records the server with perf on this machine; it "
                               "cannot profile a server perflab did not start",
                               hint="set profile = false for this run")
        schema = plan.dataset.existing or self.workload.family.schema
        self._check_statements(plan, schema)
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
        if not self.workload.writes:
            check_sessions_stay_read_only(plan)
        for config in plan.configs:
            self._check_config(config)
        check_existing_schema(self.existing, plan)
        if plan.dataset.existing:  # what perflab refuses is refused before the server is asked
            check_prepared(self.existing, self.workload.family, plan.dataset.existing)

    def _check_statements(self, plan: Plan, schema: str) -> None:
        """Each of the user's statements against what was allowed (one line: the statement,
        what it does, the flag that would let it run); with a dataset to load, its schema
        statements too."""
        family = self.workload.family
        checked = [(f"statement {n}", sql, kind)
                   for n, (sql, kind) in enumerate(family.statements(), 1)]
        if not plan.dataset.existing:
            checked += [(f"schema statement {n}", sql, classify(sql))
                        for n, sql in enumerate(family.setup_statements(), 1)]
        if not checked:
            return
        with self.existing.connect() as conn:
            objects = ServerObjects(conn)
            for what, sql, kind in checked:
                refusal = statement_refusal(kind, self.existing.permissions, schema,
                                            reached(kind, schema, objects))
                if refusal:
                    reason, hint = refusal
                    raise PerflabError(f"{what} ({shown(sql)}) {reason}", hint=hint)

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
            why = not_settable(spec)
            if why:
                raise PerflabError(f"{where}: {name} {why}: on a server perflab did not start it "
                                   "changes only what it can put back and prove",
                                   hint="remove it from the plan, or measure it on a managed "
                                        "server")
            if not self.existing.permissions.set_variables:
                raise PerflabError(f"{where}: {name} would be changed with SET GLOBAL on a "
                                   "server perflab did not start",
                                   hint="add --allow-set (changed variables are journalled in "
                                        "the lab and put back at the end)")

    # -- the backend -------------------------------------------------------------------------------

    def catalog_of(self, config: ServerConfig) -> Catalog:
        return self.catalog  # one server: every configuration's

    def add(self, config: ServerConfig) -> None:
        self._check_config(config)
        self.options[config.name] = check_config(self.plan, config, self.catalog_of, self.workload)
        self.ensure_dataset(config)

    def schedule(self) -> tuple[Schedule, str]:
        return Schedule.SERIAL, "a server perflab did not start: configurations back to back on it"

    def side_by_side_fits(self, configs: list[ServerConfig]) -> str | None:
        return "perflab runs one configuration at a time on a server it did not start"

    def ensure_dataset(self, config: ServerConfig) -> None:
        dataset = self.plan.dataset_for(config)
        key = self.workload.dataset_key(dataset)
        if dataset.existing or key in self.loaded:
            return
        self.say(f"loading dataset {key} into schema {self.workload.family.schema}")
        writable = replace(self.existing.endpoint, read_only=False)  # --allow-writes said so
        report = self.workload.family.load(writable, dataset)
        self.say(f"loaded {report.rows} rows in {report.seconds:.1f} s")
        self.loaded.add(key)
        check_prepared(self.existing, self.workload.family, self.workload.family.schema)

    def activate(self, config: ServerConfig) -> Activation | None:
        """Before every point: the tripwire (no global variable changed since perflab last
        left them, server/existing.py), then the configuration's variables set and those of
        the one before put back."""
        self.existing.check_unchanged()
        if self.active == config.name:
            return None
        wanted = self.options[config.name]
        server = self.existing
        server.put_back([name for name in server.options if name not in wanted])
        changed = {k: v for k, v in wanted.items() if server.options.get(k) != v}
        if changed:
            self.say(f"configuration {config.name}: SET GLOBAL {pairs(changed)}")
            server.set_global(changed)
        self.active = config.name
        return Activation.SET if changed else Activation.AS_IS

    def preload(self) -> str:
        return ""  # its files are not ours to read, and its caches hold what its users need

    def after_writes(self) -> None:
        pass  # its data is its own: nothing to restore

    def death_report(self) -> str | None:
        return None  # whether someone else's server died is not ours to know

    def stop(self) -> None:
        """Puts back what was changed; the server itself runs on. Its sessions ended with
        their sysbench: the sentinel forgets them."""
        forget_sessions(self.sessions)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.sessions)
        try:
            self.existing.check_unchanged()  # after the last point
        finally:
            self.existing.stop()
            self.active = None


def check_existing_schema(server: ExistingServer, plan: Plan) -> None:
    """The schema a plan's dataset.existing names has tables the account can see."""
    if not plan.dataset.existing:
        return
    with server.connect() as conn:
        ((tables,),) = query(conn, "SELECT COUNT(*) FROM information_schema.TABLES "
                                   "WHERE TABLE_SCHEMA = %s", (plan.dataset.existing,))
    if not tables:
        raise PerflabError(f"dataset.existing: the server has no schema "
                           f"{plan.dataset.existing!r} with tables (or this user cannot "
                           "see it)", hint="SHOW DATABASES lists the schemas")


def check_no_build(plan: Plan) -> None:
    """A server perflab did not start is the one every configuration runs on: none may name a
    server build."""
    built = [c.name for c in plan.configs if c.environment.server != HOST_BUILD]
    if built:
        raise PerflabError(f"configs.{built[0]} names a server build, and a server perflab "
                           "did not start is the server its points run on",
                           hint="leave server out of the plan to measure this server, or "
                           "drop --socket/--host to measure the build")


def check_sessions_stay_read_only(plan: Plan) -> None:
    """sysbench opens a new session after an error it ignores or on `reconnect`, and that
    one is not read-only: neither is allowed on a read-only run."""
    options = dict(plan.workload.options)
    for name in ("mysql_ignore_errors", "reconnect"):
        if options.get(name) not in (None, "", 0, "none", False):
            raise PerflabError(
                f"workload.options.{name}: sysbench would open sessions that are not "
                "read-only, on a server perflab did not start",
                hint=f"remove {name}, or add --allow-writes if the workload may write")


def check_prepared(server: ExistingServer, family: Family, schema: str) -> None:
    """Each of the user's statements prepared by the server in `schema` (its tables must be
    there), nothing run: the server's parser has the last word on what is one statement."""
    with server.connect(schema) as conn:
        for n, (sql, _) in enumerate(family.statements(), 1):
            refused = prepare_refusal(conn, sql)
            if refused:
                raise PerflabError(f"statement {n} ({shown(sql)}) {refused}",
                                   hint="perflab runs each statement as the one statement the "
                                        "server prepares; fix it, or measure it on a managed "
                                        "server")


def account_powers(grants: list[str]) -> list[str]:
    """The privileges in an account's SHOW GRANTS beyond reading (a grant perflab cannot read,
    a role's or a proxy's, counts as one)."""
    powers: list[str] = []
    for grant in grants:
        match = GRANT_LINE.match(grant)
        if not match:
            powers.append(grant.split(" TO ", 1)[0])
            continue
        for privilege in re.sub(r"\([^)]*\)", "", match.group(1)).split(","):
            privilege = privilege.strip().upper()  # column lists left out above
            if privilege not in READ_ONLY_PRIVILEGES and privilege not in powers:
                powers.append(privilege)
    return powers


def statement_refusal(statement: Classified, allowed: Permissions, schema: str,
                      objects: list[Reached]) -> tuple[str, str] | None:
    """Why one statement may not run on someone else's server with what was `allowed`, and
    what would let it (reason, hint); None when it may. `schema` is the run's default one,
    `objects` the views and stored functions the statement reaches there (load/reach.py)."""
    refusal = _refusal(statement, allowed, schema)
    if refusal:
        return refusal
    for found in objects:
        refusal = _refusal(found.kind, allowed, found.schema)
        if refusal:
            reason, hint = refusal
            return f"reaches {found.path}, which {reason}", hint
        if found.kind.writes and allowed.writes and \
                not found.schema.startswith(OWN_SCHEMA_PREFIX):
            name = found.path.rsplit(" ", 1)[-1]
            return f"writes where perflab may not: {name} is not in a perflab_* schema", \
                "on someone else's server perflab writes only into schemas of its own " \
                "(perflab_*)"
    return None


def _refusal(statement: Classified, allowed: Permissions, schema: str
             ) -> tuple[str, str] | None:
    """statement_refusal for one statement (or one view's definition, one function's body)."""
    if statement.kind is Kind.NEVER:
        return statement.reason, "remove it from the workload: perflab never runs it on a " \
                                 "server it did not start"
    if statement.kind is Kind.UNKNOWN:
        return statement.reason, "rewrite it as a statement perflab can parse, or measure it " \
                                 "on a managed server"
    if statement.locks and not allowed.locks:
        reason = statement.reason if statement.kind is Kind.LOCKS else "takes locks"
        return reason, "add --allow-locks to let it hold locks on the server during the run"
    if not allowed.writes:
        if statement.kind is Kind.WRITES and not statement.data_write:
            return statement.reason, "perflab runs no SET, KILL, USE, transaction control, " \
                "administration or routine writes on a server it did not start, with any flag"
        if statement.kind is Kind.WRITES:
            return statement.reason, "add --allow-writes to let it write (perflab_* schemas " \
                                     "only)"
        return None
    if statement.writes and not statement.data_write:
        return f"{statement.reason}: perflab writes only rows and tables on a server it did " \
               "not start", "INSERT, UPDATE, DELETE, TRUNCATE and CREATE/DROP/ALTER of " \
                            "tables, in perflab_* schemas"
    foreign = [f"{s or schema}.{t}" for s, t in statement.tables if statement.writes] + \
        list(statement.schemas)
    foreign = sorted(name for name in foreign if not name.startswith(OWN_SCHEMA_PREFIX))
    if foreign:
        return f"writes where perflab may not: {foreign[0]} is not in a perflab_* schema", \
            "on someone else's server perflab writes only into schemas of its own (perflab_*)"
    return None
