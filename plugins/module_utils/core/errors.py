# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The one error root of the engine, and one subclass per layer.

Every error the engine raises on purpose is a TacticianError whose message names the field, the host or the
file at fault and what is allowed, so a module's main() ends in one ``except TacticianError`` and reports the
message as it is. A layer's own errors subclass that layer's class here (CatalogError is a CoreError,
CassandraError a StoreError, ...). Errors that refuse bad input also subclass ValueError, as they always did.

An engine function that catches a lower layer's error lets it pass unless it has something to add (the field
of its own input that led there): then it raises its own error ``from`` the lower one.
"""

from __future__ import annotations

import contextlib


class TacticianError(Exception):
    """Root of every error the collection's engine raises on purpose."""

    def report(self):
        """What a module's failure result carries beside the message (the commands that ran, a node's steps...)."""
        return {}


class CoreError(TacticianError):
    """core/: the parameter catalog, input checks, schemas, processes, files."""


class StoreError(TacticianError):
    """stores/: a store could not be reached, read or changed (connection, auth, TLS, a command refused)."""


class WorkloadError(TacticianError):
    """workload/: a workload specification, a schedule or the load driver."""


class TelemetryError(TacticianError):
    """telemetry/: a workload sample, an observation, the history store."""


class ModelError(TacticianError):
    """models/: forecasts, the resource model, the surrogate, model files, training, the advisor."""


class PlanningError(TacticianError):
    """planning/: a plan (any mode), tuning, racing, the plan file, effects, reports."""


class ApplyError(TacticianError):
    """apply/: the batch rule, the rolling lock, a node's reconfiguration step, config files."""


class TrialError(TacticianError):
    """trials/: a load run or a calibration run on live servers."""


@contextlib.contextmanager
def reported_as(error, what, with_type=False, passing=TacticianError):
    """Inside the block, an exception that is not a TacticianError (a driver's, the operating system's) becomes
    error("<what>: <text>") chained to it, so that a module ends in one ``except TacticianError``; with_type puts
    the exception's class name before its text, what=None leaves the text alone.

    passing: the exception classes that leave the block as they are, every TacticianError unless told. A module
    whose message has always named what it worked on for any error but its own gives a narrower one (its own
    error class, or () for none): the engine's other errors then take the prefix too."""
    try:
        yield
    except passing:
        raise
    except Exception as exc:
        text = "%s: %s" % (type(exc).__name__, exc) if with_type else str(exc)
        raise error(text if what is None else "%s: %s" % (what, text)) from exc


LAYERS = {
    "core": CoreError,
    "stores": StoreError,
    "workload": WorkloadError,
    "telemetry": TelemetryError,
    "models": ModelError,
    "planning": PlanningError,
    "apply": ApplyError,
    "trials": TrialError,
}
"""The error class of each package of module_utils (the tests check every error class subclasses its own)."""
