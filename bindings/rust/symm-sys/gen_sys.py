#!/usr/bin/env python3
"""Generate symm-sys/src/bindings.rs from include/symm/symm.h.

bindgen is not available offline, and the header is regular enough to read
with a small parser: integer #defines, typedefs of handles and integers, plain
structs of fixed-width fields, and SYMM_API prototypes. The output is committed;
regenerate it after a header change with

    python3 bindings/rust/symm-sys/gen_sys.py            # rewrite
    python3 bindings/rust/symm-sys/gen_sys.py --check    # exit 1 if stale

The Rust ABI test (symm-sys/tests/abi_json.rs) checks the result against
abi/symm-abi.json, which another generator derives from the same header, so a
mistake in either shows up as a disagreement.
"""
import argparse
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, '..', '..', '..'))
HEADER = os.path.join(ROOT, 'include', 'symm', 'symm.h')
OUT = os.path.join(HERE, 'src', 'bindings.rs')

SCALARS = {
    'uint8_t': 'u8', 'int8_t': 'i8', 'uint16_t': 'u16', 'int16_t': 'i16',
    'uint32_t': 'u32', 'int32_t': 'i32', 'uint64_t': 'u64', 'int64_t': 'i64',
    'size_t': 'usize', 'char': 'c_char', 'void': 'c_void',
}
HANDLES = ('symm_ctx', 'symm_team', 'symm_buf')
# Constants used as array lengths are usize; statuses are symm_status; the
# index sentinel is u64; every other constant is u32 (the type of the
# parameters and fields that take them).
ARRAY_LEN_CONSTANTS = ('SYMM_UNIQUE_ID_BYTES', 'SYMM_DEVICE_FAST_PES')
SKIP_DEFINES = ('SYMM_SYMM_H', 'SYMM_API')


def rust_type(c):
    """A C type spelled as in the header ("const void *", "void *const *")."""
    c = ' '.join(c.replace('*', ' * ').split())
    toks = c.split(' ')
    # Pointers read right to left: each '*' wraps what is on its left; a
    # 'const' right after a '*' qualifies that pointer itself (no Rust
    # spelling: *const/*mut is about the pointee).
    base_const = False
    i = 0
    if toks[0] == 'const':
        base_const = True
        i = 1
    base = toks[i]
    i += 1
    if i < len(toks) and toks[i] == 'const':
        base_const = True
        i += 1
    if base in SCALARS:
        t = SCALARS[base]
    elif base.startswith('symm_'):
        t = base
    else:
        raise SystemExit('gen_sys.py: unknown C type %r' % c)
    pointee_const = base_const
    while i < len(toks):
        if toks[i] != '*':
            raise SystemExit('gen_sys.py: cannot spell %r' % c)
        i += 1
        ptr_const = i < len(toks) and toks[i] == 'const'
        if ptr_const:
            i += 1
        t = ('*const ' if pointee_const else '*mut ') + t
        pointee_const = ptr_const
    return t


def doc(lines, indent=''):
    """Rust doc comment holding C text verbatim (a text block: no markdown)."""
    out = [indent + '/// ```text']
    for ln in lines:
        out.append((indent + '/// ' + ln).rstrip())
    out.append(indent + '/// ```')
    return '\n'.join(out)


def strip_comment(s):
    return re.sub(r'/\*.*?\*/', '', s, flags=re.S)


