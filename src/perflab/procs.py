"""Child processes that must not outlive perflab."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable

from perflab.sentinel import Told, start_time

PR_SET_PDEATHSIG = 1
_sentinel: subprocess.Popen | None = None
# pid (or sessions file) -> what the sentinel was told of it, to tell again
_watched: dict[int | str, list[str]] = {}


def die_with_parent(sig: signal.Signals) -> Callable[[], None]:
    """A preexec_fn that makes the kernel send `sig` to the child when perflab dies.

    This holds even when perflab is killed with SIGKILL, so a killed run leaves no sysbench
    running and shuts its mariadbd down cleanly.
    """

    parent = os.getpid()

    def arm() -> None:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:  # perflab died between the fork and the line above
            os.kill(os.getpid(), sig)

    return arm


def start_sentinel() -> None:
    """The sentinel (perflab/sentinel.py) running, told of every server still watched: call
    it before starting a server, so that nothing slow stands between that start and its
    "start" line."""
    global _sentinel
    if _sentinel is not None and _sentinel.poll() is None:
        return
    _sentinel = subprocess.Popen(
        [sys.executable, "-m", "perflab.sentinel"], stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,  # not holding perflab's output
        text=True, start_new_session=True)  # a Ctrl-C for perflab is not for it
    for lines in _watched.values():
        _write(lines)


def tell_sentinel(what: Told, pid: int) -> None:
    """Tell the sentinel that the server `pid` started (START), is ready (READY) or is
    stopped (GONE), so that perflab's death leaves none of them running."""
    if what == Told.START:
        started = start_time(pid)
        if started is None:
            return  # already gone
        line = f"{Told.START} {pid} {started}"
        _watched[pid] = [line]
    else:
        line = f"{what} {pid}"
        if what == Told.GONE:
            _watched.pop(pid, None)
        else:
            _watched.setdefault(pid, []).append(line)
    start_sentinel()
    _write([line])


def _write(lines: list[str]) -> None:
    global _sentinel
    if _sentinel is None:
        return
    assert _sentinel.stdin is not None, "started with stdin=PIPE"
    try:
        _sentinel.stdin.write("".join(line + "\n" for line in lines))
        _sentinel.stdin.flush()
    except OSError:  # it died: the next start_sentinel starts another and tells it all
        _sentinel = None


def watch_sessions(path: str, endpoint) -> None:
    """Tell the sentinel that the ids in file `path` are sessions on the server `endpoint`
    (a connection.Endpoint; its password goes through the pipe, never to a file or argv):
    if perflab dies, the sentinel ends them there."""
    line = f"{Told.SESSIONS} " + json.dumps({
        "file": path, "socket": endpoint.socket, "host": endpoint.host, "port": endpoint.port,
        "user": endpoint.user, "password": endpoint.password,
        "option_file": endpoint.option_file})
    _watched[path] = [line]
    start_sentinel()
    _write([line])


def forget_sessions(path: str) -> None:
    """The sessions of `path` ended with the run: nothing for the sentinel to do for them."""
    if _watched.pop(path, None) is not None:
        _write([f"{Told.FORGET} " + json.dumps(path)])


_stop_requested = False


def request_stop(signum, frame) -> None:
    """SIGINT's and SIGTERM's handler: raise KeyboardInterrupt. The flag stays set, because
    Python drops an exception raised while a destructor or callback runs (a Ctrl-C was lost
    that way once in the suite, and the run went on to the end); `check_stop` raises it again
    at the next safe place."""
    global _stop_requested
    _stop_requested = True
    raise KeyboardInterrupt


def stop_on_signals() -> None:
    """Ctrl-C, SIGTERM and a dropped ssh (SIGHUP) raise KeyboardInterrupt through `request_stop`
    in every perflab process that measures (the CLI, the benchmarks): Python's own SIGINT
    handler lost a Ctrl-C of bench/tune mid-trial, and the search went on."""
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, request_stop)


def check_stop() -> None:
    if _stop_requested:
        raise KeyboardInterrupt
