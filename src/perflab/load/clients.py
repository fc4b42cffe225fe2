"""Load from several client machines: one point's threads spread over the workers of a Dask
scheduler (`perflab run PLAN --clients tcp://SCHEDULER:8786`).

perflab does not grow an agent protocol of its own: Dask's distributed scheduler finds the
workers, watches their heartbeats and says when one is lost, and it is deployed by hand, over
ssh (`dask ssh`), on Kubernetes or on a batch queue. Each worker needs sysbench and perflab
(the tasks are perflab's own functions), nothing else.

One point:
1. its threads are split evenly over the workers the scheduler knows (the first ones take the
   remainder), one task pinned to each worker (`run_share`);
2. each task checks what it needs, says it is ready through a Dask queue and waits at the
   barrier: once every task is ready, perflab publishes a start time on the scheduler's clock,
   which each worker turns into its own (Dask measures every worker's offset from the
   scheduler at each heartbeat);
3. from that start every worker's sysbench runs perflab's driver alone (lua/perflab.lua: a
   lead, then the measured window), so the workers measure the same seconds; how far apart
   they really launched sysbench is the start skew, stored with the point;
4. the point is the merge of what the workers return (`merge`): events and queries summed,
   throughput summed slice by slice over the window they share, p95 and p99 from the summed
   latency histograms (never an average of percentiles), and the CPU share per client host.

A worker lost during a point fails that point, naming the worker; the next point is spread
over the workers left. A task whose point is abandoned (perflab stopped, killed, or the point
failed) kills its sysbench: it watches its own state, and the scheduler cancels the tasks of a
client that went away. A killed worker takes its sysbench with it (die_with_parent).

Passwords travel inside the task's arguments over Dask's own connection (between machines,
give the scheduler a tls:// address and Dask's TLS settings), and the worker hands them to
sysbench on its standard input, as perflab does on its own machine: never on a command line,
never in a file.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import PerflabError, error_text
from perflab.load import sysbench
from perflab.load.sysbench import LoadFailed, LoadResult, Slicing
from perflab.procs import die_with_parent
from perflab.store.records import Sample

if TYPE_CHECKING:
    from distributed import Future

CONNECT_SECONDS = 10  # to reach the scheduler
READY_SECONDS = 60  # every task ready at the barrier (a worker starting, importing perflab)
START_MARGIN_MS = 500  # from publishing the start time to the start: every worker has heard it
POLL_SECONDS = 0.25  # how often a waiting side looks at the tasks and the workers ...
WATCH_SECONDS = 1.0  # ... and perflab at them during the measured window (each look asks the
# scheduler, on a client machine whose CPUs the load keeps busy)
# Dask's own monitors, quieted on a client machine the load saturates: a worker samples its
# threads' stacks 100 times a second, checks its event loop 50 times a second and its memory
# 10 times a second, and the scheduler looks for work to steal 10 times a second (perflab's
# tasks are pinned: there is none); on 2 cores at 64 threads the first two alone cost two
# workers' points about 10% of their throughput (bench/clients).
QUIET_DASK = {"DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
              "DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
              "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
              "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "1s",
              "DASK_DISTRIBUTED__SCHEDULER__WORK_STEALING": "False"}


@dataclass(frozen=True)
class Worker:
    """A Dask worker as perflab names it in its messages and records."""

    address: str
    name: str
    host: str

    def __str__(self) -> str:
        named = self.name and self.name != self.address
        return f"client worker {self.name} at {self.address}" if named else \
            f"client worker at {self.address}"


@dataclass(frozen=True)
class Share:
    """What one worker runs: sysbench's options (no path of this machine among them: the worker
    names its own sysbench and perflab driver), the driver's variables, the password for
    sysbench's standard input, and the measured window."""

    options: tuple[str, ...]  # sysbench.options: all but the threads and the run's length
    variables: dict[str, str] = field(repr=False)
    stdin: str | None = field(repr=False)
    threads: int
    seconds: float
    token: str
    # files the workload's scripts read, by the variable naming them: each worker writes its
    # own private copy (the user's statements of a `sql` workload)
    files: dict[str, str] = field(default_factory=dict, repr=False)


