# Source this file to use the checkout's tools by hand: `source scripts/env.sh`, then ansible-playbook,
# ansible-doc, pytest, molecule ... run with the project's pinned environment and collection.
_tactician_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$_tactician_root/.venv/bin:$PATH"
export ANSIBLE_CONFIG="$_tactician_root/ansible.cfg"
export ANSIBLE_COLLECTIONS_PATH="$_tactician_root/.collections"
unset _tactician_root
