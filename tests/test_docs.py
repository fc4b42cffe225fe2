"""The docs that must not drift from the code: docs/ARCHITECTURE.md names only modules that
exist and stays one page; docs/api.md is the page the API's docstrings give; the README stays
a page a user reads through."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"


def _paths() -> set[str]:
    """Every file and folder of the repository's code, as relative paths ('running/rounds.py',
    'running/', ...), for names given from any folder down."""
    found = set()
    for base in (ROOT / "src" / "perflab", ROOT):
        for path in base.rglob("*"):
            if ".venv" in path.parts or "__pycache__" in path.parts:
                continue
            parts = path.relative_to(base).parts
            suffix = "/" if path.is_dir() else ""
            for start in range(len(parts)):
                found.add("/".join(parts[start:]) + suffix)
    return found


def test_the_architecture_page_is_one_page_naming_modules_that_exist():
    text = ARCHITECTURE.read_text()
    assert len(text.split()) <= 1500
    named = {m for m in re.findall(r"`([\w/.]+)`", text) if m.endswith((".py", ".c", "/"))}
    assert len(named) > 40  # the page names the modules, so this test has something to check
    missing = sorted(named - _paths())
    assert not missing, f"docs/ARCHITECTURE.md names modules that are gone: {missing}"


def test_the_api_page_is_the_one_the_docstrings_give():
    out = subprocess.run([sys.executable, str(ROOT / "scripts" / "api_page.py"), "--check"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


def test_the_readme_is_a_page_a_user_reads_through():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, f"README.md is {len(lines)} lines: at most 200, detail in docs/"
    assert "scripts/demo" in lines[lines.index("```sh") + 1]  # the quick start comes first
