"""Knobs that cannot act beside the winner's other settings (tune/inert.py), and the put-back's
decisions over measured verdicts: which knobs stay, the one that alone carries the winner's gain,
the kept set checked together (tune/final.choose_kept)."""

import html
import math
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.stats.decide import EQUIVALENT, FASTER, INCONCLUSIVE, SLOWER, TOO_FEW, Verdict
from perflab.tune.final import (
    choose_kept,
    put_back_budget,
    sufficient,
    whole,
    with_followers,
)
from perflab.tune.inert import inert_knobs
from perflab.tune.render import tables
from perflab.tune.result import KeptCheck, TuneResult
from perflab.tune.settings import TuneSettings
from perflab.tune.space import folded
from perflab.tune.trial import server_variables

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

DEFAULTS = {"key_buffer_size": "134217728", "key_cache_segments": "0",
            "key_cache_division_limit": "100", "key_cache_block_size": "1024",
            "thread_handling": "one-thread-per-connection", "thread_pool_stall_limit": "500",
            "query_cache_type": "OFF", "query_cache_size": "1048576",
            "query_cache_limit": "1048576", "table_open_cache": "2000"}


def test_the_issues_winner_keeps_only_the_knob_that_acts():
    """Issue 44's my.cnf: key_buffer_size = 0 with key-cache settings and a thread-pool knob
    under one-thread-per-connection. Only key_buffer_size can act; the others are named with
    why. The same key-cache settings with the cache on all stay in play."""
    winner = {"key_buffer_size": "0", "key_cache_division_limit": "17",
              "key_cache_segments": "59", "thread_pool_stall_limit": "30"}
    inert = inert_knobs(winner, DEFAULTS)
    assert set(inert) == {"key_cache_division_limit", "key_cache_segments",
                          "thread_pool_stall_limit"}
    assert inert["key_cache_segments"] == "the key cache (key_buffer_size = 0) is off"
    assert "pool-of-threads" in inert["thread_pool_stall_limit"]
    cache_on = {**winner, "key_buffer_size": "64M", "thread_handling": "pool-of-threads"}
    assert inert_knobs(cache_on, DEFAULTS) == {}


def test_a_block_smaller_than_myisams_index_block_and_what_the_plan_fixes():
    assert "key_cache_block_size" in inert_knobs({"key_cache_block_size": "566"}, DEFAULTS)
    assert inert_knobs({"key_cache_block_size": "4096"}, DEFAULTS) == {}
    # the query cache is left to measurement: MariaDB turns it on when its size is given
    assert inert_knobs({"query_cache_limit": "2M", "query_cache_size": "64M"}, DEFAULTS) == {}
    # a thread-pool knob, thread_handling not searched: MariaDB's default runs no pool,
    # unless the plan's server section asks for one
    searched = {"thread_pool_stall_limit": "500"}
    assert set(inert_knobs({"thread_pool_stall_limit": "30"}, searched)) == {
        "thread_pool_stall_limit"}
    assert inert_knobs({"thread_pool_stall_limit": "30"}, searched,
                       {"thread_handling": "pool-of-threads"}) == {}
    # the plan itself switches the key cache off: every key-cache setting is inert
    assert set(inert_knobs({"key_cache_segments": "8"}, {"key_cache_segments": "0"},
                           {"key_buffer_size": "0"})) == {"key_cache_segments"}


@given(st.dictionaries(st.sampled_from(sorted(DEFAULTS)),
                       st.sampled_from(["0", "1", "17", "566", "64M", "OFF", "ON",
                                        "pool-of-threads", "one-thread-per-connection"]),
                       min_size=1))
def test_only_moved_knobs_are_inert_and_a_switch_never_is(winner):
    """Whatever the winner moves: only its own knobs can be named, never a knob with no
    component (table_open_cache), and a knob is inert only if its component stays off with
    it at its default, so the knob that switched the component off is kept."""
    inert = inert_knobs(winner, DEFAULTS)
    assert set(inert) <= set(winner) - {"table_open_cache"}
    if winner.get("key_buffer_size") == "0":
        assert "key_buffer_size" not in inert


def verdict(said: str, change: float, low: float, high: float) -> Verdict:
    return Verdict(said, 6, change, low, high, 0.05)


