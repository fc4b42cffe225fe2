"""Fixtures: real mariadbd and real sysbench, small data, short runs.

One lab is shared by the whole session so that the variable catalog and the tiny dataset are
made once; each test uses its own study name in it. At the end of the session no mariadbd whose
files live under the session's temporary directory may still run.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

# The suite runs on two workers (pyproject.toml); numpy's BLAS threads, one per core in every
# worker and every perflab it starts, would spin against each other on two cores (the additive
# search's model fits ran 2-3x slower so). Set before numpy loads here or in any child.
for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")

from perflab.errors import PerflabError  # noqa: E402
from perflab.lab import Lab  # noqa: E402
from perflab.load.sysbench import SYSBENCH  # noqa: E402
from perflab.server import builds  # noqa: E402
from perflab.server.builds import HOST  # noqa: E402
from perflab.server.datadir import INSTALL_DB, install_datadir  # noqa: E402

PERFLAB = [sys.executable, "-m", "perflab.cli"]


def missing_tools() -> list[str]:
    """What the tests outside the fast tier need and this machine lacks (scripts/test installs
    them: mariadb-server, sysbench)."""
    wanted = {str(HOST.binary): "mariadbd (Debian package mariadb-server)",
              INSTALL_DB: "mariadb-install-db (Debian package mariadb-server)"}
    found = [what for path, what in wanted.items() if not os.access(path, os.X_OK)]
    if shutil.which(SYSBENCH) is None:
        found.append("sysbench (Debian package sysbench)")
    return found


# The files that take longest, longest first (their totals in a full run, from 187 s down to
# 31 s, with --durations=0 at -n 3). The workers take whole files (--dist loadfile) in
# collection order (--no-loadscope-reorder, pyproject.toml): long files first and the many
# short ones last let them finish together, where xdist's own order (most tests first) left
# the long files with few tests to the end and one worker idle for a minute.
LONGEST_FIRST = ("test_existing.py", "test_run.py", "test_tune.py", "test_verdicts.py",
                 "test_workloads.py", "test_tune_workers.py", "test_error_rates.py",
                 "test_report.py", "test_tune_additive.py", "test_clients.py",
                 "test_builds.py", "test_health.py", "test_mysql.py",
                 "test_server_contract.py", "test_digest.py")


def _longest_first(item) -> int:
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items) -> None:
    """The long files first (LONGEST_FIRST). Tests that need a server or sysbench are skipped,
    with what is missing, on a machine without them (scripts/test installs them first); the fast
    tier runs anywhere."""
    items.sort(key=_longest_first)  # stable: each file's tests keep their order
    missing = missing_tools()
    if not missing:
        return
    skip = pytest.mark.skip(reason=f"needs {', '.join(missing)}: run scripts/test, which "
                            "installs them")
    for item in items:
        if item.get_closest_marker("fast") is None:
            item.add_marker(skip)


def mariadbd_under(root: Path) -> list[int]:
    """pids of running servers (mariadbd, or a build's mysqld) whose command line mentions a
    path under root."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        head = cmdline.split("\0")[:4]  # a build's server runs behind its root's loader
        if any(part.endswith(("mariadbd", "mysqld")) for part in head) and str(root) in cmdline:
            pids.append(int(proc.name))
    return pids


@pytest.fixture(scope="session")
def session_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.getbasetemp().resolve()
    yield root
    deadline = time.monotonic() + 30
    while mariadbd_under(root) and time.monotonic() < deadline:
        time.sleep(0.2)  # servers of killed perflab processes are still shutting down
    leftovers = {pid: _described(pid) for pid in mariadbd_under(root)}
    for pid in leftovers:
        os.kill(pid, signal.SIGKILL)
    assert not leftovers, f"mariadbd processes left running: {leftovers}"


def _described(pid: int) -> str:
    """A process's datadir, state and parent, for the message of a failed clean-up."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return "gone"
    datadir = next((a for a in argv if a.startswith("--datadir=")), "?")
    facts = [line for line in status if line.startswith(("State:", "PPid:", "SigPnd:",
                                                          "ShdPnd:", "SigBlk:"))]
    return " ".join([datadir, *facts])


@pytest.fixture(scope="session", autouse=True)
def state_directory(session_root) -> Path:
    """perflab's per-user state (which lab journals which server's variables) in the session's
    directory, for every perflab the tests start, not in the user's own."""
    path = session_root / f"state-{os.getpid()}"
    os.environ["PERFLAB_STATE_DIR"] = str(path)
    return path


@pytest.fixture(scope="session")
def shared_lab(session_root) -> Lab:
    return Lab(session_root / "shared-lab")


def installed_build(name: str):
    """A server build, installed once per machine (builds are cached between runs, never
    assumed): the test skips, with the reason, where the archives cannot give it."""
    try:
        return builds.install(name, say=lambda _: None)
    except PerflabError as exc:
        pytest.skip(f"the {name} build cannot be installed here: {exc.message}")


@pytest.fixture(scope="session")
def mysql_build():
    return installed_build("mysql-9.7")


@pytest.fixture(scope="session")
def pristine_datadir(session_root) -> Path:
    """A datadir as mariadb-install-db leaves it, installed once per worker. A test whose
    subject is not the install copies it (copy_datadir) instead of installing its own: an
    install is a bootstrap server writing the system tables, ~2 s on a loaded machine, a copy
    a fraction of a second (the test of what the install's bootstrap server leaves alone, in
    test_server, still installs)."""
    datadir = session_root / "pristine" / "data"
    install_datadir(datadir)
    return datadir


