#!/usr/bin/env python3
"""symmrun and symm-info: man pages, --help, --version and the options the
sources declare, checked against what the built tools do.

Usage: test_man.py SYMM_H DISPATCH_H (SOURCE.txt PAGE.1 TOOL)...

For each tool: the page renders with `man -l` and groff reports no warning;
it has NAME, SYNOPSIS, DESCRIPTION and OPTIONS and names every option of the
source; --help prints every option line of the source and exits 0; --version
prints "TOOL (symm) X.Y.Z" and "ABI M.m" from the headers; every long option
of the source is one the tool's parser knows (given a wrong value or a value
it takes none of, the complaint is about the value, not an unknown option);
an unknown option exits 2 and is named.
"""
import os
import re
import shutil
import subprocess
import sys

SYMM_H, DISPATCH_H, *rest = sys.argv[1:]
if not rest or len(rest) % 3:
    sys.exit(__doc__)
hdr = open(SYMM_H).read()
version = '.'.join(re.search(r'#define SYMM_VERSION_%s (\d+)' % p, hdr).group(1)
                   for p in ('MAJOR', 'MINOR', 'PATCH'))
disp = open(DISPATCH_H).read()
abi = '.'.join(re.search(r'#define SYMM_ABI_%s (\d+)' % p, disp).group(1)
               for p in ('MAJOR', 'MINOR'))
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


def run(cmd, **kw):
    env = dict(os.environ, MANWIDTH='80', MANPAGER='cat', PAGER='cat', LC_ALL='C.UTF-8')
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env, **kw)


have_man = shutil.which('man') and shutil.which('groff')
if not have_man:
    print('SKIP: man or groff is not installed (apt-get install man-db groff)')
for i in range(0, len(rest), 3):
    src, page, tool = rest[i:i + 3]
    name = os.path.basename(tool)
    options = []  # (spec line, [names], takes a value)
    for line in open(src):
        m = re.match(r'^option: (.*)$', line)
        if m:
            spec = m.group(1).strip()
            names = [p.split('=')[0].split(' ')[0] for p in spec.split(', ')]
            options.append((spec, names, '=' in spec or ' ' in spec.split(', ')[-1]))
    check(options, f'{src}: no options')
    if have_man:
        g = run(['groff', '-ww', '-z', '-man', page])
        check(g.returncode == 0 and not g.stderr.strip(), f'{page}: groff warns: {g.stderr}')
        m = run(['man', '-l', page])
        check(m.returncode == 0, f'man -l {page}: exit {m.returncode}: {m.stderr}')
        text = m.stdout.replace('\u2010', '-').replace('\u2212', '-')
        text = re.sub(r'.\x08', '', text)  # overstrike, if any
        for sec in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS'):
            check(re.search(r'^' + sec + r'$', text, re.M), f'man {name}: no {sec} section')
        check(re.search(r'^\s+%s\s+-\s' % re.escape(name), text, re.M), f'man {name}: NAME line')
        for spec, names, _ in options:
            for n in names:
                check(re.search(r'(^|\s)' + re.escape(n) + r'(\W|$)', text),
                      f'man {name}: option {n} missing')
        check(f'symm {version}' in text, f'man {name}: footer lacks "symm {version}"')
    h = run([tool, '--help'])
    check(h.returncode == 0, f'{name} --help: exit {h.returncode}')
    check(h.stdout.startswith(f'usage: {name}'), f'{name} --help: no usage line first')
    for spec, names, _ in options:
        check(re.search(r'^ +' + re.escape(spec) + r'( |$)', h.stdout, re.M),
              f'{name} --help: no line for {spec}')
    for flag in ('--version', '-V'):
        v = run([tool, flag])
        check(v.returncode == 0 and v.stdout == f'{name} (symm) {version}\nABI {abi}\n',
              f'{name} {flag}: exit {v.returncode}, {v.stdout!r}')
    for spec, names, takes_value in options:
        for n in [x for x in names if x.startswith('--')]:
            if n in ('--help', '--version'):
                arg = n + '=x'
            else:
                arg = n + ('=@bad' if takes_value else '=x')
            r = run([tool, arg, 'prog'] if name == 'symmrun' else [tool, arg])
            check(r.returncode == 2 and 'unknown' not in r.stderr and
                  any(x in r.stderr for x in names),
                  f'{name} {arg}: exit {r.returncode}, {r.stderr.strip()!r} (want a complaint '
                  f'about the value of {n} naming it)')
    for bad in ('--no-such-option', '-Z'):
        r = run([tool, bad])
        check(r.returncode == 2 and bad in r.stderr and not r.stdout,
              f'{name} {bad}: exit {r.returncode}, {r.stderr.strip()!r}')
if failures:
    print(f'test_man: {len(failures)} failures')
    sys.exit(1)
print('test_man: ok' + ('' if have_man else ' (--help/--version only; man pages skipped)'))
sys.exit(0 if have_man else 77)
