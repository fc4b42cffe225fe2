"""The error rate under noise that is not independent and normal: rounds alike from one to the
next, and heavy tails (simulated, as tests/test_error_rates.py; a file of its own so that the
fast tier runs the two files' simulations side by side)."""

import pytest

from perflab.stats.simulate import SyntheticNoise, simulate
from test_error_rates import BUDGET, REAL, TABLE

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast


def test_the_error_rate_holds_when_consecutive_rounds_are_alike():
    """Rounds with lag-1 autocorrelation 0.2 (drift the slices do not cancel), the demo's noise
    per thread count (1% to 14% a point): the design's allowance keeps the family's error
    within 5%; the textbook procedure, which assumes independent rounds, does not."""
    effects = {cell: 0.0 for cell in TABLE}
    noise = SyntheticNoise({1: 0.01, 2: 0.14, 4: 0.04, 8: 0.035, 16: 0.03, 32: 0.04, 64: 0.05,
                   128: 0.055}, rho=0.2)
    allowed = simulate(effects, noise, REAL, families=600, seed=12)
    assert allowed.false_direction / 600 <= 0.05
    textbook = simulate(effects, noise, BUDGET, families=600, seed=12)
    assert textbook.false_direction / 600 > 0.07


def test_the_error_rate_holds_with_heavy_tailed_noise():
    effects = {cell: 0.0 for cell in TABLE}
    outcome = simulate(effects, 0.08, BUDGET, families=250, seed=8, tails=4)
    assert outcome.false_direction / 250 <= 0.05
