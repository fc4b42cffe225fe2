"""Two `perflab tune` workers on one study kept in a MariaDB server (Optuna's RDB storage), each
measuring on its own lab's managed server, as workers on two hosts would."""

from __future__ import annotations

import signal
import subprocess
import time

import optuna
import pytest
from optuna.trial import TrialState

from conftest import PERFLAB, copy_datadir, tune_plan_file
from perflab.server.connection import query
from perflab.server.managed import ManagedServer

BUDGET = 4  # two trials each
KILL_BUDGET = 3  # the victim's first; its second, killed, not counted; the survivor's two
KNOBS = '["table_open_cache", "thread_cache_size"]'


@pytest.fixture(scope="module")
def storage_server(tmp_path_factory, pristine_datadir):
    root = tmp_path_factory.mktemp("optuna-storage")
    copy_datadir(pristine_datadir, root / "data")
    server = ManagedServer(root / "data", root, {})
    server.start()
    try:
        yield server
    finally:
        server.stop()


def fresh_storage(server: ManagedServer, database: str) -> str:
    with server.connect() as conn:
        query(conn, f"CREATE DATABASE {database}")
    return f"mysql+pymysql://root@localhost/{database}?unix_socket={server.socket}"


def worker(plan, lab, storage, *, budget=BUDGET) -> subprocess.Popen:
    return subprocess.Popen([*PERFLAB, "tune", str(plan), "--lab", str(lab), "--method",
                             "random", "--budget", str(budget), "--storage", storage],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen) -> tuple[str, str]:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    return out, err


def trials_of(storage: str) -> list:
    study = optuna.load_study(study_name="shared-tune:random", storage=storage)
    return study.trials, study.user_attrs


def test_two_workers_share_the_budget_and_one_re_measures(storage_server, seed_lab, tmp_path):
    plan = tune_plan_file(tmp_path, "shared-tune", KNOBS)
    for name in ("lab-a", "lab-b"):  # each its own lab, the catalog and dataset already in it
        seed_lab(tmp_path / name, plan)
    storage = fresh_storage(storage_server, "optuna_two")
    first = worker(plan, tmp_path / "lab-a", storage)
    time.sleep(3)
    second = worker(plan, tmp_path / "lab-b", storage)
    outputs = [finish(first), finish(second)]

    trials, attrs = trials_of(storage)
    assert len(trials) == BUDGET
    assert sorted(t.number for t in trials) == list(range(BUDGET))
    assert all(t.state in (TrialState.COMPLETE, TrialState.FAIL) for t in trials)
    # the workers share --seed: each trial must still draw its own settings
    assert len({tuple(sorted(t.params.items())) for t in trials}) == BUDGET
    labs = {t.user_attrs["worker"]["lab"] for t in trials}
    assert labs == {str((tmp_path / name).resolve()) for name in ("lab-a", "lab-b")}
    assert len([t for t in trials if t.state == TrialState.COMPLETE]) >= BUDGET - 1
    finals = sorted(key for key in attrs if key.startswith("final@"))
    assert finals == [f"final@{BUDGET}", f"final@{BUDGET}:done"]
    re_measured = [out for out, _ in outputs if "Re-measured side by side" in out]
    assert len(re_measured) == 1
    assert sum("re-measured by the worker on" in err for _, err in outputs) == 1


def test_a_killed_worker_leaves_its_trial_failed_and_the_other_finishes(storage_server,
                                                                         seed_lab, tmp_path):
    plan = tune_plan_file(tmp_path, "shared-tune", KNOBS)
    for name in ("lab-a", "lab-b"):  # each its own lab, the catalog and dataset already in it
        seed_lab(tmp_path / name, plan)
    storage = fresh_storage(storage_server, "optuna_kill")
    lab_a = str((tmp_path / "lab-a").resolve())
    victim = worker(plan, tmp_path / "lab-a", storage, budget=KILL_BUDGET)
    try:
        deadline = time.monotonic() + 300
        while True:  # kill it in the middle of its second trial
            assert time.monotonic() < deadline, "the first worker never reached a second trial"
            trials = optuna.load_study(study_name="shared-tune:random", storage=storage).trials \
                if victim.poll() is None and _exists(storage) else []
            if sum(t.user_attrs.get("worker", {}).get("lab") == lab_a for t in trials) >= 2 and \
                    any(t.state == TrialState.RUNNING for t in trials):
                break
            time.sleep(0.2)
    finally:
        victim.send_signal(signal.SIGKILL)
        victim.communicate()
    survivor = worker(plan, tmp_path / "lab-b", storage, budget=KILL_BUDGET)
    out, err = finish(survivor)

    trials, attrs = trials_of(storage)
    assert len(trials) == KILL_BUDGET + 1  # the killed trial measured nothing: not counted
    assert sorted(t.number for t in trials) == list(range(KILL_BUDGET + 1))
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    killed = [t for t in trials if t.user_attrs["worker"]["lab"] == lab_a
              and t.state == TrialState.FAIL]
    assert len(killed) == 1
    assert "its worker was killed before it finished (not counted in the budget)" in err
    assert sorted(key for key in attrs if key.startswith("final@")) == \
        [f"final@{KILL_BUDGET + 1}", f"final@{KILL_BUDGET + 1}:done"]
    assert "Re-measured side by side" in out
    assert "interrupted before the trial finished" in out  # the killed trial, reported


def _exists(storage: str) -> bool:
    return "shared-tune:random" in optuna.get_all_study_names(storage)
