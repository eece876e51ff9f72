# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What benchmarks/run.py makes of each experiment's CSV: the headline table (ours next to the paper's figure) and
the plots. Plain functions of CSV rows; matplotlib (Agg) is imported only to draw."""

from __future__ import annotations

import csv
import os

PAPER_DYNAMIC = {
    "hpc-1": ("+18.9 %", "IRIS Fig. 6, 1 job"),
    "hpc-5": ("+25.7 %", "IRIS Fig. 6, 5 jobs"),
    "hpc-10": ("+0.0 % (identical)", "IRIS Fig. 6, 10 jobs"),
    "abrupt-slow": ("-6.3 % (static 6.3 % above)", "IRIS Fig. 4, MG-RAST"),
    "abrupt-fast": ("-6.3 % (static 6.3 % above)", "IRIS Fig. 4, MG-RAST"),
}
PAPER_NAIVE = {"hpc-10": "-32.9 %", "abrupt-slow": "-61.8 % (MG-RAST)", "abrupt-fast": "-61.8 % (MG-RAST)"}
PAPER_HETERO = {
    ("cassandra", "hpc-1"): "+20 % (Fig. 10, HPC, CL ONE)",
    ("cassandra", "hpc-10"): "+20 % (Fig. 10, HPC, CL ONE)",
    ("cassandra", "abrupt-fast"): "+86 % / +74 % (Fig. 8, MG-RAST)",
    ("redis", "hpc-1"): "+19 % (Fig. 12, Redis HPC)",
    ("redis", "hpc-10"): "+19 % (Fig. 12, Redis HPC)",
}
PAPER_FORECAST = {
    "abrupt-slow": "90.2 / 83.6 / 70.5 / 70.5 % (Table 1 Slow)",
    "abrupt-fast": "44.3 / 39.3 / 47.5 / 39.3 % (Table 1 Fast)",
}
PAPER_NOISE = {
    "forecast": "IRIS Fig. 7: noise slightly reduces the gain",
    "duration": "IRIS Fig. 8: peak at 0, negative beyond -60 s / +80 s",
    "predictor-throughput": "OptimusCloud Fig. 14: falls with noise, steeper",
    "predictor-workload": "OptimusCloud Fig. 14: falls with noise, less steep",
}


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def number(value):
    """A CSV cell as a float (None for an empty or non-numeric cell)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def pct(value, digits=1):
    return "-" if value is None else "%+.*f %%" % (digits, 100.0 * value)


def share(numerator, denominator):
    numerator, denominator = number(numerator), number(denominator)
    if numerator is None or not denominator:
        return None
    return numerator / denominator


def over(numerator, denominator):
    value = share(numerator, denominator)
    return None if value is None else value - 1.0


def trace_of(workload):
    """'hpc-1 (synthetic)' -> ('hpc-1', 'synthetic')."""
    name, _sep, rest = workload.partition(" (")
    return name, rest.rstrip(")") or None


# ------------------------------------------------------------------------------------------------ headlines
def headline_dynamic(rows):
    header = [
        "workload (f_ops)",
        "ours vs static-opt (Markov / oracle)",
        "paper",
        "ours / best (Markov / oracle)",
        "paper",
        "naive vs default",
        "paper",
    ]
    body = []
    for row in rows:
        name, _f = trace_of(row["workload"])
        paper_gain, where = PAPER_DYNAMIC.get(name, ("-", ""))
        body.append(
            [
                row["workload"],
                "%s / %s"
                % (
                    pct(over(row["ours"], row["static_optimized"])),
                    pct(over(row["ours_oracle"], row["static_optimized"])),
                ),
                "%s (%s)" % (paper_gain, where) if where else paper_gain,
                "%.3f / %.3f"
                % (share(row["ours"], row["theoretical_best"]), share(row["ours_oracle"], row["theoretical_best"])),
                ">= 0.905 (Fig. 6)" if name.startswith("hpc") else "-",
                pct(over(row["naive"], row["default"])),
                PAPER_NAIVE.get(name, "below default possible"),
            ]
        )
    return header, body


def headline_scale_out(rows):
    modes = ["rolling", "aggressive", "complete-sets"]
    header = ["nodes", "CL", *("%s vs static" % m for m in modes), "best vs static", "rolling roll s", "paper (Fig. 5)"]
    grouped = {}
    for row in rows:
        grouped.setdefault((int(number(row["nodes"])), row["cl"]), {})[row["mode"]] = row
    body = []
    for (nodes, cl), by_mode in sorted(grouped.items()):
        any_row = next(iter(by_mode.values()))
        body.append(
            [
                str(nodes),
                cl,
                *(pct(number(by_mode[m]["gain_static_from_default"])) if m in by_mode else "-" for m in modes),
                pct(number(any_row["best_vs_static"])),
                "%.0f" % number(by_mode["rolling"]["roll_s"]) if "rolling" in by_mode else "-",
                "rolling falls with N; aggressive near best",
            ]
        )
    return header, body


