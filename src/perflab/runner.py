"""Running a study: from a validated plan to stored points, on a managed server.

The runner owns the order of work (points come from plan.expand: repeats outside, configurations
interleaved), the server's configuration between points (SET GLOBAL when every changed variable
is dynamic, a restart otherwise), the warm-up after every change, and the handling of failures:
a point whose server dies is stored as failed with the error-log tail, and the next point starts
a fresh server on a restored datadir.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import pymysql

from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.load import sysbench
from perflab.load.family import LOADER_OPTIONS
from perflab.load.workloads import ResolvedWorkload, resolve
from perflab.plan import Dataset, Plan, Point, ServerConfig, expand
from perflab.probes.profile import Profiler
from perflab.probes.status import delta, global_status, rows_per_query
from perflab.probes.system import host_facts, process_facts
from perflab.server import environment as env
from perflab.server.connection import query
from perflab.server.managed import ManagedServer
from perflab.server.variables import Catalog
from perflab.stats.summary import summarize
from perflab.store import PointRecord, ResultStore

Say = Callable[[str], None]


@dataclass
class RunSummary:
    study: str
    total: int
    already_stored: int
    measured: int
    failed: int
    seconds: float


def validate(plan: Plan, catalog: Catalog, workload: ResolvedWorkload
             ) -> dict[str, dict[str, str]]:
    """Every configuration's variables as command-line strings; a PerflabError on the first bad
    one. Nothing has started when this raises."""
    checked = {}
    for config in plan.configs:
        where = f"configs.{config.name}"
        workload.family.check(plan.dataset_for(config), where)
        engine = plan.dataset_for(config).engine
        plugin = env.engine_options(engine, f"{where}: dataset engine")
        if not plugin:
            catalog.require_engine(engine, f"{where}: dataset engine")
        env.check(config.environment, where)
        checked[config.name] = {
            **plugin,
            **{name: catalog.check(name, value, where) for name, value in config.variables},
        }
        limit = int(checked[config.name].get("max_connections")
                    or catalog.variables["max_connections"].startup_value)
        needed = max(plan.run.threads + (plan.run.effective_warmup_threads,))
        if needed + 2 > limit:  # perflab's own status connection needs one more
            raise PerflabError(
                f"{where}: max_connections = {limit} is too small for {needed} threads",
                hint=f"set max_connections to at least {needed + 2} in [server]",
            )
    return checked


def measure(
    server: ManagedServer, workload: ResolvedWorkload, dataset: Dataset, threads: int,
    seconds: int, client: list[str] | None = None,
) -> tuple[sysbench.LoadResult, dict[str, float]]:
    """One measured sysbench run on a running server, with the status counters' delta.

    The status snapshots are taken outside sysbench's timed window, so they cost the figures
    nothing. `client` prefixes sysbench's command (taskset for a pinned client). Raises
    LoadFailed or a connection error when the run fails.
    """
    with server.connect() as conn:
        before = global_status(conn)
    result = run_load(server, workload, dataset, threads, seconds, client)
    with server.connect() as conn:
        after = global_status(conn)
    return result, delta(before, after)


def run_load(
    server: ManagedServer, workload: ResolvedWorkload, dataset: Dataset, threads: int,
    seconds: int, client: list[str] | None = None,
) -> sysbench.LoadResult:
    """sysbench against a running server: the one way perflab drives load (warm-up or point)."""
    argv = sysbench.command(workload, dataset, server.endpoint, threads, seconds)
    return sysbench.run([*(client or []), *argv], sysbench.environment(workload), seconds,
                        threads)


def run_study(plan: Plan, lab: Lab, say: Say = print) -> RunSummary:
    """The whole study in `lab`: every point not stored yet, then the adaptive repeats."""
    with lab.locked(), lab.store() as store:
        return Runner(plan, lab, store, say).run()


class Runner:
    """Runs the points of one plan in a lab the caller has locked, storing them in `store`.

    Making one checks the workload and every configuration of the plan against the server's
    variable catalog (read once per server version by a scratch server, then cached in the
    lab); the measured server starts when the first point needs it.
    """

    def __init__(self, plan: Plan, lab: Lab, store: ResultStore, say: Say = print):
        sysbench.sysbench_version()
        self.plan = plan
        self.lab = lab
        self.store = store
        self.say = say
        self.workload: ResolvedWorkload = resolve(plan.workload)
        self.catalog: Catalog = lab.catalog()
        self.version = self.catalog.version
        self._options = validate(plan, self.catalog, self.workload)
        self.dynamic = {name for name, spec in self.catalog.variables.items() if spec.dynamic}
        self.plan_id = store.save_plan(plan)
        self.server: ManagedServer | None = None
        self.active: str | None = None  # name of the configuration the server runs
        self.server_state_id: int | None = None
        self.profiler = Profiler(say)

    def run(self) -> RunSummary:
        """Every point of the plan not stored yet, then the adaptive repeats."""
        started = time.monotonic()
        points = expand(self.plan)
        todo = [p for p in points if not self._done(p)]
        summary = RunSummary(self.plan.name, len(points), len(points) - len(todo), 0, 0, 0.0)
        if not todo:
            self.say(f"all {len(points)} points of {self.plan.name} are already stored")
            return summary
        if summary.already_stored:
            self.say(f"resuming: {summary.already_stored} of {len(points)} points already stored")

        for config in dict.fromkeys(p.config for p in todo):
            self._ensure_dataset(config)
        session = self.open_session()
        progress = Progress(len(todo), self.say)
        outcome = "interrupted"
        try:
            while todo:
                for point in todo:
                    record = self.measure_point(session, point)
                    summary.measured += 1
                    summary.failed += record.status == "failed"
                    progress.done(point, record)
                todo = self._more_repeats(progress.rounds)
                progress.extend(len(todo), "adaptive repeats: " + _wide(todo))
            outcome = "complete"
        finally:
            self.close_session(session, outcome)
            summary.seconds = time.monotonic() - started
        return summary

    # -- the pieces, also used by tune and health ----------------------------------------------

    def server_options(self, config_name: str) -> dict[str, str]:
        """A configuration's checked server options, as the command line takes them."""
        return self._options[config_name]

    def add_config(self, config: ServerConfig) -> None:
        """A configuration not in the plan (a tuning trial): checked, its dataset ready."""
        single = replace(self.plan, configs=(config,), baseline=config.name)
        self._options[config.name] = validate(single, self.catalog, self.workload)[config.name]
        self._ensure_dataset(config)

    def open_session(self) -> int:
        return self.store.begin_session(self.plan.name, self.plan_id, host_facts(self.lab.root))

    def measure_point(self, session: int, point: Point) -> PointRecord:
        """Run one point (starting or reconfiguring the server as needed) and store it."""
        record = self._point(session, point)
        self.store.save_point(session, self.plan.name, record)
        return record

    def serve(self, config: ServerConfig) -> ManagedServer:
        """A freshly started server for `config` on its dataset (status counters from zero),
        outside any session: for perflab health. Stop it with stop()."""
        self._ensure_dataset(config)
        self._start_fresh(config)
        return self.server

    def load(self, config: ServerConfig, threads: int, seconds: int) -> None:
        """The plan's workload against the running server, unmeasured."""
        run_load(self.server, self.workload, self.plan.dataset_for(config), threads, seconds,
                 env.client_prefix(config.environment))
        if self.workload.writes:
            self.lab.set_working_state(dirty=True)

    def close_session(self, session: int, outcome: str) -> None:
        self.stop()
        self.store.end_session(session, outcome)

    def _done(self, point: Point) -> bool:
        return self.store.done(self.plan.name, point.definition, point.threads, point.repeat)

    def _more_repeats(self, round_number: int) -> list[Point]:
        """One more repeat of every (config, threads) whose interval is still too wide."""
        run = self.plan.run
        if not run.target_interval:
            return []
        configs = list(self.plan.configs)
        shift = round_number % len(configs)
        extra = []
        for config in configs[shift:] + configs[:shift]:
            definition = self.plan.definition(config)
            for threads in run.threads:
                stored = self.store.points(self.plan.name, [definition], threads)
                ok = [p.metrics.qps for p in stored if p.ok]
                if len(stored) >= run.max_repeats:
                    continue
                if len(ok) >= 2 and summarize(ok).half_width <= run.target_interval:
                    continue
                repeat = max((p.repeat for p in stored), default=0) + 1
                extra.append(Point(config, self.plan.workload, threads, repeat, definition))
        return extra

    def _dataset_key(self, config: ServerConfig) -> str:
        return self.workload.dataset_key(self.plan.dataset_for(config))

    def _ensure_dataset(self, config: ServerConfig) -> None:
        dataset = self.plan.dataset_for(config)
        family = self.workload.family

        def load(server: ManagedServer) -> dict:
            report = family.load(server.endpoint, dataset)
            self.say(f"loaded {report.rows} rows in {report.seconds:.1f} s")
            return {"dataset": vars(dataset), "schema": family.schema,
                    "settings": family.dataset_settings(), "load_seconds": report.seconds}

        options = {**LOADER_OPTIONS, **env.engine_options(dataset.engine)}
        self.lab.ensure_dataset(self._dataset_key(config), load, options, self.say)

    # -- one point -----------------------------------------------------------------------------

    def _point(self, session: int, point: Point) -> PointRecord:
        started = time.time()
        try:
            self._activate(session, point.config)
        except (PerflabError, pymysql.MySQLError) as exc:  # LoadFailed is a PerflabError
            self.stop()
            return PointRecord(point, "failed", started, time.time(), None, None,
                               error=_error_text(exc))
        return self._measure(point, started)

    def _measure(self, point: Point, started: float) -> PointRecord:
        config, seconds = point.config, self.plan.run.run_seconds
        profile_data = self.lab.root / "profile.data"
        recorder = (self.profiler.start(self.server.pid, seconds, profile_data)
                    if self.plan.run.profile else None)
        try:
            result, status_delta = measure(
                self.server, self.workload, self.plan.dataset_for(config), point.threads,
                seconds, env.client_prefix(config.environment),
            )
        except (sysbench.LoadFailed, pymysql.MySQLError) as exc:
            # sysbench failed, or the server went away under it: expected, stored as failed
            Profiler.finish(recorder, profile_data)
            return self._failed(point, started, exc)
        profile = Profiler.finish(recorder, profile_data) if recorder else None
        if self.workload.writes:
            self.lab.set_working_state(dirty=True)
        metrics = result.metrics(rows_per_query(status_delta, result.reads + result.writes))
        return PointRecord(point, "ok", started, time.time(), self.server_state_id, metrics,
                           series=result.series, status_delta=status_delta,
                           histogram=result.histogram, profile=profile)

    def _failed(self, point: Point, started: float, exc: Exception) -> PointRecord:
        server = self.server
        if server is not None and not server.alive():
            code = server.process.returncode if server.process else None
            error = f"mariadbd died during the point (exit code {code})\n{server.error_log_tail()}"
            self.lab.set_working_state(dirty=True)  # tables may be marked crashed: restore
            self.stop()
        else:
            error = _error_text(exc)
        self.say(f"point {point.label} failed: {error.splitlines()[0]}")
        return PointRecord(point, "failed", started, time.time(), self.server_state_id, None,
                           error=error)

    # -- server configuration ------------------------------------------------------------------

    def _activate(self, session: int, config: ServerConfig) -> None:
        """Make the server run `config`, then warm it up if anything changed."""
        wanted = self._options[config.name]
        if self.server is not None and self.server.alive() and self.active == config.name:
            return
        key = self._dataset_key(config)
        environment = env.server_environment(config.environment)
        how = "start"
        if self._can_set_live(wanted, key, environment):
            changed = {k: v for k, v in wanted.items() if self.server.options.get(k) != v}
            self.say(f"configuration {config.name}: SET GLOBAL {_pairs(changed)}")
            try:
                self.server.set_global(changed)
                how = "set"
            except pymysql.MySQLError as exc:  # e.g. key_buffer_size=0 on the default cache
                self.say(f"SET GLOBAL refused ({exc.args[-1]}): restarting instead")
        if how == "start":
            self._start_fresh(config)
        self.active = config.name
        self.server_state_id = self._record_state(session, config, how)
        self._warm_up(config)

    def _start_fresh(self, config: ServerConfig) -> None:
        """A just-started server for `config` on a datadir restored from its dataset."""
        self.stop()
        self.lab.checkout(self._dataset_key(config), self.say)
        wanted = self._options[config.name]
        self.say(f"configuration {config.name}: starting mariadbd {_pairs(wanted)}")
        self.server = self.lab.server(wanted, env.server_environment(config.environment))
        self.server.start()
        self.active = config.name

    def _can_set_live(self, wanted: dict[str, str], key: str, environment) -> bool:
        server = self.server
        if server is None or not server.alive() or self.workload.writes:
            return False  # writing workloads restart on a restored datadir for equal footing
        if self.lab.working_state().get("dataset") != key or server.environment != environment:
            return False  # another dataset, allocator, pinning or connection: restart
        if set(server.options) != set(wanted):
            return False  # a variable would have to return to its default: restart
        changed = [k for k, v in wanted.items() if server.options.get(k) != v]
        return all(name in self.dynamic for name in changed)

    def _record_state(self, session: int, config: ServerConfig, how: str) -> int:
        with self.server.connect() as conn:
            variables = dict(query(conn, "SHOW GLOBAL VARIABLES"))
        process = process_facts(self.server.pid)
        process["argv"] = self.server.argv()
        process["environment"] = config.environment.describe()
        port = self.server.port
        process["connection"] = f"tcp 127.0.0.1:{port}" if port else f"socket {self.server.socket}"
        process["dataset"] = self._dataset_key(config)
        return self.store.save_server_state(session, config.name, how, self.version, variables,
                                            process)

    def _warm_up(self, config: ServerConfig) -> None:
        run = self.plan.run
        if run.warmup_seconds <= 0:
            return
        self.say(
            f"warming up {config.name}: {run.warmup_seconds} s at "
            f"{run.effective_warmup_threads} threads"
        )
        self.load(config, run.effective_warmup_threads, run.warmup_seconds)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.server = None
        self.active = None


