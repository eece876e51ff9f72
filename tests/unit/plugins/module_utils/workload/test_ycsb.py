# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
from __future__ import annotations

import collections
import random

import pytest

from ansible_collections.tactician.nosql.plugins.module_utils.workload import ycsb

N_OPS = 20_000


def _ops(spec, seed=1, count=N_OPS, **options):
    options.setdefault("with_values", False)
    return list(ycsb.operations(spec, random.Random(seed), count, **options))


# ------------------------------------------------------------------------------------------------ core workloads


@pytest.mark.parametrize("letter", list("ABCDEF"))
def test_core_workload_proportions_over_20000_ops(letter):
    spec = ycsb.workload(letter, operationcount=N_OPS)
    counts = collections.Counter(op.op for op in _ops(spec))
    for op, expected in ycsb.op_mix(spec).items():
        assert abs(counts[op] / N_OPS - expected) <= 0.02, (letter, op)


def test_core_workload_properties():
    a, b, c, d, e, f = (ycsb.workload(letter) for letter in "ABCDEF")
    assert (a.readproportion, a.updateproportion, a.requestdistribution) == (0.5, 0.5, "zipfian")
    assert (b.readproportion, b.updateproportion, b.requestdistribution) == (0.95, 0.05, "zipfian")
    assert (c.readproportion, c.updateproportion) == (1.0, 0.0)
    assert (d.readproportion, d.insertproportion, d.requestdistribution) == (0.95, 0.05, "latest")
    assert (e.scanproportion, e.insertproportion, e.requestdistribution) == (0.95, 0.05, "zipfian")
    assert (e.maxscanlength, e.scanlengthdistribution) == (100, "uniform")
    assert (f.readproportion, f.readmodifywriteproportion) == (0.5, 0.5)
    for spec in (a, b, c, d, e, f):
        assert (spec.fieldcount, spec.fieldlength, spec.zipfianconstant) == (10, 100, 0.99)
        assert (spec.deleteproportion, spec.hotspotdatafraction, spec.hotspotopnfraction) == (0.0, 0.2, 0.8)
        assert spec.readallfields and not spec.orderedinserts and spec.target == 0
    assert ycsb.workload("workloadb") == b == ycsb.workload("b")


def test_read_ratio_counts_server_side_reads_and_writes():
    ratios = {letter: ycsb.read_ratio(ycsb.workload(letter)) for letter in "ABCDEF"}
    assert ratios == pytest.approx(dict(A=0.5, B=0.95, C=1.0, D=0.95, E=0.95, F=2 / 3))
    assert ycsb.server_operations({"readmodifywrite": 1.0}) == (1.0, 1.0)
    assert ycsb.read_ratio({"scan": 0.5, "delete": 0.5}) == 0.5
    assert list(ycsb.op_mix(ycsb.workload("E"))) == list(ycsb.OPERATIONS)


def test_operations_carry_fields_values_and_scan_lengths():
    spec = ycsb.workload("E", operationcount=2000)
    ops = _ops(spec, count=2000, with_values=True)
    fields = spec.field_names()
    scans = [op for op in ops if op.op == "scan"]
    inserts = [op for op in ops if op.op == "insert"]
    assert all(1 <= op.scan_length <= 100 and op.fields == fields and op.values is None for op in scans)
    assert abs(sum(op.scan_length for op in scans) / len(scans) - 50.5) < 2.5
    for op in inserts:
        assert op.fields == fields and set(op.values) == set(fields)
        assert all(len(value) == 100 and value.isascii() for value in op.values.values())
        assert op.key == ycsb.key_name(op.keynum)

    a = ycsb.workload("A")
    update = next(op for op in _ops(a, count=50, with_values=True) if op.op == "update")
    assert len(update.fields) == 1 and list(update.values) == list(update.fields)
    read = next(op for op in _ops(a, count=50) if op.op == "read")
    assert read.fields == a.field_names() and read.values is None
    rmw = next(op for op in _ops(ycsb.workload("F"), count=50, with_values=True) if op.op == "readmodifywrite")
    assert rmw.fields == a.field_names() and len(rmw.values) == 1

    delete = ycsb.workload("A", readproportion=0.5, updateproportion=0.0, deleteproportion=0.5)
    assert {op.op for op in _ops(delete, count=200)} == {"read", "delete"}


def test_zipfian_scan_lengths_stay_in_range():
    spec = ycsb.workload("E", scanlengthdistribution="zipfian", minscanlength=5, maxscanlength=50)
    lengths = [op.scan_length for op in _ops(spec, count=3000) if op.op == "scan"]
    assert min(lengths) >= 5 and max(lengths) <= 50
    assert collections.Counter(lengths).most_common(1)[0][0] == 5


# ------------------------------------------------------------------------------------------------ keys and hashing


def _fnv_reference(value):
    hashval = 0xCBF29CE484222325
    for octet in value.to_bytes(8, "little"):
        hashval = ((hashval ^ octet) * 0x100000001B3) % (1 << 64)
    signed = hashval - (1 << 64) if hashval >= 1 << 63 else hashval
    return abs(signed)


