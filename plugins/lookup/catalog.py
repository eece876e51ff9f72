# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Lookup tactician.nosql.catalog: the parameter catalog of a store, some of its entries, or checked settings."""

from __future__ import annotations

DOCUMENTATION = r"""
name: catalog
short_description: The parameter catalog of a store, entries of it, or settings checked against it
description:
  - Reads the parameter catalog of a store from the collection's C(catalog/) folder (one YAML file per store and
    version; see C(docs/catalog.md) for the fields).
  - Without O(names) and O(validate), returns the whole catalog (C(store), C(version), C(parameters)).
  - With O(names), returns the entries of those parameters, in the order given.
  - With O(validate), checks those settings and returns them normalized (sizes in the entry's unit, booleans as
    booleans, choices in their canonical spelling); the lookup fails with every problem at once (unknown names
    with close matches, values out of range with the range and unit, choices not allowed, the memory budget).
  - Runs on the controller and reads only local files.
version_added: 0.1.0
author:
  - Tactician maintainers (@tactician)
options:
  store:
    description: The store whose catalog to read.
    type: str
    choices: [cassandra, redis, mongodb]
    required: true
  version:
    description:
      - Version prefix of the catalog to use (for example C(5.0), C(7) or a server version such as C(7.0.15)).
      - Defaults to the newest catalog of the store.
    type: str
  names:
    description: Return only the entries of these parameters (names as a user writes them).
    type: list
    elements: str
  validate:
    description: Settings to check, parameter name to value; the result is the normalized settings.
    type: dict
  memory_mb:
    description:
      - Memory of one node in MiB, for the memory budget of O(validate).
      - The memory-drawing sizes (and the heap with O(heap_mb)) must fit in it.
    type: int
  heap_mb:
    description:
      - JVM heap of one node in MiB (Cassandra), for the heap budget of O(validate) and the heap-derived defaults.
    type: int
"""

EXAMPLES = r"""
- name: Everything the catalog knows about Redis 7
  ansible.builtin.debug:
    msg: "{{ lookup('tactician.nosql.catalog', store='redis') }}"

- name: Two Cassandra entries
  ansible.builtin.debug:
    msg: "{{ query('tactician.nosql.catalog', store='cassandra', names=['concurrent_writes', 'memtable_heap_space']) }}"

- name: Check settings before a roll; fails naming every bad one
  ansible.builtin.set_fact:
    checked: >-
      {{ lookup('tactician.nosql.catalog', store='cassandra', heap_mb=8192, memory_mb=32768,
                validate={'memtable_heap_space': '2GiB', 'concurrent_writes': 64, 'trickle_fsync': true}) }}
"""

RETURN = r"""
_raw:
  description:
    - One element, the catalog, without O(names) and O(validate).
    - The entries of O(names), one per name.
    - One element, the normalized settings, with O(validate).
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError
from ansible.plugins.lookup import LookupBase

from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog import Catalog
from ansible_collections.tactician.nosql.plugins.module_utils.core.catalog_files import CatalogError


def catalog_lookup(store, version=None, names=None, validate=None, memory_mb=None, heap_mb=None):
    """The lookup's result list; CatalogError on any problem."""
    catalog = Catalog.for_store(store, version)
    if validate is not None:
        return [catalog.validate(validate, memory_mb=memory_mb, heap_mb=heap_mb)]
    if names:
        problems = []
        entries = []
        for name in names:
            try:
                entries.append(catalog.entry(name))
            except CatalogError as exc:
                problems.append(str(exc))
        if problems:
            raise CatalogError("; ".join(problems), problems)
        return entries
    return [catalog.to_dict()]


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        self.set_options(var_options=variables, direct=kwargs)
        if terms:
            raise AnsibleLookupError(
                "catalog: takes no terms (got %s); give store=..., and names=[...] or validate={...}" % (terms,)
            )
        try:
            return catalog_lookup(
                self.get_option("store"),
                version=self.get_option("version"),
                names=self.get_option("names"),
                validate=self.get_option("validate"),
                memory_mb=self.get_option("memory_mb"),
                heap_mb=self.get_option("heap_mb"),
            )
        except CatalogError as exc:
            raise AnsibleLookupError("catalog of %s: %s" % (self.get_option("store"), exc)) from exc
