"""Server builds beside the host's own: MySQL and other MariaDB releases, each installed once from
Debian's archives into a private root of its own, and run in place through that root's loader.

A build is a Debian suite's server package unpacked by `mmdebstrap --variant=essential` (apt
verifies the archive's signatures as for any install) into the per-user cache
($PERFLAB_BUILDS_DIR, else $XDG_CACHE_HOME/perflab/builds, else ~/.cache/perflab/builds); once
there it is used offline. Its server binary runs on this machine without chroot: the root's own
dynamic loader starts it with the root's libraries (`ld-linux-x86-64.so.2 --library-path ...`),
and its base, message and plugin directories are the root's. The host's own server (Debian's
mariadb-server, /usr/sbin/mariadbd) is the build named "host", run as the host runs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from perflab.domain import HOST_BUILD
from perflab.errors import PerflabError

# Where a root keeps its dynamic loader: merged-/usr suites (bookworm on) under usr/, older ones
# (bullseye) under lib64/, there an absolute link that must be read inside the root.
LOADERS = ("usr/lib64/ld-linux-x86-64.so.2", "lib64/ld-linux-x86-64.so.2")
LIBRARIES = ("usr/lib/x86_64-linux-gnu", "lib/x86_64-linux-gnu")
# The suite whose Release file is past its Valid-Until date (sid's, on a machine whose archive
# copy is not refreshed) is still signed: apt is told not to hold the date against it.
APT_OPTIONS = ('Acquire::Check-Valid-Until "false"',)


@dataclass(frozen=True)
class Offer:
    """A build the archives serve: its name, the Debian suite and package, the server binary
    inside, and its flavor."""

    name: str
    suite: str
    package: str
    binary: str  # the server, relative to the root
    flavor: str  # "MySQL" or "MariaDB"


OFFERS = {offer.name: offer for offer in (
    Offer("mysql-9.7", "sid", "mysql-server-core", "usr/sbin/mysqld", "MySQL"),
    Offer("mariadb-11.8", "trixie", "mariadb-server-core", "usr/sbin/mariadbd", "MariaDB"),
    Offer("mariadb-10.5", "bullseye", "mariadb-server-core-10.5", "usr/sbin/mariadbd",
          "MariaDB"),
)}
HOST_OFFER = Offer(HOST_BUILD, "bookworm", "mariadb-server", "usr/sbin/mariadbd", "MariaDB")
# The server binaries' names, whichever build: what a server process is known by.
SERVER_NAMES = frozenset(Path(o.binary).name for o in (HOST_OFFER, *OFFERS.values()))


def runs_a_server(argv: list[str]) -> bool:
    """Whether a command line starts a server binary: directly, behind taskset, or behind a
    build's loader (whose process is then named after the loader, not the server)."""
    return any(not arg.startswith("-") and Path(arg).name in SERVER_NAMES for arg in argv)


