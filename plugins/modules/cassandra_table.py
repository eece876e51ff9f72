#!/usr/bin/python
# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)

from __future__ import annotations

DOCUMENTATION = r"""
module: cassandra_table
short_description: Tune a live Cassandra table (compaction, compression, TTL, caching) without a restart
description:
  - Reads the options of the table from C(system_schema.tables), compares them with what is asked after
    normalization (short class names such as C(LCS) against the full names the schema stores, numbers against
    the strings of the option maps) and issues one C(ALTER TABLE ... WITH ...) for the options that differ.
  - Options that are not given are left as they are. Inside O(compaction), O(compression) and O(caching), the
    entries not given keep their current value while the class stays the same; with another class only the
    entries given are written, the others take the defaults of the new class.
  - Creates the table (C(CREATE TABLE IF NOT EXISTS)) with its options when O(columns) and O(primary_key) are
    given and it does not exist; an existing table is never altered in its columns (a warning tells when they
    differ).
  - Changing the compaction strategy makes the nodes rewrite all the SSTables of the table; the module warns.
  - Check mode reports the same C(changed) and the statements a real run would execute; diff mode shows the
    options before and after.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
extends_documentation_fragment:
  - tactician.nosql.cassandra
options:
  keyspace:
    description: Keyspace of the table.
    type: str
    required: true
  name:
    description: Table name (unquoted CQL name; Cassandra stores it in lower case).
    type: str
    required: true
  state:
    description:
      - V(present) tunes the table; it must exist unless O(columns) and O(primary_key) are given.
      - V(absent) drops the table and its data.
    type: str
    choices: [present, absent]
    default: present
  columns:
    description:
      - "Columns of a table to create, as C({name: CQL type}), for example C({y_id: text, field0: blob})."
      - Used only to create the table; an existing table keeps its columns.
    type: dict
  primary_key:
    description:
      - Primary key of a table to create. The first entry is the partition key (a column, or a list of columns
        for a composite partition key); the others are clustering columns.
    type: list
    elements: raw
  clustering_order:
    description: "Order of the clustering columns of a table to create, for example C({ts: DESC})."
    type: dict
  compaction:
    description:
      - Compaction strategy and its options. C(class) is required; short names
        C(SizeTieredCompactionStrategy), C(LeveledCompactionStrategy), C(UnifiedCompactionStrategy),
        C(TimeWindowCompactionStrategy), their abbreviations C(STCS), C(LCS), C(UCS), C(TWCS), or a full class name.
      - Other keys are options of the strategy, for example C(sstable_size_in_mb), C(fanout_size),
        C(compaction_window_unit), C(compaction_window_size), C(scaling_parameters).
    type: dict
  compression:
    description:
      - SSTable compression. C(class) is required; C(LZ4Compressor), C(ZstdCompressor), C(SnappyCompressor),
        C(DeflateCompressor), C(NoopCompressor), a full class name, or C(none) to store the SSTables uncompressed.
      - Other keys are options, for example C(chunk_length_in_kb) (a power of 2) or C(compression_level).
    type: dict
  caching:
    description:
      - "Caching of the table: C(keys) C(ALL) or C(NONE) (the key cache), C(rows_per_partition) C(ALL), C(NONE) or
        a number (the row cache)."
      - A statement prepared before the change keeps the caching of the moment it was prepared, and a change of
        caching alone does not invalidate it (reads prepared earlier would never fill a row cache switched on). So
        when O(caching) changes and O(gc_grace_seconds) does not, the same ALTER TABLE holds gc_grace_seconds one
        second longer and a second one sets it back, which makes every client re-prepare its statements on the
        table; the result's C(warnings) say so.
    type: dict
  default_time_to_live:
    description: Default TTL of the rows written to the table, in seconds (C(0) means none).
    type: int
  gc_grace_seconds:
    description: Seconds a tombstone is kept before compaction may purge it.
    type: int
  bloom_filter_fp_chance:
    description: Target false-positive chance of the SSTable bloom filters, in (0, 1].
    type: float
  comment:
    description: Comment of the table.
    type: str
attributes:
  check_mode:
    description: Can run in check mode and return the changed status and the statements a real run would.
    support: full
  diff_mode:
    description: Returns the options of the table before and after when run with C(--diff).
    support: full
notes:
  - Schema changes propagate to every node of the cluster; run the module once per cluster (C(run_once)).
  - New compression or compaction settings apply to the SSTables written from then on; the existing ones
    change as compaction rewrites them (C(nodetool upgradesstables -a) rewrites them at once).
"""