def test_key_names_as_ycsb():
    assert ycsb.key_name(0) == "user6284781860667377211"
    for value in (0, 1, 255, 256, 99_999, 2**40 + 7):
        assert ycsb.fnvhash64(value) == _fnv_reference(value)
    assert ycsb.key_name(42, ordered=True) == "user42"
    assert ycsb.key_name(42, ordered=True, zeropadding=6) == "user000042"
    spec = ycsb.workload("A", recordcount=50, insertorder="ordered")
    loaded = list(ycsb.load_operations(spec, random.Random(0), with_values=False))
    assert [op.key for op in loaded] == ["user%d" % i for i in range(50)]
    hashed = [op.key for op in ycsb.load_operations(ycsb.workload("A", recordcount=50), random.Random(0))]
    assert len(set(hashed)) == 50 and hashed != sorted(hashed)


def test_zeta_matches_ycsb_constant_and_direct_sum():
    assert ycsb.zeta(ycsb.SCRAMBLED_ITEM_COUNT, 0.99) == pytest.approx(ycsb.SCRAMBLED_ZETAN, rel=1e-9)
    direct = sum(i**-0.8 for i in range(1, 50_001))
    assert ycsb.zeta(50_000, 0.8) == pytest.approx(direct, rel=1e-12)


def _top_share(counts, keys):
    return sum(counts[k] for k in keys) / sum(counts.values())


def test_plain_zipfian_skew():
    gen = ycsb.Zipfian(1000)
    rng = random.Random(3)
    counts = collections.Counter(gen.next(rng) for _i in range(N_OPS))
    assert abs(_top_share(counts, range(100)) - ycsb.zeta(100, 0.99) / ycsb.zeta(1000, 0.99)) <= 0.02
    assert abs(counts[0] / N_OPS - 1 / ycsb.zeta(1000, 0.99)) <= 0.01


def test_scrambled_zipfian_skew_and_spread():
    n = 1000
    spec = ycsb.workload("C", recordcount=n, operationcount=N_OPS)
    counts = collections.Counter(op.keynum for op in _ops(spec, seed=5))
    # Expected popularity per key: the 5000 most popular ranks hashed exactly, the rest spread evenly.
    expected = [0.0] * n
    for rank in range(5000):
        expected[ycsb.fnvhash64(rank) % n] += (rank + 1) ** -0.99 / ycsb.SCRAMBLED_ZETAN
    rest = 1 - ycsb.zeta(5000, 0.99) / ycsb.SCRAMBLED_ZETAN
    expected = [p + rest / n for p in expected]
    top = sorted(range(n), key=lambda k: -expected[k])[:100]
    assert abs(_top_share(counts, top) - sum(expected[k] for k in top)) <= 0.02
    assert _top_share(counts, top) > 0.25  # skewed: 10 % of the keys get well over 10 % of the operations
    hottest = [k for k, _c in counts.most_common(10)]
    assert max(hottest) - min(hottest) > n // 2  # hot keys spread over the key space, not clustered


def test_hotspot_sends_80_percent_to_20_percent():
    spec = ycsb.workload("B", requestdistribution="hotspot", operationcount=N_OPS)
    keys = [op.keynum for op in _ops(spec, seed=5)]
    assert abs(sum(k < 200 for k in keys) / N_OPS - 0.8) <= 0.02
    assert max(keys) < spec.recordcount and min(keys) >= 0
    spec = ycsb.workload("B", requestdistribution="hotspot", hotspotdatafraction=0.1, hotspotopnfraction=0.5)
    keys = [op.keynum for op in _ops(spec, seed=6)]
    assert abs(sum(k < 100 for k in keys) / N_OPS - 0.5) <= 0.02


def test_uniform_is_flat():
    spec = ycsb.workload("B", requestdistribution="uniform", operationcount=N_OPS)
    counts = collections.Counter(op.keynum for op in _ops(spec, seed=5))
    top = [k for k, _c in counts.most_common(100)]
    assert _top_share(counts, top) < 0.15
    assert len(counts) > 990


