"""Several `perflab tune` workers on one Optuna study, each measuring on its own lab's server:
the lab's SQLite by default (one worker), or a shared storage (`mysql+pymysql://...`) for
workers on several hosts.

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
import random
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
POLL_SECONDS = 0.5  # a worker waiting on others' trials looks again this often


def open_storage(url: str) -> optuna.storages.RDBStorage:
    """The study's storage, with heartbeats; a URL that cannot be opened is a user error."""
    for attempt in (1, 2):
        try:
            with quiet():
                return optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_SECONDS,
                                                  grace_period=GRACE_SECONDS)
        except sqlalchemy.exc.SQLAlchemyError as exc:
            if attempt == 1:  # two workers creating the tables of a new database at once
                time.sleep(1 + random.random())
                continue
            error: Exception = exc
        except (ImportError, ValueError) as exc:
            error = exc
            break
    shown = shown_url(url)
    reason = str(error).splitlines()[0].replace(url, shown)
    raise PerflabError(f"storage {shown}: {reason}",
                       hint="an SQLAlchemy URL whose driver is installed, e.g. "
                       "sqlite:///tune.db or mysql+pymysql://user@host/db"
                       "?read_default_file=/home/me/.my.cnf", option="storage")


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Optuna calls heartbeats experimental and expects them with Study.optimize; perflab uses
    them with ask and tell on purpose, and its users need not read either warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used")
        yield


def shown_url(url: str) -> str:
    """A storage URL as perflab prints it: no password, and of its query only the parameter
    names (a value may be a credential: ?password=, ?ssl_key=, a token). A text SQLAlchemy
    cannot read as a URL is not shown at all: where its secret is, nobody knows."""
    try:
        parsed = sqlalchemy.engine.make_url(url)
    except (sqlalchemy.exc.ArgumentError, ValueError):
        return "<not a URL>"
    shown = parsed.set(query={}).render_as_string(hide_password=True)
    if parsed.query:
        shown += "?" + "&".join(f"{name}=***" for name in parsed.query)
    return shown


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
            finally:  # a lost connection has released the lock already
                with contextlib.suppress(sqlalchemy.exc.SQLAlchemyError):
                    conn.execute(sqlalchemy.text("SELECT RELEASE_LOCK(:name)"),
                                 {"name": name})
    elif url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
        with open(f"{url.database}.tune-lock", "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
    else:
        yield


def take_trial(storage: optuna.storages.RDBStorage, study: optuna.Study, params: dict,
               attrs: dict, distributions: dict, lab_root: Path) -> tuple[optuna.Trial, int]:
    """Under the study lock: a new trial with these fixed parameters (the sampler chooses the
    rest) and user attributes, created with this worker's name and a first heartbeat before any
    other worker can see it; returns the trial and its storage id. A trial left waiting by a
    worker that stopped between proposing and starting it is failed first, so that no one
    starts it by mistake."""
    study_id = storage.get_study_id_from_name(study.study_name)
    for left in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        left_id = storage.get_trial_id_from_study_id_trial_number(study_id, left.number)
        storage.set_trial_user_attr(left_id, "error", "proposed by a worker that stopped "
                                    "before measuring it")
        storage.set_trial_state_values(left_id, TrialState.FAIL)
    study.enqueue_trial(params, user_attrs={**attrs, "worker": me(lab_root)},
                        skip_if_exists=False)
    with quiet():
        trial = study.ask(distributions)
    trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, trial.number)
    storage.record_heartbeat(trial_id)
    return trial, trial_id


@contextlib.contextmanager
def heartbeat(storage: optuna.storages.RDBStorage, trial_id: int) -> Iterator[None]:
    """Beats for the trial while the block runs (its measurement)."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_SECONDS):
            # a missed beat is retried at the next; six in a row and the trial is failed
            with contextlib.suppress(sqlalchemy.exc.SQLAlchemyError, optuna.exceptions.OptunaError):
                storage.record_heartbeat(trial_id)

    thread = threading.Thread(target=beat, name=f"heartbeat-{trial_id}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=HEARTBEAT_SECONDS)


def reap(study: optuna.Study, lab_root: Path, say: Callable[[str], None]) -> int:
    """Under the study lock: fail the RUNNING trials whose worker is dead — silent past the
    grace period, or on this host with its process gone, or on this host in this lab (which
    this worker holds locked). Returns how many."""
    here = me(lab_root)
    before = {t.number for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))}
    with quiet():
        optuna.storages.fail_stale_trials(study)
    reaped = 0
    for trial in study.get_trials(deepcopy=False):
        if trial.number in before and trial.state == TrialState.FAIL and \
                "state" not in trial.user_attrs:  # failed now, not by its own worker
            say(f"trial {trial.number}: failed, its worker sent no heartbeat for "
                f"{GRACE_SECONDS} s (not counted in the budget)")
            reaped += 1
        if trial.state != TrialState.RUNNING:
            continue
        worker = trial.user_attrs.get("worker") or {}
        dead = worker.get("host") == here["host"] and (worker.get("lab") == here["lab"]
                                                       or not _alive(worker.get("pid", 0)))
        if dead or not worker:  # no worker recorded: an earlier perflab's, killed
            study.tell(trial.number, state=TrialState.FAIL, skip_if_finished=True)
            say(f"trial {trial.number}: failed, its worker was killed before it finished "
                "(not counted in the budget)")
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


def wait_for_others(storage: optuna.storages.RDBStorage, study: optuna.Study, lab_root: Path,
                    say: Callable[[str], None]) -> None:
    """Until no trial is running (other workers' trials finish or their workers are found
    dead), so that the best trial is chosen among all of them."""
    told = False
    while True:
        with study_lock(storage, study.study_name):
            reap(study, lab_root, say)
            left = running(study)
        if not left:
            return
        if not told:
            say(f"waiting for {left} trial(s) of other workers to finish")
            told = True
        time.sleep(POLL_SECONDS)


def claim(study: optuna.Study, key: str, lab_root: Path, *, own: bool = False) -> dict | None:
    """Under the study lock: None if this worker is to do the job `key` — nobody took it, or
    this lab did (a run again: its stored points are read back, what is missing measured), or
    a worker on this host took it and is gone before finishing — else the worker that took it.
    `own`: the study lives in this lab's database, so whoever took the job was this lab, under
    any path (a lab restored elsewhere, as bench/saved's are, read its end phases as another
    worker's, and gave no answer)."""
    taken, here = study.user_attrs.get(key), me(lab_root)
    if own:
        taken = None
    elif taken is not None and taken.get("host") == here["host"]:
        this_lab = taken.get("lab") == here["lab"]
        gone = not _alive(taken.get("pid", 0)) and not study.user_attrs.get(f"{key}:done")
        if this_lab or gone:
            taken = None
    if taken is not None:
        return taken
    study.set_user_attr(key, here)
    return None


def done(study: optuna.Study, key: str) -> None:
    study.set_user_attr(f"{key}:done", True)
