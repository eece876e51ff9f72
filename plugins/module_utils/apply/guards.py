# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What a roll watches besides the node it changes (docs/rolling.md, "Guards").

- Right before a node stops, the whole cluster: every other node up as every node sees it (the store's own checks,
  in the node objects), and the client-visible signals (``wait_calm``): the worst p99 latency and the error rate the
  clients see, waited on while above the thresholds of a ``GuardPolicy``, and the roll stopped when they stay above
  them longer than its ``max_wait_s``.
- While the node is down, its peers (``PeerWatch``): a peer seen down in ``peer_down_polls`` polls in a row ends the
  step at once (``PeerDownError``), instead of waiting the rejoin timeout for a node that is not the one changed.

Store-neutral: the node objects give the signals and the views; this module only judges and waits, so it runs on
fakes in the tests.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ApplyError


class GuardError(ApplyError, ValueError):
    """A guard setting is out of range (names the field and the allowed values)."""


class ClusterNotReady(ApplyError):
    """The cluster is not ready for the next stop; nothing was stopped. kind: "cluster not ready" (a node down or
    not answering, hints pending), "client guard" (client signals above the thresholds for too long) or "failover"
    (a Redis master with no replica in sync, or its replica lost during the failover); seen: what was seen."""

    def __init__(self, message, seen=None, kind="cluster not ready"):
        super().__init__(message)
        self.seen = seen or {}
        self.kind = kind

    def report(self):
        return dict(self.seen, stopped=self.kind)


class PeerDownError(ApplyError):
    """Another node than the one being changed went down during its step. peers: {address: evidence}."""

    def __init__(self, peers, during):
        self.peers = dict(peers)
        super().__init__(
            "%s went down %s (%s)"
            % (
                ", ".join(sorted(self.peers)),
                during,
                "; ".join("%s: %s" % item for item in sorted(self.peers.items())),
            )
        )


@dataclass(frozen=True)
class GuardPolicy:
    """The roll's client-visible thresholds (module option ``guard``; inventory variables tactician_rolling_*).

    p99_ms: the worst p99 latency of reads and writes the clients may see (Cassandra: the coordinators' ClientRequest
    latency; Redis: the mean time per command, which Redis keeps instead of recent percentiles), None for no limit;
    error_rate: the share of client requests that may fail (Cassandra: timeouts, unavailables and failures; Redis:
    failed or rejected calls less MOVED/ASK redirections, and refused connections), None for no limit;
    max_wait_s: how long the signals may stay above before the roll stops; interval_s: seconds between two reads
    of the signals; peer_down_polls: polls in a row that must see a peer down before the step stops for it;
    min_ops_per_s: the requests per second below which a node's p99 (and the cluster's error rate) is not judged -
    a percentile of a handful of requests, such as the first ones after a restart, is no client signal;
    max_lag_s (MongoDB): how far behind its primary a secondary may be, before and after each member's change."""

    p99_ms: float | None = 500.0
    error_rate: float | None = 0.01
    max_wait_s: float = 300.0
    interval_s: float = 5.0
    peer_down_polls: int = 2
    min_ops_per_s: float = 10.0
    max_lag_s: float = 10.0

    def __post_init__(self):
        if self.p99_ms is not None:
            checks.number("guard.p99_ms", self.p99_ms, GuardError, above=0.0)
        if self.error_rate is not None:
            checks.number("guard.error_rate", self.error_rate, GuardError, minimum=0.0)
            if self.error_rate > 1.0:
                raise GuardError("guard.error_rate: %r is above 1; allowed: 0 to 1 (a share)" % (self.error_rate,))
        checks.number("guard.max_wait_s", self.max_wait_s, GuardError, minimum=0.0)
        checks.number("guard.interval_s", self.interval_s, GuardError, above=0.0)
        checks.whole("guard.peer_down_polls", self.peer_down_polls, GuardError, minimum=1)
        checks.number("guard.min_ops_per_s", self.min_ops_per_s, GuardError, minimum=0.0)
        checks.number("guard.max_lag_s", self.max_lag_s, GuardError, above=0.0)

    @classmethod
    def from_dict(cls, data):
        """A policy from a mapping (None or {}: the defaults; a key given as None keeps its default, except the two
        thresholds, where None turns the limit off); unknown keys are refused by name."""
        data = dict(data or {})
        for key in [k for k, v in data.items() if v is None and k not in ("p99_ms", "error_rate")]:
            del data[key]
        return checks.options(cls, data, GuardError, "guard")

    def to_dict(self):
        return asdict(self)


def breaches(signals, policy):
    """The thresholds the cluster-wide signals break, as sentences (empty: within every threshold).

    signals: {"p99_ms", "error_rate"} (either may be None: not known, never a breach)."""
    found = []
    p99 = signals.get("p99_ms")
    if policy.p99_ms is not None and p99 is not None and p99 > policy.p99_ms:
        found.append("p99 latency %.1f ms above %.1f ms" % (p99, policy.p99_ms))
    rate = signals.get("error_rate")
    if policy.error_rate is not None and rate is not None and rate > policy.error_rate:
        found.append("client error rate %.2f %% above %.2f %%" % (100.0 * rate, 100.0 * policy.error_rate))
    return found