def parse(text):
    lines = text.split('\n')
    consts, structs, funcs, typedefs = [], [], [], []
    comment = []  # the comment block right before the current line
    i = 0
    while i < len(lines):
        ln = lines[i]
        s = ln.strip()
        if s.startswith('/*'):
            block = [ln]
            while '*/' not in lines[i]:
                i += 1
                block.append(lines[i])
            i += 1
            body = []
            for b in block:
                b = b.strip()
                b = re.sub(r'^/\*+ ?', '', b)
                b = re.sub(r'\*+/$', '', b)
                b = re.sub(r'^\* ?', '', b)
                body.append(b.rstrip())
            while body and not body[0].strip():
                body.pop(0)
            while body and not body[-1].strip():
                body.pop()
            if any('----' in b for b in body):
                comment = []  # section rulers
            else:
                comment = body
            continue
        if not s:
            comment = []
            i += 1
            continue
        if s.startswith('#define'):
            full = s
            while full.endswith('\\'):
                i += 1
                full = full[:-1] + ' ' + lines[i].strip()
            m = re.match(r'#define\s+(\w+)(\(?)\s*(.*)$', full)
            name, fnlike, rest = m.group(1), m.group(2), m.group(3)
            trailing = re.search(r'/\*(.*?)\*/', rest)
            rest = strip_comment(rest).strip()
            if not fnlike and name not in SKIP_DEFINES and rest:
                v = re.match(r'^(0[xX][0-9a-fA-F]+|\d+)([uUlL]*)$', rest)
                if v:
                    c = list(comment)
                    if trailing:
                        c.append(trailing.group(1).strip())
                    consts.append((name, int(v.group(1), 0), c))
            i += 1
            continue
        if s.startswith('#') or s.startswith('extern') or s == '}' or s.startswith('SYMM_STATUS'):
            i += 1
            continue
        if s.startswith('typedef struct') and s.endswith('{'):
            name = re.match(r'typedef struct (\w+)', s).group(1)
            fields = []
            c = comment
            i += 1
            pending = None
            in_comment = False
            while not lines[i].strip().startswith('}'):
                f = lines[i]
                if in_comment:
                    # continuation of a field's trailing comment
                    in_comment = '*/' not in f
                    pending[3].append(re.sub(r'\*/.*$', '', f).strip())
                    i += 1
                    continue
                trailing = re.search(r'/\*(.*?)(\*/|$)', f)
                in_comment = trailing is not None and trailing.group(2) != '*/'
                code = re.sub(r'/\*.*$', '', f).strip()
                if code:
                    m = re.match(r'^(.*?)(\w+)(\[(\w+)\])?;$', code)
                    ctype = ' '.join(m.group(1).replace('*', ' * ').split())
                    ctype = ctype.replace('* const', '*const')
                    fc = [trailing.group(1).strip()] if trailing else []
                    pending = [m.group(2), ctype, m.group(4), fc]
                    fields.append(pending)
                elif trailing and pending:
                    pending[3].append(trailing.group(1).strip())
                i += 1
            structs.append((name, fields, c))
            comment = []
            i += 1
            continue
        if s.startswith('typedef'):
            m = re.match(r'typedef struct (\w+) \*(\w+);', s)
            if m:
                typedefs.append(('handle', m.group(2), m.group(1)))
            else:
                m = re.match(r'typedef (.*?)\s*(\w+);', strip_comment(s))
                typedefs.append(('alias', m.group(2), m.group(1)))
            i += 1
            continue
        if s.startswith('SYMM_API'):
            full = s
            while not full.rstrip().endswith(';'):
                i += 1
                full += ' ' + lines[i].strip()
            full = ' '.join(full.split())
            m = re.match(r'SYMM_API (.*?)\s*\b(symm_\w+)\((.*)\);$', full)
            ret, name, params = m.group(1), m.group(2), m.group(3)
            ps = []
            if params != 'void':
                for p in params.split(','):
                    p = p.strip()
                    pm = re.match(r'^(.*?)(\w+)$', p)
                    ctype = ' '.join(pm.group(1).replace('*', ' * ').split())
                    ps.append((pm.group(2), ctype))
            proto = full[len('SYMM_API '):]
            funcs.append((name, ret.replace('*', ' *').replace('  ', ' '), ps, comment, proto))
            comment = []
            i += 1
            continue
        comment = []
        i += 1
    return consts, structs, funcs, typedefs


def const_type(name):
    if name in ARRAY_LEN_CONSTANTS:
        return 'usize'
    if name == 'SYMM_SUCCESS' or name.startswith('SYMM_ERR_'):
        return 'symm_status'
    if name == 'SYMM_INDEX_NONE':
        return 'u64'
    return 'u32'


