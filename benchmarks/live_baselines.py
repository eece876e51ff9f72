# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Autotune against the baselines on the lab's real servers: doing nothing, static-optimized, autotune, side by side.

    .venv/bin/python benchmarks/live_baselines.py            # both traces, three arms, 3 turns each (about 4 h)
    .venv/bin/python benchmarks/live_baselines.py --short    # the quiet trace, none and autotune, 1 turn each

Each trace (the demo's: read-heavy, upload, read-heavy; and "quiet": an upload followed by a quiet night, where
switching pays) is replayed by scripts/tactician_demo.py once per arm and turn, the arms in turns, each from the
same state (its configuration rolled in, the rows reloaded). The tables give every run (total ops, ops and p99 per
phase, failed operations, client and server CPU) and each arm against doing nothing and the better baseline:
paired ratios with a 95 % confidence interval, next to the warm-up's ratio (the same configuration in both arms:
the A/A noise floor). The lab must be up (make lab); run.py brings it up.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from _common import ROOT

_SPEC = importlib.util.spec_from_file_location("tactician_demo", os.path.join(ROOT, "scripts", "tactician_demo.py"))
demo = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(demo)

FULL = {"traces": ("demo", "quiet"), "arms": "autotune,static,none", "repeats": 3}
SHORT = {"traces": ("quiet",), "arms": "none,autotune", "repeats": 1}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--short", action="store_true", help="the quiet trace, none and autotune, one turn each")
    parser.add_argument("--traces", default=None, help="traces separated by commas (demo, quiet)")
    parser.add_argument("--arms", default=None, help="arms separated by commas (none, static, autotune)")
    parser.add_argument("--repeats", type=int, default=None, help="turns of every arm")
    parser.add_argument("--phase-s", default=None, help="phase lengths (as scripts/tactician_demo.py)")
    parser.add_argument("--out", default=os.path.join(ROOT, ".lab", "bench", "baselines"))
    parser.add_argument("--markdown", default=None, help="write the comparison tables here")
    parser.add_argument("--csv", default=None, help="(accepted for run.py; the tables are Markdown)")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    size = SHORT if args.short else FULL
    traces = args.traces.split(",") if args.traces else list(size["traces"])
    sections, rc = [], 0
    for trace in traces:
        out = os.path.join(args.out, trace)
        argv = ["--trace", trace, "--arms", args.arms or size["arms"], "--out", out]
        argv += ["--repeats", str(args.repeats or size["repeats"])]
        if args.phase_s:
            argv += ["--phase-s", args.phase_s]
        rc = max(rc, demo.main(argv))
        with open(os.path.join(out, "summary.md"), encoding="utf-8") as handle:
            text = handle.read()
        cut = text.find("\n## autotune, turn")
        sections.append(text if cut < 0 else text[:cut])
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write("\n".join(sections))
    return rc


if __name__ == "__main__":
    sys.exit(main())