EXAMPLES = r"""
- name: Leveled compaction, LZ4 in 16 KiB chunks, one day TTL, key cache only
  tactician.nosql.cassandra_table:
    keyspace: ycsb
    name: usertable
    compaction:
      class: LCS
      sstable_size_in_mb: 160
    compression:
      class: LZ4Compressor
      chunk_length_in_kb: 16
    default_time_to_live: 86400
    caching:
      keys: ALL
      rows_per_partition: NONE
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
  run_once: true

- name: A YCSB-shaped table, created when missing
  tactician.nosql.cassandra_table:
    keyspace: ycsb
    name: usertable
    columns:
      y_id: text
      field0: blob
      field1: blob
    primary_key: [y_id]
    login_user: cassandra
    login_password: "{{ cassandra_password }}"
"""

RETURN = r"""
queries:
  description: CQL statements executed (or that would be, in check mode).
  returned: always
  type: list
  elements: str
  sample:
    - >-
      ALTER TABLE ycsb.usertable WITH compaction = {'class':
      'org.apache.cassandra.db.compaction.LeveledCompactionStrategy', 'max_threshold': '32', 'min_threshold': '4',
      'sstable_size_in_mb': '160'} AND default_time_to_live = 86400
exists:
  description: Whether the table exists after the run (in check mode, whether it existed).
  returned: always
  type: bool
  sample: true
options:
  description:
    - The managed options of the table after the run (what they would be, in check mode), as
      C(system_schema.tables) stores them.
  returned: when state is present
  type: dict
  sample:
    compaction:
      class: org.apache.cassandra.db.compaction.LeveledCompactionStrategy
      max_threshold: "32"
      min_threshold: "4"
      sstable_size_in_mb: "160"
    compression:
      chunk_length_in_kb: "16"
      class: org.apache.cassandra.io.compress.LZ4Compressor
    caching:
      keys: ALL
      rows_per_partition: NONE
    default_time_to_live: 86400
    gc_grace_seconds: 864000
    bloom_filter_fp_chance: 0.01
    comment: ""
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.tactician.nosql.plugins.module_utils.core import errors
from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import TacticianError
from ansible_collections.tactician.nosql.plugins.module_utils.core.module_support import fail, fail_imports, with_diff
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import client as cql
from ansible_collections.tactician.nosql.plugins.module_utils.stores.cassandra import schema, tables


def main():
    argument_spec = cql.cassandra_argument_spec()
    argument_spec.update(
        keyspace=dict(type="str", required=True, no_log=False),
        name=dict(type="str", required=True),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        columns=dict(type="dict"),
        primary_key=dict(type="list", elements="raw", no_log=False),
        clustering_order=dict(type="dict"),
        compaction=dict(type="dict"),
        compression=dict(type="dict"),
        caching=dict(type="dict"),
        default_time_to_live=dict(type="int"),
        gc_grace_seconds=dict(type="int"),
        bloom_filter_fp_chance=dict(type="float"),
        comment=dict(type="str"),
    )
    module = AnsibleModule(
        argument_spec=argument_spec,
        required_together=cql.cassandra_required_together() + [["columns", "primary_key"]],
        supports_check_mode=True,
    )
    fail_imports(module, cql.missing_libraries())
    params = module.params
    cluster = None
    result = None
    try:
        with errors.reported_as(
            cql.CassandraError, "CQL error on table %s.%s" % (params["keyspace"], params["name"]), with_type=True
        ):
            # Bad input fails here, before any connection.
            options = tables.wanted_table_options(**{option: params[option] for option in tables.TABLE_OPTIONS})
            schema.check_name(params["keyspace"], "keyspace")
            schema.check_table_name(params["name"], "name")
            if params["columns"] is not None:
                tables.wanted_columns(params["columns"], params["primary_key"], params["clustering_order"])
            cluster, session = cql.connect(params)
            result = tables.ensure_table(
                session,
                params["keyspace"],
                params["name"],
                state=params["state"],
                options=options,
                columns=params["columns"],
                primary_key=params["primary_key"],
                clustering_order=params["clustering_order"],
                check_mode=module.check_mode,
            )
    except TacticianError as exc:
        fail(module, exc)
    finally:
        if cluster is not None:
            cluster.shutdown()
    for warning in result.pop("warnings"):
        module.warn(warning)
    with_diff(module, result)
    if params["state"] == "absent":
        result.pop("options", None)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
