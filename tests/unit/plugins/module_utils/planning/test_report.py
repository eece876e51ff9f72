# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Report plots and pages: files written, the gain curve's break-even, bad input named."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.planning import report

STEP = {"roll_s": 100.0, "predicted": {"ops_per_s_before": 1000.0, "ops_per_s_after": 1200.0, "cost_ops": 30000.0}}


def test_gain_curve_crosses_zero_at_the_break_even():
    even, points = report.gain_curve(STEP, horizon_s=1000)
    assert even == pytest.approx(100.0 + 30000.0 / 200.0)
    assert points[1] == (100.0, -30000.0) and points[-1][1] == pytest.approx(-30000.0 + 200.0 * 900.0)
    worse = dict(STEP, predicted=dict(STEP["predicted"], ops_per_s_after=900.0))
    assert report.gain_curve(worse)[0] is None
    with pytest.raises(report.ReportError, match="a tactic step has no gain curve"):
        report.gain_curve({"tactic": "add_index"})


def test_plots_and_pages_are_written(tmp_path):
    samples = [{"time": 1_800_000_000 + 30 * i, "throughput": 1000.0 + i, "read_ratio": 0.5} for i in range(10)]
    assert report.plot_throughput(samples, str(tmp_path / "t.png"), marks=[(1_800_000_120, "step 0")])
    path, even = report.plot_gain_curve(STEP, str(tmp_path / "g.png"))
    assert even == pytest.approx(250.0)
    forecast = {"t": [1_800_000_300 + 30 * i for i in range(4)], "fields": {"read_ratio": [0.5, 0.5, 0.6, 0.6]}}
    report.plot_forecast(forecast, samples, str(tmp_path / "f.png"))
    report.plot_racing([{"value": 5.0}, {"value": 7.0}, {"value": 6.0}], str(tmp_path / "r.png"))
    for name in ("t", "g", "f", "r"):
        assert (tmp_path / ("%s.png" % name)).read_bytes()[:4] == b"\x89PNG"
    md, page = report.write(str(tmp_path / "out"), "Demo <1>", [("Throughput", ["- 10 samples"], path)])
    assert "![Throughput](g.png)" in open(md).read() and "Demo &lt;1&gt;" in open(page).read()


def test_bad_input_is_named(tmp_path):
    with pytest.raises(report.ReportError, match="samples: no workload samples"):
        report.plot_throughput([], str(tmp_path / "x.png"))
    with pytest.raises(report.ReportError, match="time: 'yesterday' is neither"):
        report.plot_throughput([{"time": "yesterday", "throughput": 1}], str(tmp_path / "x.png"))
    with pytest.raises(report.ReportError, match="forecast.fields.read_ratio: missing"):
        report.plot_forecast({"t": [1], "fields": {}}, [], str(tmp_path / "x.png"))
    with pytest.raises(report.ReportError, match="trials: no evaluations"):
        report.plot_racing([], str(tmp_path / "x.png"))


def test_report_plots_kept_forecasts_against_the_samples(tmp_path):
    from ansible_collections.tactician.nosql.plugins.modules import report as report_module

    path = tmp_path / "lab-forecast-1.json"
    forecast = {"t": [1000.0, 1030.0, 1060.0], "method": "markov", "fields": {"read_ratio": [0.9, 0.5, 0.5]}}
    path.write_text(json.dumps({"cluster": "lab", "forecast": forecast}))
    samples = [{"time": 1000.0 + 10 * i, "read_ratio": 0.8, "throughput": 100.0} for i in range(10)]
    images = []
    sections = report_module._forecast_sections(str(path), 0, samples, str(tmp_path), True, images)
    assert [heading for heading, _lines, _image in sections] == ["Forecast against what was observed: read ratio"]
    assert "method markov, 3 steps; 7 samples observed in its span" in sections[0][1][0]
    assert images and os.path.exists(images[0])
    (tmp_path / "bad.json").write_text("[1, 2]")
    with pytest.raises(report.ReportError, match="forecast_files: .*bad.json holds no forecast"):
        report_module._forecast_sections(str(tmp_path / "bad.json"), 1, samples, str(tmp_path), False, [])


def test_latency_and_cpu_are_plotted_when_the_samples_hold_them(tmp_path):
    samples = [
        {
            "time": 1_800_000_000 + 30 * i,
            "latency_ms": {"read": {"p50": 1.0, "p99": 4.0 + i}, "update": {"p99": None}},
            "resources": {"cpu_pct": 40.0 + i},
        }
        for i in range(10)
    ]
    assert report.has_latency_or_cpu(samples)
    assert not report.has_latency_or_cpu([{"time": 1, "latency_ms": {}, "resources": {"cpu_pct": None}}])
    path = report.plot_latency_cpu(samples, str(tmp_path / "l.png"), marks=[(1_800_000_120, "step 0")])
    assert open(path, "rb").read()[:4] == b"\x89PNG"
    with pytest.raises(report.ReportError, match="samples: no workload samples"):
        report.plot_latency_cpu([], str(tmp_path / "x.png"))