def test_a_knob_that_alone_carries_the_gain_is_the_whole_my_cnf():
    """Issue 44's my.cnf: key_buffer_size = 0 and key_cache_segments = 59 stand in for each
    other (the winner without either costs nothing). Measured alone against the winner, the
    one shown no slower is kept; one only inconclusive, or slower beyond the margin, is not:
    inconclusive, it may still lose a real part of the gain."""
    alone = {"key_buffer_size": verdict(EQUIVALENT, -0.01, -0.04, 0.02),
             "key_cache_segments": verdict(SLOWER, -0.08, -0.12, -0.04),
             "key_cache_division_limit": verdict(INCONCLUSIVE, 0.01, -0.2, 0.25)}
    assert sufficient(alone, 0.05, 0.5) == "key_buffer_size"
    del alone["key_buffer_size"]
    assert sufficient(alone, 0.05, 0.5) is None
    # the question is one-sided: an interval that rules out losing 5% carries the gain,
    # whether or not it rules out gaining more than 5% (pool seed 3, 2026-11-27)
    alone["key_cache_division_limit"] = verdict(INCONCLUSIVE, 0.013, -0.041, 0.071)
    assert sufficient(alone, 0.05, 0.5) == "key_cache_division_limit"
    alone["key_cache_division_limit"] = verdict(INCONCLUSIVE, -0.013, -0.059, 0.036)
    assert sufficient(alone, 0.05, 0.5) is None
    # a real loss smaller than the margin still carries the gain, as does a faster one: the best
    alone["key_cache_segments"] = verdict(SLOWER, -0.02, -0.04, -0.005)
    alone["key_buffer_size"] = verdict(FASTER, 0.03, 0.01, 0.05)
    assert sufficient(alone, 0.05, 0.5) == "key_buffer_size"
    del alone["key_buffer_size"]
    assert sufficient(alone, 0.05, 0.5) == "key_cache_segments"
    # a winner that barely gained: a knob alone no slower than it may carry nothing
    assert sufficient({"key_buffer_size": verdict(EQUIVALENT, -0.01, -0.04, 0.02)}, 0.05,
                      0.02) is None


WINNER = {"tmp_table_size": "67108864", "max_heap_table_size": "67108864",
          "sort_buffer_size": "8388608"}
SAYS = {"put-back": "putting back", "alone": "alone, side by side", "together": "kept",
        "together-alone": "kept", "plus-one": "others added to them"}


def choose(verdicts: dict[str, dict[str, Verdict]]) -> tuple[TuneResult, list[str], list[str]]:
    """choose_kept over the winner's three knobs, each study's verdicts given by kind: the
    result, the kinds of the studies measured, and what was said."""
    result = TuneResult("s", "bayes", [], [], None,
                        gain_vs_default=verdict(FASTER, 2.0, 1.2, 3.0))
    studies, said = [], []

    def measure(kind: str, others: dict[str, dict], saying: str):
        assert SAYS[kind] in saying
        studies.append(kind)
        if kind.startswith("together"):
            assert others == {"kept": {k: WINNER[k] for k in result.kept or ()}}
        elif kind == "plus-one":
            assert others == {name: {k: WINNER[k] for k in (*(result.kept or ()), name)}
                              for name in WINNER if name not in (result.kept or ())}
        else:
            assert set(others) == set(WINNER)
        return {name: verdicts[kind][name] for name in others}, 0.05

    choose_kept(result, WINNER, sorted(WINNER), measure, said.append)
    return result, studies, said


COSTS = verdict(SLOWER, -0.6, -0.7, -0.5)
NOTHING = verdict(EQUIVALENT, 0.0, -0.02, 0.02)


def test_the_knobs_whose_absence_costs_are_checked_together_without_the_others():
    """Two limits that act only together each cost the gain when put back; the third costs
    nothing. The two together, without it, are measured against the winner: no slower, they
    are the my.cnf; slower beyond the margin, every knob stays and the report says so."""
    put_back = {"tmp_table_size": COSTS, "max_heap_table_size": COSTS,
                "sort_buffer_size": NOTHING}
    result, studies, said = choose({"put-back": put_back, "together": {"kept": NOTHING}})
    assert studies == ["put-back", "together"]
    assert result.kept_checks == [KeptCheck("together", ("max_heap_table_size",
                                                          "tmp_table_size"), NOTHING)]
    assert result.kept == ["max_heap_table_size", "tmp_table_size"]
    assert "carry the winner's gain without the others (equivalent" in said[-1]
    close = verdict(SLOWER, -0.02, -0.04, -0.01)  # slower, by less than the margin
    result, _, said = choose({"put-back": put_back, "together": {"kept": close}})
    assert result.kept == ["max_heap_table_size", "tmp_table_size"]
    assert said[-1].endswith("against the winner: within the ±5% margin)")
    result, _, said = choose({"put-back": put_back, "together": {"kept": COSTS}})
    assert result.kept == sorted(WINNER)
    assert [c.knobs for c in result.kept_checks] == [("max_heap_table_size", "tmp_table_size")]
    assert "keeps all 3" in said[-1]
    assert not result.unproven and "shown slower than the winner" in said[-2]
    # never measured (its points failed): every knob stays
    failed = verdict(TOO_FEW, math.nan, math.nan, math.nan)
    result, _, said = choose({"put-back": put_back, "together": {"kept": failed}})
    assert result.kept == sorted(WINNER) and not result.unproven
    assert "could not be measured" in said[-2] and "keeps all 3" in said[-1]
    # still open when the rounds end: the knobs with a shown effect are the my.cnf, the other
    # as a comment with the figure, and the run says more rounds may decide it
    unsure = verdict(INCONCLUSIVE, -0.03, -0.14, 0.09)
    result, _, said = choose({"put-back": put_back, "together": {"kept": unsure}})
    assert result.kept == ["max_heap_table_size", "tmp_table_size"]
    assert result.unproven == ["sort_buffer_size"]
    assert "-3.0% [-14.0%, +9.0%]" in said[-1] and "more rounds may decide it" in said[-1]
    assert "more rounds may decide" not in choose({"put-back": put_back,
                                                   "together": {"kept": COSTS}})[2][-1]
    no_loss = verdict(INCONCLUSIVE, 0.013, -0.041, 0.071)
    result, _, said = choose({"put-back": put_back, "together": {"kept": no_loss}})
    assert result.kept == ["max_heap_table_size", "tmp_table_size"]
    assert said[-1].endswith("[-4.1%, +7.1%] against the winner: it rules out losing more "
                             "than 5%)")