class Progress:
    """Points done / total, the last point's figures and an ETA, one line per point."""

    def __init__(self, total: int, say: Say):
        self.total = total
        self.say = say
        self.count = 0
        self.rounds = 0
        self.started = time.monotonic()

    def extend(self, more: int, why: str) -> None:
        """Adaptive repeats add points once the planned ones are done."""
        self.rounds += 1
        if more:
            self.total += more
            self.say(why)

    def done(self, point: Point, record: PointRecord) -> None:
        self.count += 1
        elapsed = time.monotonic() - self.started
        # Warm-ups recur with every configuration block, so the mean wall time per point
        # (warm-ups included) is the honest rate for what remains.
        eta = (self.total - self.count) * elapsed / self.count
        if record.metrics is not None:
            m = record.metrics
            rows = m.rows_per_query
            figures = (f"qps {m.qps:10.1f}  p95 {m.latency_p95_ms:8.2f} ms  "
                       f"rows/q {rows:7.1f}" if rows is not None else f"qps {m.qps:10.1f}")
        else:
            figures = "FAILED"
        width = len(str(self.total))
        self.say(
            f"[{self.count:{width}}/{self.total}] {point.config.name:>10}  "
            f"threads={point.threads:<4} repeat={point.repeat}  {figures}  "
            f"ETA {_duration(eta)}"
        )


def _wide(points: list[Point]) -> str:
    cells = ", ".join(f"{p.config.name}@{p.threads}" for p in points)
    return f"{len(points)} more point(s) whose 95% interval is still too wide ({cells})"


def _error_text(exc: Exception) -> str:
    """What a failed point stores: the message, and the detail (a log tail) under it."""
    detail = getattr(exc, "detail", None)
    return f"{exc}\n{detail}" if detail else str(exc)


def _pairs(options: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items()) or "(defaults)"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
