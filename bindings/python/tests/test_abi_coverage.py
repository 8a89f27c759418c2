"""The package's public layer covers the whole ABI: every function of
abi/symm-abi.json is called by the package's code outside symm/_ffi.py (the
ctypes declarations, checked by test_abi.py), and every constant has its
Python form (a table entry such as symm.OPS["sum"], a module constant such as
symm.INDEX_NONE, an exception class per status), unless it is listed in
NOT_WRAPPED with the reason. Fails when the header gains an entry that the
package does not wrap. No runtime needed (nothing is called)."""
import json
import os
import shutil
import sys
import tempfile
import ast

HERE = os.path.dirname(os.path.abspath(__file__))
PKG = os.path.join(os.path.dirname(HERE), "symm")
sys.path.insert(0, HERE)
from harness import case, check, run  # noqa: E402
from symm import _core, errors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
ABI_PATH = os.environ.get("SYMM_ABI_JSON", os.path.join(ROOT, "abi", "symm-abi.json"))

# Entries of the ABI the package deliberately does not give a Python form, and why.
NOT_WRAPPED = {
    "SYMM_VERSION_MAJOR": "compile-time header version: symm.loader_version() and "
                          "symm.runtime_version() report the libraries' at run time",
    "SYMM_VERSION_MINOR": "compile-time header version (see SYMM_VERSION_MAJOR)",
    "SYMM_VERSION_PATCH": "compile-time header version (see SYMM_VERSION_MAJOR)",
    "SYMM_VERSION": "compile-time header version (see SYMM_VERSION_MAJOR)",
    "SYMM_DTYPE_COUNT": "a bound, not a type: symm.DTYPES lists the types",
    "SYMM_STATUS_COUNT": "a bound, not a status: symm.errors.BY_STATUS lists the statuses",
    "SYMM_SUCCESS": "success raises nothing (every other status is an exception class)",
    "SYMM_DEVICE_FAST_PES": "device-side detail: the length of symm_device_ctx.peer_base, "
                            "which Context.device_ctx() returns as a ctypes struct",
    "SYMM_DEVICE_ABI_VERSION": "device-side detail: the value of symm_device_ctx.device_abi "
                               "(GPU code compares it; DeviceCtx carries the field)",
}

# Constant groups given as a table of the public layer: group -> table name.
TABLES = {"backend": "BACKENDS", "bootstrap": "BOOTSTRAPS", "thread": "THREAD_LEVELS",
          "dtype": "DTYPES", "team": "TEAMS", "signal": "SIGNAL_OPS", "amo": "AMOS",
          "op": "OPS", "cmp": "CMPS"}


def public_sources():
    """The public layer: every module of the package but _ffi.py, as {file: text}."""
    return {f: open(os.path.join(PKG, f)).read() for f in sorted(os.listdir(PKG))
            if f.endswith(".py") and f != "_ffi.py"}


def public_namespace():
    """What the public layer defines (module attributes), merged."""
    ns = {}
    for mod in (errors, _core):
        ns.update(vars(mod))
    return ns


