#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: rolling_lock
short_description: Take or give back a cluster's rolling lock, so two rolls never touch one cluster at once
description:
  - The lock is the file C(<lock_dir>/<name>.lock), created with O_CREAT|O_EXCL. It holds a JSON record of its
    holder, C(name), C(owner), C(host), C(pid), C(acquired), C(expires) and C(run_id).
  - O(state=acquired) takes the lock. A lock held by the same O(owner) and O(run_id) is left as it is. A stale
    lock (its O(ttl) is over, or the process that took it on this host is gone) is replaced and returned in
    RV(stale_replaced). A lock held by anyone else fails the task, naming the holder, since when, and how to
    clear it.
  - O(state=stopped) keeps the lock of a roll that stopped for the cluster's sake (a node down, a peer lost during a
    step) and writes O(stopped) into its record - the node it stopped at, the reason, every node's state and how
    to continue. Only the holder may. Such a lock is never stale (its process is gone by design) - the next roll
    is refused with the reason and how to continue until someone releases it with O(force=true).
  - O(state=released) gives the lock back. Only its holder (the same O(owner) and O(run_id)) may, unless
    O(force=true). A lock nobody holds is nothing to do.
  - Run it on the controller (C(hosts=localhost) or C(delegate_to=localhost)). There the recorded process is
    the C(ansible-playbook) run itself, so the lock becomes stale as soon as that run ends without releasing it.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  name:
    description: The cluster's name (letters, digits, C(-), C(_) and C(.), starting with a letter or digit).
    type: str
    required: true
  state:
    description: Whether this run holds the lock.
    type: str
    choices: [acquired, stopped, released]
    required: true
  stopped:
    description:
      - With O(state=stopped), what to record - C(reason) (required), C(node), C(nodes) (each node's state) and
        C(continue) (how to go on).
    type: dict
  lock_dir:
    description:
      - Directory of the lock files.
      - Defaults to C($XDG_STATE_HOME/tactician-nosql/locks), or C(~/.local/state/tactician-nosql/locks) when
        E(XDG_STATE_HOME) is not set.
    type: path
  owner:
    description:
      - Who holds the lock. Defaults to C(<user>@<hostname>:<pid>) with the process id of the Ansible run (or
        C(<user>@<hostname>) when no Ansible process is found on the host).
    type: str
  run_id:
    description: Identifies one roll; acquire and release with the same value.
    type: str
  ttl:
    description:
      - Seconds the lock holds before it is stale. Make it longer than the longest roll.
    type: int
    default: 7200
  force:
    description:
      - With O(state=released), remove the lock whoever holds it. With O(state=acquired), take it over from its
        holder (reported in RV(stale_replaced)).
      - Only when the holder's roll is known to be gone.
    type: bool
    default: false
attributes:
  check_mode:
    description: Reports what would happen (the same C(changed) and records) and touches no file.
    support: full
  diff_mode:
    description: Returns the lock record before and after when run with C(--diff).
    support: full
notes:
  - A roll that was stopped leaves its lock on purpose. Once the cluster is repaired, clear it with
    O(state=released) and O(force=true), or delete the file named in the error.
"""

EXAMPLES = r"""
- name: Take the lock of the cluster lab for this roll
  tactician.nosql.rolling_lock:
    name: lab
    state: acquired
    run_id: "{{ roll_id }}"

- name: Give it back
  tactician.nosql.rolling_lock:
    name: lab
    state: released
    run_id: "{{ roll_id }}"

- name: Clear a lock left by a roll that was stopped
  tactician.nosql.rolling_lock:
    name: lab
    state: released
    force: true
"""

RETURN = r"""
lock:
  description: The lock record after the task (null once released).
  returned: always
  type: dict
  sample:
    name: lab
    owner: tactician@controller:41213
    host: controller
    pid: 41213
    acquired: "2026-05-09T09:00:00Z"
    expires: "2026-05-09T11:00:00Z"
    run_id: 20260509T090000-1234
stale_replaced:
  description: The stale (or, with O(force), taken over) record that O(state=acquired) replaced, else null.
  returned: always
  type: dict
stale_reason:
  description: Why RV(stale_replaced) was replaced, else null.
  returned: always
  type: str
  sample: its process 41213 on controller is gone
released:
  description: The record that O(state=released) removed, else null.
  returned: always
  type: dict
path:
  description: The lock file.
  returned: always
  type: str
  sample: /home/tactician/.local/state/tactician-nosql/locks/lab.lock
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.apply.lock import DEFAULT_TTL, RollingLock, controller_pid
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type="str", required=True),
            state=dict(type="str", choices=["acquired", "stopped", "released"], required=True),
            stopped=dict(type="dict"),
            lock_dir=dict(type="path"),
            owner=dict(type="str"),
            run_id=dict(type="str"),
            ttl=dict(type="int", default=DEFAULT_TTL),
            force=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    # The result's path names the lock file: leave out the file's stat (owner, mode, ...) that exit_json would
    # add, its owner would read as the lock's holder.
    module.add_path_info = lambda kwargs: kwargs
    params = module.params
    try:
        lock = RollingLock(
            params["name"],
            lock_dir=params["lock_dir"],
            owner=params["owner"],
            ttl=params["ttl"],
            pid=controller_pid(),
        )
        before = lock.status()
        if params["state"] == "acquired":
            result = lock.acquire(run_id=params["run_id"], check_mode=module.check_mode, force=params["force"])
        elif params["state"] == "stopped":
            result = lock.mark_stopped(run_id=params["run_id"], stopped=params["stopped"], check_mode=module.check_mode)
        else:
            result = lock.release(run_id=params["run_id"], force=params["force"], check_mode=module.check_mode)
    except TacticianError as exc:
        fail(module, exc)
    if module._diff:
        result["diff"] = dict(before=before or {}, after=result["lock"] or {})
    module.exit_json(**result)


if __name__ == "__main__":
    main()