def split(threads: int, workers: list[Worker]) -> list[tuple[Worker, int]]:
    """`threads` spread evenly over `workers`, the first ones taking the remainder; a worker
    left with none is not used."""
    base, extra = divmod(threads, len(workers))
    shares = [(w, base + (1 if i < extra else 0)) for i, w in enumerate(workers)]
    return [(w, n) for w, n in shares if n > 0]


class Clients:
    """The Dask scheduler perflab spreads each point's load through. Connecting checks the
    scheduler answers and has workers, before anything runs."""

    def __init__(self, address: str, say: Callable[[str], None] = print,
                 timeout: float = CONNECT_SECONDS):
        from distributed import Client

        self.address, self.say = address, say
        try:
            self.client = Client(address, timeout=timeout, set_as_default=False)
        except (OSError, TimeoutError) as exc:
            raise PerflabError(f"cannot reach the Dask scheduler at {address}: {exc}",
                               hint="start one with perflab's `.venv/bin/dask scheduler` and "
                                    "give its address, e.g. tcp://HOST:8786",
                               option="clients") from None
        try:
            self._check_scheduler()
            workers = self.workers()
        except PerflabError:
            self.client.close()
            raise
        say(f"clients: {len(workers)} Dask worker(s) at {address}: "
            + ", ".join(w.name or w.address for w in workers))

    def _check_scheduler(self) -> None:
        """The scheduler unpacks the tasks perflab submits, so it must import perflab too."""
        try:
            self.client.run_on_scheduler(_clock)
        except Exception as exc:  # noqa: BLE001 (whatever the scheduler's unpacking raised)
            raise PerflabError(
                f"the Dask scheduler at {self.address} cannot run perflab's tasks: "
                f"{_task_error(exc)}", hint="install perflab where the scheduler runs (README "
                "command 1) and start it from that environment", option="clients") from None

    def workers(self) -> list[Worker]:
        """The workers the scheduler knows now, in a stable order; an error without any."""
        known = self.client.scheduler_info(n_workers=-1)["workers"]
        alive = set(self.client.ncores())  # asked of the scheduler now, not a cached view
        workers = sorted((Worker(address, str(info.get("name", "")), info.get("host", ""))
                          for address, info in known.items() if address in alive),
                         key=lambda w: (w.host, w.name, w.address))
        if not workers:
            raise PerflabError(f"the Dask scheduler at {self.address} has no workers",
                               hint="start one per client machine: dask worker "
                                    f"{self.address}", option="clients")
        return workers

    def close(self) -> None:
        self.client.close()

    def run_window(self, options: list[str], variables: dict[str, str], stdin: str | None,
                   threads: int, seconds: float, files: dict[str, str] | None = None
                   ) -> LoadResult:
        """One measured point: `threads` spread over the workers, each measuring the same
        `seconds` after a common start; the merged result (`merge`). `options`: sysbench's
        (sysbench.options); `variables`, the driver's environment beyond the machine's own;
        `files`, what the workload's scripts read (Family.client_files). Raises LoadFailed
        naming the worker that failed or was lost."""
        from distributed import Queue, Variable

        shares = split(threads, self.workers())
        token = uuid.uuid4().hex
        ready = Queue(f"perflab-ready-{token}", client=self.client)
        start = Variable(f"perflab-start-{token}", client=self.client)
        futures = {worker: self.client.submit(
            run_share, Share(tuple(options), variables, stdin, n, seconds, token, files or {}),
            key=f"perflab-share-{token}-{i}", workers=[worker.address],
            allow_other_workers=False, pure=False)
            for i, (worker, n) in enumerate(shares)}
        try:
            self._barrier(ready, futures)
            now = self.client.run_on_scheduler(_clock)
            begin = now + (START_MARGIN_MS + sysbench.START_ALLOWANCE_MS
                           + sysbench.PER_THREAD_MS * max(n for _, n in shares)) / 1000
            start.set(begin)
            returned = self._collect(futures, seconds)
        finally:
            self.client.cancel(list(futures.values()), force=True)
            start.delete()
            ready.close()
        return merge([returned[w] for w, _ in shares])

    def _barrier(self, ready, futures: dict[Worker, Future[dict]]) -> None:
        """Wait until every task is ready to start; a task that ended early, or a worker lost,
        fails the point."""
        waiting, deadline = {w.address: w for w in futures}, time.monotonic() + READY_SECONDS
        while waiting:
            try:
                waiting.pop(ready.get(timeout=POLL_SECONDS), None)
                continue
            except TimeoutError:
                pass
            self._check(futures, early=True)
            if time.monotonic() > deadline:
                raise LoadFailed(f"{', '.join(map(str, waiting.values()))}: not ready within "
                                 f"{READY_SECONDS} s", hint="see that worker's log")

    def _collect(self, futures: dict[Worker, Future[dict]], seconds: float
                 ) -> dict[Worker, dict]:
        deadline = time.monotonic() + seconds + 2 * READY_SECONDS
        checked = time.monotonic()
        while not all(future.done() for future in futures.values()):
            if time.monotonic() - checked >= WATCH_SECONDS:
                self._check(futures)
                checked = time.monotonic()
            if time.monotonic() > deadline:
                raise LoadFailed("the client workers did not finish the point in time")
            time.sleep(POLL_SECONDS)
        self._check(futures)
        returned = {}
        for worker, future in futures.items():
            if future.status != "finished":
                raise LoadFailed(f"{worker}: its task was {future.status}")
            outcome = future.result()
            if outcome.get("error"):
                raise LoadFailed(f"{worker} ({outcome['host']}): {outcome['error']}")
            returned[worker] = outcome
        return returned

    def _check(self, futures: dict[Worker, Future[dict]], early: bool = False) -> None:
        """Fail the point when a task erred or (before the barrier) ended, or when its worker
        is no longer known to the scheduler."""
        alive = set(self.client.ncores())
        for worker, future in futures.items():
            if future.status == "error":
                raise LoadFailed(f"{worker}: {_task_error(future.exception())}")
            if early and future.status == "finished":
                outcome = future.result()
                raise LoadFailed(f"{worker} ({outcome['host']}): "
                                 f"{outcome.get('error') or 'ended before the start'}")
            if worker.address not in alive and future.status != "finished":
                raise LoadFailed(f"{worker} ({worker.host}) was lost during the point",
                                 hint="see that worker's log; the next points use the "
                                      "workers left")


