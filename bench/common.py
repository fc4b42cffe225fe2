"""Shared set-up for perflab's benchmarks: a lab under bench/out with a prepared dataset."""

from __future__ import annotations

import statistics
import sys
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent / "src"))

from perflab.lab import Lab  # noqa: E402
from perflab.load.family import LOADER_OPTIONS  # noqa: E402
from perflab.load.sbtest import SbtestFamily, load_sbtest  # noqa: E402
from perflab.plan import Dataset  # noqa: E402

SBTEST = SbtestFamily({}, "bench")  # the dataset of every benchmark here
from perflab.server.managed import ManagedServer  # noqa: E402


def bench_lab(name: str) -> Lab:
    return Lab(ROOT / "out" / name)


@contextmanager
def dataset_server(lab: Lab, dataset: Dataset, options: dict[str, str] | None = None):
    """A running managed server on a fresh copy of the prepared dataset."""
    key = SBTEST.dataset_key(dataset)
    lab.ensure_dataset(
        key, lambda server: {"load": vars(load_sbtest(server.endpoint, dataset))},
        LOADER_OPTIONS, print,
    )
    slot = lab.slot(0)
    slot.set_state(dirty=True)
    slot.checkout(key, print)
    server: ManagedServer = slot.server(options or {})
    with server:
        yield server


def spread(values: list[float]) -> str:
    """median [min .. max] of a list of figures."""
    return f"{statistics.median(values):.3f} [{min(values):.3f} .. {max(values):.3f}]"
