# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""YCSB CoreWorkload semantics as a pure, seeded model.

What a load driver needs to behave like YCSB's CoreWorkload, without a database and without Java:

- ``WorkloadSpec``: the CoreWorkload properties (spelled as in YCSB property files) with validation, and
  ``workload(name, **overrides)`` for the six core workloads A-F or a dict of YCSB properties.
- Key choosers with YCSB's behaviour: uniform and hotspot over the loaded records, scrambled zipfian (a zipfian
  over a very large item space folded onto the records with FNV-64, so the hot keys are spread over the table),
  latest (zipfian over recency), and the acknowledged-insert counter that keeps every chosen key inserted.
- ``CoreWorkload`` / ``operations()``: the operation stream (op, key, fields, values, scan length).
- ``op_mix()`` and ``read_ratio()``: the mix as proportions and the read ratio a server-side monitor sees.

Everything random draws from one ``random.Random`` given by the caller: the same seed gives the same stream.
Standard library only: this file is shipped to managed nodes.
"""

from __future__ import annotations

import dataclasses
import math
import random
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import WorkloadError

OPERATIONS = ("read", "update", "insert", "scan", "readmodifywrite", "delete")
"""Client operations, in the order YCSB's operation chooser walks them (delete last)."""

READ_OPERATIONS = ("read", "scan")
WRITE_OPERATIONS = ("update", "insert", "delete")

REQUEST_DISTRIBUTIONS = ("uniform", "zipfian", "latest", "hotspot")
SCAN_LENGTH_DISTRIBUTIONS = ("uniform", "zipfian")
INSERT_ORDERS = ("hashed", "ordered")

ZIPFIAN_CONSTANT = 0.99
"""YCSB's default zipfian constant (theta)."""

SCRAMBLED_ITEM_COUNT = 10_000_000_000
"""Item space of YCSB's ScrambledZipfianGenerator before it is folded onto the records."""

SCRAMBLED_ZETAN = 26.46902820178302
"""zeta(10^10, 0.99): the constant YCSB precomputes for its scrambled zipfian."""

PROPORTION_TOLERANCE = 1e-9

FNV_OFFSET_BASIS_64 = 0xCBF29CE484222325
FNV_PRIME_64 = 1099511628211
_MASK_64 = (1 << 64) - 1
_SIGN_64 = 1 << 63


class WorkloadSpecError(WorkloadError, ValueError):
    """A workload property is invalid. The message starts with the property name."""


# ---------------------------------------------------------------------------------------------------------------
# The workload specification
# ---------------------------------------------------------------------------------------------------------------

_PROPORTION_FIELDS = tuple("%sproportion" % op for op in OPERATIONS)


