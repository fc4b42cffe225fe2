"""The type checker over src/ (mypy, configured in pyproject.toml) finds nothing: the suite, and
so CI, fails on the first type error."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast
ROOT = Path(__file__).resolve().parent.parent


def test_the_type_checker_finds_no_error_in_src():
    out = subprocess.run([sys.executable, "-m", "mypy"], cwd=ROOT, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0 and "Success" in out.stdout, out.stdout[-3000:] + out.stderr
