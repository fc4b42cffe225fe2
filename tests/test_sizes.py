"""Issue 45's limits on the code's size, as scripts/sizes.py measures them from the ast: no class
over 200 lines, no function over 60, no command of the command line over 15 (a command is a
few lines over an API function)."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "sizes.py"


def _sizes_module():
    spec = importlib.util.spec_from_file_location("sizes", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_no_class_function_or_command_is_over_its_limit():
    sizes = _sizes_module()
    classes, functions = sizes.sizes()
    commands = sizes.commands(functions)
    assert len(commands) >= 10  # every command is found: run, report, ..., env
    for found, limit in ((classes, sizes.MAX_CLASS), (functions, sizes.MAX_FUNCTION),
                         (commands, sizes.MAX_COMMAND)):
        over = [f"{lines} {where}" for lines, where in found if lines > limit]
        assert not over, f"over {limit} lines: {over}"


def test_the_measure_counts_a_definitions_decorators_and_body(tmp_path):
    sizes = _sizes_module()
    (tmp_path / "m.py").write_text("@staticmethod\ndef f():\n    a = 1\n    return a\n\n\n"
                                   "class C:\n    x = 1\n")
    classes, functions = sizes.sizes(tmp_path)
    assert [lines for lines, _ in functions] == [4]
    assert [lines for lines, _ in classes] == [2]
