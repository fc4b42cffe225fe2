"""Every kind of server a run measures keeps the one contract (server/protocol.py), whoever
started it: a managed server (the host's mariadbd, or the mysql-9.7 build's mysqld) and someone
else's server behind ExistingServer; and so does every backend a run holds (backend.py):
ManagedBackend, on either build, and ExistingBackend."""

from dataclasses import replace

import pytest

from conftest import copy_datadir, write_plan
from perflab.load.workloads import resolve
from perflab.running.backend import Backend, ManagedBackend
from perflab.running.existing_backend import ExistingBackend
from perflab.server.connection import query
from perflab.server.datadir import initialize
from perflab.server.existing import ExistingServer, Journal, Permissions
from perflab.server.managed import ManagedServer, ServerEnvironment
from perflab.server.protocol import Server
from perflab.studies import resolve_plan

KEY_BUFFER = 8 << 20


@pytest.fixture(params=["managed", "existing", "managed mysql-9.7"])
def kind(request, tmp_path, pristine_datadir):
    """(the server under contract, a way to read the real server's key_buffer_size, and
    whether stop() leaves the server running)."""
    environment = ServerEnvironment()
    if request.param == "managed mysql-9.7":
        environment = ServerEnvironment(build=request.getfixturevalue("mysql_build"))
        initialize(tmp_path / "data", environment.build)
    else:
        copy_datadir(pristine_datadir, tmp_path / "data")
    real = ManagedServer(tmp_path / "data", tmp_path, {"key_buffer_size": str(KEY_BUFFER)},
                         environment)
    real.start()
    try:
        if request.param.startswith("managed"):
            yield real, real, False
        else:
            existing = ExistingServer(real.endpoint, Journal(tmp_path),
                                      Permissions(set_variables=True))
            yield existing, real, True
    finally:
        real.stop()


def key_buffer(real: ManagedServer) -> int:
    with real.connect() as conn:
        return int(query(conn, "SELECT @@GLOBAL.key_buffer_size")[0][0])


def test_a_server_connects_changes_reports_and_is_left_as_found(kind):
    server, real, keeps_running = kind
    assert isinstance(server, Server)
    with server.connect() as conn:
        assert query(conn, "SELECT 1")[0][0] == 1
    assert not server.died()
    facts = server.facts()
    assert facts["connection"] == server.endpoint.describe()["where"]
    server.set_global({"key_buffer_size": str(16 << 20)})
    assert key_buffer(real) == 16 << 20
    server.stop()
    if keeps_running:  # someone else's: running, and as it was
        assert key_buffer(real) == KEY_BUFFER
    else:  # perflab's own: shut down
        assert not real.alive()


# -- the backend a run holds (backend.py): managed servers, or someone else's ------------------

SMALL = str(16 << 20)


@pytest.fixture(params=["managed", "existing", "managed mysql-9.7"])
def backend(request, tmp_path, shared_lab, pristine_datadir):
    """(a run's backend with one configuration "small", a way to read the measured
    server's key_buffer_size, the value it had before)."""
    name = f"contract-{request.param.replace(' ', '-')}"
    configs = f'[configs.small]\nkey_buffer_size = "{SMALL}"\n'
    if request.param == "managed mysql-9.7":
        configs += f'server = "{request.getfixturevalue("mysql_build").name}"\n'
    if request.param.startswith("managed"):
        plan = resolve_plan(str(write_plan(tmp_path / "plan.toml", name, configs=configs)))
        made = ManagedBackend(plan, shared_lab, resolve(plan.workload), lambda _: None)
        try:
            yield made, lambda: key_buffer(made.server), None
        finally:
            made.stop()
        return
    copy_datadir(pristine_datadir, tmp_path / "data")
    real = ManagedServer(tmp_path / "data", tmp_path, {"key_buffer_size": str(KEY_BUFFER)})
    real.start()
    try:
        statements = tmp_path / "statements.toml"
        statements.write_text('[[statements]]\nsql = "SELECT COUNT(*) FROM mysql.db"\n')
        plan = resolve_plan(str(write_plan(
            tmp_path / "plan.toml", name, configs=configs,
            workload=f'name = "sql"\noptions = {{ file = "{statements}" }}')))
        plan = replace(plan, dataset=replace(plan.dataset, existing="mysql"))
        existing = ExistingServer(real.endpoint, Journal(tmp_path),
                                  Permissions(set_variables=True))
        yield (ExistingBackend(existing, plan, resolve(plan.workload), lambda _: None),
               lambda: key_buffer(real), KEY_BUFFER)
    finally:
        real.stop()


def test_a_side_checks_applies_and_puts_back_a_configuration(backend):
    made, measured_key_buffer, before = backend
    assert isinstance(made, Backend)
    assert "key_buffer_size" in made.catalog.variables
    assert made.options["small"]["key_buffer_size"] == SMALL
    assert made.schedule()[0] == "serial"  # one configuration
    config = made.plan.config("small")
    made.ensure_dataset(config)
    assert made.activate(config) in ("start", "set")
    assert measured_key_buffer() == int(SMALL)
    assert made.activate(config) is None  # it runs it already: no warm-up due
    assert made.death_report() is None
    server = made.server
    made.stop()
    if before is None:  # perflab's own: shut down
        assert made.server is None and not server.alive()
    else:  # someone else's: its variable as it was
        assert measured_key_buffer() == before
