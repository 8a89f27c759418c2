#!/usr/bin/env python3
"""Record or check the libabigail baseline of symm's shared objects.

  abi_baseline.py check  LIB PATH   compare a fresh build with abi/LIB.abi
  abi_baseline.py update LIB PATH   (re)write abi/LIB.abi from a build

LIB is libsymm (the loader: the public API) or libsymm_runtime (the runtime:
symm_runtime_negotiate, whose argument carries the dispatch table, so every
entry's signature and offset is covered). Only types defined in the public
headers count: include/symm for both, plus abi/symm_dispatch.h for the
runtime.

check fails on any change abidiff reports (exit bit 4, ABI_CHANGE, or bit 8,
ABI_INCOMPATIBLE_CHANGE): libabigail flags a struct layout change as bit 4,
so "incompatible only" would let real breaks through. Added symbols are not
reported (--no-added-syms). A change that docs/ABI.md allows (a new entry
appended to the dispatch table, a field appended to a struct_size-versioned
struct, with the minor version bumped) is accepted by recording a new
baseline on purpose: abi/update-baseline.sh. Exit 77 (a skip for meson) when
abidw/abidiff are missing, the build has no DWARF, or no baseline exists yet.
"""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SKIP = 77

HEADERS = {
    "libsymm": [os.path.join(ROOT, "include", "symm")],
    "libsymm_runtime": [os.path.join(ROOT, "include", "symm"), os.path.join(ROOT, "abi")],
}
# Keep the baseline free of build paths, architecture and private types.
# Locations stay (file name and line only): abidiff needs them to tell types
# of the public headers from others, and without them it filters out changes
# to public structs. Line numbers going stale is harmless: they are not
# compared.
ABIDW_OPTS = ["--no-corpus-path", "--no-comp-dir-path", "--no-architecture", "--short-locs",
              "--drop-private-types", "--exported-interfaces-only"]
ABIDIFF_OPTS = ["--no-added-syms", "--no-architecture", "--drop-private-types",
                "--exported-interfaces-only"]


def baseline_path(lib):
    return os.path.join(HERE, lib + ".abi")


def has_dwarf(path):
    out = subprocess.run(["readelf", "-S", "-W", path], capture_output=True, text=True)
    return ".debug_info" in out.stdout


def abidw(lib, so, out):
    cmd = ["abidw"] + ABIDW_OPTS
    for d in HEADERS[lib]:
        cmd += ["--headers-dir", d]
    cmd += ["--out-file", out, so]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("abidw failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr))


def update(lib, so):
    if not shutil.which("abidw"):
        sys.exit("abidw not found: install libabigail (abigail-tools)")
    if not has_dwarf(so):
        sys.exit("%s has no debug info: build with -g (buildtype debug/debugoptimized)" % so)
    abidw(lib, so, baseline_path(lib))
    print("wrote %s" % os.path.relpath(baseline_path(lib), ROOT))


def check(lib, so):
    for tool in ("abidw", "abidiff"):
        if not shutil.which(tool):
            print("SKIP: %s not found (install libabigail)" % tool)
            return SKIP
    base = baseline_path(lib)
    if not os.path.exists(base):
        print("SKIP: no baseline %s yet: record it with abi/update-baseline.sh" % base)
        return SKIP
    if sys.maxsize <= 2**32:
        print("SKIP: the baseline describes a 64-bit build")
        return SKIP
    if not has_dwarf(so):
        print("SKIP: %s has no debug info (build with -g to compare the ABI)" % so)
        return SKIP
    # The baseline was filtered by abidw when it was recorded; the fresh build
    # is filtered here by the same header directories. (--headers-dir1 is for
    # an ELF file1: given with an abixml file1, libabigail 2.2 aborts.)
    cmd = ["abidiff"] + ABIDIFF_OPTS
    for d in HEADERS[lib]:
        cmd += ["--headers-dir2", d]
    cmd += [base, so]
    p = subprocess.run(cmd, capture_output=True, text=True)
    print("$ " + " ".join(cmd))
    print(p.stdout + p.stderr)
    rc = p.returncode
    if rc == 0:
        print("%s: no ABI change against %s" % (lib, os.path.relpath(base, ROOT)))
        return 0
    if rc < 0 or rc & 3:
        print("abidiff failed to run (exit %d)" % rc)
    elif rc & 8:
        print("%s: INCOMPATIBLE ABI change (abidiff exit %d)" % (lib, rc))
    else:
        print("%s: ABI change (abidiff exit %d). If it is an append that docs/ABI.md allows,"
              " bump the minor version and record it with abi/update-baseline.sh." % (lib, rc))
    return 1


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("check", "update") or sys.argv[2] not in HEADERS:
        sys.exit(__doc__)
    mode, lib, so = sys.argv[1:]
    if not os.path.exists(so):
        sys.exit("%s does not exist: build it first" % so)
    if mode == "update":
        update(lib, so)
        return 0
    return check(lib, so)


if __name__ == "__main__":
    sys.exit(main())
