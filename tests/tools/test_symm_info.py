#!/usr/bin/env python3
"""symm-info and symm-info --json, checked against what is really here.

Usage: test_symm_info.py SYMM_INFO SYMM_H [--expect-gpus N]

SYMM_RUNTIME (from the test environment) names the runtime symm-info must
report. Without --expect-gpus the CUDA backend must report itself not usable
with a reason (the CPU machine); with it, exactly N GPUs with compute
capabilities and an N x N peer-access matrix (scripts/gpu-suite.sh).
"""
import json
import os
import re
import subprocess
import sys

args = sys.argv[1:]
expect_gpus = None
if '--expect-gpus' in args:
    i = args.index('--expect-gpus')
    expect_gpus = int(args[i + 1])
    del args[i:i + 2]
TOOL, HEADER = args
hdr = open(HEADER).read()
version = '.'.join(re.search(r'#define SYMM_VERSION_%s (\d+)' % p, hdr).group(1)
                   for p in ('MAJOR', 'MINOR', 'PATCH'))
# The ABI the loader negotiates: abi/symm_dispatch.h, beside include/symm/.
dispatch = open(os.path.join(os.path.dirname(os.path.abspath(HEADER)), '..', '..', 'abi',
                             'symm_dispatch.h')).read()
abi = '.'.join(re.search(r'#define SYMM_ABI_%s (\d+)' % p, dispatch).group(1)
               for p in ('MAJOR', 'MINOR'))
RUNTIME = os.environ.get('SYMM_RUNTIME')
failures = []
# The checks below expect these two from the environment (tests/meson.build
# sets the same; scripts/gpu-suite.sh runs this script outside meson).
BASE_ENV = {'SYMM_HEAP_CAP': '64M', 'SYMM_HEAP_CHUNK': '1M'}
for k in [k for k in os.environ if k.startswith('SYMM_') and k not in ('SYMM_RUNTIME',)]:
    os.environ.pop(k)  # a stray SYMM_* variable must not change the expectations


def check(cond, what):
    if not cond:
        failures.append(what)
        print('FAIL:', what)


