#!/usr/bin/env bash
# ansible-test sanity, offline: a real copy of the collection under ansible_collections/tactician/nosql
# (ansible-test does not follow the .collections symlink) and a local stand-in for the get-pip script.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export PATH="$root/.venv/bin:$PATH"
python_version=$("$root/.venv/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')

pip_version=$("$root/.venv/bin/python" - <<'PY'
import re, inspect
from ansible_test._internal import python_requirements as pr
print(re.search(r"pip='([0-9.]+)'", inspect.getsource(pr.get_venv_packages)).group(1))
PY
)
cache="$HOME/.ansible/test/cache/get_pip_${pip_version//./_}.py"
if [ ! -s "$cache" ]; then
  mkdir -p "$(dirname "$cache")"
  cp tests/sanity/get_pip_offline.py "$cache"
fi

dest="$root/.build/sanity/ansible_collections/tactician/nosql"
mkdir -p "$dest"
rsync -a --delete \
  --exclude .git --exclude .venv --exclude .lab --exclude .build --exclude .collections --exclude .ansible \
  --exclude .cache --exclude .pytest_cache --exclude .ruff_cache --exclude '__pycache__' --exclude tests/output \
  --exclude results \
  "$root/" "$dest/"
cd "$dest"
# ansible-test lists the files git tracks; the copy sits inside the checkout's ignored .build/, so it gets a
# repository of its own holding exactly the copied files.
rm -rf .git
git init -q
git add -A
ansible-test sanity --local --python "$python_version" --color no "$@"
