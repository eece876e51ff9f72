#!/usr/bin/env bash
# Runs the Molecule scenarios of the collection (extensions/molecule/*) from the collection root, with the
# project's virtual environment and the checkout itself as the collection under test.
#   scripts/molecule.sh                 molecule test --all
#   scripts/molecule.sh -s default      molecule test -s default (any molecule test options)
# molecule test destroys the nodes of a failed scenario; should it stop before that (interrupted, crashed),
# this script runs molecule destroy itself (not with --destroy=never). Exits with molecule test's status.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

if [ ! -x .venv/bin/molecule ] || [ ! -e .collections/ansible_collections/tactician/nosql ]; then
  echo "molecule.sh: run scripts/bootstrap.sh first" >&2
  exit 1
fi

export PATH="$root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$root/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$root/.collections"
export MOLECULE_PROJECT_DIRECTORY="$root"

[ $# -gt 0 ] || set -- --all
keep_nodes=false
prev=
for arg in "$@"; do
  { [ "$arg" = --destroy=never ] || { [ "$prev" = --destroy ] && [ "$arg" = never ]; }; } && keep_nodes=true
  prev=$arg
done

destroy_all() {
  [ "$keep_nodes" = false ] || return 0
  echo "molecule.sh: making sure no node of the scenarios is left running" >&2
  molecule destroy --all || echo "molecule.sh: molecule destroy failed too; check with: pgrep -af 'CassandraDaemon|redis-server'" >&2
}

interrupted() {
  trap - INT TERM
  destroy_all
  exit 130
}
trap interrupted INT TERM

start=$SECONDS
rc=0
molecule test "$@" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "molecule.sh: molecule test failed (exit $rc)" >&2
  destroy_all
fi
echo "molecule.sh: finished in $((SECONDS - start)) s (exit $rc)"
exit "$rc"