def test_when_no_absence_costs_one_knob_alone_or_every_knob_is_the_my_cnf():
    """Knobs that stand in for each other: none costs anything put back. Each alone against
    the winner: the one that carries the gain is the my.cnf; when none does, all three stay,
    and the report says why instead of listing three knobs without a word."""
    put_back = dict.fromkeys(WINNER, NOTHING)
    alone = dict.fromkeys(WINNER, COSTS) | {"sort_buffer_size": NOTHING}
    result, studies, said = choose({"put-back": put_back, "alone": alone})
    assert studies == ["put-back", "alone"]
    assert result.kept == ["sort_buffer_size"]
    assert said[-1].startswith("sort_buffer_size alone carries the winner's gain")
    result, _, said = choose({"put-back": put_back, "alone": dict.fromkeys(WINNER, COSTS)})
    assert result.kept == sorted(WINNER) and not result.kept_checks
    assert "keeps all 3" in said[-1] and "no knob alone" in said[-1]


def test_stand_ins_that_each_fall_short_alone_are_the_my_cnf_when_together_they_carry_it():
    """The query cache's size and type (bench/tune query-cache, seed 4): neither costs the
    winner anything put back, each alone keeps most of the winner's gain but is shown a few per
    cent slower, and the winner's other knob alone keeps none of it. The two shown to gain
    alone are measured together against the winner, and are the my.cnf when they carry its
    gain; shown slower together, each other knob is added to them next (none carries it
    here: every knob stays). One knob shown to gain alone is judged by its figure alone, with
    no study of it more."""
    put_back = dict.fromkeys(WINNER, NOTHING)
    short = verdict(SLOWER, -0.06, -0.09, -0.03)  # beyond the margin, yet most of a x3 gain
    none_kept = verdict(SLOWER, -0.67, -0.70, -0.64)  # the defaults' figure: no gain alone
    alone = {"max_heap_table_size": short, "tmp_table_size": short,
             "sort_buffer_size": none_kept}
    result, studies, said = choose({"put-back": put_back, "alone": alone,
                                    "together-alone": {"kept": NOTHING}})
    assert studies == ["put-back", "alone", "together-alone"]
    assert result.kept == ["max_heap_table_size", "tmp_table_size"] and not result.unproven
    assert "shown to gain alone over the defaults, max_heap_table_size, tmp_table_size, " \
        "together" in said[-2]
    assert result.kept_checks == [KeptCheck("together-alone", ("max_heap_table_size",
                                                               "tmp_table_size"), NOTHING)]
    result, _, said = choose({"put-back": put_back, "alone": alone,
                              "together-alone": {"kept": COSTS}})
    assert result.kept == sorted(WINNER)
    assert "nor do the knobs shown to gain alone: the my.cnf keeps all 3" in said[-1]
    unsure = verdict(INCONCLUSIVE, -0.03, -0.14, 0.09)
    result, studies, said = choose({"put-back": put_back, "alone": alone | {
        "max_heap_table_size": none_kept, "tmp_table_size": unsure}})
    assert studies == ["put-back", "alone"]
    assert result.kept == ["tmp_table_size"]
    assert result.unproven == ["max_heap_table_size", "sort_buffer_size"]
    assert result.kept_checks == [KeptCheck("alone", ("tmp_table_size",), unsure)]
    result, studies, _ = choose({"put-back": put_back, "alone": alone | {
        "max_heap_table_size": none_kept}, "plus-one": dict.fromkeys(WINNER, COSTS)})
    assert studies == ["put-back", "alone", "plus-one"] and result.kept == sorted(WINNER)


