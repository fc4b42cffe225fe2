"""What else uses this machine's CPUs while perflab measures.

A measurement taken while other work loads the machine is not evidence: on two cores, a tune
whose readings were taken beside other work found a key-cache setting 36% slower that a quiet
machine shows 56% faster (lock contention needs both CPUs). So perflab measures the share of
the machine's CPU time that went neither to itself nor to idle: other processes, and the
hypervisor's steal. Its own share is its process tree: this process, the servers and load
generators it started, and whatever they started (reaped children included, through their
parents' cumulative times), from /proc.
"""

from __future__ import annotations

import os
import socket
import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pymysql

from perflab.server.builds import runs_a_server

LOOPBACK = ("127.0.0.1", "localhost", "::1")
BUSY_SHARE = 0.05  # others' share of the machine's CPU time beyond which figures are under load
TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class CpuTimes:
    """Cumulative CPU seconds at one moment: the machine's (busy, steal included), the
    hypervisor's steal alone, and perflab's own process tree's."""

    busy: float
    ours: float
    at: float  # time.monotonic()
    steal: float = 0.0


def sample(also: Sequence[int] = (), processes: dict | None = None) -> CpuTimes:
    """The machine's CPU seconds, and those of this process's tree and of the trees of `also`
    (a server perflab measures but did not start); `processes`: a scan of /proc (`_all`)
    already taken at this moment."""
    processes = _all() if processes is None else processes
    ours = sum(processes[pid][2] for pid in _tree([os.getpid(), *also], processes))
    busy, steal = _machine_times()
    return CpuTimes(busy, ours, time.monotonic(), steal)


def others_share(before: CpuTimes, after: CpuTimes) -> float | None:
    """The share of the machine's CPU time between two samples that went to other processes
    and steal (0..1); None over a window too short to tell."""
    wall = after.at - before.at
    if wall < 0.2:
        return None
    others = (after.busy - before.busy) - (after.ours - before.ours)
    return min(1.0, max(0.0, others / (wall * (os.cpu_count() or 1))))


def steal_share(before: CpuTimes, after: CpuTimes) -> float | None:
    """The hypervisor's share of the machine's CPU time between two samples (0..1), part of
    `others_share`; None over a window too short to tell."""
    wall = after.at - before.at
    if wall < 0.2:
        return None
    return min(1.0, max(0.0, (after.steal - before.steal) / (wall * (os.cpu_count() or 1))))


class OtherCpu:
    """While the block ran: the share of the machine's CPU time others used (`share`), the
    hypervisor's steal among it (`steal`), and the processes outside perflab's tree that used
    the most (`busiest`, as Watch.busiest names them), so that a point measured under load says
    what loaded it. The processes of `also` and theirs count as perflab's own."""

    def __init__(self, also: Sequence[int] = ()):
        self.also = tuple(also)

    def __enter__(self) -> OtherCpu:
        self.share: float | None = None
        self.steal: float | None = None
        self.busiest: list[str] = []
        self._first = _all()
        self._before = sample(self.also, self._first)
        return self

    def __exit__(self, *exc) -> None:
        second = _all()
        after = sample(self.also, second)
        self.share = others_share(self._before, after)
        self.steal = steal_share(self._before, after)
        if under_load(self.share):
            self.busiest = _busiest(self._first, second, self.also,
                                    after.at - self._before.at)