def test_latest_prefers_recent_inserts_and_never_reads_unstored_keys():
    spec = ycsb.workload("D", operationcount=N_OPS)
    stream = ycsb.CoreWorkload(spec, random.Random(2), with_values=False)
    stored = set(range(spec.recordcount))
    recent = reads = 0
    expected = []
    share = {}  # share of the newest 10 % of count stored records under a zipfian over recency
    for _i in range(N_OPS):
        count = stream.counter.count
        op = stream.next_operation()
        if op.op == "insert":
            assert op.keynum == count
            stored.add(op.keynum)
            continue
        assert op.keynum in stored
        reads += 1
        recent += stream.counter.last - op.keynum < count // 10
        if count not in share:
            share[count] = ycsb.zeta(count // 10, 0.99) / ycsb.zeta(count, 0.99)
        expected.append(share[count])
    assert len(stored) > spec.recordcount + 800
    assert abs(recent / reads - sum(expected) / reads) <= 0.02


@pytest.mark.parametrize("letter", ["D", "E"])
def test_unacknowledged_inserts_are_never_addressed(letter):
    spec = ycsb.workload(letter, operationcount=5000)
    stream = ycsb.CoreWorkload(spec, random.Random(4), auto_acknowledge=False, with_values=False)
    pending = []
    for i in range(5000):
        op = stream.next_operation()
        if op.op == "insert":
            pending.append(op.keynum)
        else:
            assert op.keynum <= stream.counter.last and op.keynum not in pending
        if i % 7 == 0 and pending:  # acknowledge out of order, a few at a time
            stream.acknowledge(pending.pop(random.Random(i).randrange(len(pending))))
    assert stream.counter.last < spec.recordcount + 250 + len(pending)


def test_reconfigure_keeps_stored_records():
    stream = ycsb.CoreWorkload(ycsb.workload("D", operationcount=1000), random.Random(1), with_values=False)
    for _i in range(1000):
        stream.next_operation()
    stored = stream.counter.count
    spec = stream.reconfigure(
        readproportion=0.0, insertproportion=0.0, updateproportion=1.0, requestdistribution="uniform"
    )
    assert spec.recordcount == stored and spec.requestdistribution == "uniform"
    ops = [stream.next_operation() for _i in range(2000)]
    assert {op.op for op in ops} == {"update"} and max(op.keynum for op in ops) >= 1000

    empty = ycsb.workload(None, recordcount=0, readproportion=0, updateproportion=0, insertproportion=1)
    stream = ycsb.CoreWorkload(empty, random.Random(1), with_values=False)
    assert [stream.next_operation().keynum for _i in range(3)] == [0, 1, 2]
    stream.reconfigure(readproportion=1, insertproportion=0, requestdistribution="latest")
    assert {stream.next_operation().keynum for _i in range(100)} <= {0, 1, 2}


# ------------------------------------------------------------------------------------------------ reproducibility


def test_same_seed_same_stream():
    spec = ycsb.workload("E", operationcount=500)
    first = list(ycsb.operations(spec, random.Random(11)))
    assert first == list(ycsb.operations(spec, random.Random(11)))
    assert first != list(ycsb.operations(spec, random.Random(12)))
    for letter in "ADF":
        spec = ycsb.workload(letter)
        assert _ops(spec, seed=7, count=300) == _ops(spec, seed=7, count=300)


# ------------------------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("overrides", "field", "mentions"),
    [
        (dict(requestdistribution="foo"), "requestdistribution", "uniform, zipfian, latest, hotspot"),
        (dict(scanlengthdistribution="latest"), "scanlengthdistribution", "uniform, zipfian"),
        (dict(readproportion=0.6), "proportions", "sum to"),
        (dict(readproportion=1.5, updateproportion=-0.5), "readproportion", "[0, 1]"),
        (dict(recordcount=-1), "recordcount", ">= 0"),
        (dict(operationcount="lots"), "operationcount", "not an integer"),
        (dict(fieldcount=0), "fieldcount", ">= 1"),
        (dict(threadcount=0), "threadcount", ">= 1"),
        (dict(maxscanlength=0), "maxscanlength", "minscanlength"),
        (dict(zipfianconstant=1.0), "zipfianconstant", "(0, 1)"),
        (dict(hotspotdatafraction=2), "hotspotdatafraction", "[0, 1]"),
        (dict(target=-5), "target", ">= 0"),
        (dict(readallfields="maybe"), "readallfields", "true, false"),
        (dict(insertorder="random"), "insertorder", "hashed, ordered"),
        (dict(readproportions=0.5), "readproportions", "unknown property"),
        (dict(recordcount=0), "recordcount", "insertproportion 1"),
    ],
)
def test_validation_errors_name_the_field(overrides, field, mentions):
    with pytest.raises(ValueError) as error:
        ycsb.workload("A", **overrides)
    assert isinstance(error.value, ycsb.WorkloadSpecError)
    assert str(error.value).startswith(field + ":")
    assert mentions in str(error.value)


def test_unknown_core_workload_lists_the_letters():
    with pytest.raises(ycsb.WorkloadSpecError, match=r"^workload: 'G' is not allowed; choose one of A, B, C, D, E, F$"):
        ycsb.workload("G")


def test_property_file_spellings_are_accepted():
    props = {
        "workload": "site.ycsb.workloads.CoreWorkload",
        "coreworkload": "a",
        "recordcount": "500",
        "operationcount": "2000",
        "readallfields": "false",
        "insertorder": "ordered",
        "threads": "4",
        "requestdistribution": "hotspot",
    }
    spec = ycsb.workload(props)
    assert (spec.recordcount, spec.operationcount, spec.threadcount) == (500, 2000, 4)
    assert spec.orderedinserts and not spec.readallfields and spec.readproportion == 0.5
    assert ycsb.workload(spec.properties()) == spec
    only_inserts = ycsb.workload(None, recordcount=0, readproportion=0, updateproportion=0, insertproportion=1)
    assert {op.op for op in _ops(only_inserts, count=20)} == {"insert"}
