"""Verdicts for families of paired comparisons, on known samples (the simulated families are in
test_error_rates.py)."""

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
    detectable_change,
    family_estimates,
    forecast_detectable,
    forecast_half_width,
    log_ratios,
    moderated,
    paired,
    resolved,
    variance_prior,
    welch,
)
from perflab.stats.design import Design
from perflab.stats.sequential import nominal_level
from perflab.stats.trimmed import own_df

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

# the textbook procedure, for rounds known to be independent (no allowance for autocorrelation)
ONE_LOOK = Design(alpha=0.05, margin=0.05, first_look=5, last_look=5, lag1=0.0)


def test_a_paired_interval_is_a_t_interval_on_the_mean_log_ratio():
    values = [0.10, 0.12, 0.08, 0.11, 0.09]
    verdict = decide({"x": dict(enumerate(values, 1))}, ONE_LOOK)["x"]
    half = scipy_stats.t.ppf(0.975, 4) * scipy_stats.tstd(values) / math.sqrt(5)
    assert verdict.change == pytest.approx(math.expm1(0.10))
    assert verdict.low == pytest.approx(math.expm1(0.10 - half))
    assert verdict.high == pytest.approx(math.expm1(0.10 + half))
    assert verdict.verdict == FASTER and verdict.n == 5


def test_an_interval_is_symmetric_in_logs_so_a_wild_cell_never_reaches_minus_100_percent():
    wild = {"x": {1: -1.5, 2: 0.4, 3: -0.2, 4: 0.9}}  # log ratios of a very noisy cell
    verdict = decide(wild, Design(first_look=4, last_look=4))["x"]
    centre = math.log1p(verdict.change)
    assert math.log1p(verdict.high) - centre == pytest.approx(centre - math.log1p(verdict.low))
    # the same interval symmetric in percent would reach below -100%: this one stops short
    assert 2 * verdict.change - verdict.high < -1 < verdict.low


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


def test_more_rounds_are_projected_at_80_percent_power():
    """+3% at 4% per round: (t + z80) * sd / sqrt(N) < 3% first at the N found here; the
    projection lends the rounds no degrees of freedom they do not have."""
    values = [0.03 + 0.04 * z for z in (-1.2649, -0.6325, 0.0, 0.6325, 1.2649)]
    verdict = decide({"x": dict(enumerate(values, 1))}, ONE_LOOK)["x"]
    assert verdict.verdict == INCONCLUSIVE

    def resolves(n: int) -> bool:  # on the degrees of freedom n rounds give (trimmed from 20)
        return (scipy_stats.t.ppf(1 - 0.025, own_df(n)) + scipy_stats.norm.ppf(0.8)) \
            * 0.04 / math.sqrt(n) < 0.03

    needed = next(n for n in range(6, 200) if resolves(n))
    assert verdict.more_rounds == needed - 5 and needed > 15


def test_the_family_shares_alpha_and_loosens_as_cells_are_decided():
    """Shaffer: a cell whose two hypotheses are both rejected (a small sure change: different
    from 0 and within the margin) holds no true null, so the other is then tested at alpha / 1
    instead of alpha / 2; its t of 3.0 on 4 degrees of freedom lies between the two critical
    values (2.78 and 3.50), so it is decided only by that step."""
    judge = Judge(["sure", "borderline"], ONE_LOOK)
    assert judge.level() == pytest.approx(0.05 / 2)
    borderline = [0.03 + 0.02236 * z for z in (-1.2649, -0.6325, 0.0, 0.6325, 1.2649)]
    judge.look({"sure": paired([0.020, 0.021, 0.019, 0.0205, 0.0195]),
                "borderline": paired(borderline)})
    assert judge.rejected["sure"] == {"diff", "eq"}
    # both rejected: a real change, smaller than the margin, said as such (not "equivalent")
    assert judge.final["sure"].verdict == FASTER and judge.final["sure"].within_margin
    assert judge.level() == pytest.approx(0.05)
    assert judge.final["borderline"].verdict == FASTER
    assert judge.final["borderline"].level == pytest.approx(0.05)
    alone = Judge(["other", "borderline"], ONE_LOOK)  # nothing decided first: alpha / 2
    alone.look({"other": paired([0.3, -0.2, 0.1, -0.3, 0.25]), "borderline": paired(borderline)})
    assert "borderline" not in alone.final