def test_a_kept_set_shown_slower_is_given_the_one_other_knob_that_carries_the_gain():
    """The query cache's size alone keeps most of a x200 gain but is shown a few per cent
    slower than the winner, whose pool of threads pays only beside the cache (bench/tune
    query-cache, seed 4): each other knob added to the kept one, side by side with the
    winner; the best that carries the gain joins it in the my.cnf, and the table shows both
    checks. None carries it: every knob stays, as before."""
    put_back = {"tmp_table_size": COSTS, "max_heap_table_size": NOTHING,
                "sort_buffer_size": NOTHING}
    short = verdict(SLOWER, -0.06, -0.09, -0.03)
    result, studies, said = choose({"put-back": put_back, "together": {"kept": short},
                                    "plus-one": {"max_heap_table_size": short,
                                                 "sort_buffer_size": NOTHING}})
    assert studies == ["put-back", "together", "plus-one"]
    assert result.kept == ["sort_buffer_size", "tmp_table_size"] and not result.unproven
    assert said[-1].startswith("the kept knob(s) with sort_buffer_size carry the winner's gain")
    assert [(c.kind, c.knobs) for c in result.kept_checks] == [
        ("together", ("tmp_table_size",)), ("plus-one", ("sort_buffer_size", "tmp_table_size"))]
    checks = {t.title.split(" (")[0]: t for t in tables(result)}[
        "The kept knobs together, without those left out, against the winner"]
    assert [row[-1] for row in checks.rows] == ["not these: the next row", "these"]
    result, _, said = choose({"put-back": put_back, "together": {"kept": short},
                              "plus-one": dict.fromkeys(WINNER, short)})
    assert result.kept == sorted(WINNER) and "keeps all 3" in said[-1]
    assert "no one knob added" in said[-2]
    added = {t.title.split(" (")[0]: t for t in tables(result)}[
        "Each other knob added to a kept set shown slower than the winner"]
    assert [row[0] for row in added.rows] == ["max_heap_table_size", "sort_buffer_size"]


WIDE = {"query_cache_size": "16777216", "query_cache_type": "ON",
        **{f"knob_{i}": str(i) for i in range(8)}}  # ten moved knobs: 8 groups of 1 or 2


def test_more_knobs_than_servers_are_put_back_in_groups_then_one_at_a_time():
    """Ten moved knobs, more than the eight put back a server each: first eight groups of one
    or two neighbours in name order, each group's absence against the winner; only the knobs of the
    group that costs (the query cache's two, which stand in for each other) are then put back
    one at a time, and, neither costing alone, measured alone: one carries the gain and is the
    my.cnf. When no group costs, every knob stays and the run says why. When one knob alone
    costs but is shown slower than the winner without the others, the knobs of the group that
    cost are checked together next, and are the my.cnf when they carry the gain."""
    def put_back(group_costs: bool, put_back_one: Verdict = NOTHING,
                 together: Verdict = NOTHING) -> tuple[TuneResult, list, list[str]]:
        result = TuneResult("s", "bayes", [], [], None,
                            gain_vs_default=verdict(FASTER, 150.0, 140.0, 160.0))
        studies, said = [], []

        def measure(kind: str, others: dict[str, dict], saying: str):
            studies.append((kind, sorted(others)))
            if kind == "groups":
                assert "more than the 8" in saying
                assert len(others) == 8 and sorted(len(WIDE) - len(s) for s in others.values()) \
                    == [1] * 6 + [2] * 2
                return {name: COSTS if group_costs and "query_cache_type" not in setting
                        else NOTHING for name, setting in others.items()}, 0.05
            if kind == "alone":
                return {name: NOTHING if name == "query_cache_type" else COSTS
                        for name in others}, 0.05
            if kind == "put-back":
                return {name: put_back_one if name == "query_cache_type" else NOTHING
                        for name in others}, 0.05
            return {"kept": together if kind == "together" else NOTHING}, 0.05

        choose_kept(result, WIDE, sorted(WIDE), measure, said.append)
        return result, studies, said

    result, studies, said = put_back(group_costs=True)
    assert [kind for kind, _ in studies] == ["groups", "put-back", "alone"]
    assert studies[1][1] == studies[2][1] == ["query_cache_size", "query_cache_type"]
    assert result.group_effects["query_cache_size", "query_cache_type"] is COSTS
    assert result.kept == ["query_cache_type"]
    assert said[-1].startswith("query_cache_type alone carries the winner's gain")
    result, studies, said = put_back(group_costs=False)
    assert [kind for kind, _ in studies] == ["groups"]
    assert result.kept == sorted(WIDE) and "keeps all 10" in said[-1]
    result, studies, said = put_back(group_costs=True, put_back_one=COSTS, together=COSTS)
    assert [kind for kind, _ in studies] == ["groups", "put-back", "together",
                                             "together-groups"]
    assert result.kept == ["query_cache_size", "query_cache_type"]
    assert [(c.kind, list(c.knobs), c.effect) for c in result.kept_checks] == [
        ("together", ["query_cache_type"], COSTS),
        ("together-groups", result.kept, NOTHING)]
    assert not result.unproven
    assert "the 2 knob(s) of the groups that cost, together" in said[-2]
    shown = {table.title.split(" (")[0]: table for table in tables(result)}
    checks = shown["The kept knobs together, without those left out, against the winner"]
    assert [(row[0], row[-1]) for row in checks.rows] == [  # both checks, the last decides
        ("query_cache_type", "not these: the next row"),
        ("query_cache_size, query_cache_type", "these")]
    groups = shown["The moved knobs put back in groups first"]
    assert [row[-1] for row in groups.rows] == ["left out"] * 7 + ["kept"]
    assert shown["Each moved knob put back alone"].note  # the my.cnf leaves knobs out