def headline_hetero(rows):
    systems = ["homogeneous-dynamic", "sophia", "ours (oracle)", "ours (markov)"]
    labels = {
        "homogeneous-dynamic": "homog.-dynamic",
        "sophia": "homog. VM, dynamic config",
        "ours (oracle)": "ours (oracle)",
        "ours (markov)": "ours (Markov)",
    }
    header = ["store", "trace", *("%s vs homog.-static" % labels[s] for s in systems), "ours (oracle) / best", "paper"]
    grouped = {}
    for row in rows:
        grouped.setdefault((row["store"], row["trace"]), {})[row["system"]] = row
    body = []
    for (store, name), by_system in grouped.items():
        ours = by_system.get("ours (oracle)")
        body.append(
            [
                store,
                name,
                *(pct(number(by_system[s]["vs_static"])) if s in by_system else "-" for s in systems),
                "%.3f" % number(ours["ratio_to_best"]) if ours else "-",
                PAPER_HETERO.get((store, name), "-") + "; 0.80-0.90 of best",
            ]
        )
    return header, body


def headline_noise(rows):
    header = ["part", "level", "ours: gain (mean, min..max)", "ours / best", "paper"]
    body = []
    seen = set()
    for row in rows:
        part = row["part"]
        paper = "" if part in seen else PAPER_NOISE.get(part, "-")
        seen.add(part)
        low, high = number(row["gain_min"]), number(row["gain_max"])
        spread = "" if part == "duration" or high is None else " (%s..%s)" % (pct(low), pct(high))
        level = number(row["level"])
        body.append(
            [
                part,
                ("%+d s" % level) if part == "duration" else "%g" % level,
                pct(number(row["gain_mean"])) + spread,
                "%.3f" % number(row["ratio_best"]),
                paper,
            ]
        )
    return header, body


def headline_forecast(rows):
    header = ["workload", "method", "1 / 2 / 5 / 15 min", "lookahead", "paper (ARIMA)"]
    body = []
    for row in rows:
        if row["field"] != "read_ratio" or row["method"] not in ("arima", "markov", "last-value"):
            continue
        cells = [number(row.get(h)) for h in ("1 min", "2 min", "5 min", "15 min")]
        seconds = number(row["lookahead_s"])
        body.append(
            [
                row["workload"],
                row["method"],
                " / ".join("-" if c is None else "%.0f" % (100 * c) for c in cells) + " %",
                "none" if not seconds else "%g min" % (seconds / 60),
                PAPER_FORECAST.get(row["workload"], "-") if row["method"] == "arima" else "",
            ]
        )
    return header, body


def headline_tactic(rows):
    header = ["measure", "ours", "baseline", "ratio", "paper"]
    body = []
    for row in rows:
        base = number(row["baseline_value"])
        body.append(
            [
                row["measure"],
                "%.3f" % number(row["ours"]),
                row["baseline"] + ("" if base is None else " %.3g" % base),
                "-" if number(row["ratio"]) is None else "%.2f" % number(row["ratio"]),
                "PaSTA: < 10 ms per decision" if "time" in row["measure"] else "-",
            ]
        )
    return header, body


HEADLINES = {
    "dynamic": headline_dynamic,
    "scale_out": headline_scale_out,
    "hetero": headline_hetero,
    "noise": headline_noise,
    "forecast_accuracy": headline_forecast,
    "tactic_decision": headline_tactic,
}


def markdown_table(header, body):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in cells) + " |" for cells in body]
    return lines


# ------------------------------------------------------------------------------------------------ plots
def _plt():
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    return plt


def _save(plt, fig, path, title):
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _bars(ax, groups, series, values, ylabel):
    """Grouped bars: values[series][group]."""
    width = 0.8 / max(1, len(series))
    for i, name in enumerate(series):
        xs = [g + (i - (len(series) - 1) / 2.0) * width for g in range(len(groups))]
        ax.bar(xs, [v if v is not None else 0.0 for v in values[name]], width, label=name)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))


def plot_dynamic(rows, out_dir):
    plt = _plt()
    series = {"default": "default", "static-opt": "static_optimized", "naive": "naive", "ours": "ours"}
    series["ours, oracle"] = "ours_oracle"
    groups = [row["workload"] for row in rows]
    values = {name: [share(row[key], row["theoretical_best"]) for row in rows] for name, key in series.items()}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    _bars(ax, groups, list(series), values, "total ops / theoretical best")
    ax.axhline(1.0, color="black", linewidth=0.8)
    return [_save(plt, fig, os.path.join(out_dir, "dynamic.png"), "Dynamic reconfiguration (IRIS Fig. 4-6)")]


