# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""The scenario's own cluster client: write the test keys, read them back, and report the cluster's shape.

    python cluster_keys.py write --node 127.0.0.1:6411 --count 2000
    python cluster_keys.py read  --node 127.0.0.1:6411 --count 2000
    python cluster_keys.py shape --node 127.0.0.1:6411

The ACL user and password come from the environment (REDIS_TACTICS_USER, REDIS_TACTICS_PASSWORD), never from the
command line. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import redis
from redis.cluster import ClusterNode, RedisCluster


def _key(index):
    return "tactics:key:%05d" % index


def _value(index):
    return "value-%d" % index


def _credentials():
    return dict(
        username=os.environ.get("REDIS_TACTICS_USER") or None,
        password=os.environ.get("REDIS_TACTICS_PASSWORD") or None,
    )


def _cluster(node):
    host, port = node.rsplit(":", 1)
    return RedisCluster(startup_nodes=[ClusterNode(host, int(port))], decode_responses=True, **_credentials())


def write(node, count):
    """Write the keys that are missing or differ; report how many were written."""
    client = _cluster(node)
    try:
        keys = [_key(i) for i in range(count)]
        current = client.mget_nonatomic(keys)
        written = 0
        for index, value in enumerate(current):
            if value != _value(index):
                client.set(_key(index), _value(index))
                written += 1
        return dict(count=count, written=written, changed=written > 0)
    finally:
        client.close()


def read(node, count):
    """Read every key through the cluster client (it follows MOVED and ASK); report the missing or wrong ones."""
    client = _cluster(node)
    try:
        values = client.mget_nonatomic([_key(i) for i in range(count)])
        wrong = [_key(i) for i, value in enumerate(values) if value != _value(i)]
        return dict(count=count, found=count - len(wrong), wrong=wrong[:20], changed=False)
    finally:
        client.close()


def shape(node):
    """Each master's slot count and replicas, and each replica's master and link as the replica reports it."""
    host, port = node.rsplit(":", 1)
    plain = redis.Redis(host=host, port=int(port), decode_responses=True, **_credentials())
    try:
        # redis-py parses the reply: {address: {node_id, flags, master_id, slots: [[first, last?]], ...}}
        listed = plain.execute_command("CLUSTER NODES")
    finally:
        plain.close()
    masters, replicas, addresses = {}, {}, {}
    for address, fields in listed.items():
        addresses[fields["node_id"]] = address
        if "master" in fields["flags"]:
            slots = sum(int(pair[-1]) - int(pair[0]) + 1 for pair in fields["slots"])
            masters[address] = dict(slots=slots, replicas=[])
        elif "slave" in fields["flags"]:
            replicas[address] = dict(master_id=fields["master_id"])
    for address, replica in replicas.items():
        replica["master"] = addresses.get(replica.pop("master_id"))
        if replica["master"] in masters:
            masters[replica["master"]]["replicas"].append(address)
        replica_host, replica_port = address.rsplit(":", 1)
        conn = redis.Redis(host=replica_host, port=int(replica_port), decode_responses=True, **_credentials())
        try:
            replica["link"] = conn.info("replication").get("master_link_status")
        finally:
            conn.close()
    return dict(masters=masters, replicas=replicas, changed=False)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["write", "read", "shape"])
    parser.add_argument("--node", required=True, help="host:port of any node of the cluster")
    parser.add_argument("--count", type=int, default=2000)
    args = parser.parse_args(argv)
    if args.action == "write":
        report = write(args.node, args.count)
    elif args.action == "read":
        report = read(args.node, args.count)
    else:
        report = shape(args.node)
    json.dump(report, sys.stdout, sort_keys=True)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
