"""How long each server's turn is, per thread count, on a fleet of servers side by side.

A turn must hold many of its events, or a server's work runs on into the next one's turn (a
point whose events take a tenth of a slice fails). Events grow long at high thread counts (an
oltp_read_only transaction takes ~30 ms at 64 threads on two cores) and with heavy queries, so
before a study's first round its servers' events are measured alone at each thread count and
that count's slice is sized to hold those of the slowest one with room to spare (_fleet.py
makes a point's window whole rotations of them). The sizes are chosen before any comparison is
measured and kept for every later run of the study (ResultStore.slices), so they never depend
on an outcome.
"""

from __future__ import annotations

import time

from perflab.domain import Plan, ServerConfig
from perflab.errors import error_text
from perflab.load import sysbench
from perflab.load.workloads import ResolvedWorkload
from perflab.say import Say
from perflab.server import environment as env
from perflab.server.managed import ManagedServer
from perflab.store import ResultStore

PROBE_SECONDS = 1  # each configuration's events measured alone, per thread count, to size a slice
# events this many times shorter than the base slice needs are measured on one server only:
# the others would have to be as many times slower to need a longer slice
CLEARLY_SHORT = 4


class Slices:
    """The slice of each thread count for one study's fleet: those the study stored, and the
    others sized at the first round that needs them, on its servers, and stored."""

    def __init__(self, plan: Plan, workload: ResolvedWorkload, store: ResultStore, say: Say,
                 probe_every: bool = False):
        """`probe_every`: size on every server, not on the baseline's alone when its events are
        clearly short (for configurations chosen for their effects: a put-back's winner without
        its query cache is 190 times slower than its baseline)."""
        self.plan, self.workload, self.store, self.say = plan, workload, store, say
        self.probe_every = probe_every
        self.sized: dict[int, float] = {}  # slice_ms by thread count, as stored (ready)

    @property
    def base_ms(self) -> float:
        return self.plan.run.effective_slice_seconds * 1000

    def ms(self, threads: int) -> float:
        """The slice (ms) at `threads`: as sized, else the base slice."""
        return self.sized.get(threads, self.base_ms)

    def ready(self, servers: list[tuple[ServerConfig, ManagedServer]], threads: list[int]
              ) -> float:
        """The slices at `threads`: as the study stored them, or sized now on `servers` (each
        configuration's, started, nothing of the round measured yet) and stored. Returns the
        seconds the sizing took (set-up, not a round's pace)."""
        self.sized = self.store.slices(self.plan.name)
        missing = [t for t in threads if t not in self.sized]
        if not missing:
            return 0.0
        began = time.monotonic()
        self.store.save_slices(self.plan.name, self.size(servers, missing))
        self.sized = self.store.slices(self.plan.name)
        return time.monotonic() - began

    def size(self, servers: list[tuple[ServerConfig, ManagedServer]], threads: list[int]
             ) -> dict[int, tuple[float, float | None]]:
        """{threads: (slice_ms, the longest mean event latency)} for the thread counts given,
        from every configuration's server measured alone (the baseline's alone when its events
        are CLEARLY_SHORT times shorter than the base slice needs, unless `probe_every`), from
        the most threads down until one count's events fit the base slice (the counts below
        keep it too). Empty without servers."""
        live = sorted(servers, key=lambda s: s[0].name != self.plan.baseline)  # baseline first
        if not live:
            return {}
        base = self.base_ms
        sized: dict[int, tuple[float, float | None]] = {}
        for count in sorted(threads, reverse=True):
            if sized and all(ms == base for ms, _ in sized.values()):
                sized[count] = (base, None)
                continue
            first = self._alone_latency(*live[0], count)
            if first is not None and not self.probe_every and \
                    sysbench.sized_slice(first * CLEARLY_SHORT, base) == base:
                measured = [first]  # a configuration this many times slower would still fit
            else:
                measured = [ms for ms in [first, *(self._alone_latency(*other, count)
                                                   for other in live[1:])] if ms is not None]
            longest = max(measured) if measured else None
            sized[count] = (base if longest is None else sysbench.sized_slice(longest, base),
                            longest)
        longer = {t: ms for t, (ms, _) in sized.items() if ms > base}
        if longer:
            self.say("slices sized to the events they hold: " + ", ".join(
                f"{ms / 1000:g} s at {t} threads" for t, ms in sorted(longer.items()))
                + f" (base {base / 1000:g} s)")
        return sized

    def _alone_latency(self, config: ServerConfig, server: ManagedServer, threads: int
                       ) -> float | None:
        """The mean event latency (ms) of `config`'s server alone at `threads` for
        PROBE_SECONDS, None (said) when sysbench fails there."""
        try:
            return sysbench.run_alone(self.workload, self.plan.dataset_for(config),
                                      server.endpoint, threads, PROBE_SECONDS,
                                      env.client_prefix(config.environment)).latency_avg_ms
        except sysbench.LoadFailed as failed:
            self.say(f"sizing the slices: {config.name} at {threads} threads: "
                     f"{error_text(failed).splitlines()[0]}")
            return None
