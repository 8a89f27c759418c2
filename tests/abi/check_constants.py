#!/usr/bin/env python3
"""Every integer constant of symm.h (and SYMM_ABI_* of symm_dispatch.h) is
frozen in layout.c, so a new constant cannot ship without its value becoming
part of the ABI test.

usage: check_constants.py symm.h symm_dispatch.h layout.c
"""
import re
import sys

DEFINE = re.compile(r"^#define\s+(SYMM_[A-Z0-9_]+)\s+\(?-?(?:0x[0-9a-fA-F]+|\d+)[uUlL]*\)?\s*(?:/\*.*)?$",
                    re.M)


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    header, dispatch, layout = (open(p, encoding="utf-8").read() for p in sys.argv[1:])
    wanted = set(DEFINE.findall(header)) | {n for n in DEFINE.findall(dispatch)
                                            if n.startswith("SYMM_ABI_")}
    listed = set(re.findall(r"\b(?:FROZEN|GROWS)\(\s*(SYMM_[A-Z0-9_]+)\s*,", layout))
    missing = sorted(wanted - listed)
    if len(wanted) < 80:
        print("FAIL only %d constants parsed from the headers: parser broken?" % len(wanted))
        return 1
    for name in missing:
        print("FAIL %s is not frozen in tests/abi/layout.c" % name)
    print("%d integer constants, %d frozen in layout.c" % (len(wanted), len(wanted & listed)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