DECISIONS = st.sampled_from([COSTS, NOTHING, verdict(SLOWER, -0.02, -0.04, -0.01),
                             verdict(INCONCLUSIVE, -0.1, -0.5, 0.3),
                             verdict(TOO_FEW, math.nan, math.nan, math.nan)])


@given(st.fixed_dictionaries({kind: st.fixed_dictionaries(dict.fromkeys(WINNER, DECISIONS))
                              for kind in ("put-back", "alone", "plus-one")}),
       DECISIONS)
def test_the_my_cnf_is_never_empty_and_smaller_only_when_measured_to_carry_the_gain(
        verdicts, together):
    """Whatever the verdicts: the my.cnf keeps one knob or more of the winner's; a set smaller
    than the winner is given only after that very set was measured (alone, or together) to
    carry the gain, or, with the others as comments, when its measure was left undecided
    against the winner; the knobs given are each the winner's once, in force or as a comment;
    the kept set is checked together only when put-back kept some but not all, and those
    shown to gain alone only when put-back kept none."""
    result, studies, _ = choose(verdicts | {"together": {"kept": together},
                                            "together-alone": {"kept": together}})
    assert result.kept and set(result.kept) <= set(WINNER)
    assert not set(result.kept) & set(result.unproven)
    costly = [k for k, v in verdicts["put-back"].items() if v is COSTS]
    assert ("together" in studies) == (0 < len(costly) < len(WINNER))
    assert ("alone" in studies) == (not costly)
    assert ("together-alone" in studies) <= (not costly)
    if len(result.kept) < len(WINNER):  # the last check of a smaller set decides, else alone
        if result.kept_checks:
            assert list(result.kept_checks[-1].knobs) == result.kept
        shown = result.kept_checks[-1].effect if result.kept_checks else \
            result.alone_effects[result.kept[0]]
        carries = sufficient({"x": shown}, 0.05, 1.2) == "x"
        neither = bool(result.kept_checks) and shown.verdict != SLOWER and \
            math.isfinite(shown.low)
        assert carries or neither
        assert set(result.kept) | set(result.unproven) == (
            set(WINNER) if neither and not carries else set(result.kept))
    else:
        assert not result.unproven


def test_a_my_cnf_gives_knobs_left_undecided_as_comments_with_the_figure():
    """The lines in force are the knobs with a shown effect; the winner's other knobs, whose
    share was left undecided, follow as comments after the figure that left them so."""
    best = SimpleNamespace(number=7, params={**WINNER, "table_open_cache": "2000"})
    result = TuneResult("s", "bayes", [], [], best, defaults={
        "tmp_table_size": "16777216", "max_heap_table_size": "16777216",
        "sort_buffer_size": "2097152", "table_open_cache": "2000"},
        kept=["max_heap_table_size", "tmp_table_size"], unproven=["sort_buffer_size"],
        kept_checks=[KeptCheck("together", ("max_heap_table_size", "tmp_table_size"),
                               verdict(INCONCLUSIVE, -0.013, -0.059, 0.036))])
    lines = result.mycnf().splitlines()
    assert lines[:3] == ["[mariadbd]", "max_heap_table_size = 67108864",
                         "tmp_table_size = 67108864"]
    assert "-1.3% [-5.9%, +3.6%]" in lines[3] and lines[3].startswith("# ")
    assert lines[4:] == ["# sort_buffer_size = 8388608"]
    settled = TuneResult("s", "bayes", [], [], best, defaults=result.defaults,
                         kept=result.kept)
    assert settled.mycnf().splitlines()[1:] == lines[1:3]


