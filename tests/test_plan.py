import json
import math
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perflab.domain import Plan
from perflab.errors import PerflabError
from perflab.plan import parse_plan, with_overrides
from perflab.stats.design import MARGIN
from perflab.studies import STUDIES_DIR, builtin_names, resolve_plan

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

PLAN = """
[study]
name = "demo"
baseline = "a"
[dataset]
engine = "myisam"
rows = 1000
[workload]
name = "select_random_points"
options = { random_points = 10 }
[run]
threads = [1, 4]
rounds = 3
[server]
key_buffer_size = "64M"
[configs.a]
key_cache_segments = 0
[configs.b]
key_cache_segments = 8
[configs.c]
key_cache_segments = 16
key_buffer_size = "128M"
"""


def test_plan_parses_configs_with_shared_variables():
    plan = parse_plan(PLAN)
    assert plan.dataset.engine == "MyISAM"
    assert [c.name for c in plan.configs] == ["a", "b", "c"]
    assert plan.config("b").as_dict() == {"key_buffer_size": "64M", "key_cache_segments": 8}
    assert plan.config("c").as_dict()["key_buffer_size"] == "128M"
    assert plan.workload.label == "select_random_points(random_points=10)"


def test_definition_ignores_rounds_and_threads_but_not_durations():
    plan = parse_plan(PLAN)
    more = with_overrides(plan, rounds=5, threads=(1, 2, 4))
    longer = with_overrides(plan, run_seconds=99)
    config = plan.config("a")
    assert plan.config_hash(config) == more.config_hash(config)
    assert plan.config_hash(config) != longer.config_hash(config)
    assert plan.config_hash(config) != plan.config_hash(plan.config("b"))


def test_a_workload_file_is_part_of_the_definition_by_its_content(tmp_path):
    """Points measured on another file's data or statements are never mixed: a file edited in
    place changes the definition, a file moved with the same content keeps it."""
    first, moved = tmp_path / "w.toml", tmp_path / "elsewhere.toml"
    first.write_text("[[statements]]\nsql = \"SELECT 1\"\n")
    moved.write_text(first.read_text())

    def definition(path: Path) -> str:
        plan = parse_plan(PLAN.replace('name = "select_random_points"\noptions = '
                                       '{ random_points = 10 }',
                                       f'name = "sql"\noptions = {{ file = "{path}" }}'))
        return plan.config_hash(plan.config("a"))

    before = definition(first)
    assert definition(moved) == before
    plan = parse_plan(PLAN.replace('name = "select_random_points"\noptions = '
                                   '{ random_points = 10 }',
                                   f'name = "sql"\noptions = {{ file = "{first}" }}'))
    first.write_text("[[statements]]\nsql = \"SELECT 2\"\n")
    assert definition(first) != before
    # a plan read before the edit keeps the file as it read it, stored and read back too
    assert plan.config_hash(plan.config("a")) == before
    again = Plan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again.config_hash(again.config("a")) == before


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("[run]", "[run]\nthread = 3"), "unknown key run.thread"),
        (("[study]", "[study]\ncolour = 1"), "unknown key study.colour"),
        (("threads = [1, 4]", "threads = []"), "run.threads must be a non-empty list"),
        (("threads = [1, 4]", "threads = [1, 0]"), "0 is not a thread count"),
        (("rounds = 3", "rounds = 0"), "run.rounds must be at least 1"),
        (("rounds = 3", 'rounds = "3"'), "run.rounds must be an integer"),
        (('baseline = "a"', 'baseline = "z"'), "study.baseline = 'z' names no configuration"),
        (('engine = "myisam"', 'engine = "falcon"'), "dataset.engine = 'falcon' is not supported"),
        (("rows = 1000", "rows = -1"), "dataset.rows must be at least 1"),
        (("[configs.a]", "[configs.a.nested]"), "is a table"),
    ],
)
def test_bad_plans_fail_with_one_line_naming_the_key(edit, message):
    with pytest.raises(PerflabError) as err:
        parse_plan(PLAN.replace(*edit, 1), origin="p.toml")
    assert message in err.value.message
    assert "\n" not in err.value.message


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(PerflabError) as err:
        parse_plan(PLAN.replace("rounds = 3", "round = 3"))
    assert err.value.hint == "did you mean run.rounds?"
    with pytest.raises(PerflabError) as err:  # a plan of an earlier version: told the new name
        parse_plan(PLAN.replace("rounds = 3", "repeats = 3"))
    assert err.value.hint == "run.repeats is called run.rounds now"


