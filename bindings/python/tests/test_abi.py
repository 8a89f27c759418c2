"""The package reflects the C ABI: every function, constant, status and struct
of abi/symm-abi.json is declared identically here (fails when the header gains
or changes an entry that the Python package does not reflect)."""
import ctypes
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import case, check, run  # noqa: E402
from symm import _ffi, _core, errors  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
ABI = json.load(open(os.environ.get("SYMM_ABI_JSON", os.path.join(ROOT, "abi", "symm-abi.json"))))

_SCALARS = {"int32_t": ctypes.c_int32, "uint32_t": ctypes.c_uint32, "uint64_t": ctypes.c_uint64,
            "symm_status": ctypes.c_int32, "uint8_t": ctypes.c_uint8}
_HANDLES = {"symm_ctx", "symm_team", "symm_buf", "symm_stream_t"}
_STRUCT_PY = {v.__name__: k for k, v in _ffi.STRUCTS.items()}


def _expect(c_type):
    """The ctypes type the package must use for a C parameter type."""
    t = c_type.replace("const ", "").strip()
    if t in _SCALARS:
        return ("scalar", _SCALARS[t])
    if t in _HANDLES or t == "void *":
        return ("voidp", None)
    if t == "char *":
        return ("charp", None)
    if t.endswith("*"):
        base = t[:-1].strip()
        if base in _HANDLES or base == "void *" or base == "void":
            return ("ptr_or_voidp", None)
        if base in _SCALARS:
            return ("ptr", _SCALARS[base])
        if base in _ffi.STRUCTS:
            return ("ptr", _ffi.STRUCTS[base])
    raise AssertionError("unknown C type %r" % c_type)


def _matches(ct, c_type):
    kind, want = _expect(c_type)
    if kind == "scalar":
        return ct is want
    if kind == "voidp":
        return ct is ctypes.c_void_p
    if kind == "charp":
        return ct is ctypes.c_char_p
    if kind == "ptr_or_voidp":
        return ct is ctypes.c_void_p or getattr(ct, "_type_", None) is ctypes.c_void_p
    return getattr(ct, "_type_", None) is want


@case
def every_function_declared():
    names = {f["name"] for f in ABI["functions"]}
    missing = sorted(names - set(_ffi.PROTOTYPES))
    extra = sorted(set(_ffi.PROTOTYPES) - names)
    check(not missing, "functions in the ABI the package does not declare: %s" % missing)
    check(not extra, "functions the package declares that the ABI lacks: %s" % extra)


@case
def parameters_match():
    bad = []
    for f in ABI["functions"]:
        res, args = _ffi.PROTOTYPES.get(f["name"], (None, []))
        if len(args) != len(f["params"]):
            bad.append("%s: %d params, ABI %d" % (f["name"], len(args), len(f["params"])))
            continue
        for a, p in zip(args, f["params"]):
            if not _matches(a, p["c_type"]):
                bad.append("%s(%s): %r vs %s" % (f["name"], p["name"], a, p["c_type"]))
        ret = f["returns"]
        ok = (ret == "const char *" and res is ctypes.c_char_p) or \
             (ret in _SCALARS and res is _SCALARS[ret])
        if not ok:
            bad.append("%s returns %r, ABI %s" % (f["name"], res, ret))
    check(not bad, "\n".join(bad))


@case
def constants_match():
    tables = {"backend": (_core.BACKENDS, "SYMM_BACKEND_"), "bootstrap": (_core.BOOTSTRAPS, "SYMM_BOOTSTRAP_"),
              "thread": (_core.THREAD_LEVELS, "SYMM_THREAD_"), "dtype": (_core.DTYPES, "SYMM_DTYPE_"),
              "team": (_core.TEAMS, "SYMM_TEAM_"), "signal": (_core.SIGNAL_OPS, "SYMM_SIGNAL_"),
              "amo": (_core.AMOS, "SYMM_AMO_"), "op": (_core.OPS, "SYMM_OP_")}
    bad = []
    for c in ABI["constants"]:
        g = c["group"]
        if g in tables:
            table, prefix = tables[g]
            key = c["name"][len(prefix):].lower()
            if key == "count":
                continue
            if table.get(key) != c["value"]:
                bad.append("%s = %s, package %r" % (c["name"], c["value"], table.get(key)))
        elif g == "cmp":
            key = c["name"][len("SYMM_CMP_"):].lower()
            if _core.CMPS.get(key) != c["value"]:
                bad.append(c["name"])
        elif c["name"] == "SYMM_INDEX_NONE" and _core.INDEX_NONE != c["value"]:
            bad.append(c["name"])
        elif c["name"] == "SYMM_ASYNC_CLEAR" and _core.ASYNC_CLEAR != c["value"]:
            bad.append(c["name"])
        elif c["name"] == "SYMM_UNIQUE_ID_BYTES" and _ffi.UNIQUE_ID_BYTES != c["value"]:
            bad.append(c["name"])
        elif c["name"] == "SYMM_DTYPE_COUNT" and len(_core.DTYPES) + 1 != c["value"]:
            bad.append(c["name"])
    for c in ABI["constants"]:
        if c["group"] == "dtype" and c["name"] != "SYMM_DTYPE_COUNT":
            sz = _core.DTYPE_SIZES.get(c["value"])
            check(sz in (1, 2, 4, 8), "size of %s" % c["name"])
    check(not bad, "\n".join(bad))


@case
def statuses_match():
    bad = []
    for s in ABI["statuses"]:
        if s["value"] == 0:
            continue
        cls = errors.BY_STATUS.get(s["value"])
        if cls is None:
            bad.append("no exception class for %s" % s["name"])
    check(len(errors.BY_STATUS) == len(ABI["statuses"]) - 1,
          "%d exception classes for %d error statuses" % (len(errors.BY_STATUS), len(ABI["statuses"]) - 1))
    check(not bad, "\n".join(bad))


@case
def structs_match():
    bad = []
    for st in ABI["structs"]:
        py = _ffi.STRUCTS.get(st["name"])
        if py is None:
            bad.append("struct %s not declared" % st["name"])
            continue
        if ctypes.sizeof(py) != st["size"]:
            bad.append("sizeof %s: %d, ABI %d" % (st["name"], ctypes.sizeof(py), st["size"]))
        names = [f[0] for f in py._fields_]
        if names != [f["name"] for f in st["fields"]]:
            bad.append("%s fields %s, ABI %s" % (st["name"], names, [f["name"] for f in st["fields"]]))
            continue
        for f in st["fields"]:
            off = getattr(py, f["name"]).offset
            if off != f["offset"]:
                bad.append("%s.%s at %d, ABI %d" % (st["name"], f["name"], off, f["offset"]))
    check(not bad, "\n".join(bad))


@case
def the_package_states_the_abis_version():
    # symm.__version__ and the Meson project's version (the wheel's, through
    # pyproject.toml's dynamic version) are the header's SYMM_VERSION (a new
    # minor adds functions: bump them too)
    import re
    import symm
    v = ABI["version"]
    want = "%d.%d.%d" % (v["major"], v["minor"], v["patch"])
    root = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
    pyproject = open(os.path.join(root, "pyproject.toml")).read()
    meson = open(os.path.join(root, "meson.build")).read()
    check(re.search(r'^dynamic = \[[^]]*"version"', pyproject, re.M), "pyproject.toml: "
          "the version is Meson's (dynamic)")
    got = {"symm.__version__": symm.__version__,
           "meson.build": re.search(r"^  version: '([^']*)'", meson, re.M).group(1)}
    check(all(x == want for x in got.values()), "ABI %s, package %s" % (want, got))


sys.exit(run())
