#!/usr/bin/env bash
# The test suite. With no argument every stage runs, in order, and the script exits non-zero when any failed;
# with arguments only those stages run: lint sanity units build integration molecule.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$root/.collections"
export ANSIBLE_NOCOLOR=1 PY_COLORS=0

stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(lint sanity units build integration molecule)

stage_lint() {
  ruff check . && ruff format --check . && ansible-lint
}

stage_sanity() {
  scripts/sanity.sh
}

stage_units() {
  # One worker per CPU (pytest-xdist): the unit tests share no server, port or file.
  pytest -q -n auto tests/unit
}

stage_build() {
  # The built tarball must install offline (nothing else on the collections path) and document every module.
  local out tmp rc=0
  out="$root/.build/dist"
  tmp=$(mktemp -d)
  rm -rf "$out" && mkdir -p "$out"
  ansible-galaxy collection build --force --output-path "$out" >/dev/null || rc=1
  if [ $rc -eq 0 ] && tar -tzf "$out"/tactician-nosql-*.tar.gz | grep -E '^(benchmarks|scripts)/'; then
    echo "the tarball holds the files above: benchmarks/ and scripts/ belong to the repository, not the collection"
    rc=1
  fi
  if [ $rc -eq 0 ]; then
    ANSIBLE_COLLECTIONS_PATH="$tmp" ansible-galaxy collection install --offline --no-deps --force -p "$tmp" \
      "$out"/tactician-nosql-*.tar.gz >/dev/null || rc=1
  fi
  if [ $rc -eq 0 ]; then
    for module in plugins/modules/*.py; do
      name=$(basename "$module" .py)
      if ! ANSIBLE_COLLECTIONS_PATH="$tmp" ansible-doc --json "tactician.nosql.$name" 2>/dev/null |
        python -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d and all(v.get("doc") for v in d.values()) else 1)'; then
        echo "ansible-doc has no documentation for tactician.nosql.$name in the installed tarball"
        rc=1
      fi
    done
  fi
  if [ $rc -eq 0 ]; then
    # The execution environment's build context: the tarball just built and the suite's own pinned requirements.
    if ansible-builder create -f execution-environment.yml -c "$tmp/ee" >/dev/null &&
      cmp -s requirements.txt "$tmp/ee/_build/requirements.txt" &&
      grep -q 'ansible-core==2.19.14' "$tmp/ee/Dockerfile" &&
      [ -f "$tmp/ee/_build/collections/$(basename "$out"/tactician-nosql-*.tar.gz)" ]; then
      ee="execution environment context ok"
    else
      echo "ansible-builder create did not give a context with the collection and requirements.txt"
      rc=1
    fi
  fi
  [ $rc -eq 0 ] && echo "built $(basename "$out"/tactician-nosql-*.tar.gz) (no benchmark or script in it), installed offline, ansible-doc ok for $(ls plugins/modules/*.py | wc -l) modules, $ee"
  rm -rf "$tmp"
  return $rc
}

stage_integration() {
  # The slowest tests and fixtures are listed at the end, to keep the whole run in its time budget. One process:
  # run beside the others, the tests of servers on free ports (FerretDB, PostgreSQL, a TLS Redis) made the stage
  # longer (2,705 s against 2,372 s), as two CPUs shared by both slowed the clusters' tests more than the side's
  # minutes saved, and made a node's resource readings miss their window.
  pytest -q -m integration --durations=40 tests/integration
}

stage_molecule() {
  scripts/molecule.sh
}

failed=()
declare -A took
for stage in "${stages[@]}"; do
  if ! declare -F "stage_$stage" >/dev/null; then
    echo "unknown stage: $stage (choose from: lint sanity units build integration molecule)" >&2
    exit 2
  fi
  echo "=== $stage ==="
  start=$SECONDS
  if "stage_$stage"; then status=ok; else status=FAILED; failed+=("$stage"); fi
  took[$stage]=$((SECONDS - start))
  echo "=== $stage: $status (${took[$stage]} s) ==="
done

echo
echo "Stage times:"
for stage in "${stages[@]}"; do printf '  %-12s %5s s\n' "$stage" "${took[$stage]}"; done
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "All stages passed."
