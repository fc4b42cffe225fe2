"""Mistakes on the command line and in files a user gives: one or two lines and exit 2, never a
traceback. None of these starts a server: every check runs before one would be needed."""

import math
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from perflab import cli
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.load.sqlworkload import load_sql_workload
from perflab.plan import with_overrides
from perflab.studies import resolve_plan

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

GENERAL_LOG = (
    "/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-log (Debian 12). started with:\n"
    "Tcp port: 0  Unix socket: /run/mysqld/mysqld.sock\n"
    "Time\t\t    Id Command\tArgument\n"
    "231123 11:00:00\t    5 Connect\troot@localhost on test using Socket\n"
    "\t\t    5 Query\tSELECT name FROM items WHERE id = 5\n"
)


def perflab(capsys, monkeypatch, *argv: str) -> tuple[int, list[str]]:
    """Exit status and stderr lines of `perflab ARGV`, run in this process."""
    monkeypatch.setattr(cli.signal, "signal", lambda *args: None)
    code = cli.main([str(arg) for arg in argv])
    return code, capsys.readouterr().err.strip().splitlines()


def assert_user_error(code: int, lines: list[str], message: str, hint: str) -> None:
    assert code == 2
    assert lines[-2].startswith("perflab: error: ") and message in lines[-2], lines
    assert lines[-1].startswith("  hint: ") and hint in lines[-1], lines


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "general.log"
    path.write_text(GENERAL_LOG)
    return path


def test_outputs_that_cannot_be_written_fail_before_the_work(tmp_path, capsys, monkeypatch,
                                                             log):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    lab = tmp_path / "no-lab"  # the outputs are checked first: no lab is needed
    code, lines = perflab(capsys, monkeypatch, "report", lab, "--html", tmp_path / "no/r.html")
    assert_user_error(code, lines, "does not exist", f"mkdir -p {tmp_path / 'no'}")
    code, lines = perflab(capsys, monkeypatch, "report", lab, "--charts", a_file / "charts")
    assert_user_error(code, lines, f"{a_file} is not a directory", "under a directory")
    code, lines = perflab(capsys, monkeypatch, "report", lab, "--html", tmp_path)
    assert_user_error(code, lines, "is not a file", "give --html a file name")
    code, lines = perflab(capsys, monkeypatch, "digest", log, "--workload", tmp_path)
    assert_user_error(code, lines, "is not a file", "give --workload a file name")
    assert not (tmp_path / "no").exists()


def test_bad_option_values_are_user_errors(tmp_path, capsys, monkeypatch):
    code, lines = perflab(capsys, monkeypatch, "compare", tmp_path, tmp_path,
                          "--margin", "0.7")
    assert_user_error(code, lines, "margin must be a fraction", "0.05")
    assert lines[-2].endswith("(--margin)")  # the API's argument, shown as its flag
    code, lines = perflab(capsys, monkeypatch, "env", "--path", tmp_path / "missing")
    assert_user_error(code, lines, "does not exist", "existing directory")
    # checked before perflab connects anywhere
    code, lines = perflab(capsys, monkeypatch, "health", "--socket", tmp_path / "no.sock",
                          "--interval", "-1")
    assert_user_error(code, lines, "interval must be 0 or more", "since start")
    assert lines[-2].endswith("(--interval)")
    code, lines = perflab(capsys, monkeypatch, "health", "--socket", tmp_path / "no.sock",
                          "--defaults-file", tmp_path / "missing.cnf")
    assert_user_error(code, lines, "is not a file", "[client]")
    # a permission for someone else's server, with no such server named: its flags and how
    # to name the server, before the lab is touched
    for flag in ("--allow-writes", "--allow-set", "--allow-locks", "--read-only-account"):
        code, lines = perflab(capsys, monkeypatch, "run", "key-cache-segments", "--lab",
                              tmp_path / "lab", flag)
        assert_user_error(code, lines, "permissions are for a server perflab did not start",
                          "--socket, or --host and --port")
        assert lines[-2].endswith("(--allow-writes, --allow-set, --allow-locks or "
                                  "--read-only-account)")
    assert not (tmp_path / "lab").exists()


def test_the_core_names_plan_keys_and_the_cli_adds_its_flags(tmp_path, capsys, monkeypatch):
    with pytest.raises(PerflabError, match="run.rounds must be at least 1") as err:
        with_overrides(resolve_plan("key-cache-segments"), rounds=0)
    assert "--" not in err.value.message and err.value.option == "rounds"
    code, lines = perflab(capsys, monkeypatch, "run", "key-cache-segments", "--lab",
                          tmp_path / "lab", "--rounds", "0", "--run-seconds", "2")
    assert code == 2 and lines[-1] == ("perflab: error: run.rounds must be at least 1, got 0 "
                                       "(--rounds)")
    assert not (tmp_path / "lab").exists()


