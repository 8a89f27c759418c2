#!/usr/bin/env python3
"""The runtime's layers, checked on the built objects (calls) and the sources
(includes): arrows point one way down, and no files call each other in a
circle across folders.

  api/ -> core/ -> bootstrap/ -> base/
  backends/<name>/ -> core/ (services); transports/<name>/ -> the contract only

usage: check_layers.py SOURCE_ROOT BUILD_DIR
Exit 0 when every rule holds; 1 with each violation listed.
"""
import os
import re
import subprocess
import sys

ROOT, BUILD = sys.argv[1], sys.argv[2]
RT = os.path.join(ROOT, 'runtime')

# Which folders a folder may reach (calls and includes). Contract headers are
# allowed separately below.
ALLOWED = {
    'base': {'base'},
    'bootstrap': {'bootstrap', 'base'},
    'core': {'core', 'bootstrap', 'base'},
    'api': {'api', 'proxy', 'core', 'bootstrap', 'base', 'backends', 'transports'},
    'backends': {'backends', 'core', 'bootstrap', 'base'},
    'transports': {'transports'},
    'proxy': {'proxy', 'core', 'bootstrap', 'base'},
    'launcher': {'launcher', 'bootstrap', 'base', 'core', 'transports'},
}
# Headers any layer above the base may include: the contracts.
CONTRACTS = {'backends/backend.h', 'transports/transport.h', 'transports/amo_cpu.h'}


def layer_of(rel):
    """runtime-relative path -> (layer, unit) where unit is the folder a
    backend or transport lives in (its own circle is its business)."""
    parts = rel.split('/')
    top = parts[0]
    if top in ('backends', 'transports') and len(parts) > 2:
        return top, '/'.join(parts[:2])
    return top, top


def sources():
    for d, _, files in os.walk(RT):
        for f in files:
            if f.endswith(('.c', '.h')):
                p = os.path.join(d, f)
                yield os.path.relpath(p, RT), p


def include_violations():
    bad = []
    inc_re = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for rel, path in sources():
        layer, unit = layer_of(rel)
        here = os.path.dirname(rel)
        for inc in inc_re.findall(open(path, encoding='utf-8').read()):
            # resolve: relative to the file, then to runtime/, then runtime/core
            for cand in (os.path.normpath(os.path.join(here, inc)), os.path.normpath(inc),
                         os.path.normpath(os.path.join('core', inc))):
                if os.path.exists(os.path.join(RT, cand)):
                    target = cand
                    break
            else:
                continue  # public or generated header
            tl, tu = layer_of(target)
            if target in CONTRACTS and layer != 'base' and layer != 'bootstrap':
                continue
            if tl not in ALLOWED.get(layer, set()):
                bad.append('%s includes %s (%s may not reach %s)' % (rel, target, layer, tl))
            elif tl in ('backends', 'transports') and tu != tl and tu != unit and \
                    layer != 'api':
                bad.append('%s includes %s (another backend or transport)' % (rel, target))
    return bad


def objects():
    """object file -> runtime-relative source path, from meson's names."""
    out = {}
    for base in os.listdir(os.path.join(BUILD, 'runtime')):
        if base.endswith('.p') and base.startswith(('libsymm_runtime.so', 'libsymm_bootstrap')):
            pdir = os.path.join(BUILD, 'runtime', base)
            for o in os.listdir(pdir):
                if o.endswith('.c.o'):
                    out[os.path.join(pdir, o)] = o[:-2]
    srcs = {rel.replace('/', '_'): rel for rel, _ in sources() if rel.endswith('.c')}
    res = {}
    for obj, flat in out.items():
        if flat in srcs:
            res[obj] = srcs[flat]
    return res


def symbols(obj):
    text = subprocess.run(['nm', obj], capture_output=True, text=True, check=True).stdout
    defined, undefined = set(), set()
    for line in text.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in 'TDRB':
            defined.add(f[2])
        elif len(f) == 2 and f[0] == 'U':
            undefined.add(f[1])
    return defined, undefined


def call_violations():
    objs = objects()
    if not objs:
        return ['no runtime objects found under %s (build first)' % BUILD]
    defs, uses = {}, {}
    for obj, rel in objs.items():
        d, u = symbols(obj)
        uses[rel] = u
        for s in d:
            defs[s] = rel
    edges = {}
    bad = []
    for rel, u in uses.items():
        layer, unit = layer_of(rel)
        for s in u:
            t = defs.get(s)
            if not t or t == rel:
                continue
            tl, tu = layer_of(t)
            edges.setdefault(rel, set()).add(t)
            if tl not in ALLOWED.get(layer, set()):
                bad.append('%s calls %s in %s (%s may not reach %s)' % (rel, s, t, layer, tl))
            elif tl == 'backends' and layer != 'api' and tu != unit and tu != 'backends' and \
                    rel != 'backends/registry.c':
                bad.append('%s calls %s in %s (another backend)' % (rel, s, t))
            elif layer == 'backends' and unit != 'backends' and t == 'backends/registry.c':
                bad.append('%s calls the registry (%s)' % (rel, s))
    # circles that cross folders (strongly connected components of files)
    index, low, stack, on, comps, counter = {}, {}, [], set(), [], [0]

    def strong(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            comps.append(comp)

    sys.setrecursionlimit(10000)
    for v in list(uses):
        if v not in index:
            strong(v)
    for comp in comps:
        units = {layer_of(f)[1] for f in comp}
        if len(units) > 1:
            bad.append('files calling each other in a circle across folders: ' +
                       ', '.join(sorted(comp)))
    return bad


bad = include_violations() + call_violations()
for b in bad:
    print('FAIL:', b)
print('layers: %d violation(s)' % len(bad))
sys.exit(1 if bad else 0)
