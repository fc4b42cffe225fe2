"""Which server variables hold a secret, and their values masked.

A lab stores every global variable of the servers it measures and `perflab report` prints them;
a few hold a credential (report_password, wsrep_sst_auth's user:password, the key of
file_key_management, a Vault token) or name the file of a key (ssl_key, des_key_file,
file_key_management_filename). A variable is secret when its name ends with one of the words
below. The rule reads endings, not words anywhere: the tuned key_buffer_size, key_cache_*,
innodb_ft_*_token_size and the policy knobs *_password_lifetime, max_password_errors,
simple_password_check_* stay visible. Two switches end like a secret and are not one.
"""

from __future__ import annotations

MASK = "<redacted>"
SECRET_ENDINGS = ("password", "passwd", "passphrase", "auth", "secret", "secret_key",
                  "access_key", "token", "credentials", "filekey", "ssl_key", "key_file",
                  "private_key_path", "key_management_filename")
SWITCHES = frozenset({"secure_auth", "disconnect_on_expired_password"})  # ON or OFF


def is_secret_variable(name: str) -> bool:
    """Whether the variable's value is a credential or names a key file."""
    name = name.lower()
    if name in SWITCHES:
        return False
    return any(name == ending or name.endswith("_" + ending) for ending in SECRET_ENDINGS)


def masked_variables(variables: dict[str, str]) -> dict[str, str]:
    """The variables with every non-empty secret value masked (an empty one says it is
    unset, which is worth seeing)."""
    return {name: MASK if value and is_secret_variable(name) else value
            for name, value in variables.items()}