def server_pid(connection) -> int | None:
    """The pid of the server at the other end of a pymysql connection, when it runs on this
    machine: on a Unix socket the kernel says (SO_PEERCRED); over loopback TCP its pid file
    does, if it names a process that runs a server binary (a build's, behind its loader, too)
    working in the server's datadir. None for a server elsewhere or one that cannot be told
    (its CPU time then counts as other work: a warning too many, never one too few)."""
    sock = getattr(connection, "_sock", None)
    if sock is not None and sock.family == socket.AF_UNIX:
        try:
            pid, _, _ = struct.unpack("3i", sock.getsockopt(
                socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        except OSError:
            return None
        return pid or None
    if getattr(connection, "host", None) not in LOOPBACK:
        return None
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT @@pid_file, @@datadir")
            path, datadir = cursor.fetchone()
        pid = int(Path(path).read_text().split()[0])
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        working = os.path.realpath(f"/proc/{pid}/cwd")  # mariadbd works in its datadir
    except (OSError, ValueError, IndexError, TypeError, pymysql.MySQLError):
        return None
    same = working == os.path.realpath(datadir)  # not a server in a container, say
    return pid if runs_a_server(argv) and same else None


def under_load(share: float | None) -> bool:
    return share is not None and share > BUSY_SHARE


class Watch:
    """Other work on the machine from now until `warning` is asked: perflab may go on with its
    own work meanwhile (its tree is not other work), so the watch costs a run no time when
    its set-up takes longer than the watch needs. `also`: as for `sample`."""

    def __init__(self, also: Sequence[int] = ()):
        self.also = tuple(also)
        self._first = _all()
        self._before = sample(self.also, self._first)

    def busiest(self, least: float = 0.5, count: int = 3) -> tuple[float | None, list[str]]:
        """Others' share of the machine since the watch began (waiting until `least` seconds
        have passed), and the processes outside perflab's tree that used the most CPU in that
        time ("pid 4242 python3 48%", share of one CPU), the busiest first."""
        time.sleep(max(0.0, least - (time.monotonic() - self._before.at)))
        second = _all()
        after = sample(self.also, second)
        return others_share(self._before, after), _busiest(
            self._first, second, self.also, after.at - self._before.at, count)

    def warning(self, least: float = 0.5) -> str | None:
        """A sentence for the user when the machine was not idle while watched, else None."""
        share, busiest = self.busiest(least)
        if not under_load(share):
            return None
        named = f" ({', '.join(busiest)} of one CPU)" if busiest else ""
        return (f"the machine is not idle: {share:.0%} of its CPU time went to other processes "
                f"or the hypervisor{named}. Figures measured beside other work are not "
                "evidence; stop it, or read the report's flags for the points measured under "
                "load")


def _busiest(first: dict, second: dict, also: Sequence[int], wall: float,
             count: int = 3) -> list[str]:
    """The processes outside perflab's tree (this process's and `also`'s) that used the most
    CPU between two scans of /proc, the busiest first ("pid 4242 python3 48%", share of one
    CPU); the hypervisor's steal and kernel work no process is charged for are not named."""
    ours = _tree([os.getpid(), *also], second)
    used = []
    for pid, (_, name, cpu) in second.items():
        if pid in ours or pid not in first:
            continue
        share = (cpu - first[pid][2]) / wall
        if share >= 0.01:
            used.append((share, pid, name))
    used.sort(reverse=True)
    return [f"pid {pid} {name} {share:.0%}" for share, pid, name in used[:count]]


def _machine_times() -> tuple[float, float]:
    """Busy CPU seconds since boot over all CPUs (user, nice, system, steal: guest time is
    inside user already) and the steal among them. Interrupt time is left out: with IRQ time
    accounting no process is charged for it, so perflab's own loopback traffic and disk
    interrupts would read as other work."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, _irq, _softirq, steal = (int(f) for f in fields[:8])
    return (user + nice + system + steal) / TICKS, steal / TICKS


def _stat(pid: int) -> tuple[int, str, float] | None:
    """(parent pid, name, utime + stime + cutime + cstime seconds) of a process."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    rest = text[text.rindex(")") + 2:].split()
    return int(rest[1]), name, sum(int(v) for v in rest[11:15]) / TICKS


def _all() -> dict[int, tuple[int, str, float]]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _stat(int(entry))
            if found is not None:
                out[int(entry)] = found
    return out


def _tree(roots: Sequence[int], processes: dict) -> set[int]:
    """The pids of `roots` that are alive in `processes` and all their descendants."""
    children: dict[int, list[int]] = {}
    for pid, (parent, _, _) in processes.items():
        children.setdefault(parent, []).append(pid)
    tree, stack = set(), [pid for pid in roots if pid in processes]
    while stack:
        pid = stack.pop()
        if pid not in tree:
            tree.add(pid)
            stack += children.get(pid, [])
    return tree
