"""Offline stand-in for the get-pip bootstrap script that ansible-test downloads from a host this
project cannot reach: installs pip from the interpreter's bundled wheel (ensurepip), then the packages
ansible-test asks for from the package index with that pip."""

from __future__ import annotations

import subprocess
import sys

IGNORED = {"--no-setuptools", "--no-wheel"}

subprocess.check_call([sys.executable, "-m", "ensurepip", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"] + [a for a in sys.argv[1:] if a not in IGNORED])
