"""Simulated families with known effects and noise, run through the very procedure `perflab run`
uses (pure Python): the error rates and power docs/STATISTICS.md states."""

import pytest

from perflab.stats.decide import EQUIVALENT, FASTER, SLOWER
from perflab.stats.design import FITTED_SHAPE, Design
from perflab.stats.simulate import simulate

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

# the textbook procedure, for rounds known to be independent (no allowance for autocorrelation)
BUDGET = Design(alpha=0.05, margin=0.05, first_look=3, last_look=20, lag1=0.0)
# as perflab runs: rounds as alike as this machine's (lag-1 autocorrelation 0.2) allowed for
REAL = Design(alpha=0.05, margin=0.05, first_look=3, last_look=20)
TABLE = [(config, threads) for config in ("32", "64") for threads in (1, 2, 4, 8, 16, 32, 64,
                                                                         128)]

def test_a_a_families_keep_the_family_error_rate_with_the_budgeted_stopping():
    """16 comparisons with no effect, 8% noise per point, looks after every round from 3 to
    20, rounds only for what is open: any false faster/slower in at most 5% of the tables.
    Peeking with fixed-sample levels instead is shown to fail, so the check can fail."""
    effects = {cell: 0.0 for cell in TABLE}
    designed = simulate(effects, 0.08, BUDGET, families=300, seed=3)
    assert designed.false_direction / 300 <= 0.05
    peeking = simulate(effects, 0.08, Design(first_look=3, last_look=3, lag1=0.0),
                       families=300, seed=3, rounds=20)
    assert peeking.false_direction / 300 > 0.10


def test_looks_fitted_to_the_budget_keep_the_error_rate_and_find_more_at_the_end():
    """The boundary a budgeted run uses once its looks are fitted (Wang-Tsiatis 1/4 over rounds
    3..10): one comparison with no effect, looked at after every round, is called faster or
    slower in about alpha of the runs (so a boundary set too loose, or too tight, fails), and a
    5% effect at 8% noise is found more often by round 10 than with Pocock's constant level over
    the same looks."""
    fitted = Design(alpha=0.05, margin=0.05, first_look=3, last_look=10, lag1=0.0,
                    shape=FITTED_SHAPE)
    null = simulate({("b", 1): 0.0}, 0.08, fitted, families=3000, seed=5)
    assert 0.03 <= null.false_direction / 3000 <= 0.065
    effect = {("b", 1): 0.05}
    found = simulate(effect, 0.04, fitted, families=1500, seed=6).verdicts.get(
        (("b", 1), FASTER), 0)
    pocock = simulate(effect, 0.04, Design(alpha=0.05, margin=0.05, first_look=3, last_look=10,
                                           lag1=0.0), families=1500, seed=6).verdicts.get(
        (("b", 1), FASTER), 0)
    assert found > pocock * 1.05


def test_a_ten_percent_effect_at_eight_percent_noise_is_found_with_the_stated_power():
    """docs/STATISTICS.md: one comparison, +10% at 8% noise per point, looks 3..20, rounds
    independent: found faster in 80% of runs, after 13 rounds on average (trimming its last
    look's rounds costs it under 1 point: 80.4% untrimmed)."""
    outcome = simulate({("on", 8): 0.10}, 0.08, BUDGET, families=2000, seed=4)
    assert outcome.share(("on", 8), FASTER) >= 0.78
    assert outcome.share(("on", 8), SLOWER) <= 0.025  # the wrong sign: half the error rate
    assert sum(outcome.rounds) / 2000 < 15


def test_no_effect_with_enough_rounds_ends_equivalent():
    """docs/STATISTICS.md: one comparison, no effect, 4% noise per point, margin 5%: called
    equivalent in 81% of runs within 20 rounds, never faster or slower than 5% allows."""
    outcome = simulate({("on", 8): 0.0}, 0.04, BUDGET, families=2000, seed=5)
    assert outcome.share(("on", 8), EQUIVALENT) >= 0.78
    assert outcome.false_direction / 2000 <= 0.05


def test_an_effect_at_the_margin_is_rarely_called_equivalent():
    effects = {cell: 0.05 for cell in TABLE[:4]}  # exactly the margin: not equivalent
    outcome = simulate(effects, 0.02, BUDGET, families=500, seed=9)
    assert 0 < outcome.false_equivalent / 500 <= 0.05  # it happens, within the error rate