def generate(text):
    consts, structs, funcs, typedefs = parse(text)
    o = []
    o.append('// @generated by bindings/rust/symm-sys/gen_sys.py from include/symm/symm.h.')
    o.append('// Do not edit: regenerate (python3 bindings/rust/symm-sys/gen_sys.py).')
    o.append('')
    o.append('use core::ffi::{c_char, c_void};')
    o.append('')
    o.append('// ---- typedefs')
    for kind, name, target in typedefs:
        if kind == 'handle':
            o.append('/// Opaque type behind the `%s` handle.' % name)
            o.append('#[repr(C)]')
            o.append('pub struct %s {' % target)
            o.append('    _opaque: [u8; 0],')
            o.append('    _marker: core::marker::PhantomData<(*mut u8, core::marker::PhantomPinned)>,')
            o.append('}')
            o.append('/// C `typedef struct %s *%s;` (opaque handle).' % (target, name))
            o.append('pub type %s = *mut %s;' % (name, target))
        else:
            o.append('/// C `typedef %s %s;`.' % (target, name))
            o.append('pub type %s = %s;' % (name, rust_type(target)))
    o.append('')
    o.append('// ---- constants (every integer #define of symm.h)')
    for name, value, c in consts:
        if c:
            o.append(doc(c))
        else:
            o.append('/// C `#define %s %d`.' % (name, value))
        lit = ('0x%X' % value) if value > 0xFFFFFFFF else str(value)
        o.append('pub const %s: %s = %s;' % (name, const_type(name), lit))
    o.append('')
    o.append('// ---- structs (repr(C), field for field)')
    for name, fields, c in structs:
        if c:
            o.append(doc(c))
        else:
            o.append('/// C `struct %s`.' % name)
        o.append('#[repr(C)]')
        o.append('#[derive(Clone, Copy, Debug)]')
        o.append('pub struct %s {' % name)
        for fname, ctype, count, fc in fields:
            rt = rust_type(ctype)
            if count:
                rt = '[%s; %s]' % (rt, count)
            o.append('    /// `%s %s%s`%s' % (ctype, fname, '[%s]' % count if count else '',
                                          (': ' + ' '.join(fc)) if fc else ''))
            o.append('    pub %s: %s,' % (fname, rt))
        o.append('}')
    o.append('')
    o.append('// ---- functions (every SYMM_API prototype, in header order)')
    o.append('extern "C" {')
    for name, ret, ps, c, proto in funcs:
        o.append(doc(list(c) + ([''] if c else []) + [proto], '    '))
        args = ', '.join('%s: %s' % (pn, rust_type(pt)) for pn, pt in ps)
        r = rust_type(ret)
        o.append('    pub fn %s(%s)%s;' % (name, args, '' if r == 'c_void' else ' -> ' + r))
    o.append('}')
    o.append('')
    o.append('/// One struct\'s layout as compiled: (name, size, align, fields as (name,')
    o.append('/// offset, size)).')
    o.append('pub type StructLayout = (&\'static str, usize, usize, Vec<(&\'static str, usize, usize)>);')
    o.append('')
    o.append('/// Layout of every struct as compiled here. The ABI test compares it with')
    o.append('/// abi/symm-abi.json.')
    o.append('pub fn struct_layouts() -> Vec<StructLayout> {')
    o.append('    use core::mem::{align_of, offset_of, size_of};')
    o.append('    macro_rules! fsize {')
    o.append('        ($t:ty, $f:ident) => {{')
    o.append('            const fn sz<T>(_: *const T) -> usize { size_of::<T>() }')
    o.append('            let u = core::mem::MaybeUninit::<$t>::uninit();')
    o.append('            // SAFETY: addr_of! on a field of an uninit value reads nothing.')
    o.append('            sz(unsafe { core::ptr::addr_of!((*u.as_ptr()).$f) })')
    o.append('        }};')
    o.append('    }')
    o.append('    vec![')
    for name, fields, c in structs:
        o.append('        ("%s", size_of::<%s>(), align_of::<%s>(), vec![' % (name, name, name))
        for fname, ctype, count, fc in fields:
            o.append('            ("%s", offset_of!(%s, %s), fsize!(%s, %s)),' % (fname, name, fname, name, fname))
        o.append('        ]),')
    o.append('    ]')
    o.append('}')
    return '\n'.join(o) + '\n'


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--check', action='store_true', help='exit 1 when the committed file is stale')
    ap.add_argument('--header', default=HEADER)
    ap.add_argument('--out', default=OUT)
    a = ap.parse_args()
    with open(a.header) as f:
        out = generate(f.read())
    if a.check:
        with open(a.out) as f:
            if f.read() != out:
                sys.stderr.write('%s is stale: run python3 %s\n' % (a.out, os.path.relpath(__file__, ROOT)))
                return 1
        return 0
    with open(a.out, 'w') as f:
        f.write(out)
    return 0


if __name__ == '__main__':
    sys.exit(main())