def test_a_small_sure_change_is_said_in_the_users_words():
    """+2% measured to +-0.3%, margin 5%: faster, within the margin; the headline and the
    verdict table say both, and a change that may be 0 stays equivalent."""
    from perflab.analysis.verdicts import _part

    judge = Judge(["small", "none"], ONE_LOOK)
    judge.look({"small": paired([0.020, 0.021, 0.019, 0.0205, 0.0195]),
                "none": paired([0.001, -0.002, 0.0015, -0.001, 0.0005])})
    small, none = judge.final["small"], judge.final["none"]
    assert small.verdict == FASTER and small.within(0.05)
    assert none.verdict == EQUIVALENT and not none.within(0.05)
    assert _part([(4, small)], 0.05).startswith("faster at 4 threads, +2.0% [+")
    assert _part([(4, small)], 0.05).endswith(", within ±5%")


def test_cells_alike_lend_each_other_degrees_of_freedom_and_an_unlike_one_borrows_little():
    alike = {f"c{i}": paired([0.04 * z for z in ZS[i:] + ZS[:i]]) for i in range(5)}
    prior = variance_prior(list(alike.values()))
    assert prior is not None and prior.df == pytest.approx(5 * 4)  # no spread beyond chance
    # ... and a prior lends at most the cell's own degrees of freedom
    lent = moderated(alike["c0"], prior)
    assert lent.df == pytest.approx(4 + 4) and lent.sd == pytest.approx(0.04, rel=0.01)
    unlike = {**{f"q{i}": paired([0.01 * z * (1 + i / 10) for z in ZS]) for i in range(4)},
              "noisy": paired([0.3 * z for z in ZS])}
    prior = variance_prior(list(unlike.values()))
    noisy = moderated(unlike["noisy"], prior)
    assert prior.df < 4  # the cells' variances differ far beyond chance: little is lent
    assert noisy.sd > 0.15  # still noisy: not pulled down to the quiet cells' 1%
    assert variance_prior(list(alike.values())[:2]) is None  # two cells say too little


ZS = [-1.2649, -0.6325, 0.0, 0.6325, 1.2649]  # mean 0, sd 1


def test_a_cell_ten_times_noisier_keeps_its_own_variance_even_at_two_degrees_of_freedom():
    """Issue 43: 16 cells at 3 rounds, two of them with 10x the variance. A screen at 1% let
    such a cell borrow the quiet cells' variance one time in three; at 20% it keeps its own,
    and the quiet cells' prior is not re-drawn from the ones that happened to look quiet."""
    rows = [[-1.0, 0.0, 1.0], [-1.0, 1.0, 0.0], [0.0, -1.0, 1.0], [1.0, 0.0, -1.0]]
    series = {f"q{i}": [0.04 * z for z in rows[i % 4]] for i in range(14)}
    series |= {"n1": [0.04 * 3.16 * z * 0.7 for z in rows[0]],  # its sample sd 0.7 of the
               "n2": [0.04 * 3.16 * z for z in rows[1]]}  # true one: a chance low draw
    estimates = family_estimates(series)
    for noisy in ("n1", "n2"):
        assert estimates[noisy].df == 2  # its own rounds only: nothing lent
    assert estimates["q0"].df > 2  # the alike ones borrow


def test_a_verdict_once_given_is_final():
    early = {1: 0.3, 2: 0.31, 3: 0.29}
    late = {**early, **{r: -0.4 for r in range(4, 12)}}
    design = Design(first_look=3, last_look=12)
    assert decide({"x": early}, design)["x"].verdict == FASTER
    verdict = decide({"x": late}, design)["x"]
    assert verdict.verdict == FASTER and verdict.look == 3
    # the rounds after it no longer support it: the decision's own figures stay, disputed
    assert verdict.disputed and verdict.n == 3 and verdict.low > 0
    assert resolved(verdict, design)  # its figures are frozen: measuring on would not move them


def test_a_difference_measured_on_shows_all_its_rounds_at_its_decisions_level():
    rounds = {r: 0.10 + z * 0.03 for r, z in enumerate(ZS + ZS, start=1)}
    design = Design(first_look=3, last_look=20, margin=0.05, lag1=0.0)
    early = decide({"x": {r: v for r, v in rounds.items() if r <= 5}}, design)["x"]
    late = decide({"x": rounds}, design)["x"]
    assert early.verdict == late.verdict == FASTER and late.look == early.look
    assert late.n == 10 and not late.disputed and late.level == early.level
    assert late.high - late.low < early.high - early.low
    # measured on until it could detect the margin: not at 5 rounds, by 10
    assert not resolved(early, design) and resolved(late, design)
    # a noisy fourfold gain: it matters whatever its exact size, nothing to measure on for
    huge = decide({"x": {r: math.log(4) + z * 0.3 for r, z in enumerate(ZS, start=1)}},
                  design)["x"]
    assert huge.low > design.margin and resolved(huge, design)
    assert detectable_change(huge.sd, huge.n, huge.level, design, huge.df) > design.margin


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
    assert nominal_level(0.05, 3, 20, 4) == pytest.approx(per_look)  # the same at every look


