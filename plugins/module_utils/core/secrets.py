# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Keys that look like secrets, refused wherever the collection keeps data: the history, plan files, model files,
datasets. No secret ever reaches one of them.

Standard library only: this file is shipped to managed nodes.
"""

from __future__ import annotations

import re

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError

SECRET_WORDS = ("password", "passwd", "secret", "token", "key_password", "masterauth", "requirepass", "auth")
_STRONG_SECRET = ("password", "passwd", "secret", "masterauth", "requirepass")
_WEAK_SECRET = ("token", "auth", "pass")
_NOT_SECRET = ("initial_token",)


class SecretError(CoreError, ValueError):
    """A value refused because its key looks like a secret; the message names the key."""


def _words(key):
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", key)
    return [word for word in re.split(r"[^a-z0-9]+", spaced.lower()) if word]


def looks_like_secret(key):
    """True when a configuration key looks like it holds a secret (password, token, requirepass, ...)."""
    words = _words(str(key))
    if not words or "_".join(words) in _NOT_SECRET:
        return False
    joined = "".join(words)
    return any(word in joined for word in _STRONG_SECRET) or words[-1] in _WEAK_SECRET


def check_no_secrets(value, field, error=SecretError, holder="the history never stores"):
    """Raise error naming the first key under value (dicts and lists, recursively) that looks secret; the message
    says who never keeps secrets (holder: "the history never stores", "a plan file never holds", ...)."""
    if isinstance(value, dict):
        for key, item in value.items():
            name = "%s.%s" % (field, key)
            if looks_like_secret(key):
                raise error(
                    "%s: looks like a secret and %s secrets; keys refused match: %s"
                    % (name, holder, ", ".join(SECRET_WORDS))
                )
            check_no_secrets(item, name, error, holder)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            check_no_secrets(item, "%s[%d]" % (field, index), error, holder)
