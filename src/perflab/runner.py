"""Running a study: from a validated plan to stored points, round after round.

A round measures every comparison still open once: at each thread count, the baseline and the
configurations compared with it are measured close in time, in an order drawn for the round,
so that each round gives one paired ratio per comparison (stats/decide.py). With a fleet (one
server per configuration, fleet.py) they take turns in time slices within one run; serially,
they run back to back on one server, switched by SET GLOBAL when every changed variable is
dynamic and restarted otherwise, each change followed by a warm-up.

Without a time budget a study runs its `repeats` rounds. With one, rounds go on after those only
for the comparisons still inconclusive, until every one is decided, the budget is spent or
max_rounds is reached. A point whose server dies is stored as failed with the error-log tail.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import pymysql

from perflab.errors import PerflabError, error_text
from perflab.fleet import Fleet, fits
from perflab.lab import Lab
from perflab.load import sysbench
from perflab.load.family import LOADER_OPTIONS
from perflab.load.preload import preload
from perflab.load.workloads import ResolvedWorkload, resolve
from perflab.plan import Dataset, Plan, Point, ServerConfig
from perflab.probes.profile import Profiler
from perflab.probes.status import delta, global_status, rows_per_query
from perflab.probes.system import host_facts
from perflab.procs import check_stop
from perflab.rounds import Stop, comparisons, next_round
from perflab.server import environment as env
from perflab.server.connection import query
from perflab.server.managed import ManagedServer
from perflab.server.protocol import Server
from perflab.server.variables import Catalog, overridden
from perflab.stats.decide import half_width
from perflab.store import Noise, PointRecord, ResultStore, StoredPoint

Say = Callable[[str], None]
ASSUMED_NOISE = 0.10  # per-round sd of a log ratio, before this lab has measured any


@dataclass
class RunSummary:
    study: str
    schedule: str  # "fleet" or "serial"
    rounds: int  # rounds with at least one point measured by this run
    already_stored: int
    measured: int
    failed: int
    seconds: float
    stopped: str = "complete"  # "complete", "all decided", "budget spent" or "interrupted"


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
    return sysbench.run([*(client or []), *argv], sysbench.environment(workload, server.endpoint),
                        seconds, threads, server.endpoint.sysbench_input())


def run_study(plan: Plan, lab: Lab, say: Say = print) -> RunSummary:
    """The study in `lab`: its rounds not stored yet, within its time budget if it has one."""
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
        self.workload.family.write_files(lab.root / "workload")
        self.catalog: Catalog = self._catalog()
        self.version = self.catalog.version
        self._options = self._validate(plan)
        self.dynamic = {name for name, spec in self.catalog.variables.items() if spec.dynamic}
        self.overrides_said: set[tuple[str, str, str]] = set()  # (config, variable, running)
        self.plan_id = store.save_plan(plan)
        self.server: ManagedServer | None = None
        self.active: str | None = None  # name of the configuration the server runs
        self.server_state_id: int | None = None
        self.profiler = Profiler(say)
        self.slot = lab.slot(0)  # the serial server's place
        self.schedule: str | None = None  # decided by run(), or on first need (noise)
        self.noise_source = "run"  # what the noise this run measures is stored as

    def run(self) -> RunSummary:
        """Every round not stored yet; with a time budget, the rounds that decide."""
        run, started = self.plan.run, time.monotonic()
        design = self.store.design(self.plan.name)  # this plan's looks and earlier runs'
        deadline = started + run.time if run.time else None
        for config in self.plan.configs:
            self._ensure_dataset(config)
        schedule, why = self._schedule()
        self.schedule = schedule
        self.say(f"schedule: {schedule} ({why})")
        self._announce(design)
        summary = RunSummary(self.plan.name, schedule, 0, len(self._ok()), 0, 0, 0.0)
        if summary.already_stored:
            planned = len(self.plan.configs) * len(run.threads) * run.repeats
            self.say(f"resuming: {summary.already_stored} of {planned} points already stored")
        progress = Progress(self.plan, self.say, deadline)
        session = self.open_session()
        fleet = self._fleet(session, self.plan) if schedule == "fleet" else None
        round_number = 0
        try:
            while True:
                check_stop()
                round_number += 1
                step = next_round(self.plan, self._ok(), design, round_number)
                if step.note:
                    self.say(step.note)
                if isinstance(step, Stop):
                    summary.stopped = "all decided" if step.decided else "complete"
                    break
                needed = step.points
                if not needed:
                    continue  # stored by an earlier run
                if deadline is not None and time.monotonic() >= deadline:
                    summary.stopped = "budget spent"
                    break
                summary.rounds += 1
                progress.round(round_number, needed)
                records = (self._fleet_round(fleet, session, round_number, needed, deadline,
                                             progress)
                           if fleet else
                           self._serial_round(session, round_number, needed, deadline,
                                              progress))
                summary.measured += len(records)
                summary.failed += sum(r.status == "failed" for r in records)
                if deadline is not None and time.monotonic() >= deadline:
                    summary.stopped = "budget spent"
                    break
        except BaseException:
            summary.stopped = "interrupted"
            raise
        finally:
            if fleet is not None:
                fleet.stop()
            self.close_session(session, summary.stopped)
            summary.seconds = time.monotonic() - started
            self._save_noise()
        if not summary.rounds and summary.already_stored:
            self.say(f"all {summary.already_stored} points of {self.plan.name} are already "
                     "stored")
        return summary

    def _catalog(self) -> Catalog:
        """The variables and engines of the server that will be measured."""
        return self.lab.catalog()

    def _validate(self, plan: Plan) -> dict[str, dict[str, str]]:
        if plan.dataset.existing:
            raise PerflabError(
                f"dataset.existing = {plan.dataset.existing!r} names the data of a server "
                "perflab did not start", hint="give that server: --socket, or --host and "
                "--port (with --user, --defaults-file or --password)")
        return validate(plan, self.catalog, self.workload)

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
        check_stop()
        record = self._point(session, point)
        self.store.save_point(session, self.plan.name, record)
        return record

    def side_by_side_fits(self, configs: list[ServerConfig]) -> str | None:
        """None when `configs` (already added) can run side by side; else why not."""
        size = max(self.lab.snapshot_bytes(self._dataset_key(c)) for c in configs)
        return fits(self._group(configs), self.catalog, self._options, self.lab, size)

    def measure_side_by_side(self, session: int, configs: list[ServerConfig],
                             round_number: int) -> list[PointRecord]:
        """One round of `configs` (already added) at every thread count of the plan, each on a
        server of its own, taking turns in time slices: stored as points of round
        `round_number`. Tune judges a trial against a reference measured in the same seconds
        this way, so that the machine's drift falls on both."""
        check_stop()
        self.stop()  # the serial server's memory is not needed meanwhile
        fleet = self._fleet(session, self._group(configs))
        try:
            needed = {threads: list(configs) for threads in self.plan.run.threads}
            return self._fleet_round(fleet, session, round_number, needed, None, None)
        finally:
            fleet.stop()

    def _group(self, configs: list[ServerConfig]) -> Plan:
        """The plan narrowed to `configs`, the first as its baseline: what a fleet serves."""
        return replace(self.plan, configs=tuple(configs), baseline=configs[0].name)

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
            self.slot.set_state(dirty=True)

    def close_session(self, session: int, outcome: str) -> None:
        self.stop()
        self.store.end_session(session, outcome)

    # -- what a round measures ---------------------------------------------------------------

    def _ok(self) -> list[StoredPoint]:
        definitions = [self.plan.definition(c) for c in self.plan.configs]
        return [p for p in self.store.points(self.plan.name, definitions) if p.ok]

    def _order(self, round_number: int, needed: dict[int, list[ServerConfig]]) -> list[int]:
        """The round's thread counts, rotated by one each round."""
        return [t for t in rotated(list(self.plan.run.threads), round_number) if t in needed]

    def _fleet_round(self, fleet: Fleet, session: int, round_number: int,
                     needed: dict[int, list[ServerConfig]], deadline: float | None,
                     progress: Progress | None) -> list[PointRecord]:
        configs = list(dict.fromkeys(c for cs in needed.values() for c in cs))
        fleet.start_round(round_number, rotated(configs, round_number))
        records, lead, step = [], float(self.plan.run.warmup_seconds), 0.0
        for threads in self._order(round_number, needed):
            if deadline is not None and records and time.monotonic() + step > deadline:
                break
            begun = time.monotonic()
            batch = fleet.measure(round_number, threads, rotated(needed[threads], round_number),
                                  lead)
            for record in batch:
                self.store.save_point(session, self.plan.name, record)
                if progress is not None:
                    progress.done(record)
            records += batch
            lead, step = 0.0, time.monotonic() - begun
        fleet.stop()
        return records

    def _serial_round(self, session: int, round_number: int,
                      needed: dict[int, list[ServerConfig]], deadline: float | None,
                      progress: Progress) -> list[PointRecord]:
        records, step = [], 0.0
        for threads in self._order(round_number, needed):
            for config in rotated(needed[threads], round_number):
                if deadline is not None and records and time.monotonic() + step > deadline:
                    return records
                begun = time.monotonic()
                point = Point(config, self.plan.workload, threads, round_number,
                              self.plan.definition(config))
                record = self.measure_point(session, point)
                progress.done(record)
                records.append(record)
                step = time.monotonic() - begun
        return records

    # -- fleet or serial, and what to expect ---------------------------------------------------

    def _schedule(self) -> tuple[str, str]:
        requested = self.plan.run.schedule
        if requested == "serial" or len(self.plan.configs) == 1:
            return "serial", ("as the plan asks" if requested == "serial"
                              else "one configuration")
        size = sum(self.lab.snapshot_bytes(self._dataset_key(c)) for c in self.plan.configs)
        why_not = fits(self.plan, self.catalog, self._options, self.lab,
                       size // len(self.plan.configs))
        if why_not is None:
            return "fleet", (f"{len(self.plan.configs)} servers side by side, taking turns in "
                             f"{self.plan.run.effective_slice_seconds:g} s slices")
        if requested == "fleet":
            self.say(f"warning: {why_not}; running the fleet as the plan asks")
            return "fleet", "as the plan asks"
        return "serial", f"{why_not}: one server, configurations back to back"

    def _schedule_key(self) -> str:
        """The way of measuring that noise figures belong to."""
        if self.schedule is None:  # asked before a run (tune's re-measure plans its rounds)
            self.schedule = self._schedule()[0]
        if self.schedule != "fleet":
            return "serial"
        return f"fleet {self.plan.run.effective_slice_seconds:g} s"

    def _fleet(self, session: int, plan: Plan) -> Fleet:
        def record(server: ManagedServer, config: ServerConfig) -> int:
            return self._record_state(session, server, config, "start")

        return Fleet(plan, self.lab, self.workload, self._options, self._dataset_key,
                     record, self.say, self.profiler if plan.run.profile else None)

    def noise(self) -> tuple[float, str]:
        """The per-round sd of a log ratio this lab measured for this way of measuring, with
        where it comes from; ASSUMED_NOISE when it has measured none."""
        run = self.plan.run
        dataset = self._dataset_key(self.plan.config(self.plan.baseline))
        found = self.store.noise(self.workload.workload.label, dataset, self._schedule_key(),
                                 run.run_seconds)
        per_threads: dict[int, Noise] = {}
        for noise in found:
            per_threads.setdefault(noise.threads, noise)
        if not per_threads:
            return ASSUMED_NOISE, "assumed: this lab has not measured it yet (perflab calibrate)"
        sd = statistics.median(n.sd for n in per_threads.values())
        rounds = sum(n.rounds for n in per_threads.values())
        return sd, f"measured in this lab over {rounds} rounds"

    def _announce(self, design) -> None:
        """Before the first point: the interval the plan's rounds and budget can reach."""
        cells = (len(self.plan.configs) - 1) * len(self.plan.run.threads)
        if cells == 0:
            return
        sd, source = self.noise()
        level = design.alpha / cells
        lines = [f"noise: {sd:.1%} per round ({source}); {cells} comparisons, "
                 f"margin ±{design.margin:.0%}"]
        for rounds in sorted({design.first_look, design.last_look}):
            half = math.expm1(half_width(sd, rounds, design.nominal(level)))
            lines.append(f"  {rounds} rounds: intervals about ±{half:.0%}")
        if self.plan.run.time:
            lines.append(f"  budget {_duration(self.plan.run.time)}: rounds go on for the "
                         "undecided comparisons only, up to the last above")
        for line in lines:
            self.say(line)

    def _save_noise(self) -> None:
        """What this study's rounds say of the noise: per thread count, the pooled sd of its
        comparisons' log ratios, for the next run's forecast."""
        cells = comparisons(self.plan, self._ok())
        pooled: dict[int, list[tuple[int, float]]] = {}
        for (_, threads), rounds in cells.items():
            values = list(rounds.values())
            if len(values) >= 3:
                pooled.setdefault(threads, []).append((len(values) - 1,
                                                       statistics.variance(values)))
        if not pooled:
            return
        dataset = self._dataset_key(self.plan.config(self.plan.baseline))
        records = []
        for threads, parts in sorted(pooled.items()):
            df = sum(d for d, _ in parts)
            sd = math.sqrt(sum(d * v for d, v in parts) / df)
            records.append(Noise(self.workload.workload.label, dataset, self._schedule_key(),
                                 self.plan.run.run_seconds, threads, df + len(parts), sd,
                                 self.noise_source, self.plan.name))
        self.store.save_noise(records)

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
                               error=error_text(exc))
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
            self.slot.set_state(dirty=True)
        metrics = result.metrics(rows_per_query(status_delta, result.reads + result.writes))
        return PointRecord(point, "ok", started, time.time(), self.server_state_id, metrics,
                           series=result.series, status_delta=status_delta,
                           histogram=result.histogram, profile=profile)

    def _failed(self, point: Point, started: float, exc: Exception) -> PointRecord:
        server = self.server
        if server is not None and server.died():
            code = server.process.returncode if server.process else None
            error = f"mariadbd died during the point (exit code {code})\n{server.error_log_tail()}"
            self.slot.set_state(dirty=True)  # tables may be marked crashed: restore
            self.stop()
        else:
            error = error_text(exc)
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
        self.server_state_id = self._record_state(session, self.server, config, how)
        self._warm_up(config)

    def _start_fresh(self, config: ServerConfig) -> None:
        """A just-started server for `config` on a datadir restored from its dataset."""
        self.stop()
        self.slot.checkout(self._dataset_key(config), self.say)
        wanted = self._options[config.name]
        self.say(f"configuration {config.name}: starting mariadbd {_pairs(wanted)}")
        self.server = self.slot.server(wanted, env.server_environment(config.environment))
        self.server.start()
        self.active = config.name

    def _can_set_live(self, wanted: dict[str, str], key: str, environment) -> bool:
        server = self.server
        if server is None or not server.alive() or self.workload.writes:
            return False  # writing workloads restart on a restored datadir for equal footing
        if self.slot.state().get("dataset") != key or server.environment != environment:
            return False  # another dataset, allocator, pinning or connection: restart
        if set(server.options) != set(wanted):
            return False  # a variable would have to return to its default: restart
        changed = [k for k, v in wanted.items() if server.options.get(k) != v]
        return all(name in self.dynamic for name in changed)

    def _record_state(self, session: int, server: Server, config: ServerConfig,
                      how: str) -> int:
        with server.connect() as conn:
            variables = dict(query(conn, "SHOW GLOBAL VARIABLES"))
        for name, (asked, runs) in overridden(self.catalog, server.options, variables).items():
            if (config.name, name, runs) not in self.overrides_said:  # once, not every round
                self.overrides_said.add((config.name, name, runs))
                self.say(f"configuration {config.name}: the server runs {name}={runs}, not "
                         f"{asked} as asked (MariaDB overrides it; the lab records what it runs)")
        process = server.facts()
        process["environment"] = config.environment.describe()
        process["dataset"] = self._dataset_key(config)
        return self.store.save_server_state(session, config.name, how, self.version, variables,
                                            process)

    def _warm_up(self, config: ServerConfig) -> None:
        """Caches preloaded, then the workload until its throughput stops rising (at most
        run.warmup_seconds)."""
        run = self.plan.run
        preloaded = self._preload()
        if run.warmup_seconds <= 0:
            return
        threads = run.effective_warmup_threads
        argv = sysbench.command(self.workload, self.plan.dataset_for(config),
                                self.server.endpoint, threads, run.warmup_seconds)
        endpoint = self.server.endpoint
        took = sysbench.run_until_steady([*env.client_prefix(config.environment), *argv],
                                         sysbench.environment(self.workload, endpoint),
                                         run.warmup_seconds, endpoint.sysbench_input())
        if self.workload.writes:
            self.slot.set_state(dirty=True)
        self.say(f"warmed up {config.name}: {preloaded}steady after {took:.1f} s at {threads} "
                 "threads")

    def _preload(self) -> str:
        """The engines' own preload of the dataset; says how long it took."""
        loaded = preload(self.server.endpoint, self.workload.family.schema, self.server.datadir)
        return f"caches preloaded in {loaded:.1f} s, "

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        self.server = None
        self.active = None


