#!/usr/bin/env python3
"""Run a command; pass when it exits with the expected code and its output
matches every --expect regular expression (and none of --reject)."""
import argparse, os, re, subprocess, sys

ap = argparse.ArgumentParser()
ap.add_argument('--env', action='append', default=[], help='NAME=VALUE to set')
ap.add_argument('--expect', action='append', default=[])
ap.add_argument('--reject', action='append', default=[])
ap.add_argument('--code', type=int, default=0, help='expected exit code')
ap.add_argument('--timeout', type=float, default=120)
ap.add_argument('cmd', nargs=argparse.REMAINDER)
a = ap.parse_args()
cmd = a.cmd[1:] if a.cmd and a.cmd[0] == '--' else a.cmd
env = dict(os.environ)
for kv in a.env:
    k, _, v = kv.partition('=')
    env[k] = v
p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=a.timeout)
out = p.stdout.decode(errors='replace')
sys.stdout.write(out)
ok = p.returncode == a.code
if not ok:
    print(f'expect_output: exit code {p.returncode}, expected {a.code}')
for rx in a.expect:
    if not re.search(rx, out):
        print(f'expect_output: output lacks /{rx}/'); ok = False
for rx in a.reject:
    if re.search(rx, out):
        print(f'expect_output: output has /{rx}/'); ok = False
sys.exit(0 if ok else 1)
