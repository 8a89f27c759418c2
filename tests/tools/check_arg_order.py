#!/usr/bin/env python3
"""One argument order in every binding: a buffer method's arguments follow C's
(index, data, pe) after the buffer (include/symm/symm.h: symm_put(dst,
dst_index, src, nelems, pe), symm_atomic(buf, index, op, value, compare, pe,
fetched), ...), for put/get/p/g/put_signal/signal_op/atomic* and their nbi and
stream forms, in Rust, Go and Zig.

Reads the method signatures from the sources (no toolchain needed) and checks,
by parameter name, that: the first parameter is the element index; the data
(src/dst/value) comes after the index and before the pe; the signal's
(sig, sig_index, signal, op) come between the data and the pe; an atomic's op
comes right after the index and compare after value (compare_swap's named
form takes the expected value first, as C's symm_dev_atomic_compare_swap);
the pe is last but for a stream, a non-blocking fetch's destination or a
deprecated alias. Every method the rule covers must be found in each binding.

Usage: check_arg_order.py SOURCE_ROOT
"""
import os
import re
import sys

ROOT = sys.argv[1]
failures = []

# The methods the rule covers, by their C name (each binding spells it its way).
COVERED = ['put', 'get', 'put_nbi', 'get_nbi', 'p', 'g', 'put_signal', 'put_signal_nbi',
           'signal_op', 'atomic', 'atomic_nbi', 'atomic_fetch', 'atomic_set', 'atomic_swap',
           'atomic_fetch_add', 'put_on_stream', 'get_on_stream', 'p_on_stream',
           'put_signal_on_stream', 'signal_op_on_stream']
INDEX = {'index', 'sigindex'}
DATA = {'src', 'dst', 'value'}
TAIL = {'stream', 's', 'fetched'}


def snake(name):
    name = re.sub(r'NBI', 'Nbi', name)
    return re.sub(r'(?<!^)(?=[A-Z])', '_', name).lower()


def params_of(text):
    out = []
    for part in text.split(','):
        part = part.strip()
        if not part or part in ('&self', 'self', '&mut self') or part.startswith('self:'):
            continue
        out.append(part)
    return out


def rust():
    src = open(os.path.join(ROOT, 'bindings/rust/symm/src/buffer.rs')).read()
    impl = src[src.index('impl<'):src.index('pub struct NbiScope')]
    for m in re.finditer(r'(#\[deprecated[^\]]*\]\s*)?pub (?:unsafe )?fn (\w+)(?:<[^>]*>)?\s*\(([^)]*)\)', impl):
        names = [p.split(':')[0].strip() for p in params_of(m.group(3))]
        yield m.group(2), names, bool(m.group(1))


def go():
    for f in ('buffer.go', 'stream.go'):
        src = open(os.path.join(ROOT, 'bindings/go', f)).read()
        for m in re.finditer(r'((?://[^\n]*\n)*)func \(b \*Buffer\[T\]\) (\w+)\(([^)]*)\)', src):
            names = []
            for p in params_of(m.group(3)):
                names.append(p.split()[0])
            yield snake(m.group(2)), [n.lower() for n in names], 'Deprecated:' in m.group(1)


def zig():
    src = open(os.path.join(ROOT, 'bindings/zig/src/symm.zig')).read()
    body = src[src.index('pub fn Buffer(comptime T: type) type'):]
    for m in re.finditer(r'pub fn (\w+)\(self: Self,?(.*)\) [^()\n]*\{$', body, re.M):
        names = [p.split(':')[0].strip() for p in params_of(m.group(2))]
        yield snake(m.group(1)), names, False


def check_one(lang, name, ps):
    ps = [p.lower().replace('_', '') for p in ps]
    def where(p):
        return ps.index(p) if p in ps else None
    what = f'{lang} {name}({", ".join(ps)})'
    if not ps or ps[0] not in INDEX:
        failures.append(f'{what}: the index is not first')
        return
    pe = where('pe')
    if pe is None:
        failures.append(f'{what}: no pe')
        return
    if any(p not in TAIL for p in ps[pe + 1:]):
        failures.append(f'{what}: only a stream or a fetched pointer may follow pe')
    for d in DATA:
        i = where(d)
        if i is not None and not 0 < i < pe:
            failures.append(f'{what}: {d} is not between the index and the pe')
    if name.startswith('atomic') and 'op' in ps and where('op') != 1:
        failures.append(f'{what}: the atomic op does not follow the index')
    if 'compare' in ps and 'value' in ps and where('compare') < where('value') \
            and 'compare_swap' not in name:
        failures.append(f'{what}: compare before value (C: value, compare)')
    if 'sig' in ps and not where('src') < where('sig') < where('sigindex') < pe:
        failures.append(f'{what}: the signal arguments are not between the data and the pe')


checked = {}
for lang, methods in (('rust', rust()), ('go', go()), ('zig', zig())):
    seen = set()
    for name, ps, deprecated in methods:
        if name in COVERED or name.startswith(('atomic', 'fetch_')) or \
                name.endswith('compare_swap'):
            seen.add(name)
            checked[lang] = checked.get(lang, 0) + 1
            if not deprecated:
                check_one(lang, name, ps)
    alias = {'zig': {'atomic_fetch_add': 'fetch_add'}}.get(lang, {})
    for want in COVERED:
        if want not in seen and alias.get(want) not in seen:
            failures.append(f'{lang}: no method for {want} found (did its name change?)')
for f in failures:
    print('FAIL:', f)
if failures:
    sys.exit(1)
print('check_arg_order: ok (%s)' % ', '.join(f'{k}: {v} methods' for k, v in checked.items()))