class Progress:
    """One line per point: its round, figures, and the time left (ETA, or the budget)."""

    def __init__(self, plan: Plan, say: Say, deadline: float | None):
        self.plan, self.say, self.deadline = plan, say, deadline
        self.started = time.monotonic()
        self.count = 0
        self.planned = 0  # points of the rounds announced so far
        self.round_number = 0

    def round(self, round_number: int, needed: dict[int, list[ServerConfig]]) -> None:
        self.round_number = round_number
        self.planned += sum(len(cs) for cs in needed.values())
        cells = sum(len(cs) for cs in needed.values())
        self.say(f"round {round_number}: {cells} point(s) at {len(needed)} thread count(s)")

    def done(self, record: PointRecord) -> None:
        self.count += 1
        point = record.point
        elapsed = time.monotonic() - self.started
        if record.metrics is not None:
            m = record.metrics
            rows = m.rows_per_query
            figures = (f"qps {m.qps:10.1f}  p95 {m.latency_p95_ms:8.2f} ms  "
                       f"rows/q {rows:7.1f}" if rows is not None else f"qps {m.qps:10.1f}")
        else:
            figures = "FAILED"
        if self.deadline is not None:
            left = f"budget left {_duration(max(0.0, self.deadline - time.monotonic()))}"
        elif self.round_number <= self.plan.run.repeats:
            total = len(self.plan.configs) * len(self.plan.run.threads) * self.plan.run.repeats
            eta = max(0, total - self.count) * elapsed / self.count
            left = f"ETA {_duration(eta)}"
        else:
            left = f"{_duration(elapsed)} so far"
        self.say(f"[round {point.repeat}] {point.config.name:>10}  threads={point.threads:<4} "
                 f"{figures}  {left}")


def rotated(items: list, round_number: int) -> list:
    """The order of a round: rotated by one each round, so that over as many rounds as there
    are items each one takes every place once (which one runs first, or right after a start,
    is spread over all of them)."""
    shift = (round_number - 1) % len(items) if items else 0
    return items[shift:] + items[:shift]


def _pairs(options: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in options.items()) or "(defaults)"


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