def copy_datadir(source: Path, datadir: Path) -> Path:
    """A fresh datadir at `datadir` (not there yet): a copy of `source` (the pristine one, or
    a dataset's snapshot), as a lab copies its snapshots (lab.ServerDir.checkout)."""
    datadir.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", "--reflink=auto", str(source), str(datadir)], check=True)
    return datadir


@pytest.fixture(scope="session")
def seed_lab(shared_lab):
    """seed_lab(root, plan): a new lab at `root` that holds the shared lab's catalog and the
    plan's dataset (prepared in the shared lab once, by the product's own ensure_dataset), as a
    lab that has run before holds them; its results database is its own. For tests of what runs
    in a lab of its own (two hosts, two tune workers, client machines), not of preparing one: a
    new lab's catalog and dataset cost two installs and three server starts (~10 s loaded)."""
    from perflab.load.workloads import resolve
    from perflab.running.backend import ManagedBackend
    from perflab.studies import resolve_plan

    def seed(root: Path, plan: Path) -> Path:
        parsed = resolve_plan(plan)
        workload, baseline = resolve(parsed.workload), parsed.config(parsed.baseline)
        ManagedBackend(parsed, shared_lab, workload, lambda _: None).ensure_dataset(baseline)
        key = workload.config_dataset_key(parsed, baseline)
        copy_datadir(shared_lab.datasets_dir / key, root / "datasets" / key)
        catalog = shared_lab.root / "catalog.json"
        if catalog.exists():  # not cached when the binary's --help said nothing (Lab.catalog)
            shutil.copy2(catalog, root / "catalog.json")
        return root

    return seed


def write_plan(path: Path, name: str, *, configs: str, threads=(1, 2), rounds=2,
               run_seconds=1, warmup_seconds=1, rows=5000, engine="MyISAM",
               workload='name = "oltp_point_select"', run: str = "") -> Path:
    path.write_text(f"""
[study]
name = "{name}"
[dataset]
engine = "{engine}"
rows = {rows}
[workload]
{workload}
[run]
threads = {list(threads)}
warmup_seconds = {warmup_seconds}
run_seconds = {run_seconds}
rounds = {rounds}
{run}
{configs}
""")
    return path


def existing_plan(path: Path, name: str, statements: Path, *, threads=(1, 4),
                  configs: str = "[configs.asis]\n", workload_extra: str = "") -> Path:
    """A plan at `path` for a server perflab did not start: the `sql` workload of the file
    `statements` on its schema appdb as it is, 1-s points with no warm-up, one round."""
    path.write_text(f"""
[study]
name = "{name}"
[dataset]
existing = "appdb"
[workload]
name = "sql"
options = {{ file = "{statements}" {workload_extra}}}
[run]
threads = {list(threads)}
warmup_seconds = 0
run_seconds = 1
rounds = 1
{configs}
""")
    return path


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*PERFLAB, *args], capture_output=True, text=True, timeout=timeout, check=False
    )


def stored_points(lab: Lab, study: str) -> list[dict]:
    if not lab.db_path.exists():
        return []
    db = sqlite3.connect(lab.db_path)
    db.row_factory = sqlite3.Row
    try:
        rows = db.execute("SELECT * FROM points WHERE study = ? ORDER BY id", (study,))
        return [dict(row) for row in rows]
    except sqlite3.OperationalError:  # no tables yet
        return []
    finally:
        db.close()


def server_argvs(lab: Lab, study: str, config: str) -> list[list[str]]:
    """The command lines the study's servers for `config` were started with."""
    db = sqlite3.connect(lab.db_path)
    try:
        rows = db.execute("SELECT s.process_json FROM server_states s JOIN sessions n "
                          "ON n.id = s.session_id WHERE n.study = ? AND s.config = ?",
                          (study, config)).fetchall()
    finally:
        db.close()
    return [json.loads(process)["argv"] for process, in rows]


def wait_for(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


TUNE_PLAN = """
[study]
name = "{name}"
[dataset]
engine = "InnoDB"
rows = 5000
[workload]
name = "oltp_point_select"
[run]
threads = [2]
warmup_seconds = 0
run_seconds = 1
rounds = 1
[configs.default]
[tune]
knobs = {knobs}
final_rounds = 2
final_max_rounds = 2
# the put-back decides in its planned rounds: its budget's rounds are test_verdicts' subject
put_back_time = 0
{extra}
"""


def tune_plan_file(tmp_path: Path, name: str, knobs: str, extra: str = "") -> Path:
    """A tiny tune study: 5,000 InnoDB rows, point selects, 1-s trials at 2 threads."""
    path = tmp_path / f"{name}.toml"
    path.write_text(TUNE_PLAN.format(name=name, knobs=knobs, extra=extra))
    return path


@pytest.fixture
def spinner_elsewhere():
    """A process spinning on one CPU outside this process's tree (its shell parent exits, so
    it is reparented), as another user's work would be; killed by its pid at the end."""
    out = subprocess.run(["sh", "-c", f"{sys.executable} -c 'while True: pass' "
                          ">/dev/null 2>&1 & echo $!"], capture_output=True, text=True,
                         check=True)
    pid = int(out.stdout.strip())
    time.sleep(0.3)  # spinning before the test looks
    try:
        yield pid
    finally:
        os.kill(pid, signal.SIGKILL)
