"""A lab directory: the results database, prepared datasets and the working server.

    LAB/perflab.sqlite           results (store/)
    LAB/lock                     held while a run uses the lab
    LAB/catalog.json             the host server's variables and engines, cached per version
    LAB/catalog-BUILD.json       a build's (server/builds.py), likewise
    LAB/datasets/KEY/data        a prepared, never-measured datadir (the snapshot), of one build
    LAB/datasets/KEY/dataset.json
    LAB/server/data              slot 0: a working datadir, restored from a snapshot when needed
    LAB/server/state.json        which dataset the slot's datadir holds, and whether it is dirty
    LAB/server/error.log, mysqld.pid, mysqld.sock
    LAB/server-N/...             slot N: more working datadirs, for servers that run side by side
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import time
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from perflab.errors import PerflabError
from perflab.server.builds import HOST, Build
from perflab.server.datadir import initialize
from perflab.server.managed import ManagedServer, ServerEnvironment, start_help
from perflab.server.variables import Catalog, read_catalog, start_options_of
from perflab.store import ResultStore, Study, read_study

# The cached catalog's form: 2 since the options the binary takes at start were read from its
# --help (a catalog cached before lacks them, and is read again)
CATALOG_FORMAT = 2


class ServerDir:
    """A place for one working server: its datadir, run files and state.

    The datadir holds a copy of one dataset; `state.json` says which, and whether it is dirty
    (written to by a workload, or left by a server that crashed) so that it must be restored
    before it is measured again.
    """

    def __init__(self, root: Path, snapshots: Callable[[str], Path]):
        self.root = root
        self.datadir = root / "data"
        self.state_file = root / "state.json"
        self._snapshot = snapshots

    def state(self) -> dict:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return {}

    def set_state(self, **state) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.state_file.write_text(json.dumps({**self.state(), **state}))

    def holds(self, key: str) -> bool:
        """Whether the datadir is a pristine copy of dataset `key`."""
        state = self.state()
        return state.get("dataset") == key and not state.get("dirty") and self.datadir.exists()

    def checkout(self, key: str, say: Callable[[str], None]) -> None:
        """Make the datadir a pristine copy of dataset `key`, unless it already is."""
        if self.holds(key):
            return
        say(f"restoring {self.root.name}'s datadir from the {key} snapshot")
        shutil.rmtree(self.datadir, ignore_errors=True)
        self.root.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["cp", "-a", "--reflink=auto", str(self._snapshot(key)), str(self.datadir)],
            check=True)
        self.set_state(dataset=key, dirty=False)

    def server(self, options: dict[str, str] | None = None,
               environment: ServerEnvironment | None = None) -> ManagedServer:
        return ManagedServer(self.datadir, self.root, options, environment or ServerEnvironment())


class Lab:
    def __init__(self, root: Path):
        self.root = root.resolve()
        if self.root.exists() and not self.root.is_dir():
            raise PerflabError(f"lab {root} is a file, not a directory",
                               hint="give a lab directory (perflab run creates a missing one)")
        self.datasets_dir = self.root / "datasets"

    @property
    def db_path(self) -> Path:
        return self.root / "perflab.sqlite"

    def exists(self) -> bool:
        return self.db_path.exists()

    def store(self) -> ResultStore:
        """The results database, created if missing; use it in a `with` block."""
        self._create()
        return ResultStore(self.db_path)

    def _create(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise PerflabError(f"cannot create lab {self.root}: {exc.strerror}",
                               hint="give a lab directory you can write to",
                               option="lab") from None

    def study(self, name: str | None = None) -> Study:
        """A study of this lab (default: the latest), read whole from the results database."""
        self._require_results()
        with self.store() as store:
            return read_study(store, name, str(self.root))

    def _require_results(self) -> None:
        if not self.exists():
            raise PerflabError(
                f"{self.root} holds no results database",
                hint="run a study first: perflab run key-cache-segments --lab DIR",
            )

    @contextmanager
    def locked(self):
        """Exclusive use of the lab: two runs on one lab would share one server."""
        self._create()
        with open(self.root / "lock", "w") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise PerflabError(
                    f"lab {self.root} is in use by another perflab process",
                    hint="wait for it to finish, or use another lab", option="lab",
                ) from None
            yield

    def slot(self, number: int = 0) -> ServerDir:
        """Working server place `number` (0: LAB/server, N: LAB/server-N)."""
        name = "server" if number == 0 else f"server-{number}"
        return ServerDir(self.root / name, self.snapshot)

    # -- catalog -------------------------------------------------------------------------------

    def catalog(self, build: Build = HOST) -> Catalog:
        """A build's variables and engines, read once from a server started with no options."""
        version = build.version()
        path = self.root / ("catalog.json" if build.is_host else f"catalog-{build.name}.json")
        if path.exists():
            cached = json.loads(path.read_text())
            if cached.get("binary") == version and cached.get("format") == CATALOG_FORMAT:
                return Catalog.from_json(cached["catalog"])
        scratch = self.root / "catalog-server"
        shutil.rmtree(scratch, ignore_errors=True)
        initialize(scratch / "data", build)
        options = start_options_of(start_help(build))
        with ManagedServer(scratch / "data", scratch, environment=ServerEnvironment(build=build)
                           ) as server, server.connect() as conn:
            catalog = read_catalog(conn, options)
        shutil.rmtree(scratch, ignore_errors=True)
        if not options:  # the binary's --help said nothing: read again next time, not cached
            return catalog
        path.write_text(json.dumps({"binary": version, "format": CATALOG_FORMAT,
                                    "catalog": catalog.to_json()}))
        return catalog

    # -- datasets ------------------------------------------------------------------------------

    def snapshot(self, key: str) -> Path:
        return self.datasets_dir / key / "data"

    def snapshot_bytes(self, key: str) -> int:
        """The size of a prepared dataset's datadir (what a copy of it takes)."""
        return sum(p.stat().st_size for p in self.snapshot(key).rglob("*") if p.is_file())

    def ensure_dataset(
        self,
        key: str,
        fill: Callable[[ManagedServer], dict],
        loader_options: dict[str, str],
        say: Callable[[str], None],
        build: Build = HOST,
    ) -> dict:
        """Prepare the dataset once, `fill`ing a new datadir of `build`'s; later calls return
        its description without loading."""
        folder = self.datasets_dir / key
        meta_path = folder / "dataset.json"
        if meta_path.exists():
            return json.loads(meta_path.read_text())
        partial = folder / "data.partial"
        shutil.rmtree(partial, ignore_errors=True)
        say(f"preparing dataset {key} (once; later runs reuse it)")
        initialize(partial, build)
        with ManagedServer(partial, folder, loader_options,
                           ServerEnvironment(build=build)) as server:
            meta = fill(server)
        partial.rename(folder / "data")
        meta = {"key": key, "prepared_at": time.time(), "build": build.name, **meta}
        meta_path.write_text(json.dumps(meta, indent=2))
        return meta
