"""perflab's Python API (perflab/__init__.py, perflab/api.py): what the CLI does, as functions
that return the records, with mistakes worded in the API's own terms."""

import importlib

import pytest

import perflab
from conftest import write_plan
from test_digest_input import general


@pytest.mark.fast
def test_the_api_reads_plans_and_logs_and_says_what_is_wrong(tmp_path):
    assert perflab.load_plan("key-cache-segments").name == "key-cache-segments"
    log = tmp_path / "general.log"
    log.write_text(general(["SELECT 1", "SELECT 1", "SELECT id FROM t WHERE id = 5"]))
    found = perflab.digest_logs([log])
    calls = {c.fingerprint: c.calls for c in found.classes}
    assert calls["select ?"] == 2 and calls["select id from t where id = ?"] == 1
    with pytest.raises(perflab.PerflabError, match="not one of"):
        perflab.render(None, "pdf")
    with pytest.raises(perflab.PerflabError, match="server perflab did not start"):
        perflab.run("key-cache-segments", tmp_path / "lab", allow=perflab.Permissions())
    with pytest.raises(AttributeError):
        perflab.NoSuchThing  # noqa: B018
    functions = {name: getattr(perflab, name) for name in perflab.__all__}
    for subpackage in ("perflab.digest.digest", "perflab.report.study", "perflab.health.check",
                       "perflab.tune.search", "perflab.running.calibrate"):
        importlib.import_module(subpackage)  # shadows no name of the API
    assert {name: getattr(perflab, name) for name in perflab.__all__} == functions
    assert sorted(dir(perflab)) == sorted(perflab.__all__)  # no typing helpers, no modules


@pytest.mark.fast
@pytest.mark.parametrize(("call", "option", "words"), [
    (lambda lab: perflab.compare(lab, lab, margin=0.7), "margin", "margin must be a fraction"),
    (lambda lab: perflab.check_lab_health(lab, interval=-1), "interval",
     "interval must be 0 or more"),
    (lambda lab: perflab.check_lab_health(lab, threads=0), "threads", "threads must be at"),
    (lambda lab: perflab.digest_logs([lab]), "paths", "is not a file"),
    (lambda lab: perflab.calibrate("key-cache-segments", lab, rounds=2), "rounds",
     "rounds must be at least 3"),
    (lambda lab: perflab.tune_server("key-cache-segments", lab, method="annealing"), "method",
     "annealing"),
])
def test_mistakes_name_the_api_argument_before_any_work(tmp_path, call, option, words):
    lab = tmp_path / "lab"
    lab.mkdir()
    with pytest.raises(perflab.PerflabError, match=words) as err:
        call(lab)
    assert err.value.option == option and "--" not in err.value.message
    assert list(lab.iterdir()) == []  # refused before the lab was touched


@pytest.mark.fast
def test_digest_arguments_in_api_terms(tmp_path):
    log = tmp_path / "general.log"
    log.write_text(general(["SELECT name FROM t WHERE id = 41"]))
    for kwargs, option in (({"burst": 1}, "burst"), ({"window": 0}, "window"),
                           ({"window": float("nan")}, "window"), ({"jobs": 0}, "jobs")):
        with pytest.raises(perflab.PerflabError) as err:
            perflab.digest_logs([log], **kwargs)
        assert err.value.option == option
    redacted = perflab.digest_logs([log], redact=True)
    def select(found):
        return next(c for c in found.classes if c.fingerprint.startswith("select"))

    assert "41" in select(perflab.digest_logs([log])).example
    assert not redacted.literals and "41" not in select(redacted).example


def test_a_study_runs_and_reads_back_through_the_api(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "api.toml", "api", configs="[configs.one]\n", threads=(1,),
                      rounds=1)
    said = []
    summary = perflab.run(plan, shared_lab, say=said.append)
    assert (summary.measured, summary.failed, summary.stopped) == (1, 0, "complete")
    assert any("schedule" in line for line in said)
    study = perflab.load_study(shared_lab.root, "api")
    assert [(p.config, p.threads, p.ok) for p in study.points] == [("one", 1, True)]
    assert "one" in perflab.render(study) and '"points"' in perflab.render(study, "json")
    again = perflab.run(plan, shared_lab)  # stored: nothing measured again
    assert (again.measured, again.already_stored) == (0, 1)
