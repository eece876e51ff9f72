# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Digests of files: whether the files a running server was started from changed since.

Standard library only: this file is shipped to managed nodes.
"""

from __future__ import annotations

import hashlib

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import CoreError


class FileError(CoreError):
    """A file that exists could not be read; the message names it."""


def config_digest(paths):
    """sha256 (hex) over the files' bytes, in the given order; a missing file counts as an empty one.

    Each file's content is preceded by its length, so bytes moving from one file to the next change the digest."""
    digest = hashlib.sha256()
    for path in paths:
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise FileError("cannot read %s: %s" % (path, exc)) from exc
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)
    return digest.hexdigest()