def test_a_re_measured_config_with_no_complete_round_is_shown_with_none():
    """A candidate that failed at some thread count in every re-measured round has no score:
    the report shows it with 0 rounds instead of failing to summarize nothing."""
    best = SimpleNamespace(number=3, params=dict(WINNER))
    result = TuneResult("s", "bayes", [], [], best, final={"default": {1: 100.0, 2: 104.0},
                                                          "trial-3": {}})
    (remeasured, *_) = [t for t in tables(result) if t.title.startswith("Re-measured")]
    assert remeasured.rows == [["default", "2", "102.0", remeasured.rows[0][3]],
                               ["trial-3", "0", "-", "-"]]


STARTUP = {"table_open_cache": "2000", "thread_cache_size": "151", "sort_buffer_size": "2097152"}


@given(st.dictionaries(st.sampled_from(sorted(STARTUP)), st.sampled_from(["0", "2000", "4000"])),
       st.dictionaries(st.sampled_from(sorted(STARTUP)), st.sampled_from(["0", "2000", "4000"])),
       st.sets(st.sampled_from(sorted(STARTUP))))
def test_a_my_cnf_that_gives_nothing_names_what_the_baseline_sets(baseline, winner, kept):
    """The defaults a tune compares with are the server's: when the my.cnf gives nothing and
    the plan's baseline sets searched knobs, its note names the baseline's values (which
    "nothing to change" keeps); the lines in force are the kept knobs the winner moved, then
    a note naming the baseline's other searched knobs, which every setting the tune measured
    left unset: to be removed, not given at the server's values."""
    params = {**STARTUP, **winner}
    best = SimpleNamespace(number=3, params=params)
    result = TuneResult("s", "bayes", [], [], best, defaults=dict(STARTUP),
                        baseline=baseline, kept=sorted(kept))
    lines = result.mycnf().splitlines()
    given = {line.split(" = ")[0]: line.split(" = ")[1] for line in lines[1:]
             if not line.startswith("#")}
    shown = {k: params[k] for k in kept if params[k] != STARTUP[k]}
    assert given == shown
    dropped = {k: value for k, value in baseline.items() if k not in shown}
    if shown and dropped:
        assert lines[-1].startswith("# measured without these settings of the plan's baseline")
        assert all(f"{name} = {value}" in lines[-1] for name, value in dropped.items())
    if shown:
        assert len(lines) == 1 + len(shown) + bool(dropped)
    if not given:
        assert "nothing to change" in lines[1]
        assert all(f"{name} = {value}" in lines[2] for name, value in baseline.items())
        assert len(lines) == (3 if baseline else 2)


@given(st.lists(st.lists(st.one_of(st.none(), st.floats(1, 2e5)), min_size=3, max_size=3),
                min_size=1, max_size=6), st.floats(1, 1e5))
def test_a_candidate_is_held_to_the_throughput_floor_on_its_re_measured_rounds(rounds, floor):
    """tune.min_qps fails a trial on its one reading; the re-measure holds a candidate to it on
    its rounds (each round's lowest thread count, the median over rounds), so that a latency
    won by serving less is not given; a thread count that failed or stalled in a round (None:
    no point stored) serves nothing there."""
    import dataclasses
    import statistics

    from perflab.store.records import Metrics, StoredPoint
    from perflab.tune.final import _under_floor

    metrics = Metrics(**dict.fromkeys(Metrics.names(), 0))
    def points(config, figures, r):
        return [StoredPoint(0, "s", "d", config, "w", t, r, "ok", 1, None, 0.0, 0.0,
                            dataclasses.replace(metrics, qps=qps))
                for t, qps in enumerate(figures, 1) if qps is not None]

    trial = {r: found for r, figures in enumerate(rounds, 1)
             if (found := points("trial-4", figures, r))}
    by_round = {"trial-4": trial,
                "default": {r: points("default", [1.0] * 3, r) for r in range(1, len(rounds) + 1)}}
    candidates = [SimpleNamespace(number=4), SimpleNamespace(number=5)]  # 5: not measured
    under = _under_floor(by_round, candidates, floor, 3, len(rounds))
    lowest = statistics.median(0.0 if None in figures else min(figures) for figures in rounds)
    assert under.get(4) == (lowest if lowest < floor else None)
    assert under[5] == 0.0  # measured in no round: it served nothing
    assert _under_floor(by_round, candidates, 0.0, 3, len(rounds)) == {}
    # past the planned rounds, the rounds measure only the comparisons still open: a candidate
    # decided by then is held to the rounds it was measured in, not to 0 in the others
    later = {r: points("default", [1.0] * 3, r) for r in range(len(rounds) + 1, 13)}
    by_round["default"].update(later)
    assert _under_floor(by_round, candidates, floor, 3, len(rounds)).get(4) == under.get(4)
    asked = statistics.median([0.0 if None in figures else min(figures) for figures in rounds]
                              + [0.0] * (12 - len(rounds)))  # asked for, and not there: 0
    assert _under_floor(by_round, candidates, floor, 3, 12).get(4) == (
        asked if asked < floor else None)


