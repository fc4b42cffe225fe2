"""Which server this is, as it says itself: MariaDB or MySQL (or a MySQL build of another
vendor), and its version, from `@@version` and `@@version_comment`. Every output that names a
server names it through here, so that a MySQL server is never called MariaDB.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VENDORS = (("mariadb", "MariaDB"), ("percona", "Percona Server"))


@dataclass(frozen=True)
class Flavor:
    name: str  # "MariaDB", "MySQL", "Percona Server"
    version: str  # the release, "10.11.19" or "9.7.4"
    full: str  # @@version as the server gives it

    @property
    def mariadb(self) -> bool:
        return self.name == "MariaDB"

    @property
    def release(self) -> tuple[int, ...]:
        return tuple(int(part) for part in self.version.split(".") if part.isdigit())

    @property
    def option_group(self) -> str:
        """The my.cnf section its server reads: [mariadbd] is MariaDB's own, [mysqld] every
        flavor's."""
        return "mariadbd" if self.mariadb else "mysqld"

    @property
    def label(self) -> str:
        """"MariaDB 10.11.19", "MySQL 9.7.4": the name and release, for a heading."""
        return f"{self.name} {self.version}"


def flavor_of(version: str, comment: str = "") -> Flavor:
    """The flavor named by a server's @@version (and @@version_comment, when known): a
    version that says MariaDB is MariaDB, any other is MySQL's or a build of it."""
    said = f"{version} {comment}".lower()
    name = next((label for word, label in VENDORS if word in said), "MySQL")
    release = re.match(r"\d+(?:\.\d+)*", version.strip())
    return Flavor(name, release.group(0) if release else version.strip(), version)


def server_label(version: str, comment: str = "") -> str:
    """A stored @@version as a heading names it: "MariaDB 10.11.19", "MySQL 9.7.4"."""
    return flavor_of(version, comment).label
