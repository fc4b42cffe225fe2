"""Which trials the final re-measure takes (tune/final.best_candidates): the search's best,
then each knob's best reading it left behind."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.tune.final import (
    CANDIDATES,
    CANNOT_WIN_SDS,
    MORE_CANDIDATES,
    best_candidates,
    cannot_win,
)
from perflab.tune.result import Measured, Outcome, TrialOutcome, TuneResult, moved

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

DEFAULTS = {"a": "1", "b": "1", "c": "1", "d": "1"}


def _result(trials: list[TrialOutcome], ranked: list[TrialOutcome]) -> TuneResult:
    return TuneResult("s", "bayes", [], trials, ranked[0] if ranked else None,
                      defaults=dict(DEFAULTS), measured=Measured.SIDE_BY_SIDE, ranked=ranked)


def _trial(number: int, value: float | None, **params: str) -> TrialOutcome:
    return TrialOutcome(number, {**DEFAULTS, **params},
                        Outcome.OK if value is not None else Outcome.FAILED, value)


def test_a_knobs_one_good_reading_the_search_left_behind_is_measured_again():
    """The model ranks three settings of knob a first; trial 1 (knob d, ×1.40) it no longer
    believes. d's best reading joins the re-measure; c's ×1.02 is within the margin and does
    not, nor does b's, whose best reading is already a candidate."""
    trials = [_trial(1, 1.40, d="8"), _trial(2, 1.10, a="2"), _trial(3, 1.12, a="3"),
              _trial(4, 1.15, a="4", b="2"), _trial(5, 1.02, c="9"), _trial(6, None, b="5")]
    ranked = [trials[3], trials[2], trials[1], trials[4], trials[0]]
    chosen = best_candidates(_result(trials, ranked), "maximize", 0.05)
    assert [t.number for t in chosen] == [4, 3, 2, 1]
    # for latency a gain is a lower figure: the same readings are all losses but trial 5's
    assert [t.number for t in best_candidates(_result(trials, ranked), "minimize", 0.0)] \
        == [4, 3, 2]


@given(st.lists(st.tuples(st.dictionaries(st.sampled_from("abcd"), st.sampled_from("1234"),
                                          max_size=3),
                          st.one_of(st.none(), st.floats(0.2, 3.0))), max_size=25),
       st.sampled_from(["maximize", "minimize"]), st.floats(0.0, 0.3))
def test_candidates_are_distinct_bounded_and_each_extra_one_helped(raw, direction, margin):
    trials = [_trial(n, value, **params) for n, (params, value) in enumerate(raw)]
    ok = [t for t in trials if t.value is not None]
    ranked = sorted(ok, key=lambda t: t.value, reverse=direction == "maximize")
    chosen = best_candidates(_result(trials, ranked), direction, margin)
    settings = [tuple(sorted(moved(t.params, DEFAULTS).items())) for t in chosen]
    assert len(set(settings)) == len(settings)
    assert len(chosen) <= CANDIDATES + MORE_CANDIDATES
    assert all(t.value is not None for t in chosen)
    head = chosen[:CANDIDATES]  # the search's best first, in its order
    assert [ranked.index(t) for t in head] == sorted(ranked.index(t) for t in head)
    for extra in chosen[CANDIDATES:]:  # each knob's best reading: a gain over the margin
        assert (extra.value > 1 + margin if direction == "maximize"
                else extra.value < 1 - margin)


def test_a_candidate_far_under_the_best_is_not_re_measured():
    """The held-out MyISAM join's trials: five key-cache settings at x1.6 to x1.9 beside the
    query cache's x572 cannot win the re-measure; near the best (x2.2 beside x2.5), one can."""
    cache = _trial(11, 572.5, a="2")
    keys = [_trial(n, value, b=str(n)) for n, value in ((5, 1.90), (7, 1.91), (10, 1.95))]
    assert cannot_win([cache, *keys], "maximize", 0.22, 0.10) == keys
    near = [_trial(1, 2.5, a="2"), _trial(2, 2.2, b="2")]
    assert cannot_win(near, "maximize", 0.22, 0.10) == []
    # for latency a gain is a lower figure: the x572 is then the one far behind
    assert cannot_win([cache, *keys], "minimize", 0.22, 0.10) == [cache]


@given(st.lists(st.one_of(st.none(), st.floats(0.01, 1000.0)), min_size=1, max_size=8),
       st.sampled_from(["maximize", "minimize"]), st.floats(0.0, 0.5), st.floats(0.0, 0.4))
def test_the_candidate_with_the_best_figure_is_always_re_measured(values, direction, clear,
                                                                  sd):
    """Only candidates behind the best figure by more than a clear gain and CANNOT_WIN_SDS
    rounds' noise are left out: the best always stays, and so does any within that reach."""
    candidates = [_trial(n, value, a=str(n)) for n, value in enumerate(values)]
    lost = cannot_win(candidates, direction, clear, sd)
    figures = [t.value for t in candidates if t.value is not None]
    if not figures:
        assert lost == []
        return
    best = max(figures) if direction == "maximize" else min(figures)
    reach = math.log1p(clear) + CANNOT_WIN_SDS * math.sqrt(2) * sd
    for t in candidates:
        gap = None if t.value is None else abs(math.log(best) - math.log(t.value))
        assert (t in lost) == (gap is not None and gap > reach)
