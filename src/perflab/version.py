"""perflab's version, in one place: the package, the command line and every result's recorded
environment read it here."""

__version__ = "0.1.0"