def test_invalid_toml_is_a_user_error():
    with pytest.raises(PerflabError, match="not valid TOML"):
        parse_plan("[study\nname=")


def test_overrides_are_checked():
    plan = parse_plan(PLAN)
    assert with_overrides(plan, scale=2.5).dataset.rows == 2500
    with pytest.raises(PerflabError, match="scale must be positive"):
        with_overrides(plan, scale=0)
    with pytest.raises(PerflabError, match="run.threads: 0 is not a thread count") as err:
        with_overrides(plan, threads=(0,))
    assert err.value.option == "threads"


def test_builtin_key_cache_study_matches_the_key_cache_page():
    assert "key-cache-segments" in builtin_names()
    plan = resolve_plan("key-cache-segments")
    assert plan.baseline == "off"
    assert [c.name for c in plan.configs] == ["off", "32", "64"]
    assert [c.as_dict()["key_cache_segments"] for c in plan.configs] == [0, 32, 64]
    assert plan.run.threads == (1, 4, 8, 16, 32, 64, 128)  # the page's NUM_THREADS
    assert plan.dataset.engine == "MyISAM"
    assert plan.workload.label == "select_random_points(random_points=10)"
    assert with_overrides(plan, scale=20).dataset.rows == 20_000_000


def test_unknown_study_name_is_a_user_error(tmp_path: Path):
    with pytest.raises(PerflabError, match="neither a plan file nor a built-in study"):
        resolve_plan("no-such-study")
    with pytest.raises(PerflabError, match="does not exist"):
        resolve_plan(str(tmp_path / "missing.toml"))


def test_builtin_studies_parse_and_each_decides_within_a_budget():
    assert {"myisam-scalability", "runtime-environment", "ladder-innodb"} <= set(builtin_names())
    scalability = resolve_plan("myisam-scalability")
    assert [(c.name, c.engine) for c in scalability.configs] == [
        ("MyISAM", "MyISAM"), ("MyISAM key_buffer_size=0", "MyISAM"), ("InnoDB", "InnoDB"),
        ("Aria", "Aria")]
    assert scalability.config("MyISAM key_buffer_size=0").as_dict()["key_buffer_size"] == 0
    runtime = resolve_plan("runtime-environment")
    assert len(runtime.configs) == 12
    pinned = runtime.config("tcmalloc pin 0/1 tcp").environment
    assert (pinned.allocator, pinned.server_cpus, pinned.client_cpus, pinned.connection) == (
        "tcmalloc", "0", "1", "tcp")
    ladder = resolve_plan("ladder-innodb")
    assert ladder.ladder and ladder.config("flush log at commit 2").as_dict()[
        "innodb_doublewrite"] == "OFF"
    # every built-in study decides within a time budget, not in a fixed number of rounds
    plans = [resolve_plan(path) for path in STUDIES_DIR.rglob("*.toml")]
    assert len(plans) > len(builtin_names())
    assert all(p.run.time > 0 and p.run.max_rounds > p.run.rounds for p in plans)


def test_axes_cross_every_configuration():
    plan = parse_plan(PLAN.replace("[configs.a]", '[axes]\nengine = ["MyISAM", "InnoDB"]\n'
                                   'connection = ["socket", "tcp"]\n[configs.a]')
                      .replace('baseline = "a"', 'baseline = "a MyISAM socket"'))
    assert len(plan.configs) == 3 * 2 * 2
    config = plan.config("b InnoDB tcp")
    assert config.engine == "InnoDB" and config.environment.connection == "tcp"
    assert plan.dataset_for(config).engine == "InnoDB"
    assert plan.config_hash(config) != plan.config_hash(plan.config("b MyISAM tcp"))


