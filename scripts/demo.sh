#!/usr/bin/env bash
# The README's main command (make demo): bring the local lab up, run a phase-changing workload while autotune plans
# and applies (scripts/tactician_demo.py), print the summary, and stop the lab again - unless it was already up
# before, in which case it is left as it was found. Arguments go to scripts/tactician_demo.py (--phase-s ...).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root" || exit 1
# shellcheck source=scripts/env.sh
source scripts/env.sh
started=$(date +%s)

was_up=0
if ansible-playbook playbooks/lab_status.yml >/dev/null 2>&1; then
  was_up=1
  echo "The lab is already up: the demo uses it and leaves it up."
fi

stop_lab() {
  if [ "$was_up" -eq 0 ]; then
    echo "Stopping the lab (every server the demo started)..."
    ansible-playbook playbooks/lab_down.yml >"$root/.lab/demo-lab-down.log" 2>&1 ||
      echo "lab_down failed; see .lab/demo-lab-down.log"
  fi
  echo "Demo wall time: $(( ($(date +%s) - started) / 60 )) min $(( ($(date +%s) - started) % 60 )) s"
}
trap stop_lab EXIT

if [ "$was_up" -eq 0 ]; then
  echo "Bringing the lab up (3 Cassandra nodes, 6 Redis nodes, a FerretDB server, the monitoring stack)..."
  mkdir -p "$root/.lab"
  if ! ansible-playbook playbooks/lab_up.yml >"$root/.lab/demo-lab-up.log" 2>&1; then
    tail -30 "$root/.lab/demo-lab-up.log"
    echo "lab_up failed; see .lab/demo-lab-up.log"
    exit 1
  fi
  grep '^\[tactician' "$root/.lab/demo-lab-up.log" | tail -1
fi

"$root/.venv/bin/python" scripts/tactician_demo.py "$@"
