# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Reports a person would rather look at than read: PNG plots and a Markdown/HTML page that links them.

- throughput over time (the cluster's observed ops/s and read ratio), with a mark at every applied plan step;
- the gain curve of a plan's switch (seed 001 Fig. 1): ops lost while the roll runs, then gained, with the
  break-even point where the curve crosses zero;
- forecast against what was then observed;
- racing progress: every evaluation's ops/s and the best so far.

Plots use matplotlib's Agg backend (no display). Every function takes data and returns what it wrote, so the
report module and the demo share them.
"""

from __future__ import annotations

import datetime
import html
import os

from ansible_collections.tactician.nosql.plugins.module_utils.core import checks, imports
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import PlanningError

matplotlib = imports.optional("matplotlib")
if matplotlib is not None:
    matplotlib.use("Agg")  # files only: no display is needed, whatever the machine has
plt = imports.optional("matplotlib.pyplot")  # None when missing: the report module reports missing_libraries()


class ReportError(PlanningError, ValueError):
    """Bad input to a report; the message names the field."""


def missing_libraries():
    """[(package, reason)] when matplotlib (the plots) cannot be imported."""
    return imports.missing("matplotlib.pyplot")


def _need_plt():
    if plt is None:
        raise ReportError("plots need the Python library matplotlib (pip install matplotlib)")


def _when(value):
    if isinstance(value, (int, float)):
        return datetime.datetime.fromtimestamp(float(value), datetime.UTC)
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            pass
    raise ReportError("time: %r is neither epoch seconds nor an ISO 8601 time" % (value,))


def _save(fig, ax, path, title, dates=False):
    """Title, layout, the PNG written at path, the figure closed; returns path."""
    ax.set_title(title)
    if dates:
        fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def plot_throughput(samples, path, marks=(), title="Throughput over time"):
    """samples: the cluster's workload samples (time, throughput, read_ratio); marks: [(time, label)] of applied
    steps. Writes a PNG at path; returns path."""
    _need_plt()
    if not samples:
        raise ReportError("samples: no workload samples to plot; run observe (or autotune) first")
    times = [_when(s["time"]) for s in samples]
    tput = [checks.number("samples.throughput", s.get("throughput") or 0.0, ReportError) for s in samples]
    ratio = [s.get("read_ratio") for s in samples]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot(times, tput, marker=".", color="tab:blue", label="ops/s")
    ax.set_ylabel("ops/s")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    other = ax.twinx()
    other.plot(
        times, [r if r is not None else float("nan") for r in ratio], color="tab:gray", alpha=0.6, label="read ratio"
    )
    other.set_ylim(0, 1.05)
    other.set_ylabel("read ratio")
    _marks(ax, marks)
    return _save(fig, ax, path, title, dates=True)


def _marks(ax, marks):
    for when, label in marks:
        moment = _when(when)
        ax.axvline(moment, color="tab:red", linestyle="--", alpha=0.8)
        ax.annotate(
            label, (moment, ax.get_ylim()[1] * 0.95), rotation=90, va="top", ha="right", fontsize=7, color="tab:red"
        )


def has_latency_or_cpu(samples):
    """Whether any sample holds a p99 latency or a CPU reading (what plot_latency_cpu draws)."""
    return any(
        (s.get("resources") or {}).get("cpu_pct") is not None
        or any((points or {}).get("p99") is not None for points in (s.get("latency_ms") or {}).values())
        for s in samples
    )


def plot_latency_cpu(samples, path, marks=(), title="p99 latency and CPU over time"):
    """samples: the cluster's workload samples; the p99 latency of each operation that has one (ms, left axis) and
    the CPU in use of the machines (percent, right axis), with marks [(time, label)] of applied steps."""
    _need_plt()
    if not samples:
        raise ReportError("samples: no workload samples to plot; run observe (or autotune) first")
    times = [_when(s["time"]) for s in samples]
    fig, ax = plt.subplots(figsize=(9, 4))
    ops = sorted({op for s in samples for op, points in (s.get("latency_ms") or {}).items() if points.get("p99")})
    for op in ops:
        values = [((s.get("latency_ms") or {}).get(op) or {}).get("p99") for s in samples]
        ax.plot(times, [v if v is not None else float("nan") for v in values], label="p99 %s (ms)" % op)
    ax.set_ylabel("p99 latency (ms)")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    other = ax.twinx()
    cpu = [(s.get("resources") or {}).get("cpu_pct") for s in samples]
    other.plot(times, [v if v is not None else float("nan") for v in cpu], color="tab:gray", alpha=0.6, label="CPU %")
    other.set_ylim(0, 105)
    other.set_ylabel("CPU in use (%)")
    _marks(ax, marks)
    if ops:
        ax.legend(loc="upper left", fontsize=7)
    return _save(fig, ax, path, title, dates=True)


def gain_curve(step, horizon_s=None):
    """(seconds, cumulative ops gained) of a plan step's switch: the roll costs cost_ops over roll_s, then every
    second gains after - before; (break_even_s or None, points)."""
    predicted = step.get("predicted") or {}
    before = predicted.get("ops_per_s_before")
    after = predicted.get("ops_per_s_after")
    if before is None or after is None:
        raise ReportError("steps[].predicted: the step has no ops_per_s_before/after (a tactic step has no gain curve)")
    roll_s = float(step.get("roll_s") or 0.0)
    cost = float(predicted.get("cost_ops") or 0.0)
    rate = float(after) - float(before)
    kept = float(predicted.get("kept_s") or 0.0)
    end = float(horizon_s or max(kept, roll_s * 4, 600.0))
    points = [(0.0, 0.0), (roll_s, -cost)]
    for index in range(1, 41):
        t = roll_s + (end - roll_s) * index / 40.0
        points.append((t, -cost + rate * (t - roll_s)))
    even = roll_s + cost / rate if rate > 0 else None
    return even, points


def plot_gain_curve(step, path, title="Gain of the switch"):
    """The gain curve of one plan step, with its break-even point. Returns (path, break_even_s)."""
    _need_plt()
    even, points = gain_curve(step)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot([p[0] for p in points], [p[1] for p in points], color="tab:green")
    ax.axhline(0, color="black", linewidth=0.8)
    if even is not None:
        ax.axvline(even, color="tab:red", linestyle="--")
        ax.annotate("break-even %.0f s" % even, (even, 0), xytext=(5, 10), textcoords="offset points", color="tab:red")
    ax.set_xlabel("seconds after the switch starts")
    ax.set_ylabel("ops gained (cumulative)")
    ax.grid(alpha=0.3)
    return _save(fig, ax, path, title), even


def plot_forecast(forecast, actual, path, field="read_ratio", title="Forecast against what was observed"):
    """forecast: predict's forecast ({t, fields}); actual: workload samples. Returns path."""
    _need_plt()
    fields = (forecast or {}).get("fields") or {}
    if field not in fields or not forecast.get("t"):
        raise ReportError("forecast.fields.%s: missing; give predict's forecast" % field)
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot([_when(t) for t in forecast["t"]], fields[field], color="tab:orange", label="forecast")
    if actual:
        ax.plot(
            [_when(s["time"]) for s in actual],
            [s.get(field) for s in actual],
            color="tab:blue",
            marker=".",
            label="observed",
        )
    ax.set_ylabel(field.replace("_", " "))
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, ax, path, title, dates=True)


