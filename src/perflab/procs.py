"""Child processes that must not outlive perflab."""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


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


_stop_requested = False


def request_stop(signum, frame) -> None:
    """SIGINT's and SIGTERM's handler: raise KeyboardInterrupt. The flag stays set, because
    Python drops an exception raised while a destructor or callback runs (a Ctrl-C was lost
    that way once in the suite, and the run went on to the end); `check_stop` raises it again
    at the next safe place."""
    global _stop_requested
    _stop_requested = True
    raise KeyboardInterrupt


def check_stop() -> None:
    if _stop_requested:
        raise KeyboardInterrupt
