"""What else uses the machine's CPUs while perflab measures (probes/busy.py)."""

import subprocess
import sys
import time

import pytest

from perflab.probes import busy

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast


def test_another_process_spinning_is_other_work_and_named(spinner_elsewhere):
    """A process outside perflab's tree spinning on one of the CPUs takes its share of the
    machine's CPU time (one CPU's worth, less what the scheduler gives the rest); the warning
    names it by pid. Other work on the machine (a test beside this one) only adds to it."""
    with busy.OtherCpu() as others:
        time.sleep(1.0)
    assert others.share is not None
    assert others.share >= 0.6 / (busy.os.cpu_count() or 1)
    assert busy.under_load(others.share)
    # the point under load names what loaded it; the steal is the hypervisor's part, if any
    # (the spinner among the first three unless tests beside this one are busier)
    assert others.busiest and all(b.startswith("pid ") and b.endswith("%")
                                  for b in others.busiest)
    assert others.steal is not None and 0 <= others.steal <= others.share + 0.01
    warning = busy.Watch().warning(0.5)
    assert warning is not None and warning.startswith("the machine is not idle")
    # named among the busiest (the first three in the warning; other tests may be busier)
    share, busiest = busy.Watch().busiest(0.5, count=100)
    assert busy.under_load(share) and any(f"pid {spinner_elsewhere} " in b for b in busiest)


def test_perflabs_own_children_are_its_own_work():
    """A process perflab started (a server, a load generator) is not other work: its CPU time
    is counted in perflab's tree, also once it has exited and been reaped, and a process named
    as the measured server is too."""
    before = busy.sample()
    child = subprocess.Popen([sys.executable, "-c",
                              "import time\nwhile time.process_time() < 1: pass"])
    child.wait()
    after = busy.sample()
    assert after.ours - before.ours >= 0.95  # its CPU second, reaped: in perflab's cutime
    assert busy.others_share(before, after) is not None
    assert busy.others_share(before, before) is None  # no window: nothing to tell


def test_a_named_server_outside_the_tree_counts_as_perflabs(spinner_elsewhere):
    """An existing server perflab measures (its pid from the socket) is the measurement, not
    other work: named, its CPU moves to perflab's side."""
    spun = busy._stat(spinner_elsewhere)[2]
    plain, named = busy.sample(), busy.sample([spinner_elsewhere])
    time.sleep(1.0)
    plain_after, named_after = busy.sample(), busy.sample([spinner_elsewhere])
    spun = busy._stat(spinner_elsewhere)[2] - spun
    extra = (named_after.ours - named.ours) - (plain_after.ours - plain.ours)
    assert spun > 0.1 and extra == pytest.approx(spun, abs=0.1)