RE_MEASURED = st.one_of(st.none(), st.builds(
    verdict, st.sampled_from([FASTER, SLOWER, EQUIVALENT, INCONCLUSIVE, TOO_FEW]),
    st.one_of(st.floats(-0.9, 20), st.just(math.nan)), st.just(math.nan), st.just(math.nan)))


@given(st.dictionaries(st.integers(0, 30), RE_MEASURED, max_size=6),
       st.sets(st.integers(0, 30), max_size=3))
def test_the_re_measure_gives_a_candidate_shown_faster_over_a_larger_undecided_one(
        verdicts, under_floor):
    """The winner is the largest gain among the candidates shown faster than the defaults; only
    when none is, the largest gain (its verdict then gives nothing). A candidate at +12%
    left inconclusive beside one shown +9% faster gave an empty my.cnf before."""
    from perflab.tune.final import re_measured_winner

    floor = dict.fromkeys(under_floor, 0.0)
    winner = re_measured_winner(verdicts, floor)
    figures = {n: v for n, v in verdicts.items()
               if v is not None and math.isfinite(v.change) and n not in floor}
    assert (winner is None) == (not figures)
    if winner is not None:
        given = figures[winner]
        any_faster = any(v.verdict == FASTER for v in figures.values())
        assert (given.verdict == FASTER) == any_faster
        assert all(given.change >= v.change for v in figures.values()
                   if v.verdict == FASTER or not any_faster)
    undecided, shown = verdict(INCONCLUSIVE, 0.12, -0.02, 0.28), verdict(FASTER, 0.09, 0.05, 0.13)
    assert re_measured_winner({1: undecided, 2: shown}, {}) == 2
    assert re_measured_winner({1: undecided, 2: shown}, {2: 10.0}) == 1


@given(st.sampled_from(["throughput", "p95", "p99"]), st.lists(st.integers(1, 64), min_size=1,
                                                               max_size=4, unique=True),
       st.sampled_from([0.0, 30.0, 600.0]))
def test_the_put_back_measures_on_only_where_the_rounds_judge_what_it_judges(
        objective, threads, seconds):
    """Rounds added within the budget decide each thread count's throughput on its own: the
    put-back gets them only for the throughput objective at one thread count, where that is
    its own comparison; otherwise its planned rounds, and the run says why."""
    plan = SimpleNamespace(run=SimpleNamespace(threads=tuple(threads)))
    settings = TuneSettings(objective=objective, put_back_time=seconds)
    budget = put_back_budget(plan, settings)
    assert budget == (seconds if objective == "throughput" and len(threads) == 1 else 0.0)


def test_the_defaults_keep_the_plans_other_server_variables():
    """The re-measure's "defaults" are the searched knobs (and their followers) at the server's
    defaults, with every other variable the plan sets for its workload kept, as every trial
    ran with it: a max_connections its thread counts need is not dropped."""
    from perflab.domain import ServerConfig
    from perflab.tune.final import unsearched

    baseline = ServerConfig("base", variables=(("max_connections", 300),
                                               ("sort_buffer_size", "8M"),
                                               ("tmp_table_size", "64M"),
                                               ("max_heap_table_size", "64M")))
    result = TuneResult("s", "bayes", [], [], None, defaults={
        "sort_buffer_size": "2097152", "tmp_table_size": "16777216",
        "max_heap_table_size": "16777216"})  # tmp_table_size's follower among them
    assert unsearched(baseline, result) == (("max_connections", 300),)
    assert unsearched(ServerConfig("base"), result) == ()


def test_a_winner_under_the_floor_in_the_re_measure_is_said_not_given():
    """Every candidate under tune.min_qps in the re-measure: nothing is given, and the report
    says why instead of calling the search's best "not re-measured"."""
    from perflab.tune.render import render_text

    best = SimpleNamespace(number=4, params={"table_open_cache": "4000"})
    result = TuneResult("s", "bayes", [], [], best, defaults={"table_open_cache": "2000"},
                        under_floor={4: 120.0}, kept=[])
    text = render_text(result)
    assert "under the throughput floor when re-measured: not given" in text
    assert "trial 4 (120 qps)" in text and "nothing to change" in text


