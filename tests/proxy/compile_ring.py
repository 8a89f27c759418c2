#!/usr/bin/env python3
"""Compile tests/proxy/ring_compile.c (every producer function of
symm_device_ring.h called from one function, a __global__ kernel under CUDA)
with one compiler, warnings as errors. Compiled only: nothing runs.

usage: compile_ring.py COMPILER LANG STD INCLUDE_DIR SOURCE [EXTRA...]
  LANG is c, c++ or cuda. Exit 77 (a skip for meson) when the compiler is
  missing.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
FLAGS = {
    "c": ["-x", "c", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wundef", "-Wshadow",
          "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wconversion"],
    "c++": ["-x", "c++", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wundef", "-Wshadow",
            "-Wold-style-cast", "-Wconversion"],
    "cuda": ["-x", "cu", "-Werror", "all-warnings"],
}


def main():
    if len(sys.argv) < 6 or sys.argv[2] not in FLAGS:
        sys.exit(__doc__)
    compiler, lang, std, incdir, src = sys.argv[1:6]
    extra = sys.argv[6:]
    exe = shutil.which(compiler)
    if not exe:
        print("SKIP: %s not found" % compiler)
        return SKIP
    with tempfile.TemporaryDirectory(prefix="symm-ring-") as tmp:
        cmd = [exe, "-std=" + std] + FLAGS[lang] + extra + ["-I", incdir, "-c", src,
                                                            "-o", os.path.join(tmp, "ring.o")]
        print("$ " + " ".join(cmd))
        p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        print("FAIL: the ring's producer calls do not compile as %s %s" % (lang, std))
        return 1
    print("ok: the ring's producer calls compile as %s (%s, %s)" % (std, lang,
                                                                    os.path.basename(exe)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
