"""Which server a version names (no server needed): every heading names it through here."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.server.flavor import flavor_of, server_label

pytestmark = pytest.mark.fast


@pytest.mark.parametrize(("version", "comment", "label"), [
    ("10.11.19-MariaDB-0+deb12u1", "Debian 12", "MariaDB 10.11.19"),
    ("11.8.3-MariaDB-1", "", "MariaDB 11.8.3"),
    ("9.7.4", "MySQL Community Server - GPL", "MySQL 9.7.4"),
    ("8.0.36-28", "Percona Server (GPL), Release 28", "Percona Server 8.0.36"),
    ("8.4.3-0ubuntu0.24.04.1", "(Ubuntu)", "MySQL 8.4.3"),
])
def test_a_server_is_named_by_what_it_says(version, comment, label):
    assert server_label(version, comment) == label


@given(st.tuples(st.integers(0, 99), st.integers(0, 99), st.integers(0, 99)), st.text(max_size=12))
def test_a_version_that_does_not_say_mariadb_is_never_called_mariadb(release, suffix):
    version = ".".join(map(str, release)) + ("-" + suffix if suffix else "")
    flavor = flavor_of(version)
    assert flavor.mariadb == ("mariadb" in version.lower())
    assert flavor.release == release
    # the my.cnf section a tuned answer goes under: MySQL reads no [mariadbd]
    assert flavor.option_group == ("mariadbd" if flavor.mariadb else "mysqld")
