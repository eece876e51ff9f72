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

# Integration tests whose servers listen on free ports (FerretDB, PostgreSQL, a TLS Redis of their own) and that
# share no directory with the others: they run beside the tests of the clusters on fixed addresses, in a second
# pytest process with a load driver of its own, which takes their minutes off the stage's wall time.
side_tests=(
  tests/integration/test_mongodb_ferretdb.py
  tests/integration/test_ferretdb_node.py
  tests/integration/test_rolling_mongodb.py
  tests/integration/test_autotune_mongodb.py
  tests/integration/test_history_postgres.py
  tests/integration/test_tls_connections.py
)

stage_integration() {
  # The slowest tests and fixtures are listed at the end, to keep the whole run in its time budget.
  local side=() ignore=() test side_pid side_rc=0 rc=0 side_dir
  for test in "${side_tests[@]}"; do
    if [ -f "$test" ]; then
      side+=("$test")
      ignore+=("--ignore=$test")
    fi
  done
  side_dir=$(mktemp -d)
  TACTICIAN_IT_DRIVER_LAB="$root/.lab/test-side" pytest -q -m integration --durations=15 -p no:cacheprovider \
    --basetemp="$side_dir/tmp" "${side[@]}" >"$side_dir/log" 2>&1 &
  side_pid=$!
  pytest -q -m integration --durations=40 "${ignore[@]}" tests/integration || rc=1
  wait "$side_pid" || side_rc=1
  echo "--- beside them, in a second process: ${side[*]}"
  cat "$side_dir/log"
  rm -rf "$side_dir"
  [ $rc -eq 0 ] && [ $side_rc -eq 0 ]
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