def plot_scale_out(rows, out_dir):
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    lines = {}
    for row in rows:
        lines.setdefault("%s, CL %s" % (row["mode"], row["cl"]), []).append(
            (number(row["nodes"]), 100 * number(row["gain_static_from_default"]))
        )
    for label, points in sorted(lines.items()):
        points.sort()
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=label)
    best = {}
    for row in rows:
        best[number(row["nodes"])] = 100 * number(row["best_vs_static"])
    ax.plot(sorted(best), [best[n] for n in sorted(best)], "k--", label="theoretical best")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("nodes")
    ax.set_ylabel("% over static-optimized")
    ax.legend(fontsize=7)
    return [_save(plt, fig, os.path.join(out_dir, "scale_out.png"), "Scale-out (IRIS Fig. 5)")]


SYSTEM_LABELS = {"sophia": "homog. VM, dynamic config", "best": "theoretical best"}


def plot_hetero(rows, out_dir):
    plt = _plt()
    grouped = {}
    systems = []
    for row in rows:
        system = SYSTEM_LABELS.get(row["system"], row["system"])
        grouped.setdefault("%s %s" % (row["store"], row["trace"]), {})[system] = number(row["ratio_to_best"])
        if system not in systems:
            systems.append(system)
    groups = list(grouped)
    values = {s: [grouped[g].get(s) for g in groups] for s in systems}
    fig, ax = plt.subplots(figsize=(10, 4.5))
    _bars(ax, groups, systems, values, "perf/$ / theoretical best")
    return [_save(plt, fig, os.path.join(out_dir, "hetero.png"), "Heterogeneous perf/$ (OptimusCloud Fig. 8-12)")]


def plot_noise(rows, out_dir):
    plt = _plt()
    parts = []
    for row in rows:
        if row["part"] not in parts:
            parts.append(row["part"])
    fig, axes = plt.subplots(1, len(parts), figsize=(4 * len(parts), 3.8), squeeze=False)
    for ax, part in zip(axes[0], parts, strict=True):
        points = [(number(r["level"]), 100 * number(r["gain_mean"])) for r in rows if r["part"] == part]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o")
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_title(part, fontsize=9)
        ax.set_xlabel("actual - predicted (s)" if part == "duration" else "noise level")
        ax.set_ylabel("% gain")
    return [
        _save(plt, fig, os.path.join(out_dir, "noise.png"), "Noise sensitivity (IRIS Fig. 7-8, OptimusCloud Fig. 14)")
    ]


def plot_forecast(rows, out_dir):
    plt = _plt()
    horizons = ["1 min", "2 min", "5 min", "15 min"]
    workloads = []
    for row in rows:
        if row["field"] == "read_ratio" and row["workload"] not in workloads:
            workloads.append(row["workload"])
    fig, axes = plt.subplots(1, max(1, len(workloads)), figsize=(3.2 * max(1, len(workloads)), 3.6), squeeze=False)
    for ax, workload in zip(axes[0], workloads, strict=False):
        for row in rows:
            if row["field"] == "read_ratio" and row["workload"] == workload:
                ys = [number(row.get(h)) for h in horizons]
                ax.plot(
                    range(len(horizons)),
                    [100 * y if y is not None else None for y in ys],
                    marker="o",
                    label=row["method"],
                )
        ax.axhline(70, color="grey", linestyle=":", linewidth=0.8)
        ax.set_xticks(range(len(horizons)))
        ax.set_xticklabels(horizons, fontsize=7)
        ax.set_ylim(0, 105)
        ax.set_title(workload, fontsize=9)
    axes[0][0].set_ylabel("% within 10 % (read ratio)")
    axes[0][-1].legend(fontsize=6)
    return [_save(plt, fig, os.path.join(out_dir, "forecast_accuracy.png"), "Forecast accuracy (IRIS Table 1)")]


def plot_tactic(rows, out_dir):
    plt = _plt()
    times = [r for r in rows if "time" in r["measure"]]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    labels = [r["measure"].replace("decision time, ", "").replace(" (ms)", "") for r in times]
    ax.barh(labels, [number(r["ours"]) for r in times])
    ax.axvline(10.0, color="red", linestyle="--", label="PaSTA: 10 ms")
    ax.set_xscale("log")
    ax.set_xlabel("ms")
    ax.legend(fontsize=7)
    return [_save(plt, fig, os.path.join(out_dir, "tactic_decision.png"), "Tactic decision time (PaSTA)")]


PLOTS = {
    "dynamic": plot_dynamic,
    "scale_out": plot_scale_out,
    "hetero": plot_hetero,
    "noise": plot_noise,
    "forecast_accuracy": plot_forecast,
    "tactic_decision": plot_tactic,
}
