"""Several `perflab tune` workers on one Optuna study, each measuring on its own lab's server:
the lab's SQLite by default (one worker), or `--storage mysql+pymysql://...` for workers on
several hosts.

- One at a time, a worker reads the study and creates its next trial (a named lock on MariaDB or
  MySQL, a file lock beside an SQLite file), so the budget is the study's total and two workers
  never start the same enqueued trial.
- A running trial sends a heartbeat; a RUNNING trial that is silent for GRACE_SECONDS, or whose
  worker was on this host and is gone, is failed by whichever worker sees it first. A worker
  never fails a live worker's trial.
- The final re-measure is claimed once, by the first worker to finish after every trial ended.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import socket
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import optuna
import sqlalchemy
import sqlalchemy.exc
from optuna.trial import TrialState

from perflab.errors import PerflabError

HEARTBEAT_SECONDS = 10
GRACE_SECONDS = 60  # six missed heartbeats: the worker is dead or cut off
LOCK_WAIT_SECONDS = 600


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """The study's storage, with heartbeats; a URL that cannot be opened is a user error."""
    try:
        with quiet():
            return optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_SECONDS,
                                              grace_period=GRACE_SECONDS)
    except (ImportError, ValueError, sqlalchemy.exc.SQLAlchemyError) as exc:
        shown = _without_password(url)
        reason = str(exc).splitlines()[0].replace(url, shown)
        raise PerflabError(f"--storage {shown}: {reason}",
                           hint="an SQLAlchemy URL whose driver is installed, e.g. "
                           "sqlite:///tune.db or mysql+pymysql://user@host/db"
                           "?read_default_file=/home/me/.my.cnf") from None


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Optuna calls heartbeats experimental and expects them with Study.optimize; perflab uses
    them with ask and tell on purpose, and its users need not read either warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
        yield


def _without_password(url: str) -> str:
    try:
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except (sqlalchemy.exc.ArgumentError, ValueError):  # not a URL it reads: mask user:pw@
        return re.sub(r"(://[^/@:]*:)[^@/]*@", r"\1***@", url)


def me(lab_root: Path) -> dict:
    """This worker, as its trials record it."""
    return {"host": socket.gethostname(), "pid": os.getpid(), "lab": str(lab_root.resolve())}


@contextlib.contextmanager
def study_lock(storage: optuna.storages.RDBStorage, study_name: str) -> Iterator[None]:
    """Held while a worker reads the study and creates its trial. Other databases than
    MariaDB/MySQL and SQLite get no lock: two workers may then overshoot the budget by one."""
    url = storage.engine.url
    if url.get_backend_name() == "mysql":
        name = "perflab-tune-" + hashlib.sha1(study_name.encode()).hexdigest()[:40]
        with storage.engine.connect() as conn:
            got = conn.execute(sqlalchemy.text("SELECT GET_LOCK(:name, :wait)"),
                               {"name": name, "wait": LOCK_WAIT_SECONDS}).scalar()
            if got != 1:
                raise PerflabError(f"tune: the study {study_name} stayed locked by another "
                                   f"worker for {LOCK_WAIT_SECONDS} s")
            try:
                yield
            finally:
                conn.execute(sqlalchemy.text("SELECT RELEASE_LOCK(:name)"), {"name": name})
    elif url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        with open(f"{url.database}.tune-lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    else:
        yield


@contextlib.contextmanager
def heartbeat(storage: optuna.storages.RDBStorage, study: optuna.Study,
              number: int) -> Iterator[None]:
    """Beats for the trial while the block runs (its measurement)."""
    trial_id = storage.get_trial_id_from_study_id_trial_number(
        storage.get_study_id_from_name(study.study_name), number)
    storage.record_heartbeat(trial_id)
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            with contextlib.suppress(sqlalchemy.exc.SQLAlchemyError):
                storage.record_heartbeat(trial_id)  # a missed beat is retried at the next

    thread = threading.Thread(target=beat, name=f"heartbeat-{number}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def reap(study: optuna.Study, lab_root: Path, say: Callable[[str], None]) -> int:
    """Fail the RUNNING trials whose worker is dead: silent past the grace period, on this host
    with its process gone, or of this lab (which this worker holds locked). Returns how many."""
    here, mine = socket.gethostname(), str(lab_root.resolve())
    reaped = 0
    before = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
    with quiet():
        optuna.storages.fail_stale_trials(study)
    after = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
    stale = before - after
    for number in sorted(stale):
        say(f"trial {number}: failed, its worker sent no heartbeat for {GRACE_SECONDS} s")
        reaped += 1
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get("worker")
        dead = worker is None or worker.get("lab") == mine or (
            worker.get("host") == here and not _alive(worker.get("pid", 0)))
        if not dead:
            continue
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            study.tell(trial.number, state=TrialState.FAIL)
            say(f"trial {trial.number}: failed, its worker was killed before it finished")
            reaped += 1
    return reaped


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)))


def wait_for_others(study: optuna.Study, lab_root: Path, say: Callable[[str], None]) -> None:
    """Until no trial is running (other workers' trials finish or their workers are found
    dead), so that the best trial is chosen among all of them."""
    told = False
    while True:
        reap(study, lab_root, say)
        left = running(study)
        if not left:
            return
        if not told:
            say(f"waiting for {left} trial(s) of other workers to finish")
            told = True
        time.sleep(2)


def claim(study: optuna.Study, key: str, lab_root: Path) -> dict | None:
    """Under the study lock: None if this worker takes the job `key`, else who took it."""
    taken = study.user_attrs.get(key)
    if taken is not None:
        return taken
    study.set_user_attr(key, me(lab_root))
    return None
