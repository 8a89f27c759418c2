#!/usr/bin/env python3
"""Check what symm's shared objects export.

  check_symbols.py loader  LIBSYMM          (run from anywhere)
  check_symbols.py runtime LIBSYMM_RUNTIME

loader:  the functions declared SYMM_API in include/symm/symm.h are exactly
         the dispatch entries of abi/symm_dispatch.h plus those the
         loader answers itself (LOADER_LOCAL); abi/symm.map names each of
         them in its version node; `nm -D --defined-only` lists exactly those
         functions, each versioned by the node that lists it (SYMM_1.0, SYMM_1.2; readelf --dyn-syms); soname
         libsymm.so.1; needs nothing beyond libc/libdl/libpthread.
runtime: exports exactly symm_runtime_negotiate, versioned SYMM_RUNTIME_1.0;
         soname libsymm_runtime.so.1; links no GPU or network library.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "include", "symm", "symm.h")
DISPATCH = os.path.join(ROOT, "abi", "symm_dispatch.h")
# Answered by the loader itself, without a runtime (docs/ABI.md).
LOADER_LOCAL = {
    "symm_status_string", "symm_last_error", "symm_loader_probe", "symm_loader_set_runtime",
    "symm_loader_get_version", "symm_loader_runtime_path", "symm_dtype_size",
    "symm_init_attr_init", "symm_team_config_init",
}
SYSTEM_LIBS = re.compile(r"^(libc\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux[-\w.]*\.so\.\d+)$")
# Sanitizer builds (-Db_sanitize=...) add their runtime.
SANITIZER_LIBS = re.compile(r"^(lib(a|ub|t|l|hwa)san\.so\.\d+|libclang_rt\.[\w.-]+\.so)$")
FORBIDDEN_RUNTIME_NEEDS = re.compile(r"^lib(cuda|cudart|nvidia-ml|ibverbs|mlx5|nccl|mpi)\b")

errors = []


def fail(msg):
    errors.append(msg)
    print("FAIL " + msg)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def header_functions():
    text = strip_comments(open(HEADER, encoding="utf-8").read())
    # Declarations: SYMM_API <return type> name( ; the macro's own #define
    # lines never match (no identifier directly followed by '(' after it).
    names = re.findall(r"\bSYMM_API\s+[\w\s\*]*?\b(symm_\w+)\s*\(", text)
    uses = len(re.findall(r"\bSYMM_API\s+(?!__attribute__)\w", text))
    if len(names) != uses:
        fail("parsed %d SYMM_API declarations out of %d uses in symm.h" % (len(names), uses))
    if len(set(names)) != len(names):
        fail("symm.h declares a function twice")
    return set(names)


def dispatch_entries():
    text = open(DISPATCH, encoding="utf-8").read()
    body = text.split("#define SYMM_DISPATCH_ENTRIES(X)", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"\bX\(\s*[\w ]+?\s*,\s*(symm_\w+)\s*,", body)


def run(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s failed: %s" % (" ".join(cmd), p.stderr))
    return p.stdout


def exported(path):
    """{name: (nm type, version)} of defined dynamic symbols, version nodes excluded."""
    syms = {}
    for line in run("nm", "-D", "--defined-only", path).splitlines():
        parts = line.split()
        if len(parts) < 3 or parts[1] == "A":  # 'A': a version node (SYMM_1.0)
            continue
        name, _, version = parts[2].partition("@")
        syms[name] = [parts[1], None]
    # readelf: Num Value Size Type Bind Vis Ndx Name[@@VERSION]
    for line in run("readelf", "--dyn-syms", "-W", path).splitlines():
        parts = line.split()
        if len(parts) < 8 or not parts[0].endswith(":") or parts[6] in ("UND", "ABS"):
            continue
        name, sep, version = parts[7].partition("@")
        if name in syms:
            syms[name][1] = version.lstrip("@") if sep else ""
            if not version.startswith("@"):  # '@@' is the default version
                fail("%s: %s has a non-default version %s" % (path, name, parts[7]))
    return syms


def dynamic(path):
    needed, soname = [], None
    for line in run("readelf", "-d", "-W", path).splitlines():
        m = re.search(r"\((NEEDED|SONAME)\)\s+\S.*\[(.+)\]", line)
        if m and m.group(1) == "NEEDED":
            needed.append(m.group(2))
        elif m:
            soname = m.group(2)
    return needed, soname


def check_exports(path, want):
    """want: {name: the version node it must carry}."""
    syms = exported(path)
    missing, extra = sorted(set(want) - set(syms)), sorted(set(syms) - set(want))
    if missing:
        fail("%s does not export: %s" % (path, ", ".join(missing)))
    if extra:
        fail("%s exports more than it should: %s" % (path, ", ".join(extra)))
    for name, (kind, ver) in sorted(syms.items()):
        if kind not in ("T", "t"):
            fail("%s: %s is not a function (nm type %s)" % (path, name, kind))
        if ver != want[name]:
            fail("%s: %s has version %r, expected %s" % (path, name, ver, want[name]))
    nodes = sorted(set(want.values()))
    print("%s: %d exported functions checked (%s)" % (os.path.basename(path), len(syms),
                                                    ", ".join(nodes)))


def map_symbols(path):
    """{version node: set of names} of a linker version script (no wildcards)."""
    text = strip_comments(open(path, encoding="utf-8").read())
    nodes = {}
    for node, body in re.findall(r"([\w.]+)\s*\{(.*?)\}", text, flags=re.S):
        glob = body.split("local:")[0].replace("global:", "")
        names = {n.strip() for n in glob.split(";") if n.strip()}
        if any("*" in n for n in names):
            fail("%s: node %s uses a wildcard; list every symbol" % (path, node))
        nodes[node] = names
    return nodes


def check_loader(path):
    decl = header_functions()
    entries = dispatch_entries()
    if len(set(entries)) != len(entries):
        fail("symm_dispatch.h lists an entry twice")
    if set(entries) & LOADER_LOCAL:
        fail("loader-local functions in the dispatch table: %s" % sorted(set(entries) & LOADER_LOCAL))
    served = set(entries) | LOADER_LOCAL
    if decl - served:
        fail("declared in symm.h but neither dispatched nor loader-local: %s" % sorted(decl - served))
    if served - decl:
        fail("dispatched or loader-local but not declared SYMM_API in symm.h: %s"
             % sorted(served - decl))
    print("symm.h: %d SYMM_API functions = %d dispatch entries + %d loader-local"
          % (len(decl), len(entries), len(LOADER_LOCAL)))
    # One node per minor that added functions (SYMM_1.0, SYMM_1.2, ...); each
    # function in exactly one, and together exactly the SYMM_API functions.
    mapped = map_symbols(os.path.join(ROOT, "abi", "symm.map"))
    if "SYMM_1.0" not in mapped:
        fail("abi/symm.map has no SYMM_1.0 node")
    version_of = {}
    for node, names in mapped.items():
        if not re.fullmatch(r"SYMM_1\.\d+", node):
            fail("abi/symm.map: node %s is not named SYMM_1.<minor>" % node)
        for name in names:
            if name in version_of:
                fail("abi/symm.map: %s is in %s and in %s" % (name, version_of[name], node))
            version_of[name] = node
    if set(version_of) != decl:
        fail("abi/symm.map and symm.h differ: missing %s, extra %s"
             % (sorted(decl - set(version_of)), sorted(set(version_of) - decl)))
    check_exports(path, version_of)
    needed, soname = dynamic(path)
    if soname != "libsymm.so.1":
        fail("%s: soname %s, expected libsymm.so.1" % (path, soname))
    for lib in needed:
        if not SYSTEM_LIBS.match(lib) and not SANITIZER_LIBS.match(lib):
            fail("%s needs %s: the loader may depend on libc/libdl/pthread only" % (path, lib))


def check_runtime(path):
    check_exports(path, {"symm_runtime_negotiate": "SYMM_RUNTIME_1.0"})
    needed, soname = dynamic(path)
    if soname != "libsymm_runtime.so.1":
        fail("%s: soname %s, expected libsymm_runtime.so.1" % (path, soname))
    for lib in needed:
        if FORBIDDEN_RUNTIME_NEEDS.match(lib):
            fail("%s links %s: GPU and network libraries are opened with dlopen" % (path, lib))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("loader", "runtime"):
        sys.exit(__doc__)
    (check_loader if sys.argv[1] == "loader" else check_runtime)(sys.argv[2])
    if errors:
        print("%d problem(s)" % len(errors))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
