#!/usr/bin/env python3
"""The abi-json check can fail: run abi/gen_abi_json.py --check on copies of the
source tree with one thing broken each, and expect a failure naming it.

  gen_abi_json_selftest.py SOURCE_ROOT CC
"""
import os
import shutil
import subprocess
import sys
import tempfile

FILES = ["include/symm/symm.h", "abi/symm_dispatch.h", "abi/symm.map", "abi/gen_abi_json.py",
         "abi/symm-abi.json", "docs/ABI.md"]


def tree(src, dst, edit=None):
    for rel in FILES:
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        shutil.copy(os.path.join(src, rel), os.path.join(dst, rel))
    if edit:
        rel, old, new = edit
        path = os.path.join(dst, rel)
        text = open(path, encoding="utf-8").read()
        if old not in text:
            sys.exit("selftest: %r not found in %s (update the selftest)" % (old, rel))
        with open(path, "w", encoding="utf-8") as f:
            f.write(text.replace(old, new, 1))


def check(root, cc):
    p = subprocess.run([sys.executable, os.path.join(root, "abi", "gen_abi_json.py"), "--check",
                        os.path.join(root, "out.json"), "--cc", cc], capture_output=True, text=True)
    return p.returncode, p.stdout + p.stderr


CASES = [
    # name, edit (file, old, new), text the failure must contain
    ("unchanged", None, None),
    ("contract removed", ("include/symm/symm.h",
                          "\n * Contract: local; thread: any; errors: none; keeps: return until process. */\n"
                          "SYMM_API const char *symm_status_string",
                          " */\nSYMM_API const char *symm_status_string"),
     "symm_status_string has no contract"),
    ("unknown error name", ("include/symm/symm.h",
                            "errors: LIBRARY_NOT_FOUND, ABI_MISMATCH; keeps: none.",
                            "errors: LIBRARY_NOT_FOUND, NO_SUCH_STATUS; keeps: none."),
     "NO_SUCH_STATUS is not in SYMM_STATUS_TABLE"),
    ("kept pointer that is no parameter", ("include/symm/symm.h",
                                           "keeps: src until quiet.", "keeps: source until quiet."),
     "keeps names source"),
    ("status added to the table only", ("include/symm/symm.h",
                                        '"the call is not valid now (e.g. the runtime is loaded)")',
                                        '"the call is not valid now (e.g. the runtime is loaded)")'
                                        ' \\\n    X(SYMM_ERR_NEW, 19, "new")'),
     "SYMM_ERR_NEW: SYMM_STATUS_TABLE says 19, the #define says None"),
    ("constant changed", ("include/symm/symm.h", "#define SYMM_CMP_LE 5", "#define SYMM_CMP_LE 6"),
     "abi/symm-abi.json is stale"),
    ("field added", ("include/symm/symm.h", "    uint64_t reserved;\n} symm_device_team;",
                     "    uint64_t reserved;\n    uint64_t extra;\n} symm_device_team;"),
     '+          "name": "extra"'),
    ("status table in the doc edited", ("docs/ABI.md", "| 11 | `SYMM_ERR_TIMEOUT` |",
                                        "| 11 | `SYMM_ERR_TIMED_OUT` |"),
     "docs/ABI.md is stale"),
]


def main():
    src, cc = sys.argv[1], sys.argv[2]
    failures = 0
    for name, edit, expect in CASES:
        with tempfile.TemporaryDirectory(prefix="symm-abi-selftest-") as tmp:
            tree(src, tmp, edit)
            rc, out = check(tmp, cc)
        if rc == 77:
            print("SKIP %s" % out.strip())
            return 77
        ok = rc == 0 if expect is None else (rc == 1 and expect in out)
        print("%s %s (exit %d)" % ("ok  " if ok else "FAIL", name, rc))
        if not ok:
            failures += 1
            print("  expected %s; output:\n%s" % ("success" if expect is None else repr(expect), out))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
