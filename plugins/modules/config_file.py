#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: config_file
short_description: Set, add or remove keys of a server config file, keeping its comments and order
description:
  - Edits C(cassandra.yaml), C(mongod.conf) (O(format=yaml)) or C(redis.conf) (O(format=redis)) in place. A key
    that is present gets its new value on the same line, with the comments above it and on its line kept; a key
    that is absent is added at the end of the file (YAML, inside its parent mapping, created when missing); the
    rest of the file is not touched.
  - Keys a tuner set on this node (listed in the tuned-state file C(<path>.tuned.json)) are left alone unless
    O(keep_tuned=false); RV(kept) shows what was asked for them and what the file keeps.
  - The file is written through a temporary file and renamed over the old one; an existing file keeps its mode.
  - Check mode reports the same C(changed) a real run would and touches nothing; diff mode shows the file before
    and after.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  path:
    description: The config file.
    type: path
    required: true
  format:
    description:
      - V(yaml) for C(cassandra.yaml) and C(mongod.conf), V(redis) for C(redis.conf).
    type: str
    required: true
    choices: [yaml, redis]
  settings:
    description:
      - Keys and their values. YAML keys are dotted paths into nested mappings, for example
        C(storage.wiredTiger.engineConfig.cacheSizeGB); a top-level key that contains dots is taken as is. Redis
        keys are directives.
      - "YAML values are written with the type and shape they have: V(16) and V('16') differ (the second is
        written quoted and makes a change when the file holds the number), and lists of mappings such as
        C(seed_provider) are written as YAML block lists. A value equal to the one in the file, compared with
        its type, is no change."
      - "Redis values: V(true)/V(false) are written C(yes)/C(no); a string with spaces or quotes is
        double-quoted as one argument, except for the directives that take several arguments (C(save),
        C(bind), C(replicaof), C(rename-command), C(user), C(loadmodule), C(client-output-buffer-limit),
        C(oom-score-adj-values), C(latency-tracking-info-percentiles)), where a string is the argument text as
        in C(redis.conf) (V(900 1), V(CONFIG \"\")). A list is one line of arguments, except for directives that
        repeat (C(save), C(include), C(rename-command), C(user), C(loadmodule), C(client-output-buffer-limit)),
        where each item is one line and all the directive's lines are replaced. Values are compared as text,
        so V(100mb) equals C(100mb) whatever its quoting."
      - Redis uses the last line of a directive; when its value changes that line is rewritten and earlier
        duplicates are dropped.
    type: dict
    default: {}
  remove:
    description: Keys (dotted paths or directives) to delete from the file.
    type: list
    elements: str
    default: []
  keep:
    description:
      - Keys left alone whatever O(settings) and O(remove) ask. For YAML a kept path also protects the paths
        below it and the mappings above it.
    type: list
    elements: str
    default: []
  keep_tuned:
    description: Also leave alone every key listed in the file's tuned-state file C(<path>.tuned.json).
    type: bool
    default: true
  header:
    description:
      - Comment written at the top of a new file (each line gets C(# ) when it has none). Not used when the file
        exists.
    type: str
  create:
    description: Create the file when it does not exist; with V(false) a missing file is an error.
    type: bool
    default: true
  mode:
    description: Octal permissions of a new file, for example V('0640'). An existing file keeps its mode.
    type: str
  backup:
    description: Copy the old file to C(<path>.<YYYYmmddTHHMMSS>~) before changing it.
    type: bool
    default: false
  owned_keys_file:
    description:
      - File where the keys of O(settings) are recorded. A key recorded by an earlier run that O(settings) no
        longer has is removed from the file (unless kept), so that dropping a key from a role's variables takes
        it out of the config file again.
    type: path
attributes:
  check_mode:
    description: Can run in check mode and return the changed status a real run would report.
    support: full
  diff_mode:
    description: Returns the file's text before and after when run with C(--diff).
    support: full
notes:
  - C(include) files of C(redis.conf) are not followed; only the given file is edited.
  - A comment above a removed key stays where it is; comments inside a removed or replaced value go with it.
  - Values can hold secrets (C(requirepass), C(masterauth)); set C(no_log) on the task to keep them out of the
    output and the diff.
"""

EXAMPLES = r"""
- name: Cassandra, two keys of cassandra.yaml (types kept, comments kept)
  tactician.nosql.config_file:
    path: /var/lib/tactician/lab/cassandra/node1/conf/cassandra.yaml
    format: yaml
    settings:
      concurrent_reads: 64
      compaction_throughput: 128MiB/s
      seed_provider:
        - class_name: org.apache.cassandra.locator.SimpleSeedProvider
          parameters:
            - seeds: "127.0.0.1:7000,127.0.0.2:7000"
    backup: true

- name: Redis, a directive of redis.conf and the snapshot rules (one line per save item)
  tactician.nosql.config_file:
    path: /var/lib/tactician/lab/redis/6381/redis.conf
    format: redis
    settings:
      maxmemory: 512mb
      maxmemory-policy: allkeys-lru
      save:
        - 900 1
        - 300 10
    remove:
      - notify-keyspace-events

- name: MongoDB, a nested path of mongod.conf (the mappings are created when missing)
  tactician.nosql.config_file:
    path: /etc/mongod.conf
    format: yaml
    settings:
      storage.wiredTiger.engineConfig.cacheSizeGB: 2
      net.maxIncomingConnections: 2000
  register: mongod_conf

- name: Show the keys left alone because a tuner owns them
  ansible.builtin.debug:
    var: mongod_conf.kept
"""

RETURN = r"""
path:
  description: The config file.
  returned: always
  type: str
  sample: /etc/mongod.conf
changes:
  description:
    - Every key that changed (or would, in check mode) with its value before and after; C(before) is null for
      an added key and C(after) null for a removed one. Redis values are the directive's text, a list for
      directives that repeat.
  returned: always
  type: dict
  sample:
    storage.wiredTiger.engineConfig.cacheSizeGB:
      before: 1
      after: 2
    net.maxIncomingConnections:
      before: null
      after: 2000
kept:
  description:
    - Keys of O(settings) and O(remove) left alone, with the value asked for (C(requested), null for a
      removal), the value the file keeps (C(kept)), why (C(reason), V(tuned) or V(keep)) and, for tuned keys,
      what the tuned-state file records (C(tuned)).
  returned: always
  type: dict
  sample:
    concurrent_reads:
      requested: 32
      kept: 64
      reason: tuned
      tuned:
        concurrent_reads: 64
backup_file:
  description: The copy of the old file, when O(backup=true) and the file changed.
  returned: always
  type: str
  sample: /var/lib/tactician/lab/redis/6381/redis.conf.20250101T120000~
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.apply import config_base, configfile
from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail_imports


def _printable(text):
    """Text safe for the module's JSON output (bytes that are not UTF-8 shown as replacement characters)."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            format=dict(type="str", required=True, choices=list(configfile.FORMATS)),
            settings=dict(type="dict", default={}),
            remove=dict(type="list", elements="str", default=[]),
            keep=dict(type="list", elements="str", default=[]),
            keep_tuned=dict(type="bool", default=True),
            header=dict(type="str"),
            create=dict(type="bool", default=True),
            mode=dict(type="str"),
            backup=dict(type="bool", default=False),
            owned_keys_file=dict(type="path", no_log=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    if params["format"] == "yaml":
        fail_imports(module, config_base.missing_libraries())
    path = params["path"]
    try:
        with errors.reported_as(config_base.ConfigFileError, "%s: cannot edit the file" % path):
            tuned = {}
            if params["keep_tuned"]:
                tuned = configfile.read_tuned_state(path).get("settings", {})
            keep = list(params["keep"]) + list(tuned)
            remove = list(params["remove"])
            if params["owned_keys_file"]:
                remove += configfile.stale_owned_keys(params["owned_keys_file"], params["settings"], keep)
            text = configfile.read_text(path)
            kept = configfile.kept_report(
                text, params["format"], params["settings"], params["remove"], params["keep"], tuned
            )
            result = configfile.edit_file(
                path,
                params["format"],
                params["settings"],
                remove=remove,
                keep=keep,
                header=params["header"],
                create=params["create"],
                check_mode=module.check_mode,
                backup=params["backup"],
                mode=params["mode"],
            )
            if params["owned_keys_file"]:
                configfile.write_owned_keys(params["owned_keys_file"], params["settings"], module.check_mode)
    except TacticianError as exc:
        message = str(exc)  # the file's name leads, unless the engine's message has it already
        module.fail_json(msg=message if path in message else "%s: %s" % (path, message), path=path, **exc.report())
    diff = result.pop("diff")
    result.update(path=path, kept=kept)
    if module._diff:
        result["diff"] = dict(diff, before=_printable(diff["before"]), after=_printable(diff["after"]))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