def plot_racing(trials, path, title="Racing progress"):
    """trials: a race's trial history (value per evaluation, in order). Returns path."""
    _need_plt()
    values = [t["value"] for t in trials if isinstance(t, dict) and "value" in t]
    if not values:
        raise ReportError("trials: no evaluations in the race history")
    best = []
    for value in values:
        best.append(max(value, best[-1]) if best else value)
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.scatter(range(1, len(values) + 1), values, s=12, color="tab:blue", label="evaluation")
    ax.step(range(1, len(best) + 1), best, where="post", color="tab:green", label="best so far")
    ax.set_xlabel("evaluation")
    ax.set_ylabel("ops/s")
    ax.legend()
    ax.grid(alpha=0.3)
    return _save(fig, ax, path, title)


def markdown(title, sections):
    """A Markdown page: sections [(heading, lines, image or None)]."""
    out = ["# %s" % title, ""]
    for heading, lines, image in sections:
        out += ["## %s" % heading, ""]
        out += list(lines)
        if image:
            out += ["", "![%s](%s)" % (heading, os.path.basename(image))]
        out.append("")
    return "\n".join(out)


def html_page(title, sections):
    """The same page as HTML (self-contained but for the PNGs next to it)."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>%s</title>" % html.escape(title),
        "<style>body{font-family:sans-serif;max-width:60em;margin:2em auto}pre,code{background:#f4f4f4}"
        "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em}</style></head><body>",
        "<h1>%s</h1>" % html.escape(title),
    ]
    for heading, lines, image in sections:
        parts.append("<h2>%s</h2>" % html.escape(heading))
        if lines:
            parts.append("<ul>%s</ul>" % "".join("<li>%s</li>" % html.escape(line.lstrip("- ")) for line in lines))
        if image:
            parts.append("<img src='%s' alt='%s'>" % (html.escape(os.path.basename(image)), html.escape(heading)))
    parts.append("</body></html>")
    return "\n".join(parts)


def write(out_dir, title, sections):
    """report.md and report.html in out_dir; returns their paths."""
    os.makedirs(out_dir, exist_ok=True)
    md = os.path.join(out_dir, "report.md")
    page = os.path.join(out_dir, "report.html")
    with open(md, "w", encoding="utf-8") as handle:
        handle.write(markdown(title, sections))
    with open(page, "w", encoding="utf-8") as handle:
        handle.write(html_page(title, sections))
    return md, page