@pytest.mark.parametrize(("edit", "message"), [
    (("[configs.a]", "[configs.a]\nallocator = \"hoard\""), "allocator = 'hoard' is not supported"),
    (("[configs.a]", "[configs.a]\nconnection = \"pipe\""), "connection = 'pipe' is not supported"),
    (("[configs.a]", "[axes]\npinning = [\"0\"]\n[configs.a]"), "is not 'none' or"),
    (("[configs.a]", "[axes]\ncolour = [\"red\"]\n[configs.a]"), "unknown key axes.colour"),
])
def test_bad_environment_settings_are_one_line(edit, message):
    with pytest.raises(PerflabError) as err:
        parse_plan(PLAN.replace(*edit, 1))
    assert message in err.value.message


@settings(deadline=None)  # the first call imports the tuner
@given(st.integers(0, 9), st.integers(0, 59), st.integers(0, 59))
def test_tune_takes_its_time_budget_as_run_time_does(hours, minutes, seconds):
    """`perflab tune --time` (the API's `seconds`) reads a duration as run.time does: "1h30m",
    "10m", "90s" or plain seconds; anything else is refused naming the argument, before a
    server starts."""
    import perflab
    from perflab.plan import duration

    spelled = f"{hours}h{minutes}m{seconds}s"
    assert duration("seconds", spelled) == 3600 * hours + 60 * minutes + seconds
    assert duration("seconds", 600) == duration("seconds", "600") == duration("seconds", "10m")
    with pytest.raises(PerflabError, match="not a duration") as refused:
        perflab.tune_server("key-cache-segments", "/nonexistent-lab", seconds="10 minutes")
    assert refused.value.option == "seconds"


def test_a_suite_is_run_whole_and_refused_where_one_plan_is_wanted():
    assert "versions" in builtin_names()
    with pytest.raises(PerflabError, match="suite of several studies") as refused:
        resolve_plan("versions")
    assert "perflab run versions" in (refused.value.hint or "")


def test_one_loader_takes_a_plan_its_file_by_path_or_text_or_a_built_in_name(tmp_path: Path):
    """resolve_plan is the one way to a plan (perflab.load_plan is it too): a Plan as it is,
    a plan file given as a Path or a string, a built-in study's name; an unreadable file is
    one line."""
    import perflab

    path = tmp_path / "demo.toml"
    path.write_text(PLAN)
    plan = resolve_plan(path)
    assert resolve_plan(plan) is plan and perflab.load_plan(plan) is plan
    assert resolve_plan(str(path)) == plan == perflab.load_plan(path)
    assert resolve_plan("key-cache-segments") == perflab.load_plan("key-cache-segments")
    path.write_bytes(b"\xff\xfe")
    with pytest.raises(PerflabError, match="not UTF-8 text"):
        resolve_plan(path)


@pytest.mark.parametrize(("value", "toml"), [
    (0, "0"), (0.5, "0.5"), (-0.1, "-0.1"), (0.7, "0.7"), (True, "true"), ("0.05", '"0.05"'),
    (math.nan, "nan"),
])
def test_a_margin_is_refused_alike_in_a_plan_an_override_and_the_api(value, toml):
    """One range check for a margin (stats/design.checked_margin): a plan's run.margin, the
    run's override and a report's or compare's margin refuse the same values."""
    import perflab

    with pytest.raises(PerflabError, match="run.margin must be a fraction from 0 to 0.5"):
        parse_plan(PLAN.replace("rounds = 3", f"rounds = 3\nmargin = {toml}"), "p.toml")
    with pytest.raises(PerflabError, match="run.margin must be a fraction") as err:
        with_overrides(parse_plan(PLAN), margin=value)
    assert err.value.option == "margin"
    with pytest.raises(PerflabError, match="margin must be a fraction") as err:
        perflab.api.check_report_options(perflab.ReportOptions(margin=value))
    assert err.value.option == "margin" and f"e.g. {MARGIN}" in err.value.hint


def test_the_margin_has_one_default_that_every_margin_option_names():
    from perflab.cli import build_parser

    assert parse_plan(PLAN).run.margin == MARGIN == parse_plan(PLAN).run.design().margin
    assert parse_plan(PLAN.replace("rounds = 3", "rounds = 3\nmargin = 0.1")).run.margin == 0.1
    assert with_overrides(parse_plan(PLAN), margin=0.49).run.margin == 0.49
    commands = next(a for a in build_parser()._actions if a.choices).choices
    for command in ("run", "report", "compare"):
        margin = commands[command]._option_string_actions["--margin"]
        assert f"{MARGIN} unless it says otherwise" in margin.help and margin.default is None
