"""perflab's Python API (perflab/__init__.py): what the CLI does, as functions that return the
records."""

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
    for subpackage in ("perflab.digest.digest", "perflab.report.study", "perflab.health.check"):
        importlib.import_module(subpackage)  # shadows no function of the API
    assert callable(perflab.render) and callable(perflab.digest_logs)
    assert callable(perflab.check_health)


def test_a_study_runs_and_reads_back_through_the_api(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "api.toml", "api", configs="[configs.one]\n", threads=(1,),
                      repeats=1)
    said = []
    summary = perflab.run(plan, shared_lab, say=said.append)
    assert (summary.measured, summary.failed, summary.stopped) == (1, 0, "complete")
    assert any("schedule" in line for line in said)
    study = perflab.load_study(shared_lab.root, "api")
    assert [(p.config, p.threads, p.ok) for p in study.points] == [("one", 1, True)]
    assert "one" in perflab.render(study) and '"points"' in perflab.render(study, "json")
    again = perflab.run(plan, shared_lab)  # stored: nothing measured again
    assert (again.measured, again.already_stored) == (0, 1)
