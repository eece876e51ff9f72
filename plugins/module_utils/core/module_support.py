# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""What every module's main() shares: one report of all missing libraries, the diff only under --diff, the
connection options of the modules that take any store, and the end of a health module.
"""

from __future__ import annotations

from ansible.module_utils.basic import missing_required_lib


def fail_imports(module, missing):
    """Fail once, naming every missing library. missing: list of (library, traceback or None)."""
    if not missing:
        return
    names = ", ".join(name for name, _tb in missing)
    module.fail_json(
        msg=missing_required_lib(names),
        exception="\n".join(tb for _name, tb in missing if tb),
    )


def with_diff(module, result):
    """result without its 'diff' entry, unless the module runs with --diff (then the diff is returned)."""
    diff = result.pop("diff", None)
    if module._diff and diff is not None:
        result["diff"] = diff
    return diff


def any_store_argument_spec():
    """Connection options of the modules that take any store (doc fragment tactician.nosql.any_store)."""
    return dict(
        port=dict(type="int", default=9042),
        login_user=dict(type="str"),
        login_password=dict(type="str", no_log=True),
        tls=dict(type="bool", default=False),
        ca_file=dict(type="path"),
        client_cert_file=dict(type="path"),
        client_key_file=dict(type="path", no_log=False),
        validate_certs=dict(type="bool", default=True),
        check_hostname=dict(type="bool", default=True),
        auth_source=dict(type="str", default="admin"),
    )


def exit_health(module, store, report, summary):
    """End a health module: the report and its summary lines; fail when unhealthy and fail_when_unhealthy."""
    result = dict(report, changed=False, summary=summary)
    if not report["healthy"] and module.params["fail_when_unhealthy"]:
        module.fail_json(msg="%s cluster not healthy: %s" % (store, "; ".join(report["problems"])), **result)
    module.exit_json(**result)


def fail(module, exc, **result):
    """End a module on an engine error: its message as it is, result, and what the error carries (exc.report())."""
    module.fail_json(msg=str(exc), **dict(result, **exc.report()))
