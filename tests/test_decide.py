"""Verdicts for families of paired comparisons: known samples, then simulated families with
known effects and noise run through the very procedure `perflab run` uses (pure Python)."""

import math

import pytest
from scipy import stats as scipy_stats

from perflab.stats.decide import (
    EQUIVALENT,
    FASTER,
    INCONCLUSIVE,
    SLOWER,
    Judge,
    decide,
    log_ratios,
    paired,
    welch,
)
from perflab.stats.design import Design
from perflab.stats.sequential import nominal_level
from perflab.stats.simulate import simulate

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

ONE_LOOK = Design(alpha=0.05, margin=0.05, first_look=5, last_look=5)
BUDGET = Design(alpha=0.05, margin=0.05, first_look=3, last_look=20)
TABLE = [(config, threads) for config in ("32", "64") for threads in (1, 2, 4, 8, 16, 32, 64,
                                                                         128)]


def test_a_paired_interval_is_a_t_interval_on_the_mean_log_ratio():
    values = [0.10, 0.12, 0.08, 0.11, 0.09]
    verdict = decide({"x": dict(enumerate(values, 1))}, ONE_LOOK)["x"]
    half = scipy_stats.t.ppf(0.975, 4) * scipy_stats.tstd(values) / math.sqrt(5)
    assert verdict.change == pytest.approx(math.expm1(0.10))
    assert verdict.low == pytest.approx(math.expm1(0.10 - half))
    assert verdict.high == pytest.approx(math.expm1(0.10 + half))
    assert verdict.verdict == FASTER and verdict.n == 5


def test_an_interval_never_reaches_below_minus_100_percent():
    wild = {"x": {1: -1.5, 2: 0.4, 3: -0.2, 4: 0.9}}  # log ratios of a very noisy cell
    verdict = decide(wild, Design(first_look=4, last_look=4))["x"]
    assert -1 < verdict.low < verdict.change < verdict.high


def test_equivalent_slower_and_inconclusive():
    cells = {
        "same": {r: v for r, v in enumerate([0.01, -0.01, 0.005, -0.004, 0.002], 1)},
        "slow": {r: v for r, v in enumerate([-0.2, -0.22, -0.19, -0.21, -0.18], 1)},
        "open": {r: v for r, v in enumerate([0.3, -0.2, 0.1, -0.3, 0.25], 1)},
    }
    verdicts = decide(cells, ONE_LOOK)
    assert verdicts["same"].verdict == EQUIVALENT
    assert -0.05 < verdicts["same"].low and verdicts["same"].high < 0.05
    assert verdicts["slow"].verdict == SLOWER and verdicts["slow"].high < 0
    assert verdicts["open"].verdict == INCONCLUSIVE
    assert verdicts["open"].more_rounds is None or verdicts["open"].more_rounds > 0


def test_the_family_shares_alpha_and_loosens_as_cells_are_decided():
    judge = Judge(["a", "b", "c"], ONE_LOOK)
    assert judge.level() == pytest.approx(0.05 / 3)
    judge.look({"a": paired([0.5, 0.52, 0.49, 0.51, 0.5]),
                "b": paired([0.001, -0.001, 0.0005, -0.0005, 0.0]),
                "c": paired([0.2, -0.3, 0.1, 0.3, -0.1])})
    # a is faster (one of its two hypotheses out), b equivalent and not different from 0 as
    # far as anyone knows (one out): both can still hold a true null; c is open
    assert judge.final["a"].verdict == FASTER and judge.final["b"].verdict == EQUIVALENT
    assert judge.level() == pytest.approx(0.05 / 3)
    assert "c" not in judge.final


def test_a_verdict_once_given_is_final():
    early = {1: 0.3, 2: 0.31, 3: 0.29}
    late = {**early, **{r: -0.4 for r in range(4, 12)}}
    design = Design(first_look=3, last_look=12)
    assert decide({"x": early}, design)["x"].verdict == FASTER
    verdict = decide({"x": late}, design)["x"]
    assert verdict.verdict == FASTER and verdict.look == 3