def builds_directory() -> Path:
    if os.environ.get("PERFLAB_BUILDS_DIR"):
        return Path(os.environ["PERFLAB_BUILDS_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "perflab" / "builds"


@dataclass(frozen=True)
class Build:
    """An installed build: its offer and the root it was unpacked into."""

    offer: Offer
    root: Path

    @property
    def name(self) -> str:
        return self.offer.name

    @property
    def flavor(self) -> str:
        return self.offer.flavor

    @property
    def is_host(self) -> bool:
        return self.root == Path("/")

    @property
    def binary(self) -> Path:
        return self.root / self.offer.binary

    def command(self) -> list[str]:
        """The server binary as this machine runs it: the host's directly, a build's through
        its root's loader, with the root's libraries."""
        if self.is_host:
            return [str(self.binary)]
        libraries = ":".join(str(self.root / path) for path in LIBRARIES)
        return [str(self._loader()), "--library-path", libraries, str(self.binary)]

    def _loader(self) -> Path:
        for relative in LOADERS:
            path = self.root / relative
            for _ in range(8):  # a link's target read inside the root, not on the host
                if not path.is_symlink():
                    break
                target = Path(os.readlink(path))
                path = self.root / target.relative_to("/") if target.is_absolute() \
                    else path.parent / target
            if path.is_file():
                return path
        raise PerflabError(f"the build {self.name} holds no dynamic loader ({', '.join(LOADERS)})",
                           hint=f"perflab servers remove {self.name}, then add it again")

    def share(self) -> Path:
        """The directory of its messages and bootstrap SQL (usr/share/mysql or .../mariadb)."""
        mariadb = self.root / "usr" / "share" / "mariadb"
        return mariadb if mariadb.is_dir() else self.root / "usr" / "share" / "mysql"

    def base_options(self) -> list[str]:
        """The options that point the server at its root (after --no-defaults); none for the
        host's, whose compiled-in directories are its own."""
        if self.is_host:
            return []
        share = "mysql" if self.offer.flavor == "MySQL" else "mariadb"
        options = [f"--basedir={self.root / 'usr'}", f"--lc-messages-dir={self.share()}",
                   f"--plugin-dir={self.root / 'usr' / 'lib' / share / 'plugin'}"]
        if self.offer.flavor == "MySQL":  # no file import/export directory, no X protocol
            options += ["--secure-file-priv=NULL", "--mysqlx=OFF"]
        return options

    def version(self) -> str:
        """What the binary says of itself (`--version`)."""
        try:
            out = subprocess.run([*self.command(), "--version"], capture_output=True, text=True,
                                 check=False, timeout=60)
        except OSError as exc:
            raise PerflabError(f"the build {self.name} does not run on this machine: {exc}",
                               hint=f"perflab servers remove {self.name}, then add it again"
                               ) from None
        if out.returncode != 0:
            raise PerflabError(f"the build {self.name} does not run on this machine "
                               f"(exit code {out.returncode})", detail=out.stderr[-2000:],
                               hint=f"perflab servers remove {self.name}, then add it again")
        return out.stdout.strip()

    def package_version(self) -> str:
        """The Debian version of its package, from the root's dpkg status ("" if unread)."""
        return _package_version(self.root, self.offer.package)

    def describe(self) -> dict[str, str]:
        """The build as every point's environment names it."""
        return {"name": self.name, "flavor": self.flavor, "package": self.offer.package,
                "package_version": self.package_version(), "suite": self.offer.suite,
                "binary": str(self.binary)}


HOST = Build(HOST_OFFER, Path("/"))


@lru_cache(maxsize=16)
def _package_version(root: Path, package: str) -> str:
    """Read once per process: every server start records it, and the host's dpkg status is
    megabytes."""
    try:
        status = (root / "var" / "lib" / "dpkg" / "status").read_text(errors="replace")
    except OSError:
        return ""
    for stanza in status.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in stanza.splitlines()
                      if ": " in line and not line.startswith(" "))
        if fields.get("Package") == package:
            return fields.get("Version", "")
    return ""


def offer(name: str) -> Offer:
    if name not in OFFERS:
        raise PerflabError(f"no server build named {name!r}",
                           hint=f"host (the installed mariadb-server), or one the archives "
                           f"serve: {', '.join(OFFERS)}")
    return OFFERS[name]


def installed() -> list[Build]:
    """The builds in the cache, by name (a partial install is not one)."""
    directory = builds_directory()
    return [Build(OFFERS[name], directory / name) for name in OFFERS
            if (directory / name / OFFERS[name].binary).exists()]


def listing() -> list[str]:
    """A line per build: the host's, then each offered one, installed or not."""
    have = {build.name: build for build in installed()}
    lines = [f"{'host':14} installed  Debian's mariadb-server (/usr/sbin/mariadbd)"]
    for name, wanted in OFFERS.items():
        state = "installed" if name in have else "offered  "
        lines.append(f"{name:14} {state}  Debian {wanted.suite}'s {wanted.package}"
                     + (f" ({have[name].root})" if name in have else ""))
    return lines


def find(name: str) -> Build:
    """An installed build (the host's by "host"), or a PerflabError saying how to install it."""
    if name == HOST.name:
        return HOST
    wanted = offer(name)
    build = Build(wanted, builds_directory() / name)
    if not build.binary.exists():
        raise PerflabError(f"the server build {name} is not installed",
                           hint=f"perflab servers add {name}")
    return build


def install(name: str, say: Callable[[str], None] = print) -> Build:
    """Install one build into the cache (nothing when it is there), its progress said line by
    line; a build the archives do not serve, or that cannot start here, is one error."""
    wanted = offer(name)
    root = builds_directory() / name
    if (root / wanted.binary).exists():
        return Build(wanted, root)
    if shutil.which("mmdebstrap") is None:
        raise PerflabError("installing a server build needs mmdebstrap",
                           hint="apt-get install mmdebstrap (scripts/setup --for-tests does)")
    partial = root.with_name(name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.parent.mkdir(parents=True, exist_ok=True)
    argv = ["mmdebstrap", "--variant=essential", f"--include={wanted.package}",
            *(f"--aptopt={option}" for option in APT_OPTIONS), wanted.suite, str(partial)]
    say(f"installing {name}: Debian {wanted.suite}'s {wanted.package} into {root}")
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    said = []
    for line in process.stdout:
        said.append(line.rstrip())
        if line.startswith("I: "):
            say(f"  {line[3:].rstrip()}")
    if process.wait() != 0:
        shutil.rmtree(partial, ignore_errors=True)
        raise PerflabError(f"the archives did not give {name} ({wanted.package} from "
                           f"{wanted.suite}): mmdebstrap exited {process.returncode}",
                           detail="\n".join(said[-20:]))
    build = Build(wanted, partial)
    if not build.binary.exists():
        shutil.rmtree(partial, ignore_errors=True)
        raise PerflabError(f"{wanted.package} from {wanted.suite} holds no {wanted.binary}")
    build.version()  # it starts here, or the error says why
    partial.rename(root)
    return Build(wanted, root)


def remove(name: str) -> Path:
    """Free a build's space; the directory it was in."""
    root = find(name).root
    shutil.rmtree(root)
    return root