def run(extra_args, env_extra=None, drop=()):
    env = dict(os.environ)
    env.update(BASE_ENV)
    for k in drop:
        env.pop(k, None)
    env.update(env_extra or {})
    p = subprocess.run([TOOL] + extra_args, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    return p.returncode, p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')


def run_json(env_extra=None, drop=()):
    rc, out, err = run(['--json'], env_extra, drop)
    try:
        return rc, json.loads(out), out
    except ValueError as e:
        check(False, 'symm-info --json is not JSON (%s):\n%s\n%s' % (e, out, err))
        return rc, {}, out


def config(d, name):
    return next((c for c in d.get('config', []) if c['name'] == name), None)


# ---- the plain run ---------------------------------------------------------
rc, d, raw = run_json()
check(rc == 0, 'symm-info --json exit %d with a runtime' % rc)
check(d.get('symm_info_version') == version, 'symm_info_version %r != %s' % (d.get('symm_info_version'), version))
ld = d.get('loader', {})
check(ld.get('version') == version and ld.get('abi') == abi, 'loader version/ABI: %r (want %s / %s)' % (ld, version, abi))
check(ld.get('path') and os.path.exists(ld['path']) and ld['path'].endswith('libsymm.so.1'),
      'loader path %r does not exist' % ld.get('path'))
rt = d.get('runtime', {})
check(rt.get('found') is True and rt.get('status') == 'SYMM_SUCCESS', 'runtime not found: %r' % rt)
check(rt.get('version') == version, 'runtime version %r != %s' % (rt.get('version'), version))
check(rt.get('path') and os.path.exists(rt['path']), 'runtime path %r does not exist' % rt.get('path'))
if RUNTIME and rt.get('path'):
    check(os.path.realpath(rt['path']) == os.path.realpath(RUNTIME),
          'runtime %r is not SYMM_RUNTIME %r' % (rt.get('path'), RUNTIME))
check(d.get('usable') is True and d.get('config_valid') is True, 'not usable: %r' % raw[:400])

be = {b['name']: b for b in d.get('backends', [])}
check(be.get('host', {}).get('usable') is True, 'host backend not usable: %r' % be.get('host'))
cuda = be.get('cuda', {})
check('compiled' in cuda and 'usable' in cuda and cuda.get('detail'), 'cuda entry incomplete: %r' % cuda)
gpus = cuda.get('gpus', [])
if expect_gpus is None:
    check(cuda.get('usable') is False and gpus == [],
          'cuda should be unusable without a GPU here: %r' % cuda)
    check(re.search(r'libcuda|no GPU|without|no CUDA', cuda.get('detail', '')),
          'cuda detail does not say why: %r' % cuda.get('detail'))
else:
    check(cuda.get('usable') is True, 'cuda not usable on the GPU machine: %r' % cuda.get('detail'))
    check(len(gpus) == expect_gpus, '%d GPUs listed, expected %d' % (len(gpus), expect_gpus))
    for g in gpus:
        check(re.match(r'^\d+\.\d+$', g.get('compute_capability', '')) and g.get('name') and
              g.get('sms', 0) > 0, 'GPU entry incomplete: %r' % g)
    pa = cuda.get('peer_access', [])
    check(len(pa) == len(gpus) and all(len(r) == len(gpus) for r in pa) and
          all(pa[i][i] for i in range(len(pa))), 'peer-access matrix not %dx%d: %r' % (len(gpus), len(gpus), pa))
    check(re.match(r'^\d+\.\d+$', cuda.get('driver_version') or ''), 'no driver version: %r' % cuda)

tp = {t['name']: t for t in d.get('transports', [])}
check(d.get('transport_choice') == 'auto', 'transport_choice: %r' % d.get('transport_choice'))
for name, t in tp.items():
    check(all(k in t for k in ('compiled', 'plugin', 'loads', 'usable', 'detail')),
          '%s entry incomplete: %r' % (name, t))
    if t.get('compiled'):
        check(t['plugin'] and os.path.exists(t['plugin']) and
              t['plugin'].endswith('libsymm_transport_%s.so' % name), '%s plugin path: %r' % (name, t))
        check(t['usable'] or t['detail'] != 'usable here', '%s: unusable without a reason' % name)
tcp = tp.get('tcp')
check(tcp is not None, 'no tcp entry: %r' % d.get('transports'))
if expect_gpus is None and tcp is not None:
    # the full build has the plugin beside the runtime; sockets work here
    check(tcp.get('compiled') and tcp.get('loads') and tcp.get('usable'),
          'tcp plugin not found/usable: %r' % tcp)
ib = tp.get('ibverbs')
check(ib is not None and 'devices' in ib, 'no ibverbs entry: %r' % d.get('transports'))
if ib is not None and ib.get('compiled') and not ib.get('devices'):
    check(not ib.get('usable') and ib.get('detail'), 'ibverbs usable without a device: %r' % ib)
if ib is not None:
    sysfs = sorted(os.listdir('/sys/class/infiniband')) if os.path.isdir('/sys/class/infiniband') else []
    if ib.get('library'):
        check(sorted(x['name'] for x in ib['devices']) == sysfs,
              'RDMA devices %r differ from /sys/class/infiniband %r' % ([x['name'] for x in ib['devices']], sysfs))
    else:
        check(ib['devices'] == [], 'devices listed without libibverbs')

for name, eff in (('SYMM_HEAP_CAP', '67108864'), ('SYMM_HEAP_CHUNK', '1048576')):
    c = config(d, name)  # BASE_ENV sets both
    check(c and c['effective'] == eff and c['source'] == 'env', '%s: %r' % (name, c))
c = config(d, 'SYMM_TIMEOUT_MS')
check(c and c['effective'] == '60000' and c['source'] == 'default', 'SYMM_TIMEOUT_MS: %r' % c)

# ---- environment overrides ---------------------------------------------------
secret = 'do-not-print-this-secret-0123456789'
rc, d, raw = run_json({'SYMM_HEAP_CAP': '1G', 'SYMM_BACKEND': 'host', 'SYMM_PEER_TIMEOUT_MS': '250',
                       'SYMM_JOB_SECRET': secret, 'SYMM_HEAP_CAPP': '2G'})
check(rc == 0, 'overrides: exit %d' % rc)
c = config(d, 'SYMM_HEAP_CAP')
check(c and c['effective'] == '1073741824' and c['value'] == '1G' and c['source'] == 'env',
      'SYMM_HEAP_CAP=1G: %r' % c)
c = config(d, 'SYMM_BACKEND')
check(c and c['effective'] == 'host', 'SYMM_BACKEND=host: %r' % c)
c = config(d, 'SYMM_PEER_TIMEOUT_MS')
check(c and c['effective'] == '250', 'SYMM_PEER_TIMEOUT_MS=250: %r' % c)
check(secret not in raw, 'the job secret was printed')
c = config(d, 'SYMM_JOB_SECRET')
check(c and c['source'] == 'env' and c['value'] == '(set)', 'SYMM_JOB_SECRET: %r' % c)
check('SYMM_HEAP_CAPP' in d.get('unknown_env', []), 'a misspelt variable is not flagged: %r' % d.get('unknown_env'))
# every variable symm reads is known (none flagged as a typo), with its value
known = {'SYMM_TRANSPORT': 'tcp', 'SYMM_TRANSPORT_PATH': '/nonexistent-dir', 'SYMM_TCP_ADDR': '127.0.0.1',
         'SYMM_IB_DEVICE': 'mlx5_0:1', 'SYMM_IB_GID_INDEX': '3', 'SYMM_LOADER': '/x/libsymm.so.1',
         'SYMM_DEBUG': 'INFO', 'SYMM_DEBUG_SUBSYS': 'init', 'SYMM_DEBUG_FILE': '/tmp/s.%r.log',
         'SYMM_CUDA_PDL': '0', 'SYMM_HOST_ID': 'a'}
rc, d, raw = run_json(known)
check(rc == 0, 'known variables: exit %d' % rc)
check(d.get('unknown_env') == [], 'variables symm reads flagged as typos: %r' % d.get('unknown_env'))
for k, v in known.items():
    c = config(d, k)
    check(c and c['value'] == v and c['source'] == 'env', '%s: %r' % (k, c))
check(d.get('transport_choice') == 'tcp', 'SYMM_TRANSPORT=tcp: %r' % d.get('transport_choice'))
# runtime's source of truth: every SYMM_* name the runtime's sources read is listed
src = os.path.join(os.path.dirname(os.path.abspath(HEADER)), '..', '..', 'runtime')
names = set()
for dirpath, _, files in os.walk(src):
    for f in files:
        if f.endswith('.c'):
            text = open(os.path.join(dirpath, f), errors='replace').read()
            names |= set(re.findall(r'\b(?:getenv|env)\((?:[a-z>-]+, )?"(SYMM[A-Z0-9_]+)"\)', text))
listed = {c['name'] for c in d.get('config', [])}
check(names and not names - listed, 'variables the runtime reads but symm-info does not list: %s'
      % sorted(names - listed))
rc, out, err = run([], {'SYMM_HEAP_CAP': '1G', 'SYMM_JOB_SECRET': secret, 'SYMM_HEAP_CAPP': '2G'})
check(rc == 0 and re.search(r'SYMM_HEAP_CAP\s+1073741824\s+env', out), 'text: SYMM_HEAP_CAP=1G:\n' + out)
check(secret not in out and 'SYMM_HEAP_CAPP' in out, 'text: secret shown or typo not flagged')
check(re.search(r'host\s+yes / yes', out) and 'symm is usable here' in out, 'text: summary:\n' + out)

# ---- an invalid configuration: reported, exit 1 --------------------------------
rc, d, raw = run_json({'SYMM_HEAP_CHUNK': '3'})
check(rc == 1 and d.get('config_valid') is False and d.get('usable') is False,
      'SYMM_HEAP_CHUNK=3: exit %d, %r' % (rc, raw[:300]))
check('SYMM_HEAP_CHUNK' in d.get('config_error', ''), 'config_error does not name the variable: %r' % d.get('config_error'))

# ---- no runtime: reported, exit 1 ---------------------------------------------
rc, d, raw = run_json({'SYMM_RUNTIME': '/nonexistent/libsymm_runtime.so.1'})
rt = d.get('runtime', {})
check(rc == 1 and rt.get('found') is False and rt.get('status') == 'SYMM_ERR_LIBRARY_NOT_FOUND'
      and '/nonexistent/libsymm_runtime.so.1' in rt.get('message', '') and rt.get('path') is None,
      'missing runtime: exit %d, %r' % (rc, rt))
check(any(b['name'] == 'host' and b['usable'] for b in d.get('backends', [])),
      'missing runtime: the rest of the report is missing')
rc, out, err = run([], {'SYMM_RUNTIME': '/nonexistent/libsymm_runtime.so.1'})
check(rc == 1 and 'Runtime  NOT USABLE: SYMM_ERR_LIBRARY_NOT_FOUND' in out and 'NOT usable here' in out,
      'text, missing runtime: exit %d\n%s' % (rc, out))

# ---- usage ---------------------------------------------------------------------
rc, out, err = run(['--bogus'])
check(rc == 2 and 'unknown or ambiguous option --bogus' in err, 'bad argument: exit %d, %r' % (rc, err))
rc, out, err = run(['--help'])
check(rc == 0 and 'usage: symm-info' in out, '--help: exit %d' % rc)

if failures:
    print('%d check(s) failed' % len(failures))
    sys.exit(1)
print('all symm-info checks passed')
