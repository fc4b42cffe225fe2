"""bench/tune's line, 90% of the reference's gain on a log or a linear scale: the waves decide
against one, and the other is read from the same rounds (issue 68: the query-cache answer
reached the log line in a median of 5 trials and the linear one never)."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.stats.decide import INCONCLUSIVE, Verdict

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

BENCH = Path(__file__).parents[1] / "bench"
sys.path.insert(0, str(BENCH))  # bench/tune.py imports its neighbour common.py
spec = importlib.util.spec_from_file_location("bench_tune", BENCH / "tune.py")
assert spec and spec.loader
bench = sys.modules["bench_tune"] = importlib.util.module_from_spec(spec)  # for dataclasses
spec.loader.exec_module(bench)
LOG, LINEAR = bench.LINES["log"], bench.LINES["linear"]


def verdict(change: float, half: float) -> Verdict:
    """A verdict of `change`, its interval `half` either side on a log scale."""
    return Verdict(INCONCLUSIVE, 16, change, (1 + change) * math.exp(-half) - 1,
                   (1 + change) * math.exp(half) - 1, 0.05)


changes = st.floats(-0.9, 300.0)
halves = st.floats(0.0, 1.0)


@given(gain=st.floats(0.0, 1000.0))
def test_the_log_line_never_asks_more_than_the_linear_one(gain):
    """(1 + g)^0.9 <= 1 + 0.9 g: an answer that keeps 90% of a gain linearly keeps it on the
    log scale; they meet at no gain, and on the query cache's x218 part by 31 points of R."""
    assert LOG.kept(gain) <= LINEAR.kept(gain) + 1e-9
    assert LOG.against(gain) <= LINEAR.against(gain) + 1e-12
    assert LINEAR.kept(gain) == pytest.approx(1 + 0.9 * gain)
    assert LOG.against(gain) == pytest.approx((1 + gain) ** -0.1 - 1)
    if gain == 0:
        assert LOG.against(gain) == LINEAR.against(gain) == 0
    assert LOG.against(217) == pytest.approx(-0.416, abs=1e-3)
    assert LINEAR.against(217) == pytest.approx(-0.0986, abs=1e-3)


@given(st.dictionaries(st.integers(0, 30), st.tuples(changes, halves), min_size=1,
                       max_size=12),
       st.dictionaries(st.integers(0, 30), st.tuples(st.floats(-0.95, 0.3), halves,
                                                     st.booleans()), max_size=12),
       st.sampled_from(["log", "linear"]))
def test_the_same_rounds_read_against_a_line_give_that_lines_decisions(first, waves, scale):
    """Decided against one line, read against either from the same rounds: the line the
    waves decided against gets its decisions back, and an answer reached on the linear line by
    its first pass or its verdict against R is reached on the log line too."""
    gains = {(k,): verdict(*v) for k, v in first.items()}
    reference = max(gains, key=lambda key: gains[key].change)
    line = bench.LINES[scale]
    decided = bench.first_pass(gains, reference, line)
    against = line.against(gains[reference].change)
    for k, (change, half, failed) in waves.items():  # what a wave measured against R
        if (k,) in gains and (k,) not in decided:
            decided[(k,)] = bench.Reach(False, "failed") if failed else \
                bench.against_reference(verdict(change, half), against)
    decided = bench.by_estimate(decided, gains, reference, line)
    assert set(decided) == set(gains) and decided[reference].reached
    assert bench.read_against(decided, gains, reference, line) == decided
    on_log = bench.read_against(decided, gains, reference, LOG)
    on_linear = bench.read_against(decided, gains, reference, LINEAR)
    measured = {"interval", "estimate"}
    for key in gains:
        for read in (on_log, on_linear):  # a verdict against R outweighs any first pass
            assert (read[key].how in measured) == (decided[key].how in measured)
            assert (read[key].how == "failed") == (decided[key].how == "failed")
        if on_linear[key].reached:
            assert on_log[key].reached, (on_linear[key], on_log[key])
