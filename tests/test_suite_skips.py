"""The suite on a machine without the server or sysbench: the tests that need them are skipped
with what is missing, the fast tier runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

ROOT = Path(__file__).resolve().parent.parent


def test_server_tests_skip_with_the_reason_when_sysbench_is_missing(tmp_path):
    no_tools = {**os.environ, "PATH": str(tmp_path)}  # nothing to find on it: no sysbench
    out = subprocess.run([sys.executable, "-m", "pytest", "-n", "0", "-p", "no:cacheprovider",
                          "-rs", "-q", "tests/test_api.py"], cwd=ROOT, env=no_tools,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "needs sysbench (Debian package sysbench): run scripts/test" in out.stdout
    assert "1 skipped" in out.stdout and " passed" in out.stdout
