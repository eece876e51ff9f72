#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: report
short_description: A report with plots of what the tuner observed, planned, applied and measured
description:
  - Writes C(report.md) and C(report.html) into O(out_dir), with PNG plots next to them - the cluster's
    throughput and read ratio over time from the history store, a mark at every applied plan step; the realized
    effect of each applied step next to its prediction (from M(tactician.nosql.effect)); per plan file its summary
    and the gain curve of its first switch with the break-even point; the racing progress of a race's trial history.
  - Runs where the files are to be written (the controller in C(playbooks/autotune.yml)). Check mode writes
    nothing and returns the sections it would write.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
requirements:
  - matplotlib
options:
  out_dir:
    description: Directory of the report (created).
    type: path
    required: true
  title:
    description: The report's title.
    type: str
    default: Tactician report
  history:
    description:
      - History store to read the workload samples and the effects from (a file, C(sqlite://), C(postgresql://)).
      - A C(prometheus://host:port?records=...) history gives dense series, a sample at every step (throughput,
        read ratio, p99, CPU), with the effects from its records.
    type: str
  cluster:
    description: Cluster name in the history.
    type: str
  since:
    description: Only samples from this time on (epoch seconds or ISO 8601).
    type: raw
  plan_files:
    description: Plan files to summarize, each with the gain curve of its first switch.
    type: list
    elements: path
    default: []
  forecast_files:
    description:
      - Forecasts to plot against what the history then observed (needs O(history) and O(cluster)), each a JSON
        or YAML file holding the C(forecast) that M(tactician.nosql.predict) returned (C(t) and C(fields)), as
        C(playbooks/autotune.yml) keeps them next to its plans. The read ratio is plotted, and the throughput
        when the forecast has it.
    type: list
    elements: path
    default: []
  race_history:
    description: A race's trial history (JSON lines) to plot.
    type: path
  lines:
    description: Lines to open the report with (what was run, wall time, a verdict).
    type: list
    elements: str
    default: []
attributes:
  check_mode:
    description: Returns the sections; writes nothing.
    support: full
  diff_mode:
    description: No diff is shown.
    support: none
"""

EXAMPLES = r"""
- name: Report of the day
  tactician.nosql.report:
    out_dir: "{{ tactician_lab_dir }}/reports/{{ now(utc=true, fmt='%Y%m%d') }}"
    history: "{{ tactician_lab_dir }}/history.sqlite3"
    cluster: cassandra
    plan_files: "{{ query('ansible.builtin.fileglob', tactician_lab_dir ~ '/plans/cassandra-2*.yml') }}"
"""

RETURN = r"""
report:
  description: Paths of C(report.md) and C(report.html).
  returned: success and not in check mode
  type: dict
images:
  description: The PNG files written.
  returned: success
  type: list
  elements: str
sections:
  description: Headings and lines of the report.
  returned: success
  type: list
  elements: dict
"""

import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports
from ansible_collections.tactician.nosql.plugins.module_utils.planning import effects, racing, report
from ansible_collections.tactician.nosql.plugins.module_utils.planning import plan_file as planfile
from ansible_collections.tactician.nosql.plugins.module_utils.telemetry import history as history_store


def build(p, write):
    """(sections, images) of the report; PNGs written only when write."""
    sections, images = [], []
    if p["lines"]:
        sections.append(("Run", ["- %s" % line for line in p["lines"]], None))
    if p["history"]:
        if not p["cluster"]:
            raise report.ReportError("cluster: needed to read the history")
        store = history_store.open_history(p["history"], create=False, readonly=True)
        try:
            samples = store.samples(cluster=p["cluster"], node="cluster", since=p["since"], last=0)
            records = effects.effects(store, p["cluster"])
        finally:
            store.close()
        marks = []
        for record in records:
            window = (record["measured"].get("windows") or [{}, {}])[1]
            if record["applied"] and window.get("time") is not None:
                marks.append((float(window["time"]) - float(window.get("window_s") or 0.0), "step applied"))
        path = os.path.join(p["out_dir"], "throughput.png")
        lines = ["- %d samples of cluster %s" % (len(samples), p["cluster"])]
        if samples and write:
            images.append(report.plot_throughput(samples, path, marks=marks, title="%s: throughput" % p["cluster"]))
        sections.append(("Throughput over time", lines, path if samples else None))
        if report.has_latency_or_cpu(samples):
            path = os.path.join(p["out_dir"], "latency-cpu.png")
            if write:
                images.append(
                    report.plot_latency_cpu(samples, path, marks=marks, title="%s: p99 and CPU" % p["cluster"])
                )
            source = "Prometheus" if any((s.get("extra") or {}).get("source") == "prometheus" for s in samples) else ""
            lines = [
                "- the p99 latency of each operation and the machines' CPU in use%s"
                % (" (read from %s at every step)" % source if source else "")
            ]
            sections.append(("Latency and CPU over time", lines, path))
        for number, forecast_path in enumerate(p["forecast_files"]):
            sections.extend(_forecast_sections(forecast_path, number, samples, p["out_dir"], write, images))
        if records:
            sections.append(
                ("Realized effect against the prediction", ["- %s" % effects.summary(r) for r in records], None)
            )
    for number, plan_path in enumerate(p["plan_files"]):
        doc = planfile.load_plan(plan_path)
        lines = ["- file: %s" % os.path.basename(plan_path)] + ["- %s" % line for line in planfile.summary(doc)]
        image = None
        steps = [s for s in doc.get("steps") or [] if (s.get("predicted") or {}).get("ops_per_s_after") is not None]
        if steps:
            image = os.path.join(p["out_dir"], "gain-%d.png" % number)
            if write:
                _path, even = report.plot_gain_curve(
                    steps[0], image, title="First switch of %s" % os.path.basename(plan_path)
                )
                images.append(image)
            else:
                even = report.gain_curve(steps[0])[0]
            lines.append("- break-even of the first switch: %s" % ("%.0f s" % even if even is not None else "never"))
        sections.append(("Plan %s" % doc.get("created"), lines, image))
    if p["race_history"]:
        trials = racing.TrialHistory(p["race_history"]).trials
        image = os.path.join(p["out_dir"], "racing.png")
        if write:
            images.append(report.plot_racing(trials, image))
        best = max((t["value"] for t in trials), default=None)
        sections.append(
            ("Racing progress", ["- %d evaluations, best %s ops/s" % (len(trials), best)], image if trials else None)
        )
    return sections, images


def _json_or_yaml(path, text):
    """The document of a forecast file: JSON (what autotune writes), else YAML when PyYAML is there."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        import yaml  # pylint: disable=import-outside-toplevel  # ships with ansible-core; only YAML files need it
    except ImportError:
        raise report.ReportError("forecast_files: %s is not JSON, and PyYAML is missing to read YAML" % path) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise report.ReportError("forecast_files: %s is neither JSON nor YAML: %s" % (path, exc)) from None


def _forecast_sections(forecast_path, number, samples, out_dir, write, images):
    """One section per forecast field plotted (read ratio, and throughput when forecast) against the samples."""
    try:
        with open(forecast_path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise report.ReportError("forecast_files: cannot read %s: %s" % (forecast_path, exc)) from exc
    doc = _json_or_yaml(forecast_path, text)
    forecast = doc.get("forecast", doc) if isinstance(doc, dict) else None
    fields = forecast.get("fields") if isinstance(forecast, dict) else None
    if not isinstance(fields, dict) or not forecast.get("t"):
        raise report.ReportError("forecast_files: %s holds no forecast (t and fields)" % forecast_path)
    sections = []
    start, end = float(forecast["t"][0]), float(forecast["t"][-1])
    seen = [s for s in samples if start <= float(s["time"]) <= end]
    for field in [f for f in ("read_ratio", "throughput") if f in fields]:
        label = field.replace("_", " ")
        image = os.path.join(out_dir, "forecast-%d-%s.png" % (number, field))
        if write:
            images.append(report.plot_forecast(forecast, seen, image, field=field, title="Forecast of %s" % label))
        lines = [
            "- %s, method %s, %d steps; %d samples observed in its span"
            % (os.path.basename(forecast_path), forecast.get("method", "?"), len(forecast["t"]), len(seen))
        ]
        sections.append(("Forecast against what was observed: %s" % label, lines, image))
    return sections


def main():
    module = AnsibleModule(
        argument_spec=dict(
            out_dir=dict(type="path", required=True),
            title=dict(type="str", default="Tactician report"),
            history=dict(type="str"),
            cluster=dict(type="str"),
            since=dict(type="raw"),
            plan_files=dict(type="list", elements="path", default=[]),
            forecast_files=dict(type="list", elements="path", default=[]),
            race_history=dict(type="path"),
            lines=dict(type="list", elements="str", default=[]),
        ),
        supports_check_mode=True,
    )
    fail_imports(module, report.missing_libraries())
    p = module.params
    write = not module.check_mode
    try:
        if write:
            os.makedirs(p["out_dir"], exist_ok=True)
        sections, images = build(p, write)
        paths = report.write(p["out_dir"], p["title"], sections) if write else None
    except TacticianError as exc:
        fail(module, exc)
    module.exit_json(
        changed=write,
        report={"markdown": paths[0], "html": paths[1]} if paths else None,
        images=images,
        sections=[{"heading": h, "lines": lines, "image": image} for h, lines, image in sections],
    )


if __name__ == "__main__":
    main()