def test_a_lab_that_is_a_file_or_not_a_database(tmp_path, capsys, monkeypatch):
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    code, lines = perflab(capsys, monkeypatch, "report", a_file)
    assert_user_error(code, lines, "is a file, not a directory", "lab directory")
    with pytest.raises(PerflabError, match="cannot create lab"):
        Lab(a_file / "lab").store()
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "perflab.sqlite").write_text("not sqlite")
    code, lines = perflab(capsys, monkeypatch, "report", damaged)
    assert_user_error(code, lines, "as a results database", "move a damaged file aside")


def test_logs_of_no_known_kind_are_user_errors(tmp_path, capsys, monkeypatch):
    garbage = tmp_path / "garbage.log"
    garbage.write_text("hello\n")
    code, lines = perflab(capsys, monkeypatch, "digest", garbage)
    assert_user_error(code, lines, "neither a general query log", "general or slow")
    assert lines[-2].endswith("(--log-format)")


def test_files_that_are_not_utf8_or_mis_shaped(tmp_path):
    binary = tmp_path / "plan.toml"
    binary.write_bytes(b"\xff\xfe[study]\n")
    with pytest.raises(PerflabError, match="not UTF-8"):
        resolve_plan(str(binary))
    workload = tmp_path / "w.toml"
    workload.write_text('schema = "CREATE TABLE t (id INT)"\n[[statements]]\nsql = "SELECT 1"\n')
    with pytest.raises(PerflabError, match="schema must be a table"):
        load_sql_workload(workload)
    workload.write_text('[statements]\nsql = "SELECT 1"\n')
    with pytest.raises(PerflabError, match="statements must be an array") as err:
        load_sql_workload(workload)
    assert "[[statements]]" in err.value.hint


def test_scale_must_be_a_finite_positive_number():
    plan = resolve_plan("key-cache-segments")
    for scale in (math.nan, math.inf):
        with pytest.raises(PerflabError, match="scale must be positive"):
            with_overrides(plan, scale=scale)


def test_tune_settings_and_budgets_are_checked_before_any_server(tmp_path):
    from perflab.tune.search import Tuner, TuneSettings

    with pytest.raises(PerflabError, match="tune.knobs must be a list"):
        TuneSettings.from_plan({"knobs": 5})
    with pytest.raises(PerflabError, match="tune.memory_share must be a number"):
        TuneSettings.from_plan({"memory_share": "half"})
    for seconds in (-1, math.inf, math.nan):
        with pytest.raises(PerflabError, match="tune.put_back_time must be seconds"):
            TuneSettings.from_plan({"put_back_time": seconds})
    with pytest.raises(PerflabError, match="tune.put_back_time must be a number"):
        TuneSettings.from_plan({"put_back_time": "10m"})
    assert TuneSettings.from_plan({"put_back_time": 0}).put_back_time == 0
    plan, lab = resolve_plan("key-cache-segments"), Lab(tmp_path / "lab")
    for options, message, option in (
            (dict(budget=-3), "budget must be at least 1", "budget"),
            (dict(seconds=-5.0), "seconds must be a positive", "seconds"),
            (dict(budget=3, seed=-1), "seed must be from 0", "seed"),
            (dict(budget=3, sampler="smac"), "sampler 'smac' is not known", "sampler"),
            (dict(budget=3, storage="not a url"), "storage <not a URL>", "storage"),
            (dict(), "give the search a budget", "budget")):
        with pytest.raises(PerflabError, match=message) as err:
            Tuner(plan, lab, TuneSettings(), "bayes", **options)
        assert "--" not in err.value.message and err.value.option == option
    for key, hint in (("budget", "perflab tune --budget"), ("allow_unsafe", "--allow-unsafe"),
                      ("memory_shares", "did you mean tune.memory_share?")):
        with pytest.raises(PerflabError, match=f"unknown key tune.{key}") as err:
            TuneSettings.from_plan({key: 1})
        assert hint in err.value.hint
    # --knobs or --exclude replaces both of the plan's choices (they exclude each other)
    planned = TuneSettings(knobs=("key_buffer_size",), objective="p95")
    assert planned.chosen(None, None) is planned
    assert planned.chosen(None, ["query_cache_type"]) == TuneSettings(
        exclude=("query_cache_type",), objective="p95")
    assert TuneSettings(exclude=("a",)).chosen(["b"], None) == TuneSettings(knobs=("b",))
    for method in ("ofat", "random"):  # a sampler they would ignore
        with pytest.raises(PerflabError, match=f"{method} has its own") as err:
            Tuner(plan, lab, TuneSettings(), method, budget=3, sampler="tpe")
        assert err.value.option == "sampler"
    assert not (tmp_path / "lab").exists()


def test_a_reader_that_goes_away_is_no_traceback():
    """`perflab studies | head -1`: the pipe closes before perflab has written everything."""
    proc = subprocess.Popen([sys.executable, "-m", "perflab.cli", "studies"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # long before the interpreter has started and printed
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGPIPE
    assert stderr == b""
