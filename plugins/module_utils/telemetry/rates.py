# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Counters turned into rates per second over windows.

Standard library only: this file is shipped to managed nodes. Stores report monotonically increasing counters
(operations served, cache hits, CPU ticks). A ``RateTracker`` holds successive snapshots of such counters and
turns them into rates per second over several windows (5 s, 30 s and 5 min by default). It survives a fresh
process per call through ``to_dict``/``from_dict``. Bad input raises ``RateError`` (a ValueError) naming the field.
"""

from __future__ import annotations

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TelemetryError
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry.samples import (
    check_name,
    check_number,
    is_number,
)

DEFAULT_WINDOWS = (5.0, 30.0, 300.0)
DEFAULT_TOLERANCE = 0.2
DEFAULT_MAX_SNAPSHOTS = 4096
RATE_TRACKER_SCHEMA = "tactician.rate_tracker/v1"


class RateError(TelemetryError, ValueError):
    """Windows, times or counters a rate cannot be computed from; the message names the field."""


def window_label(seconds):
    """5 -> '5s', 30 -> '30s', 300 -> '5m', 3600 -> '1h'."""
    if seconds >= 3600 and seconds % 3600 == 0:
        return "%dh" % (seconds // 3600)
    if seconds >= 60 and seconds % 60 == 0:
        return "%dm" % (seconds // 60)
    return "%gs" % seconds


class RateTracker:
    """Successive snapshots of monotonically increasing counters, turned into rates per second over windows.

    ``add(time, counters)`` records a snapshot. The rate over a window W is taken at the newest snapshot
    (time t): the start is the held snapshot nearest to t - W, at most ``tolerance`` * W away from it; the
    rate is the increase between the two divided by their actual distance in time (``span_s``).

    - A counter that goes down was reset (the server restarted): its new value is the increase since the
      restart. Increases lost between the last snapshot before a restart and the restart itself cannot be
      seen; the window lists the counters that reset in ``resets``.
    - When no snapshot lies near t - W the rate is None with a reason: ``too short`` when the history held
      does not reach back that far, ``gap`` when snapshots are missing around t - W.
    - Snapshots older than the longest window (plus tolerance) are dropped, and at most ``max_snapshots``
      are kept, so the serialised form stays small.
    """

    def __init__(self, windows=DEFAULT_WINDOWS, tolerance=DEFAULT_TOLERANCE, max_snapshots=DEFAULT_MAX_SNAPSHOTS):
        windows = list(windows)
        if not windows:
            raise RateError("windows: give at least one window length in seconds, e.g. 5, 30, 300")
        for index, window in enumerate(windows):
            check_number("windows[%d]" % index, window, error=RateError)
            if window <= 0:
                raise RateError("windows[%d]: %r must be above 0 seconds" % (index, window))
        labels = [window_label(window) for window in windows]
        if len(set(labels)) != len(labels):
            raise RateError("windows: %r has the same window twice" % (windows,))
        check_number("tolerance", tolerance, minimum=0, error=RateError)
        if tolerance >= 1:
            raise RateError("tolerance: %r must be below 1 (a fraction of the window)" % (tolerance,))
        if not isinstance(max_snapshots, int) or isinstance(max_snapshots, bool) or max_snapshots < 2:
            raise RateError("max_snapshots: %r is not an integer of at least 2" % (max_snapshots,))
        self.windows = sorted(float(window) for window in windows)
        self.tolerance = float(tolerance)
        self.max_snapshots = max_snapshots
        self._snapshots = []

    # -- recording -------------------------------------------------------------------------------------------

    def add(self, time, counters):
        """Record the counters read at time (unix seconds). Times must increase."""
        check_number("time", time, error=RateError)
        if self._snapshots and time <= self._snapshots[-1][0]:
            raise RateError(
                "time: %r is not after the last snapshot (%r); snapshots must come in time order"
                % (time, self._snapshots[-1][0])
            )
        if not isinstance(counters, dict):
            raise RateError("counters: %r is not a mapping of counter name to value" % (counters,))
        values = {}
        for name, value in counters.items():
            check_name("counters key", name, error=RateError)
            check_number("counters.%s" % name, value, minimum=0, error=RateError)
            values[name] = value
        self._snapshots.append((time, values))
        self._prune()

    def _prune(self):
        horizon = self._snapshots[-1][0] - self.windows[-1] * (1 + self.tolerance)
        keep = [snap for snap in self._snapshots if snap[0] >= horizon]
        self._snapshots = keep[-self.max_snapshots :]

    @property
    def snapshots(self):
        """The snapshots held, oldest first, as (time, {name: value})."""
        return [(time, dict(values)) for time, values in self._snapshots]

    @property
    def latest(self):
        """Time of the newest snapshot, or None."""
        return self._snapshots[-1][0] if self._snapshots else None

    # -- rates -----------------------------------------------------------------------------------------------

    def _window(self, window):
        if isinstance(window, str):
            for known in self.windows:
                if window_label(known) == window:
                    return known
        elif is_number(window) and float(window) in self.windows:
            return float(window)
        raise RateError(
            "window: %r is not tracked; allowed: %s" % (window, ", ".join(window_label(w) for w in self.windows))
        )

    def rate(self, window, since=None):
        """Rates over one window (seconds or label such as '30s'): a dict with window_s, start, end, span_s,
        points (snapshots inside), rates {name: per second or None}, reason (None when computed), resets and
        missing (counters absent at the start). since: start at the first snapshot held at or after that time
        instead (an observation's own first snapshot: its span is what it is, however late a loaded node
        answered)."""
        window = self._window(window)
        result = {
            "window_s": window,
            "start": None,
            "end": None,
            "span_s": None,
            "points": 0,
            "rates": {},
            "reason": None,
            "resets": [],
            "missing": [],
        }
        snaps = self._snapshots
        if not snaps:
            result["reason"] = "too short: no snapshot yet"
            return result
        end_time, end_values = snaps[-1]
        result["end"] = end_time
        result["rates"] = dict.fromkeys(sorted(end_values))
        if len(snaps) < 2:
            result["reason"] = "too short: 1 snapshot, a rate needs two about %gs apart" % window
            return result
        target = end_time - window
        slack = window * self.tolerance
        best = None
        if since is not None:
            best = next((i for i in range(len(snaps) - 1) if snaps[i][0] >= since), None)
            if best is None:
                result["reason"] = "too short: no two snapshots since t-%gs" % (end_time - since)
                return result
        for index in range(len(snaps) - 1) if since is None else ():
            distance = abs(snaps[index][0] - target)
            if distance <= slack and (best is None or distance < abs(snaps[best][0] - target)):
                best = index
        if best is None:
            covered = end_time - snaps[0][0]
            if snaps[0][0] > target + slack:
                result["reason"] = "too short: the snapshots held cover %gs of the %gs window" % (covered, window)
            else:
                before = max(t for t, _v in snaps if t < target)
                after = min(t for t, _v in snaps if t > target)
                result["reason"] = "gap: no snapshot within %gs of t-%gs; nearest at t-%gs and t-%gs" % (
                    slack,
                    window,
                    end_time - before,
                    end_time - after,
                )
            return result
        start_time, start_values = snaps[best]
        span = end_time - start_time
        inside = snaps[best:]
        result.update(start=start_time, span_s=span, points=len(inside))
        for name in result["rates"]:
            if name not in start_values:
                result["missing"].append(name)
                continue
            increase, reset = _increase(name, inside)
            if reset:
                result["resets"].append(name)
            result["rates"][name] = increase / span
        return result

    def rates(self):
        """Rates over every window, keyed by window label ('5s', '30s', '5m')."""
        return {window_label(window): self.rate(window) for window in self.windows}

    # -- persistence -----------------------------------------------------------------------------------------

    def to_dict(self):
        """A JSON-serialisable form (schema tactician.rate_tracker/v1)."""
        return {
            "schema": RATE_TRACKER_SCHEMA,
            "windows": list(self.windows),
            "tolerance": self.tolerance,
            "max_snapshots": self.max_snapshots,
            "snapshots": [[time, dict(values)] for time, values in self._snapshots],
        }

    @classmethod
    def from_dict(cls, data):
        """Rebuild a tracker from to_dict() output; raises RateError naming the bad field."""
        if not isinstance(data, dict):
            raise RateError("tracker: %r is not a mapping" % (data,))
        if data.get("schema") != RATE_TRACKER_SCHEMA:
            raise RateError("schema: %r is not supported; allowed: %s" % (data.get("schema"), RATE_TRACKER_SCHEMA))
        tracker = cls(
            windows=data.get("windows", DEFAULT_WINDOWS),
            tolerance=data.get("tolerance", DEFAULT_TOLERANCE),
            max_snapshots=data.get("max_snapshots", DEFAULT_MAX_SNAPSHOTS),
        )
        snapshots = data.get("snapshots", [])
        if not isinstance(snapshots, list):
            raise RateError("snapshots: %r is not a list of [time, counters]" % (snapshots,))
        for index, snap in enumerate(snapshots):
            if not isinstance(snap, (list, tuple)) or len(snap) != 2:
                raise RateError("snapshots[%d]: %r is not [time, counters]" % (index, snap))
            tracker.add(snap[0], snap[1])
        return tracker


def _increase(name, snapshots):
    """Increase of one counter over the snapshots (oldest first), and whether it reset on the way.

    Between resets the increase is last - first of the segment (exact for exact inputs); after a reset the
    segment starts from 0, since the value read is the increase since the restart."""
    base = prev = snapshots[0][1][name]
    increase = 0
    reset = False
    for _time, values in snapshots[1:]:
        value = values.get(name)
        if value is None:
            continue
        if value < prev:
            increase += prev - base
            base = 0
            reset = True
        prev = value
    return increase + (prev - base), reset
