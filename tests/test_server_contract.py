"""Every kind of server a run measures keeps the one contract (server/protocol.py), whoever
started it: a managed mariadbd and someone else's server behind ExistingServer."""

import pytest

from perflab.server.connection import query
from perflab.server.existing import ExistingServer, Journal, Permissions
from perflab.server.managed import ManagedServer, install_datadir
from perflab.server.protocol import Server

KEY_BUFFER = 8 << 20


@pytest.fixture(params=["managed", "existing"])
def kind(request, tmp_path):
    """(the server under contract, a way to read the real server's key_buffer_size, and
    whether stop() leaves the server running)."""
    install_datadir(tmp_path / "data")
    real = ManagedServer(tmp_path / "data", tmp_path, {"key_buffer_size": str(KEY_BUFFER)})
    real.start()
    try:
        if request.param == "managed":
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