@dataclasses.dataclass(frozen=True)
class WorkloadSpec:
    """YCSB CoreWorkload properties. Field names are YCSB's property names.

    Defaults are CoreWorkload's own (95 % read, 5 % update, uniform keys) with the record and operation counts of
    YCSB's workload files (1000). ``orderedinserts`` is YCSB's ``insertorder=ordered``; ``target`` is ops/s for
    the whole client (0 = unthrottled); ``deleteproportion`` is an extension (CoreWorkload has no delete).
    """

    recordcount: int = 1000
    operationcount: int = 1000
    fieldcount: int = 10
    fieldlength: int = 100
    readproportion: float = 0.95
    updateproportion: float = 0.05
    insertproportion: float = 0.0
    scanproportion: float = 0.0
    readmodifywriteproportion: float = 0.0
    deleteproportion: float = 0.0
    requestdistribution: str = "uniform"
    hotspotdatafraction: float = 0.2
    hotspotopnfraction: float = 0.8
    minscanlength: int = 1
    maxscanlength: int = 1000
    scanlengthdistribution: str = "uniform"
    zipfianconstant: float = ZIPFIAN_CONSTANT
    readallfields: bool = True
    writeallfields: bool = False
    orderedinserts: bool = False
    zeropadding: int = 1
    target: float = 0.0
    threadcount: int = 1
    table: str = "usertable"

    def __post_init__(self):
        for spec in dataclasses.fields(self):
            value = _check_type(spec.name, _KINDS[spec.name], getattr(self, spec.name))
            object.__setattr__(self, spec.name, value)
        self.validate()

    def validate(self):
        """Raise WorkloadSpecError (message starting with the property name) when a value is out of range."""
        for name in _PROPORTION_FIELDS:
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise WorkloadSpecError("%s: %r is out of range; choose a proportion in [0, 1]" % (name, value))
        total = math.fsum(getattr(self, name) for name in _PROPORTION_FIELDS)
        if abs(total - 1.0) > PROPORTION_TOLERANCE:
            raise WorkloadSpecError(
                "proportions: %s sum to %r; they must sum to 1" % (", ".join(_PROPORTION_FIELDS), round(total, 12))
            )
        _check_choice("requestdistribution", self.requestdistribution, REQUEST_DISTRIBUTIONS)
        _check_choice("scanlengthdistribution", self.scanlengthdistribution, SCAN_LENGTH_DISTRIBUTIONS)
        for name in ("recordcount", "operationcount"):
            _check_minimum(name, getattr(self, name), 0)
        for name in ("fieldcount", "fieldlength", "minscanlength", "zeropadding", "threadcount"):
            _check_minimum(name, getattr(self, name), 1)
        if self.maxscanlength < self.minscanlength:
            raise WorkloadSpecError(
                "maxscanlength: %d is below minscanlength %d; choose a value >= %d"
                % (self.maxscanlength, self.minscanlength, self.minscanlength)
            )
        for name in ("hotspotdatafraction", "hotspotopnfraction"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise WorkloadSpecError("%s: %r is out of range; choose a fraction in [0, 1]" % (name, value))
        if not (0.0 < self.zipfianconstant < 1.0):
            raise WorkloadSpecError(
                "zipfianconstant: %r is out of range; choose a value in (0, 1), YCSB's default is %s"
                % (self.zipfianconstant, ZIPFIAN_CONSTANT)
            )
        if self.target < 0:
            raise WorkloadSpecError("target: %r is negative; choose ops/s >= 0 (0 = unthrottled)" % (self.target,))
        if not self.table:
            raise WorkloadSpecError("table: must not be empty; choose a table name such as usertable")
        if self.recordcount == 0 and self.insertproportion < 1.0:
            raise WorkloadSpecError(
                "recordcount: 0 leaves nothing to read, update, scan or delete; choose recordcount >= 1 "
                "or insertproportion 1"
            )

    def properties(self):
        """The spec as YCSB property strings (what a workload file for the real YCSB would hold)."""
        props = {"workload": "site.ycsb.workloads.CoreWorkload"}
        for spec in dataclasses.fields(self):
            value = getattr(self, spec.name)
            if spec.name == "orderedinserts":
                props["insertorder"] = "ordered" if value else "hashed"
            elif spec.name == "deleteproportion" and not value:
                continue
            elif isinstance(value, bool):
                props[spec.name] = "true" if value else "false"
            elif isinstance(value, float) and value.is_integer():
                props[spec.name] = str(int(value))  # YCSB reads some numbers (target) with Integer.parseInt
            else:
                props[spec.name] = str(value)
        return props

    def field_names(self):
        """YCSB's column names: field0 ... field{fieldcount-1}."""
        return tuple("field%d" % i for i in range(self.fieldcount))


_KINDS = {
    "recordcount": int,
    "operationcount": int,
    "fieldcount": int,
    "fieldlength": int,
    "readproportion": float,
    "updateproportion": float,
    "insertproportion": float,
    "scanproportion": float,
    "readmodifywriteproportion": float,
    "deleteproportion": float,
    "requestdistribution": str,
    "hotspotdatafraction": float,
    "hotspotopnfraction": float,
    "minscanlength": int,
    "maxscanlength": int,
    "scanlengthdistribution": str,
    "zipfianconstant": float,
    "readallfields": bool,
    "writeallfields": bool,
    "orderedinserts": bool,
    "zeropadding": int,
    "target": float,
    "threadcount": int,
    "table": str,
}

_ALIASES = {
    # The ycsb command line's -threads sets threadcount.
    "threads": "threadcount",
}
_IGNORED_PROPERTIES = ("workload",)

CORE_WORKLOADS = {
    "A": dict(readproportion=0.5, updateproportion=0.5, requestdistribution="zipfian"),
    "B": dict(readproportion=0.95, updateproportion=0.05, requestdistribution="zipfian"),
    "C": dict(readproportion=1.0, updateproportion=0.0, requestdistribution="zipfian"),
    "D": dict(readproportion=0.95, updateproportion=0.0, insertproportion=0.05, requestdistribution="latest"),
    "E": dict(
        readproportion=0.0,
        updateproportion=0.0,
        scanproportion=0.95,
        insertproportion=0.05,
        requestdistribution="zipfian",
        maxscanlength=100,
        scanlengthdistribution="uniform",
    ),
    "F": dict(readproportion=0.5, updateproportion=0.0, readmodifywriteproportion=0.5, requestdistribution="zipfian"),
}
"""YCSB's workloads/workloada ... workloadf, as overrides of the CoreWorkload defaults."""


def _check_choice(name, value, allowed):
    if value not in allowed:
        raise WorkloadSpecError("%s: %r is not allowed; choose one of %s" % (name, value, ", ".join(allowed)))


def _check_minimum(name, value, minimum):
    if value < minimum:
        raise WorkloadSpecError("%s: %r is below the minimum; choose a value >= %d" % (name, value, minimum))


def _check_type(name, kind, value):
    """Coerce value to kind (accepting the strings of a YCSB property file) or raise WorkloadSpecError."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        raise WorkloadSpecError("%s: %r is not a boolean; choose one of true, false" % (name, value))
    if kind is str:
        if isinstance(value, str):
            return value.strip()
        raise WorkloadSpecError("%s: %r is not a string" % (name, value))
    if isinstance(value, bool):
        raise WorkloadSpecError("%s: %r is not a number" % (name, value))
    if kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise WorkloadSpecError("%s: %r is not an integer" % (name, value))
    if isinstance(value, int | float):
        result = float(value)
    elif isinstance(value, str):
        try:
            result = float(value.strip())
        except ValueError:
            raise WorkloadSpecError("%s: %r is not a number" % (name, value)) from None
    else:
        raise WorkloadSpecError("%s: %r is not a number" % (name, value))
    if not math.isfinite(result):
        raise WorkloadSpecError("%s: %r is not a finite number" % (name, value))
    return result


def _normalize_properties(props):
    """Map YCSB property spellings to WorkloadSpec field names, with coerced values."""
    result = {}
    for raw_name, value in props.items():
        name = str(raw_name).strip()
        if name in _IGNORED_PROPERTIES:
            continue
        name = _ALIASES.get(name, name)
        if name == "insertorder":
            if not isinstance(value, str) or value.strip() not in INSERT_ORDERS:
                raise WorkloadSpecError(
                    "insertorder: %r is not allowed; choose one of %s" % (value, ", ".join(INSERT_ORDERS))
                )
            result["orderedinserts"] = value.strip() == "ordered"
            continue
        if name not in _KINDS:
            allowed = sorted(set(_KINDS) | set(_ALIASES) | {"insertorder"})
            raise WorkloadSpecError("%s: unknown property; choose one of %s" % (name, ", ".join(allowed)))
        result[name] = _check_type(name, _KINDS[name], value)
    return result


def workload(name="A", **overrides):
    """A WorkloadSpec for a core workload or a dict of YCSB properties, with overrides applied last.

    name: "A" ... "F" (any case, "workloada" also works), None for CoreWorkload's defaults, or a mapping of YCSB
    property names to values (strings as in a property file are accepted). A mapping may name its core workload
    with the key "coreworkload". Each override replaces one property and the proportions must still sum to 1:
    readproportion=0.9 on workload A needs its partner updateproportion=0.1.
    """
    base = {}
    props = {}
    if isinstance(name, Mapping):
        props = dict(name)
        name = props.pop("coreworkload", None)
    if name is not None:
        if not isinstance(name, str):
            raise WorkloadSpecError("workload: %r is not allowed; choose one of %s" % (name, ", ".join(CORE_WORKLOADS)))
        letter = name.strip().upper()
        if letter.startswith("WORKLOAD"):
            letter = letter[len("WORKLOAD") :]
        if letter not in CORE_WORKLOADS:
            raise WorkloadSpecError("workload: %r is not allowed; choose one of %s" % (name, ", ".join(CORE_WORKLOADS)))
        base = dict(CORE_WORKLOADS[letter])
    base.update(_normalize_properties(props))
    base.update(_normalize_properties(overrides))
    return WorkloadSpec(**base)


# ---------------------------------------------------------------------------------------------------------------
# Mix and read ratio
# ---------------------------------------------------------------------------------------------------------------


def op_mix(spec):
    """The client-side operation proportions of a spec: {op: proportion} for every op in OPERATIONS."""
    return {op: getattr(spec, "%sproportion" % op) for op in OPERATIONS}


def server_operations(mix):
    """(reads, writes) a server sees per client operation of this mix.

    What counts: read and scan are one read request each (a scan is one range query, whatever its length);
    update, insert and delete are one write each; a readmodifywrite is one read followed by one update, so one
    read and one write. mix: {op: proportion} (missing ops are 0) or a WorkloadSpec.
    """
    if isinstance(mix, WorkloadSpec):
        mix = op_mix(mix)
    unknown = sorted(set(mix) - set(OPERATIONS))
    if unknown:
        raise WorkloadSpecError("mix: %r is not allowed; choose one of %s" % (unknown[0], ", ".join(OPERATIONS)))
    reads = math.fsum(mix.get(op, 0.0) for op in (*READ_OPERATIONS, "readmodifywrite"))
    writes = math.fsum(mix.get(op, 0.0) for op in (*WRITE_OPERATIONS, "readmodifywrite"))
    return reads, writes


def read_ratio(spec):
    """Share of server-side reads among server-side reads and writes, for a WorkloadSpec or a mix dict.

    read_ratio = (read + scan + readmodifywrite) / (read + scan + update + insert + delete + 2 * readmodifywrite)
    which is what a monitor counting read and write requests on the servers sees (see server_operations()).
    Workload F (50 % read, 50 % read-modify-write) therefore has read ratio 2/3, not 1.
    """
    reads, writes = server_operations(spec)
    total = reads + writes
    if total <= 0:
        raise WorkloadSpecError("mix: has no operations; give at least one op a proportion > 0")
    return reads / total


# ---------------------------------------------------------------------------------------------------------------
# Hashing, key names, zeta
# ---------------------------------------------------------------------------------------------------------------


def fnvhash64(value):
    """YCSB's 64-bit FNV hash of a non-negative long: FNV-1 over its 8 little-endian octets, then |h| as Java does.

    (Java's Math.abs leaves Long.MIN_VALUE negative; here that single value maps to 0 so keys stay positive.)
    """
    hashval = FNV_OFFSET_BASIS_64
    val = int(value)
    for _byte in range(8):
        hashval ^= val & 0xFF
        val >>= 8
        hashval = (hashval * FNV_PRIME_64) & _MASK_64
    if hashval >= _SIGN_64:
        hashval = ((1 << 64) - hashval) & (_SIGN_64 - 1)
    return hashval


def key_name(keynum, ordered=False, zeropadding=1):
    """YCSB's key for record number keynum: "user" + the (FNV-hashed unless ordered) number, zero-padded."""
    number = int(keynum) if ordered else fnvhash64(keynum)
    return "user" + str(number).rjust(zeropadding, "0")


_ZETA_EXACT_LIMIT = 20_000
_ZETA_HEAD = 1_000


def zeta(n, theta):
    """Sum of i**-theta for i = 1..n (the zipfian normalizer), exact for small n, Euler-Maclaurin beyond."""
    if n <= 0:
        return 0.0
    if n <= _ZETA_EXACT_LIMIT:
        return math.fsum(i**-theta for i in range(1, n + 1))
    m = _ZETA_HEAD
    head = math.fsum(i**-theta for i in range(1, m))

    def d1(x):
        return -theta * x ** (-theta - 1.0)

    def d3(x):
        return -theta * (theta + 1.0) * (theta + 2.0) * x ** (-theta - 3.0)

    if theta == 1.0:
        integral = math.log(n / m)
    else:
        integral = (n ** (1.0 - theta) - m ** (1.0 - theta)) / (1.0 - theta)
    tail = integral + (m**-theta + n**-theta) / 2.0 + (d1(n) - d1(m)) / 12.0 - (d3(n) - d3(m)) / 720.0
    return head + tail


# ---------------------------------------------------------------------------------------------------------------
# Number generators
# ---------------------------------------------------------------------------------------------------------------


class Zipfian:
    """Zipfian ranks in [0, items): rank 0 most popular, P(rank i) ~ (i+1)**-theta.

    The rejection-free method of Gray et al. ("Quickly generating billion-record synthetic databases") that YCSB's
    ZipfianGenerator uses. The item count may grow between draws (zeta is extended incrementally), as YCSB's
    latest distribution needs.
    """

    def __init__(self, items, theta=ZIPFIAN_CONSTANT, zetan=None):
        if items < 1:
            raise WorkloadSpecError("items: %r is below the minimum; choose a value >= 1" % (items,))
        self.theta = float(theta)
        self.alpha = 1.0 / (1.0 - self.theta)
        self.zeta2theta = zeta(2, self.theta)
        self.half_pow_theta = 0.5**self.theta
        self.items = 0
        self.zetan = 0.0
        self.eta = 0.0
        self._resize(int(items), zetan)

    def _resize(self, items, zetan=None):
        if zetan is not None:
            self.zetan = float(zetan)
        elif self.items and items > self.items and items - self.items <= _ZETA_EXACT_LIMIT:
            self.zetan += math.fsum(i**-self.theta for i in range(self.items + 1, items + 1))
        else:
            self.zetan = zeta(items, self.theta)
        self.items = items
        if items > 1:
            self.eta = (1.0 - (2.0 / items) ** (1.0 - self.theta)) / (1.0 - self.zeta2theta / self.zetan)
        else:
            self.eta = 0.0

    def next(self, rng, items=None):
        """A rank in [0, items) (items defaults to the current count; a new count resizes the generator)."""
        if items is not None and items != self.items:
            if items < 1:
                raise WorkloadSpecError("items: %r is below the minimum; choose a value >= 1" % (items,))
            self._resize(int(items))
        u = rng.random()
        uz = u * self.zetan
        if uz < 1.0 or self.items == 1:
            return 0
        if uz < 1.0 + self.half_pow_theta:
            return 1
        base = max(0.0, self.eta * u - self.eta + 1.0)
        return min(self.items - 1, int(self.items * base**self.alpha))


class InsertCounter:
    """YCSB's acknowledged counter of record numbers.

    next() hands out the next record number to insert; acknowledge() marks it stored; last is the highest record
    number below which every record is acknowledged, so choosers that stay <= last never address a record whose
    insert is still in flight. In a single process acknowledging right after the insert is enough.
    """

    def __init__(self, start):
        self._next = int(start)
        self.last = int(start) - 1
        self._pending = set()

    @property
    def count(self):
        """Records known to be stored: record numbers 0 .. last."""
        return self.last + 1

    def next(self):
        keynum = self._next
        self._next += 1
        return keynum

    def acknowledge(self, keynum):
        if keynum <= self.last or keynum >= self._next:
            raise WorkloadSpecError("keynum: %r was not handed out by this counter or is already acknowledged" % keynum)
        self._pending.add(keynum)
        while self.last + 1 in self._pending:
            self._pending.remove(self.last + 1)
            self.last += 1


class UniformKeys:
    """Uniform over the loaded records [0, recordcount), as YCSB's UniformLongGenerator (inserts are not read)."""

    name = "uniform"

    def __init__(self, spec, counter):
        self.records = spec.recordcount

    def next(self, rng):
        return rng.randrange(self.records)


class HotspotKeys:
    """YCSB's hotspot: hotspotopnfraction of operations go to the first hotspotdatafraction of loaded records."""

    name = "hotspot"

    def __init__(self, spec, counter):
        self.records = spec.recordcount
        self.hot = int(self.records * spec.hotspotdatafraction)
        self.cold = self.records - self.hot
        self.opn_fraction = spec.hotspotopnfraction

    def is_hot(self, keynum):
        return keynum < self.hot

    def next(self, rng):
        if self.cold == 0 or (self.hot > 0 and rng.random() < self.opn_fraction):
            return rng.randrange(self.hot)
        return self.hot + rng.randrange(self.cold)


class ScrambledZipfianKeys:
    """YCSB's ScrambledZipfian: a zipfian rank over 10^10 items, FNV-hashed and folded onto the key space.

    The key space is recordcount plus YCSB's allowance for new keys (2 * operationcount * insertproportion);
    numbers above the last acknowledged insert are drawn again, so only stored records are addressed.
    """

    name = "zipfian"
    CACHED_RANKS = 1 << 16
    """The most popular ranks keep their hashed key number (at most this many entries)."""

    def __init__(self, spec, counter):
        self.counter = counter
        self._cache = {}
        self.items = spec.recordcount + int(spec.operationcount * spec.insertproportion * 2.0)
        self.items = max(self.items, 1)
        if spec.zipfianconstant == ZIPFIAN_CONSTANT:
            self.zipfian = Zipfian(SCRAMBLED_ITEM_COUNT, spec.zipfianconstant, zetan=SCRAMBLED_ZETAN)
        else:
            self.zipfian = Zipfian(SCRAMBLED_ITEM_COUNT, spec.zipfianconstant)

    def rank_to_keynum(self, rank):
        keynum = self._cache.get(rank)
        if keynum is None:
            keynum = fnvhash64(rank) % self.items
            if rank < self.CACHED_RANKS:
                self._cache[rank] = keynum
        return keynum

    def next(self, rng):
        if self.counter.last < 0:
            raise WorkloadSpecError("recordcount: no record is stored yet; load records or insert first")
        while True:
            keynum = self.rank_to_keynum(self.zipfian.next(rng))
            if keynum <= self.counter.last:
                return keynum


class LatestKeys:
    """YCSB's latest: a zipfian over recency, rank 0 being the most recently acknowledged insert.

    (YCSB's SkewedLatestGenerator can never return record 0; here the whole range 0 .. last is reachable.)
    """

    name = "latest"

    def __init__(self, spec, counter):
        self.counter = counter
        self.zipfian = Zipfian(max(counter.count, 1), spec.zipfianconstant)

    def next(self, rng):
        count = self.counter.count
        if count < 1:
            raise WorkloadSpecError("recordcount: no record is stored yet; load records or insert first")
        return self.counter.last - self.zipfian.next(rng, count)


KEY_CHOOSERS = {
    "uniform": UniformKeys,
    "zipfian": ScrambledZipfianKeys,
    "latest": LatestKeys,
    "hotspot": HotspotKeys,
}


def key_chooser(spec, counter):
    """The key chooser for spec.requestdistribution, reading the stored-record range from counter."""
    _check_choice("requestdistribution", spec.requestdistribution, REQUEST_DISTRIBUTIONS)
    return KEY_CHOOSERS[spec.requestdistribution](spec, counter)


# ---------------------------------------------------------------------------------------------------------------
# Operations
# ---------------------------------------------------------------------------------------------------------------


class Operation(NamedTuple):
    """One client operation.

    fields: the columns read (read, scan, readmodifywrite) or written (update, insert); values: column -> value
    written (update, insert, readmodifywrite), None when nothing is written or values were not asked for;
    scan_length: records a scan returns at most, else None.
    """

    op: str
    key: str
    keynum: int
    fields: tuple[str, ...] = ()
    values: dict[str, str] | None = None
    scan_length: int | None = None


_VALUE_ALPHABET = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
_VALUE_TABLE = bytes(_VALUE_ALPHABET[i % len(_VALUE_ALPHABET)] for i in range(256))


def random_value(rng, length):
    """A printable ASCII string of length characters drawn from rng."""
    if length <= 0:
        return ""
    return rng.getrandbits(8 * length).to_bytes(length, "little").translate(_VALUE_TABLE).decode("ascii")


class CoreWorkload:
    """The transaction phase of YCSB's CoreWorkload as a seeded stream of Operation.

    rng: a seeded random.Random (the only source of randomness). The records 0 .. recordcount-1 are taken as
    loaded (see load_operations()). auto_acknowledge: inserts are acknowledged as they are handed out, which is
    right when the caller performs each operation before asking for the next one; with False the caller calls
    acknowledge(op.keynum) once an insert is stored. with_values: False skips generating the values written.
    """

    def __init__(self, spec, rng, *, auto_acknowledge=True, with_values=True):
        if not isinstance(spec, WorkloadSpec):
            raise WorkloadSpecError("spec: %r is not a WorkloadSpec; build one with workload()" % (spec,))
        if not isinstance(rng, random.Random):
            raise WorkloadSpecError("rng: %r is not a random.Random; pass random.Random(seed)" % (rng,))
        spec.validate()
        self.rng = rng
        self.auto_acknowledge = auto_acknowledge
        self.with_values = with_values
        self.counter = InsertCounter(spec.recordcount)
        self._configure(spec)

    def _configure(self, spec):
        self.spec = spec
        self.field_names = spec.field_names()
        self.keys = key_chooser(spec, self.counter)
        self._ops = [(op, p) for op, p in op_mix(spec).items() if p > 0]
        total = math.fsum(p for _op, p in self._ops)
        self._ops = [(op, p / total) for op, p in self._ops]
        if spec.scanlengthdistribution == "zipfian":
            self._scan_zipfian = Zipfian(spec.maxscanlength - spec.minscanlength + 1, spec.zipfianconstant)
        else:
            self._scan_zipfian = None

    def reconfigure(self, **overrides):
        """Switch to another mix or distribution mid-stream (YCSB property names), keeping the stored records.

        Setting one proportion does not zero the others: give the whole mix, e.g. readproportion=1,
        updateproportion=0. recordcount becomes the records stored so far, so uniform and hotspot keys now cover
        the inserted records too. This is how a schedule of phases is replayed on one key space.
        """
        values = dataclasses.asdict(self.spec)
        values.update(_normalize_properties(overrides))
        values["recordcount"] = self.counter.count
        spec = WorkloadSpec(**values)
        self._configure(spec)
        return spec

    def acknowledge(self, keynum):
        """Mark an insert handed out earlier as stored (only needed with auto_acknowledge=False)."""
        self.counter.acknowledge(keynum)

    def choose_operation(self):
        """An op name drawn with the mix proportions (YCSB's DiscreteGenerator walk)."""
        u = self.rng.random()
        for op, p in self._ops:
            if u < p:
                return op
            u -= p
        return self._ops[-1][0]

    def scan_length(self):
        spec = self.spec
        if self._scan_zipfian is not None:
            return spec.minscanlength + self._scan_zipfian.next(self.rng)
        return self.rng.randint(spec.minscanlength, spec.maxscanlength)

    def _key(self, keynum):
        return key_name(keynum, self.spec.orderedinserts, self.spec.zeropadding)

    def _read_fields(self):
        if self.spec.readallfields:
            return self.field_names
        return (self.field_names[self.rng.randrange(len(self.field_names))],)

    def _write_fields(self):
        if self.spec.writeallfields:
            return self.field_names
        return (self.field_names[self.rng.randrange(len(self.field_names))],)

    def _values(self, fields):
        if not self.with_values:
            return None
        return {name: random_value(self.rng, self.spec.fieldlength) for name in fields}

    def next_operation(self):
        op = self.choose_operation()
        if op == "insert":
            keynum = self.counter.next()
            fields = self.field_names
            result = Operation(op, self._key(keynum), keynum, fields, self._values(fields))
            if self.auto_acknowledge:
                self.counter.acknowledge(keynum)
            return result
        keynum = self.keys.next(self.rng)
        key = self._key(keynum)
        if op == "read":
            return Operation(op, key, keynum, self._read_fields())
        if op == "scan":
            return Operation(op, key, keynum, self._read_fields(), scan_length=self.scan_length())
        if op == "update":
            fields = self._write_fields()
            return Operation(op, key, keynum, fields, self._values(fields))
        if op == "readmodifywrite":
            fields = self._read_fields()
            written = self._write_fields()
            return Operation(op, key, keynum, fields, self._values(written))
        return Operation(op, key, keynum)

    def __iter__(self):
        while True:
            yield self.next_operation()


def operations(spec, rng, count=None, **options) -> Iterator[Operation]:
    """count operations (default spec.operationcount) of the transaction phase; options as for CoreWorkload."""
    stream = CoreWorkload(spec, rng, **options)
    total = spec.operationcount if count is None else int(count)
    for _index in range(total):
        yield stream.next_operation()


def load_operations(spec, rng, with_values=True) -> Iterator[Operation]:
    """The load phase: one insert of all fields for each record 0 .. recordcount-1, in record order."""
    fields = spec.field_names()
    for keynum in range(spec.recordcount):
        values = {name: random_value(rng, spec.fieldlength) for name in fields} if with_values else None
        yield Operation("insert", key_name(keynum, spec.orderedinserts, spec.zeropadding), keynum, fields, values)