def _clock() -> float:
    """The scheduler's wall clock (run there by run_on_scheduler)."""
    return time.time()


def _task_error(exc: BaseException) -> str:
    """One line for an error a task or the scheduler raised."""
    if "No module named 'perflab'" in str(exc):
        return "perflab is not installed there (its Python cannot import perflab)"
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


# -- on the worker -------------------------------------------------------------------------------

def run_share(share: Share) -> dict:
    """Run on a Dask worker: this worker's share of one point (see the module's docstring).
    Returns its result and facts, or {"error": why} with its host."""
    from distributed import Queue, Variable, get_worker

    worker = get_worker()
    host = socket.gethostname()
    if shutil.which(sysbench.SYSBENCH) is None:
        return {"host": host, "error": "sysbench is not installed on that worker's host"}
    facts = {"cpus": len(os.sched_getaffinity(0)), "kernel": platform.release(),
             "sysbench": sysbench.sysbench_version()}
    key = worker.get_current_task()
    ready = Queue(f"perflab-ready-{share.token}")
    ready.put(worker.address)
    ready.close()  # this worker's reference to the queue; perflab closes its own
    start, waited = Variable(f"perflab-start-{share.token}"), time.monotonic()
    while True:  # until the start comes, or the point is given up (the task cancelled)
        try:
            begin = start.get(timeout=POLL_SECONDS)
            break
        except TimeoutError:
            if _abandoned(worker, key) or time.monotonic() - waited > 2 * READY_SECONDS:
                return {"host": host, "error": "no start came from perflab"}
    offset = worker.scheduler_delay  # the scheduler's clock minus this worker's
    now_ms = sysbench.monotonic_ms()
    epoch = now_ms + (begin - offset - time.time()) * 1000
    window = Slicing.starting(epoch, share.seconds)
    argv = sysbench.run_command(list(share.options), share.threads, window.run_seconds(now_ms))
    with tempfile.TemporaryDirectory(prefix="perflab-share-") as private, \
            sysbench.ClientCpu() as cpu:  # mode 0700, removed at the end
        written = {}
        for variable, text in share.files.items():
            written[variable] = os.path.join(private, variable.lower())
            with open(written[variable], "w") as out:
                out.write(text)
        env = {**os.environ, "LUA_PATH": sysbench.LUA_PATH, **share.variables, **written,
               "PERFLAB_SLICES": window.variable(0)}
        launched = time.time() + offset
        process = sysbench.start(argv, env, share.stdin)
        stop = _kill_when_abandoned(process, worker, key)
        try:
            result = sysbench.finish(process, window.timeout(share.threads), (window, 0))
        except LoadFailed as exc:
            return {"host": host, "error": error_text(exc).splitlines()[0]}
        finally:
            stop.set()
    return {"worker": worker.name or worker.address, "host": host, "result": result,
            "cpu": cpu.share, "threads": share.threads, "launched": launched, "facts": facts}


