# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""Model files: a trained model saved with the metadata that says what it is valid for.

A model file is one JSON document (schema ``tactician.model/v1``), never a pickle: the forest of a surrogate is
stored as arrays of its trees, the resource model as its calibration table, so a file can be read, diffed and
loaded without unpickling code, and predictions need numpy only.

    {"schema": "tactician.model/v1", "kind": "resource" | "surrogate" | "cluster_surrogate",
     "metadata": {store, store_version, hardware_profile {name, vcpu, ram_gb, ...}, features [...], target,
                  training_data_sha256, training_points, libraries {python, numpy, ...}, created, metrics {...}},
     "model": {...the model's own to_dict()...}}

``load_model`` refuses a file whose metadata does not match what the caller asks for (store, version, hardware
profile, feature list, kind), with an error that names the field, the file's value and the asked one. Standard
library only.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import os
import platform
import tempfile

from ansible_collections.tactician.nosql.plugins.module_utils.core.errors import ModelError
from ansible_collections.tactician.nosql.plugins.module_utils.core.secrets import check_no_secrets

MODEL_SCHEMA = "tactician.model/v1"
KINDS = ("resource", "surrogate", "cluster_surrogate")
REQUIRED_METADATA = (
    "store",
    "store_version",
    "hardware_profile",
    "features",
    "training_data_sha256",
    "training_points",
    "libraries",
    "created",
)
LIBRARIES = ("numpy", "scipy", "sklearn", "statsmodels", "pandas")


class ModelFileError(ModelError, ValueError):
    """A model file is missing, malformed, or does not match what it is asked for. The message names the field."""


def _canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def data_hash(rows):
    """sha256 of the canonical JSON of the training rows: the same data always gives the same hash."""
    try:
        return hashlib.sha256(_canonical(rows).encode("utf-8")).hexdigest()
    except (TypeError, ValueError) as exc:
        raise ModelFileError("training data: not JSON-serialisable (%s)" % exc) from None


def library_versions(names=LIBRARIES):
    """{library: version} of the libraries that are importable (missing ones are left out), plus python."""
    versions = {"python": platform.python_version()}
    for name in names:
        try:
            module = __import__(name)
        except ImportError:
            continue
        versions[name] = str(getattr(module, "__version__", "unknown"))
    return versions


def _read_first(path, prefix):
    try:
        with open(path) as handle:
            for line in handle:
                if line.startswith(prefix):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def hardware_profile(name=None, vcpu=None, ram_gb=None, disk_ssd=None, heap_mb=None, **extra):
    """The hardware a model is valid for: {name, vcpu, ram_gb, disk_ssd, heap_mb, cpu_model, ...}.

    Missing numbers are read from this machine (CPU count, MemTotal, CPU model). The name is what models are
    matched on; it defaults to "<vcpu>cpu-<ram_gb>g" so two machines of the same size share models."""
    if vcpu is None:
        vcpu = os.cpu_count() or 1
    if ram_gb is None:
        total = _read_first("/proc/meminfo", "MemTotal")
        ram_gb = round(int(total.split()[0]) / 1024.0 / 1024.0, 1) if total else None
    profile = {
        "name": name or "%dcpu-%sg" % (int(vcpu), ("%g" % ram_gb) if ram_gb is not None else "unknown"),
        "vcpu": vcpu,
        "ram_gb": ram_gb,
        "disk_ssd": disk_ssd,
        "heap_mb": heap_mb,
        "cpu_model": _read_first("/proc/cpuinfo", "model name"),
    }
    profile.update(extra)
    return profile


def new_metadata(store, store_version, hardware, features, rows, target=None, metrics=None, **extra):
    """Metadata of a model trained on rows (the exact training data, hashed)."""
    metadata = {
        "store": store,
        "store_version": str(store_version),
        "hardware_profile": hardware,
        "features": list(features),
        "target": target,
        "training_data_sha256": data_hash(rows),
        "training_points": len(rows),
        "libraries": library_versions(),
        "created": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "metrics": metrics or {},
    }
    metadata.update(extra)
    return metadata


def _check_document(doc, path):
    if not isinstance(doc, dict) or doc.get("schema") != MODEL_SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else type(doc).__name__
        raise ModelFileError("schema: %s is %r, not a model file of schema %s" % (path, found, MODEL_SCHEMA))
    if doc.get("kind") not in KINDS:
        raise ModelFileError("kind: %s has kind %r; allowed: %s" % (path, doc.get("kind"), ", ".join(KINDS)))
    metadata = doc.get("metadata")
    if not isinstance(metadata, dict):
        raise ModelFileError("metadata: %s has no metadata mapping" % path)
    missing = [key for key in REQUIRED_METADATA if key not in metadata]
    if missing:
        raise ModelFileError(
            "metadata.%s: missing in %s; a model file needs %s" % (missing[0], path, ", ".join(REQUIRED_METADATA))
        )
    if not isinstance(doc.get("model"), dict):
        raise ModelFileError("model: %s has no model mapping" % path)


def save_model(path, kind, model, metadata):
    """Write the model file atomically (mode 0644). Refuses secrets in metadata or model, and bad kinds."""
    doc = {"schema": MODEL_SCHEMA, "kind": kind, "metadata": metadata, "model": model}
    _check_document(doc, path)
    check_no_secrets(metadata, "metadata", ModelFileError, "a model file never holds")
    try:
        text = json.dumps(doc, sort_keys=True, indent=1, allow_nan=False) + "\n"
    except (TypeError, ValueError) as exc:
        raise ModelFileError("model: not JSON-serialisable (%s)" % exc) from None
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    handle, tmp = tempfile.mkstemp(prefix=".model-", dir=directory)
    try:
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return doc


def read_model(path):
    """The whole model document, checked for shape only."""
    try:
        with open(path) as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        raise ModelFileError("model_file: %s does not exist; train one first (docs/predict.md)" % path) from None
    except (OSError, ValueError) as exc:
        raise ModelFileError("model_file: cannot read %s: %s" % (path, exc)) from None
    _check_document(doc, path)
    return doc


def _mismatch(field, path, found, asked, hint=""):
    return ModelFileError(
        "%s: %s was trained for %s, but %s was asked%s" % (field, path, json.dumps(found), json.dumps(asked), hint)
    )


def check_matches(doc, path, kind=None, store=None, store_version=None, hardware_profile=None, features=None):
    """Raise ModelFileError when the model does not match what is asked (None = do not check that field)."""
    meta = doc["metadata"]
    if kind is not None and doc["kind"] != kind:
        raise _mismatch("kind", path, doc["kind"], kind)
    if store is not None and meta["store"] != store:
        raise _mismatch("metadata.store", path, meta["store"], store)
    if store_version is not None:
        have, want = str(meta["store_version"]), str(store_version)
        # "5.0" matches "5.0.9": a model of a release line serves every patch release of it.
        if not (want == have or want.startswith(have + ".") or have.startswith(want + ".")):
            raise _mismatch("metadata.store_version", path, have, want)
    if hardware_profile is not None:
        asked = hardware_profile if isinstance(hardware_profile, str) else hardware_profile.get("name")
        have = (meta["hardware_profile"] or {}).get("name")
        if asked != have:
            raise _mismatch(
                "metadata.hardware_profile", path, have, asked, "; calibrate or train on that hardware first"
            )
    if features is not None and list(features) != list(meta["features"]):
        missing = [f for f in features if f not in meta["features"]]
        extra = [f for f in meta["features"] if f not in features]
        raise ModelFileError(
            "metadata.features: %s was trained on other features (missing: %s; not asked: %s)"
            % (path, ", ".join(missing) or "none", ", ".join(extra) or "none")
        )


def load_model(path, kind=None, store=None, store_version=None, hardware_profile=None, features=None):
    """(model dict, metadata) of a model file that matches what is asked, else ModelFileError naming the field."""
    doc = read_model(path)
    check_matches(doc, path, kind, store, store_version, hardware_profile, features)
    return doc["model"], doc["metadata"]