def combine(per_node, min_ops_per_s=0.0):
    """Cluster-wide signals from each node's {"p99_ms", "ops_per_s", "errors_per_s"} (or {"error": text}): the worst
    p99 of the nodes serving at least min_ops_per_s (the slowest coordinator the clients meet), and the errors over
    every request when the cluster serves at least that many (None: too few requests to judge)."""
    answered = {node: s for node, s in per_node.items() if "error" not in s}
    busy = [s for s in answered.values() if float(s.get("ops_per_s") or 0.0) >= min_ops_per_s]
    p99s = [s["p99_ms"] for s in busy if s.get("p99_ms") is not None]
    ops = sum(float(s.get("ops_per_s") or 0.0) for s in answered.values())
    # a node whose errors are not known (errors_per_s None) counts for the p99 and the ops, not the error rate
    counted = [s for s in answered.values() if s.get("errors_per_s", 0.0) is not None]
    errors = sum(float(s.get("errors_per_s") or 0.0) for s in counted)
    total = sum(float(s.get("ops_per_s") or 0.0) for s in counted) + errors
    return dict(
        p99_ms=round(max(p99s), 3) if p99s else None,
        ops_per_s=round(ops, 3),
        errors_per_s=round(errors, 3),
        error_rate=round(errors / total, 6) if total > 0 and total >= min_ops_per_s else None,
        nodes=dict(per_node),
    )


def wait_calm(read_signals, policy, what, clock=time.monotonic, sleep=time.sleep):
    """Wait until the client-visible signals are within the policy's thresholds.

    read_signals() -> the cluster's signals (combine()), or None while not yet known (a first read that only sets a
    baseline). Returns {"waited", "signals", "above_s"}; raises ClusterNotReady naming the signals when they stayed
    above the thresholds (or unknown) for longer than max_wait_s. what: the stop it guards, for the message."""
    if policy.p99_ms is None and policy.error_rate is None:
        return dict(waited=0.0, signals=None, above_s=0.0, checked=False)
    start = clock()
    last, found = None, []
    while True:
        signals = read_signals()
        waited = clock() - start
        if signals is not None:
            last = signals
            found = breaches(signals, policy)
            if not found:
                return dict(waited=round(waited, 3), signals=signals, above_s=round(waited, 3), checked=True)
        if waited >= policy.max_wait_s:
            reason = "; ".join(found) if found else "the client signals could not be read"
            raise ClusterNotReady(
                "before %s: %s for %.0f s, longer than the %.0f s allowed (guard.max_wait_s)"
                % (what, reason, waited, policy.max_wait_s),
                dict(signals=last, waited=round(waited, 3)),
                kind="client guard",
            )
        sleep(policy.interval_s)


class PeerWatch:
    """Peers seen down, poll after poll: a peer is down once seen so in policy.peer_down_polls polls in a row."""

    def __init__(self, polls):
        self.polls = polls
        self.streak = {}
        self.evidence = {}

    def update(self, down):
        """down: {peer: evidence} seen in this poll. Returns {peer: evidence} of the peers now confirmed down."""
        for peer in list(self.streak):
            if peer not in down:
                del self.streak[peer]
        for peer, evidence in down.items():
            self.streak[peer] = self.streak.get(peer, 0) + 1
            self.evidence[peer] = evidence
        return {peer: self.evidence[peer] for peer, count in self.streak.items() if count >= self.polls}


class SignalLog:
    """The client signals seen while a node is down: the worst of each, and how long they stayed above the
    thresholds in one stretch (for the report, and to stop the roll after the node is back)."""

    def __init__(self, policy, clock=time.monotonic):
        self.policy = policy
        self.clock = clock
        self.worst = dict(p99_ms=None, error_rate=None)
        self.samples = 0
        self.above_since = None
        self.longest_above = 0.0
        self.last_breach = []

    def add(self, signals):
        if signals is None:
            return
        self.samples += 1
        for key in self.worst:
            value = signals.get(key)
            if value is not None and (self.worst[key] is None or value > self.worst[key]):
                self.worst[key] = value
        found = breaches(signals, self.policy)
        now = self.clock()
        if found:
            self.last_breach = found
            if self.above_since is None:
                self.above_since = now
            self.longest_above = max(self.longest_above, now - self.above_since)
        else:
            self.above_since = None

    def report(self):
        return dict(
            samples=self.samples,
            worst_p99_ms=self.worst["p99_ms"],
            worst_error_rate=self.worst["error_rate"],
            longest_above_s=round(self.longest_above, 3),
            breach=self.last_breach if self.longest_above > 0 else [],
        )

    def too_long(self):
        return self.samples > 0 and self.longest_above > self.policy.max_wait_s


def time_to_poll(last, interval, clock=time.monotonic):
    """Whether interval seconds have passed since last (None: never polled)."""
    return last is None or clock() - last >= interval
