"""perflab digest: fingerprints, costs and waste findings from MariaDB query logs."""