def test_a_boundary_fitted_to_the_looks_asks_more_early_and_less_at_the_end():
    """Wang-Tsiatis 1/4 over rounds 3..10: each look's level grows with its rounds, the last
    one lies between Pocock's and the fixed-sample level, and a look past the last is judged
    as the last."""
    levels = [nominal_level(0.05, 3, 10, n, 0.25) for n in range(3, 11)]
    assert levels == sorted(levels) and levels[0] < levels[-1] / 10
    assert nominal_level(0.05, 3, 10) < levels[-1] < 0.05
    assert nominal_level(0.05, 3, 10, 12, 0.25) == levels[-1]


def test_the_forecast_names_the_change_its_rounds_would_find_with_80_percent_power():
    """Before the first round: the interval a family of 4 cells reaches in 10 rounds at 4% a
    round (one look, each cell at alpha / 4, lending its own 9 degrees of freedom), and the
    smallest change found with 80% power, which is wider by the power's normal quantile; more
    rounds find a smaller change, and the allowance for autocorrelation costs some."""
    design = Design(alpha=0.05, margin=0.05, first_look=10, last_look=10, lag1=0.0)
    t = scipy_stats.t.ppf(1 - 0.05 / 4 / 2, 18)
    half = forecast_half_width(0.04, 10, 0.05 / 4, 4, design)
    assert half == pytest.approx(t * 0.04 / math.sqrt(10), rel=1e-6)
    found = forecast_detectable(0.04, 10, 0.05 / 4, 4, design)
    assert found == pytest.approx(math.expm1((t + 0.8416) * 0.04 / math.sqrt(10)), rel=1e-3)
    longer = Design(alpha=0.05, margin=0.05, first_look=20, last_look=20, lag1=0.0)
    assert forecast_detectable(0.04, 20, 0.05 / 4, 4, longer) < found
    assert forecast_detectable(0.04, 10, 0.05 / 4, 4, Design(0.05, 0.05, 10, 10)) > found
    assert forecast_detectable(0.04, 1, 0.05 / 4, 4, design) == math.inf


@pytest.fixture
def fewer_null_samples(monkeypatch):
    """The looks' boundary simulated on 20,000 null samples instead of sequential.PATHS
    (200,000): a boundary over 3..76 looks, 57 of them trimmed, took 20-30 s of the suite. Its
    constant C moves by about 1% (0.02 at C near 2.9, the order statistic two standard errors
    high), where the test below needs C above 2.65 (a half width past LOG_LIMIT at 2 degrees
    of freedom) and no decision at 4 (t near 500). The boundaries computed so are dropped
    after the test: the worker's other tests compute theirs on every sample."""
    from perflab.stats import sequential

    monkeypatch.setattr(sequential, "PATHS", 20_000)
    yield
    for cached in (sequential.nominal_level, sequential._constant, sequential._null_scores):
        cached.cache_clear()


def test_an_early_look_of_looks_fitted_to_many_rounds_has_no_interval_and_no_overflow(
        fewer_null_samples):
    """Looks fitted to 3..76 (a 30-minute budget): the look at round 3 asks a t quantile in the
    thousands at 2 degrees of freedom, whose ratio no float holds. The cells are inconclusive,
    the one on its own degrees of freedom with no interval, and a forecast of that look finds
    no change it could detect."""
    from perflab.stats.design import FITTED_SHAPE

    design = Design(alpha=0.05, margin=0.05, first_look=3, last_look=76, shape=FITTED_SHAPE)
    cells = {  # the small-effects plan's first three rounds, which overflowed
        ("ahi", 4): {1: 0.0113, 2: 0.0029, 3: 0.0829}, ("ahi", 64): {1: 0.0794, 2: -0.0458,
                                                                      3: 0.0167},
        ("pfs", 4): {1: -0.0144, 2: -0.0129, 3: 0.0462}, ("pfs", 64): {1: -0.013, 2: -0.0188,
                                                                        3: -0.0236}}
    verdicts = decide(cells, design)
    assert all(v.verdict == INCONCLUSIVE for v in verdicts.values())
    assert verdicts[("ahi", 64)].interval_text() == "-"  # its own 2 degrees of freedom
    assert forecast_detectable(5.0, 3, 0.05 / 4, 4, design) == math.inf