def _abandoned(worker, key) -> bool:
    """Whether the task `key` running on `worker` was cancelled (its point given up)."""
    state = worker.state.tasks.get(key)
    return state is None or state.state in ("cancelled", "released", "forgotten")


def _kill_when_abandoned(process, worker, key) -> threading.Event:
    """A watcher that kills `process` if the task `key` is cancelled (perflab stopped, killed
    or gave the point up); set the returned event to end it."""
    done = threading.Event()

    def watch() -> None:
        while not done.wait(POLL_SECONDS):
            if _abandoned(worker, key):
                process.kill()
                return

    threading.Thread(target=watch, name=f"perflab-watch-{key}", daemon=True).start()
    return done


# -- merging -------------------------------------------------------------------------------------

def merge(outcomes: list[dict]) -> LoadResult:
    """One point from the workers' results: counts summed, throughput summed per slice over
    the slices every worker measured, p95 and p99 from the summed histograms, the CPU share
    of the busiest client host; `clients` lists every worker's part."""
    results: list[LoadResult] = [o["result"] for o in outcomes]
    histogram: dict[int, int] = {}
    for r in results:
        sysbench.add_counts(histogram, r.histogram)
    timed = sum(histogram.values())
    shared = set.intersection(*({s.t for s in r.series} for r in results))
    series = [_summed([s for r in results for s in r.series if s.t == t])
              for t in sorted(shared)]
    per_host: dict[str, float] = {}
    for o in outcomes:
        per_host[o["host"]] = per_host.get(o["host"], 0.0) + (o["cpu"] or 0.0)
    first = min(o["launched"] for o in outcomes)
    clients = [{"worker": o["worker"], "host": o["host"], "threads": o["threads"],
                "events": o["result"].events,
                "queries": o["result"].queries, "client_cpu": o["cpu"],
                "start_offset_ms": round((o["launched"] - first) * 1000, 3),
                "facts": o["facts"], "series": [vars(s) for s in o["result"].series],
                "histogram": o["result"].histogram}
               for o in outcomes]
    return LoadResult(
        seconds=results[0].seconds,
        events=sum(r.events for r in results),
        reads=sum(r.reads for r in results),
        writes=sum(r.writes for r in results),
        other=sum(r.other for r in results),
        errors=sum(r.errors for r in results),
        reconnects=sum(r.reconnects for r in results),
        latency_min_ms=min(r.latency_min_ms for r in results),
        latency_avg_ms=(sum(r.latency_avg_ms * sum(r.histogram.values()) for r in results)
                        / timed if timed else 0.0),
        latency_max_ms=max(r.latency_max_ms for r in results),
        latency_p95_ms=sysbench.percentile(histogram, 95),
        latency_p99_ms=sysbench.percentile(histogram, 99),
        series=series,
        histogram=histogram,
        client_cpu=max(per_host.values()),
        clients=clients,
    )