def test_log_ratios_pair_each_configuration_with_the_baseline_of_its_round():
    qps = {("off", 2, 1): 100.0, ("on", 2, 1): 120.0, ("off", 2, 2): 50.0, ("on", 2, 2): 60.0,
           ("on", 2, 3): 70.0}  # round 3 has no baseline: not a pair
    cells = log_ratios(qps, "off", ["off", "on"], [2, 4])
    assert cells == {("on", 2): {1: pytest.approx(math.log(1.2)), 2: pytest.approx(math.log(1.2))},
                     ("on", 4): {}}  # in the family although never measured


def test_welch_on_logs_of_two_labs():
    a = [math.log(v) for v in (100, 102, 98, 101)]
    b = [math.log(v) for v in (120, 118, 123, 121)]
    estimate = welch(a, b)
    assert math.expm1(estimate.mean) == pytest.approx(120.5 / 100.25 - 1, abs=0.001)
    assert 3 <= estimate.df <= 6
    judge = Judge(["x"], Design(first_look=2, last_look=2))
    judge.look({"x": estimate})
    assert judge.final["x"].verdict == FASTER


def test_more_looks_need_a_stricter_level_per_look():
    assert nominal_level(0.05, 5, 5) == 0.05
    per_look = nominal_level(0.05, 3, 20)
    assert 0.005 < per_look < 0.012  # Pocock's constant for 18 looks is near 0.01


# -- simulated families ---------------------------------------------------------------------

def test_a_a_families_keep_the_family_error_rate_with_the_budgeted_stopping():
    """16 comparisons with no effect, 8% noise per point, looks after every round from 3 to
    20, rounds only for what is open: any false faster/slower in at most 5% of the tables.
    Peeking with fixed-sample levels instead is shown to fail, so the check can fail."""
    effects = {cell: 0.0 for cell in TABLE}
    designed = simulate(effects, 0.08, BUDGET, families=2000, seed=3)
    assert designed.false_direction / 2000 <= 0.05
    peeking = simulate(effects, 0.08, Design(first_look=3, last_look=3), families=2000, seed=3,
                       rounds=20)
    assert peeking.false_direction / 2000 > 0.15


def test_the_error_rate_holds_with_heavy_tailed_noise():
    effects = {cell: 0.0 for cell in TABLE}
    outcome = simulate(effects, 0.08, BUDGET, families=1000, seed=8, tails=4)
    assert outcome.false_direction / 1000 <= 0.05


def test_a_ten_percent_effect_at_eight_percent_noise_is_found_with_the_stated_power():
    """docs/STATISTICS.md: one comparison, +10% at 8% noise per point, looks 3..20: found
    faster in 83% of runs, after 13 rounds on average."""
    outcome = simulate({("on", 8): 0.10}, 0.08, BUDGET, families=2000, seed=4)
    assert outcome.share(("on", 8), FASTER) >= 0.80
    assert outcome.share(("on", 8), SLOWER) == 0
    assert sum(outcome.rounds) / 2000 < 15


def test_no_effect_with_enough_rounds_ends_equivalent():
    """docs/STATISTICS.md: one comparison, no effect, 4% noise per point, margin 5%: called
    equivalent in 71% of runs within 20 rounds, never faster or slower than 5% allows."""
    outcome = simulate({("on", 8): 0.0}, 0.04, BUDGET, families=2000, seed=5)
    assert outcome.share(("on", 8), EQUIVALENT) >= 0.68
    assert outcome.false_direction / 2000 <= 0.05
    assert outcome.false_equivalent == 0


def test_an_effect_at_the_margin_is_rarely_called_equivalent():
    effects = {cell: 0.05 for cell in TABLE[:4]}  # exactly the margin: not equivalent
    outcome = simulate(effects, 0.02, BUDGET, families=1000, seed=9)
    assert 0 < outcome.false_equivalent / 1000 <= 0.05  # it happens, within the error rate
