"""perflab digest: fingerprints, costs and waste findings from MariaDB and MySQL query logs."""