@given(st.dictionaries(st.sampled_from(sorted(STARTUP)), st.sampled_from(["0", "2000", "4000"])),
       st.dictionaries(st.sampled_from(sorted(STARTUP)), st.sampled_from(["0", "2000", "4000"])),
       st.dictionaries(st.sampled_from(["max_connections", "sql_mode"]), st.just("x")))
def test_a_put_back_setting_runs_the_knobs_it_leaves_out_at_the_server_s_values(
        setting, baseline, unsearched):
    """A put-back's setting (the winner without a knob, a knob alone, the kept set) runs every
    searched knob it leaves out as the trials and the re-measure's defaults ran it: unset, at
    the server's startup value, even where the plan's baseline sets it (some variables change
    the server by being set at all); a knob it moves is set, a knob at its startup value
    unset; the baseline's unsearched variables stay."""
    base = {**baseline, **unsearched}
    ran = dict(server_variables(base, whole(STARTUP, setting), STARTUP))
    for name, default in STARTUP.items():
        if name in setting and setting[name] != default:
            assert ran[name] == setting[name]
        else:
            assert name not in ran
    assert all(ran[name] == value for name, value in unsearched.items())


LINKED_STARTUP = {"tmp_table_size": "16777216", "max_heap_table_size": "16777216",
                  "sort_buffer_size": "2097152"}


@given(st.dictionaries(st.sampled_from(["tmp_table_size", "max_heap_table_size",
                                        "sort_buffer_size"]),
                       st.sampled_from(["1048576", "16777216", "67108864"])))
def test_a_put_back_moves_a_knob_with_its_followers(setting):
    """tmp_table_size and max_heap_table_size are searched as one knob: every put-back setting
    runs the follower at its leader's value, as the trials did (with max_heap_table_size put
    back alone, a kept tmp_table_size of 48 MB ran under a 16 MiB limit and lost the whole
    gain); the my.cnf's lines for a kept knob hold its moved followers."""
    ran = whole(LINKED_STARTUP, setting)
    assert ran["max_heap_table_size"] == ran["tmp_table_size"] == \
        setting.get("tmp_table_size", "16777216")
    assert folded(LINKED_STARTUP) == {"max_heap_table_size": "tmp_table_size"}
    assert folded({"max_heap_table_size": "16777216"}) == {}  # named alone: a knob of its own
    alone = whole({"max_heap_table_size": "16777216"}, {"max_heap_table_size": "1048576"})
    assert alone == {"max_heap_table_size": "1048576"}
    changed = {"tmp_table_size": "67108864", "max_heap_table_size": "67108864",
               "sort_buffer_size": "8388608"}
    followers = folded(LINKED_STARTUP)
    assert with_followers(["tmp_table_size"], changed, followers) == \
        ["max_heap_table_size", "tmp_table_size"]
    assert with_followers(["sort_buffer_size"], changed, followers) == ["sort_buffer_size"]
    assert with_followers(["tmp_table_size"], {"tmp_table_size": "16777216"}, followers) == \
        ["tmp_table_size"]  # a follower that did not move is no line of the my.cnf


def test_the_report_says_where_the_runs_time_went_and_the_end_phases_are_timed():
    from perflab.tune.final import timed
    from perflab.tune.render import time_line

    result = TuneResult("s", "bayes", [], [], None, seconds=600.0)

    @timed("put-back")
    def phase(store, result):
        raise RuntimeError("a failed phase is timed too")

    with pytest.raises(RuntimeError):
        phase(None, result)
    assert 0 <= result.phases["put-back"] < 1
    result.phases = {"re-measure": 300.0, "put-back": 150.0}
    assert time_line(result) == ["Time: trials 2m30s; re-measure 5m00s; put-back 2m30s "
                                 "(checking the answer: 3.0 times the trials' time)"]
    assert time_line(TuneResult("s", "bayes", [], [], None)) == []  # not run here


def test_the_html_report_says_what_the_text_says_beside_the_tables():
    """The page a user shares carries the text report's notes, the my.cnf and the time line:
    the margin a smaller my.cnf kept and where the time went were in the text alone."""
    from perflab.tune.render import render_html, render_text

    best = SimpleNamespace(number=3, params={"query_cache_type": "ON"})
    result = TuneResult("s", "bayes", [], [], best, defaults={"query_cache_type": "OFF"},
                        kept=["query_cache_type"], seconds=600.0, keep_margin=0.248,
                        gain_vs_default=SimpleNamespace(verdict=FASTER, low=150.0),
                        phases={"re-measure": 200.0, "put-back": 100.0})
    text, page = render_text(result), render_html(result)
    for said in ("no slower than the winner by more than 24.8%", "query_cache_type = ON",
                 "Time: trials 5m00s; re-measure 3m20s; put-back 1m40s"):
        assert said in text
        assert html.escape(said) in page
