# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""How fast the node's CPU is right now: a probe beside a CPU-bound server, to take the machine's own speed out of a
throughput comparison.

On a shared virtual machine the speed of one CPU is not constant: here a fixed loop ran at about 2,000 or about
4,000 iterations per 3 s on the same CPU within one minute, the machine otherwise idle and no steal time reported
(the host gives the virtual CPU a whole core or half of one). A server whose CPU is saturated does work in
proportion to that speed, so two windows of one configuration differ by up to 2x: the noise floor of any knob.

The probe runs on the server's CPUs: every ``interval`` seconds it times a fixed piece of work (about 0.5 ms of one
CPU, 1 % of it at the default interval) and records (time, work per second). It runs at real-time priority
(SCHED_FIFO 1, as root): it runs the moment it wakes and no server thread preempts it, so the timing is the CPU's
speed and not a wait whose length would depend on how many threads the server's configuration runs (at normal
priority, next to a saturated server with 100 threads, single samples varied 6x). A window's speed is the median
of its samples; its throughput divided by that speed is the work the server did per unit of CPU the machine gave
it, comparable from window to window.

Runs as its own process (``python -m ...trials.speed_probe CPU OUT_FILE``), stopped with SIGTERM.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time

LOOP = 20000
INTERVAL_S = 0.05


def _work():
    began = time.perf_counter()
    for _step in range(LOOP):
        pass
    return time.perf_counter() - began


def probe(cpus, out_path, interval=INTERVAL_S, stop_after=None):
    """Sample the speed of cpus (a set) into out_path, one "time speed" line per sample (speed: loops per
    second, in thousands), until stopped (SIGTERM) or stop_after seconds."""
    os.sched_setaffinity(0, set(cpus))
    try:
        # Real-time priority: the probe runs the moment it wakes and is never preempted by the server's threads,
        # so its timing is the CPU's speed, whatever the server's thread count (root only; else as it is).
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
    except (OSError, AttributeError):
        pass
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(True))
    began = time.time()
    with open(out_path, "a", buffering=1, encoding="utf-8") as handle:
        while not stopping and (stop_after is None or time.time() - began < stop_after):
            seconds = _work()
            handle.write("%.3f %.2f\n" % (time.time(), LOOP / seconds / 1000.0))
            time.sleep(interval)


def read_samples(path):
    """[(unix time, speed)] from a probe's file (lines it could not parse are skipped)."""
    out = []
    try:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                parts = line.split()
                if len(parts) == 2:
                    try:
                        out.append((float(parts[0]), float(parts[1])))
                    except ValueError:
                        continue
    except OSError:
        return []
    return out


def speed_between(samples, start, end):
    """Median speed of the samples taken in [start, end]; None without any."""
    values = [speed for at, speed in samples if start <= at <= end]
    return statistics.median(values) if values else None


class SpeedProbe:
    """The probe as a child process on cpus, writing to path; a context manager that stops it."""

    def __init__(self, cpus, path):
        self.cpus, self.path, self.proc = set(cpus), path, None

    def __enter__(self):
        cpus = ",".join(str(c) for c in sorted(self.cpus))
        code = "import sys; from %s import probe; probe({%s}, sys.argv[1])" % (__name__, cpus)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))
        self.proc = subprocess.Popen([sys.executable, "-c", code, self.path], env=env)
        return self

    def samples(self):
        return read_samples(self.path)

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return False
