#!/usr/bin/env python3
"""Compile one public header alone, as the first and only include of a
translation unit (twice, to exercise the include guard), with warnings as
errors.

usage: header_compile.py COMPILER LANG STD INCLUDE_DIR HEADER
  LANG is c, c++ or cuda; HEADER is relative to INCLUDE_DIR (symm/symm.h).
Exit 77 (a skip for meson) when the compiler or the header does not exist.
"""
import os
import shutil
import subprocess
import sys
import tempfile

SKIP = 77
FLAGS = {
    "c": ["-x", "c", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wundef", "-Wshadow",
          "-Wstrict-prototypes", "-Wmissing-prototypes"],
    "c++": ["-x", "c++", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wundef", "-Wshadow",
            "-Wold-style-cast"],
    "cuda": ["-x", "cu", "-Werror", "all-warnings"],
}


def main():
    if len(sys.argv) != 6 or sys.argv[2] not in FLAGS:
        sys.exit(__doc__)
    compiler, lang, std, incdir, header = sys.argv[1:]
    exe = shutil.which(compiler)
    if not exe:
        print("SKIP: %s not found" % compiler)
        return SKIP
    if not os.path.exists(os.path.join(incdir, header)):
        print("SKIP: %s does not exist (yet)" % header)
        return SKIP
    with tempfile.TemporaryDirectory(prefix="symm-hdr-") as tmp:
        src = os.path.join(tmp, "tu." + {"c": "c", "c++": "cc", "cuda": "cu"}[lang])
        with open(src, "w", encoding="utf-8") as f:
            f.write("#include <%s>\n#include <%s>\n" % (header, header))
            # Something of the TU's own, so the file is never empty.
            f.write("int symm_header_test_%s(void);\n" % lang.replace("+", "x"))
            f.write("int symm_header_test_%s(void) { return 0; }\n" % lang.replace("+", "x"))
        cmd = [exe, "-std=" + std] + FLAGS[lang] + ["-I", incdir, "-c", src,
                                                    "-o", os.path.join(tmp, "tu.o")]
        print("$ " + " ".join(cmd))
        p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout + p.stderr)
    if p.returncode != 0:
        print("FAIL: %s does not compile alone as %s %s" % (header, lang, std))
        return 1
    print("ok: %s compiles alone as %s (%s, %s)" % (header, std, lang, os.path.basename(exe)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