def _summed(samples: list[Sample]) -> Sample:
    rates = ("tps", "qps", "reads_ps", "writes_ps", "other_ps", "errors_ps", "reconnects_ps")
    return replace(samples[0], **{k: sum(getattr(s, k) for s in samples) for k in rates},
                   threads=sum(s.threads for s in samples))


def connect_clients(address: str, existing, say: Callable[[str], None]) -> Clients:
    """The scheduler at `address`, checked against the server measured: a server perflab did
    not start (`existing`) must be reached over TCP; managed servers listen on 127.0.0.1 only,
    so every worker must run on this machine."""
    if existing is not None and existing.endpoint.socket:
        raise PerflabError("load from several client machines needs the server's network "
                           "address, not its Unix socket",
                           hint="give the server as --host HOST --port PORT", option="clients")
    clients = Clients(address, say)
    far = [w for w in clients.workers() if not _loopback(w.host)]
    if far and (existing is None or _loopback(existing.endpoint.host)):
        clients.close()
        where = ("the servers perflab starts listen on 127.0.0.1 only" if existing is None
                 else f"the server is given as {existing.endpoint.host}, this machine's own")
        raise PerflabError(
            f"{far[0]} runs on {far[0].host}, but {where}",
            hint="run the workers on this machine, or give the server by an address they "
                 "reach (--host)", option="clients")
    return clients


def _loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")


class LocalCluster:
    """A Dask scheduler and `workers` workers on this machine, each its own process, on
    loopback: to try `--clients` out, and for perflab's tests and bench/clients. Use it as a
    context manager; every process it started is stopped on leaving, whatever happened."""

    def __init__(self, directory: Path, workers: int = 2):
        self.directory, self.count = directory, workers
        self.processes: dict[str, subprocess.Popen] = {}
        self.address = ""

    def __enter__(self) -> LocalCluster:
        try:
            file = self.directory / "scheduler.json"
            self._start("scheduler", ["scheduler", "--host", "127.0.0.1", "--port", "0",
                                      "--scheduler-file", str(file)])
            deadline = time.monotonic() + READY_SECONDS
            while not (file.exists() and file.stat().st_size):
                if time.monotonic() > deadline or self.processes["scheduler"].poll() is not None:
                    raise PerflabError("the local Dask scheduler did not start",
                                       hint=f"see {self.directory / 'scheduler.log'}")
                time.sleep(0.1)
            self.address = json.loads(file.read_text())["address"]
            for number in range(1, self.count + 1):
                name = f"w{number}"
                (self.directory / name).mkdir(exist_ok=True)
                self._start(name, ["worker", self.address, "--name", name, "--nthreads", "1",
                                   "--no-nanny", "--local-directory", str(self.directory / name)])
            if self.count:
                from distributed import Client

                with Client(self.address, timeout=READY_SECONDS,
                            set_as_default=False) as client:
                    client.wait_for_workers(self.count, timeout=READY_SECONDS)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _start(self, name: str, argv: list[str]) -> None:
        with open(self.directory / f"{name}.log", "w") as log:
            self.processes[name] = subprocess.Popen(
                [str(Path(sys.executable).parent / "dask"), *argv, "--no-dashboard"],
                stdout=log, stderr=subprocess.STDOUT, cwd=self.directory,
                env={**os.environ, **QUIET_DASK}, preexec_fn=die_with_parent(signal.SIGTERM))

    def __exit__(self, *exc) -> None:
        # the workers first, while their scheduler still answers: a worker terminated after it
        # is gone may wait out its reconnect attempts, and then the timeout below, before
        # exiting
        workers = [p for name, p in self.processes.items() if name != "scheduler"]
        scheduler = [p for name, p in self.processes.items() if name == "scheduler"]
        for group in (workers, scheduler):
            for process in group:
                if process.poll() is None:
                    process.terminate()
            for process in group:
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
