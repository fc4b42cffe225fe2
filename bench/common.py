"""Shared set-up for perflab's benchmarks: a lab under bench/out with a prepared dataset."""

from __future__ import annotations

import math
import re
import statistics
import subprocess
import sys
from collections.abc import Callable
from contextlib import ExitStack, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent
RETAKES = 3  # a plain run measured under load is measured again, at most this many times
sys.path.insert(0, str(ROOT.parent / "src"))

from scipy import stats as scipy_stats  # noqa: E402

from perflab.domain import Dataset, Plan, Workload  # noqa: E402
from perflab.lab import Lab  # noqa: E402
from perflab.load import sysbench  # noqa: E402
from perflab.load.family import LOADER_OPTIONS  # noqa: E402
from perflab.load.workloads import ResolvedWorkload, resolve  # noqa: E402
from perflab.probes import busy  # noqa: E402
from perflab.procs import stop_on_signals  # noqa: E402
from perflab.running.backend import ManagedBackend  # noqa: E402
from perflab.server import environment as env  # noqa: E402
from perflab.server.managed import ManagedServer  # noqa: E402


def run_main(main: Callable[[], None]) -> None:
    """A measuring benchmark's entry: Ctrl-C or SIGTERM stops it cleanly (its servers stop,
    what it finished is kept for the same --stamp to resume), exit status 130."""
    stop_on_signals()
    try:
        main()
    except KeyboardInterrupt:
        print("interrupted: finished measurements are kept; run the same command (the same "
              "--stamp) to resume", file=sys.stderr)
        raise SystemExit(130) from None


def bench_lab(name: str) -> Lab:
    return Lab(ROOT / "out" / name)


@contextmanager
def dataset_server(lab: Lab, dataset: Dataset, options: dict[str, str] | None = None,
                   workload: ResolvedWorkload | None = None,
                   environment: env.ServerEnvironment | None = None):
    """A running managed server on a fresh copy of the workload's prepared dataset (sysbench's
    sbtest tables by default), in `environment` (e.g. listening on TCP)."""
    workload = workload or resolve(Workload("oltp_point_select"))
    key = workload.dataset_key(dataset)
    lab.ensure_dataset(
        key, lambda server: {"load": vars(workload.family.load(server.endpoint, dataset))},
        {**LOADER_OPTIONS, **env.engine_options(dataset.engine)}, print,
    )
    slot = lab.slot(0)
    slot.set_state(dirty=True)
    slot.checkout(key, print)
    server: ManagedServer = slot.server(options or {}, environment)
    with server:
        yield server


def plain_command(workload: ResolvedWorkload, dataset: Dataset, server: ManagedServer,
                  threads: int, seconds: int) -> list[str]:
    """perflab's sysbench command line with the workload's own script in place of perflab's
    driver: plain sysbench, the peer the benchmarks measure against."""
    ours = sysbench.command(workload, dataset, server.endpoint, threads, seconds)
    return [ours[0], workload.spec.script, *ours[2:]]


def plain_qps(argv: list[str], environment: dict[str, str]) -> float:
    """queries/s from an unmodified sysbench run (its own summary)."""
    out = subprocess.run(argv, capture_output=True, text=True, check=True,
                         env=environment).stdout
    found = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)", out)
    if not found:
        raise SystemExit(f"cannot read sysbench's summary:\n{out}")
    return float(found.group(1))


def plain(workload: ResolvedWorkload, plan: Plan, server: ManagedServer, threads: int,
          seconds: int, client: list[str] | None = None, retakes: int = RETAKES) -> float:
    """queries/s of plain sysbench against `server` (the peer), behind `client` (taskset for a
    pinned load generator). A run during which other processes or the hypervisor took more
    than busy.BUSY_SHARE of the machine is measured again, up to `retakes` times (0 for a
    warm-up): one configuration run alone takes a steal burst on its own, where perflab's
    turns spread it over every configuration (docs/benchmarks.md, bench/noise_measures)."""
    argv = [*(client or []), *plain_command(workload, plan.dataset, server, threads, seconds)]
    for attempt in range(retakes + 1):
        with busy.OtherCpu() as others:  # the server is this process's child: its own
            qps = plain_qps(argv, sysbench.environment(workload))
        if not busy.under_load(others.share):
            break
        again = "measured again" if attempt < retakes else f"kept: {retakes} retakes spent"
        print(f"  plain run under load ({others.share:.0%} of the CPU time to others, steal "
              f"{others.steal or 0:.0%}; {', '.join(others.busiest) or 'no process named'}): "
              f"{again}", flush=True)
    return qps


def started(stack: ExitStack, lab: Lab, plan: Plan, shift: int = 0,
            only: str | None = None) -> dict[str, ManagedServer]:
    """One freshly started server per configuration of `plan` (or of the one named `only`),
    each on its own copy of the data, the copies taken in turn from slot `shift` on (so that
    over pairs each configuration runs on every copy), in its configuration's environment
    (build, allocator, pinned CPUs)."""
    workload = resolve(plan.workload)
    backend = ManagedBackend(plan, lab, workload, print)
    servers = {}
    count = len(plan.configs)
    for number, config in enumerate(plan.configs):
        if only is not None and config.name != only:
            continue
        backend.ensure_dataset(config)
        slot = lab.slot((number + shift) % count)
        slot.set_state(dirty=True)
        slot.checkout(backend.dataset_key(config), print)
        server = slot.server(backend.options[config.name],
                             env.server_environment(config.environment))
        stack.enter_context(server)
        servers[config.name] = server
    return servers


def spread(values: list[float]) -> str:
    """median [min .. max] of a list of figures."""
    return f"{statistics.median(values):.3f} [{min(values):.3f} .. {max(values):.3f}]"


def ratio_bounds(ratios: list[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """The geometric mean of paired ratios and the t interval of their mean log, as ratios."""
    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    half = (scipy_stats.t.ppf((1 + confidence) / 2, len(logs) - 1) * statistics.stdev(logs)
            / math.sqrt(len(logs)))
    return math.exp(mean), math.exp(mean - half), math.exp(mean + half)


def ratio_interval(ratios: list[float], confidence: float = 0.95, digits: int = 3) -> str:
    """The geometric mean of paired ratios with the t interval of their mean log, as
    'ratio [low .. high]'."""
    mean, low, high = ratio_bounds(ratios, confidence)
    return f"{mean:.{digits}f} [{low:.{digits}f} .. {high:.{digits}f}]"


def change_of(ratios: list[float]) -> tuple[float, float, float, int] | None:
    """A change with its 95% interval and the number of ratios, from ratios (None for fewer
    than two)."""
    if len(ratios) < 2:
        return None
    mean, low, high = ratio_bounds(ratios)
    return mean - 1, low - 1, high - 1, len(ratios)


def shown_change(found: tuple[float, float, float, int] | None) -> str:
    if found is None:
        return "fewer than 2 rounds"
    mid, low, high, count = found
    return f"{mid:+.1%} [{low:+.1%}, {high:+.1%}] ({count})"
