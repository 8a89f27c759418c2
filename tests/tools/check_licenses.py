#!/usr/bin/env python3
"""LICENSE at the root is the Apache-2.0 text, and every package ships an
identical copy: the Rust crates (each LICENSE, and symm-sys's Cargo.toml
include list names it), the Go module, the Zig package (whose build.zig.zon
paths also name every file or folder build.zig reads inside the package).

Usage: check_licenses.py SOURCE_ROOT
"""
import os
import re
import sys

ROOT = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


lic = open(os.path.join(ROOT, 'LICENSE')).read()
check('Apache License' in lic and 'Version 2.0, January 2004' in lic and
      'END OF TERMS AND CONDITIONS' in lic, 'LICENSE is not the Apache-2.0 text')
for copy in ('bindings/rust/symm/LICENSE', 'bindings/rust/symm-sys/LICENSE',
             'bindings/go/LICENSE', 'bindings/zig/LICENSE'):
    path = os.path.join(ROOT, copy)
    check(os.path.isfile(path) and open(path).read() == lic,
          f'{copy} is missing or differs from LICENSE')
toml = open(os.path.join(ROOT, 'bindings/rust/symm-sys/Cargo.toml')).read()
inc = re.search(r'^include = \[(.*)\]$', toml, re.M)
check(inc and '"LICENSE"' in inc.group(1) and '"csrc/**"' in inc.group(1),
      'symm-sys Cargo.toml include lacks LICENSE or csrc/**')
zig = os.path.join(ROOT, 'bindings/zig')
zon = open(os.path.join(zig, 'build.zig.zon')).read()
paths = re.findall(r'"([^"]+)"', zon[zon.index('.paths'):])
check('LICENSE' in paths, 'build.zig.zon paths lack LICENSE')
for p in paths:
    check(os.path.exists(os.path.join(zig, p)), f'build.zig.zon names {p}, which does not exist')
build = open(os.path.join(zig, 'build.zig')).read()
used = set(re.findall(r'b\.path\("([^"]+)"\)', build)) | set(re.findall(r'"((?:src|tests|examples)/[^"]+)"', build))
for u in sorted(used):
    if u.startswith('../'):
        continue  # the checkout's header and loader: the package is used by path
    check(any(u == p or u.startswith(p.rstrip('/') + '/') for p in paths),
          f'build.zig reads {u}, which build.zig.zon paths do not cover')
if failures:
    sys.exit(1)
print('check_licenses: ok')