def used_names(text):
    """Identifiers, attribute names and string constants of text's code.
    Comments and docstrings (a bare string statement) do not count; prose in
    messages never equals a C name."""
    tree = ast.parse(text)
    bare = {id(n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in bare:
            out.add(n.value)
    return out


def check_abi(abi, sources, ns, not_wrapped):
    """Problems found for abi in the public layer (sources, ns), and how many
    entries were checked."""
    used = set()
    for text in sources.values():
        used |= used_names(text)
    bad, checked = [], 0
    for f in abi["functions"]:
        name = f["name"]
        checked += 1
        if name in used and name in not_wrapped:
            bad.append("function %s is called and listed in NOT_WRAPPED" % name)
        elif name not in used and name not in not_wrapped:
            bad.append("function %s is not called by the public layer (wrap it, or list it in "
                       "NOT_WRAPPED with the reason)" % name)
    for c in abi["constants"]:
        name, group, value = c["name"], c["group"], c["value"]
        checked += 1
        if group in TABLES:
            table = ns.get(TABLES[group], {})
            key = name[len("SYMM_%s_" % group.upper()):].lower()
            ok = name.startswith("SYMM_%s_" % group.upper()) and table.get(key) == value
            ok = ok and TABLES[group] in used
        elif group == "status":
            cls = ns.get("BY_STATUS", {}).get(value)
            ok = cls is not None and cls.status == value
        else:
            short = name[len("SYMM_"):]
            ok = ns.get(short) == value and short in used
        if ok and name in not_wrapped:
            bad.append("constant %s has its Python form and is listed in NOT_WRAPPED" % name)
        elif not ok and name not in not_wrapped:
            bad.append("constant %s (group %s) has no Python form (a table entry, a module "
                       "constant or an exception class; or list it in NOT_WRAPPED with the "
                       "reason)" % (name, group))
    known = {e["name"] for e in abi["functions"]} | {e["name"] for e in abi["constants"]}
    for name, why in not_wrapped.items():
        if name not in known:
            bad.append("NOT_WRAPPED lists %s (%s), which the ABI does not have" % (name, why))
    return bad, checked


@case
def the_public_layer_covers_the_abi():
    abi = json.load(open(ABI_PATH))
    bad, checked = check_abi(abi, public_sources(), public_namespace(), NOT_WRAPPED)
    check(checked >= 150, "entries checked: %d" % checked)
    check(not bad, "the package does not reflect %s:\n  %s" % (ABI_PATH, "\n  ".join(bad)))
    print("checked %d functions and constants" % checked)


@case
def a_new_entry_in_a_copied_json_is_reported():
    tmp = tempfile.mkdtemp(prefix="symm-abi-")
    try:
        path = os.path.join(tmp, "symm-abi.json")
        shutil.copy(ABI_PATH, path)
        abi = json.load(open(path))
        abi["functions"].append({"name": "symm_quiet_all", "returns": "symm_status",
                                 "params": []})
        abi["constants"].append({"name": "SYMM_OP_MINLOC", "value": 7, "group": "op"})
        abi["constants"].append({"name": "SYMM_HEAP_ALIGN", "value": 256, "group": "heap"})
        json.dump(abi, open(path, "w"))
        bad, _ = check_abi(json.load(open(path)), public_sources(), public_namespace(),
                           NOT_WRAPPED)
    finally:
        shutil.rmtree(tmp)
    check(any(b.startswith("function symm_quiet_all is not called") for b in bad), bad)
    check(any(b.startswith("constant SYMM_OP_MINLOC (group op) has no") for b in bad), bad)
    check(any(b.startswith("constant SYMM_HEAP_ALIGN (group heap) has no") for b in bad), bad)
    check(len(bad) == 3, bad)


@case
def only_code_counts_and_the_table_stays_honest():
    abi = json.load(open(ABI_PATH))
    srcs = public_sources()
    # a call that survives only in a comment and a docstring
    core = srcs["_core.py"]
    gone = core.replace('call("symm_fence", self.handle)',
                        '"""symm_fence"""  # call("symm_fence", self.handle)')
    check(gone != core, "_core.py calls symm_fence")
    bad, _ = check_abi(abi, dict(srcs, **{"_core.py": gone}), public_namespace(), NOT_WRAPPED)
    check(bad == ["function symm_fence is not called by the public layer (wrap it, or list it "
                  "in NOT_WRAPPED with the reason)"], bad)
    # a table that lost an entry, a constant with the wrong value
    ns = public_namespace()
    ns["OPS"] = {k: v for k, v in ns["OPS"].items() if k != "xor"}
    ns["INDEX_NONE"] = 0
    bad, _ = check_abi(abi, srcs, ns, NOT_WRAPPED)
    check(sorted(b.split(" (")[0] for b in bad) == ["constant SYMM_INDEX_NONE",
                                                    "constant SYMM_OP_XOR"], bad)
    # an entry listed although wrapped, and one the ABI does not have
    extra = dict(NOT_WRAPPED, symm_fence="x", symm_gone="y")
    bad, _ = check_abi(abi, srcs, public_namespace(), extra)
    check(len(bad) == 2 and "symm_fence is called and listed" in bad[0]
          and "symm_gone" in bad[1], bad)


sys.exit(run())
