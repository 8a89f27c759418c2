#!/usr/bin/env python3
"""One source per tool -> its man page (roff) and its --help text (a C header).

Usage: gen_man.py SOURCE.txt OUT.1 OUT_usage.h VERSION

The source (symmrun.txt, symm-info.txt here) is plain text:
    name: symmrun
    summary: run the processing elements of a symm job on this host
    usage: symmrun -n N [OPTIONS] [--] PROGRAM [ARGS...]   (one line per form)
    option: -n, --np=N                                       (then its text, indented)
        number of PEs (1..4096)
    section: EXIT STATUS [help]                              (then paragraphs, indented)
        text ...
A blank line separates paragraphs; an indented line that starts with "- " is a
list item. Sections marked "help" are printed by --help too (after the options);
the man page has them all, after NAME, SYNOPSIS, DESCRIPTION and OPTIONS.
The header defines `static const char <name>_usage_text[]` (name with '-' -> '_').
"""
import re
import sys
import textwrap

HELP_WIDTH = 79
OPT_COL = 22


def parse(path):
    doc = {'usage': [], 'options': [], 'sections': []}
    cur = None  # the list that indented lines go to
    for raw in open(path, encoding='utf-8'):
        line = raw.rstrip('\n')
        if line.startswith('#'):
            continue
        m = re.match(r'^(name|summary|usage|option|section): ?(.*)$', line)
        if m:
            key, val = m.groups()
            if key in ('name', 'summary'):
                doc[key] = val.strip()
                cur = None
            elif key == 'usage':
                doc['usage'].append(val.strip())
                cur = None
            elif key == 'option':
                cur = []
                doc['options'].append((val.strip(), cur))
            else:
                words = val.split()
                in_help = words[-1] == 'help'
                title = ' '.join(words[:-1] if in_help else words)
                cur = []
                doc['sections'].append((title, in_help, cur))
            continue
        if line.strip() and not line.startswith((' ', '\t')):
            sys.exit(f'{path}: unindented text outside a field: {line!r}')
        if cur is None:
            if line.strip():
                sys.exit(f'{path}: text before any option or section: {line!r}')
            continue
        cur.append(line.strip())
    for key in ('name', 'summary'):
        if key not in doc:
            sys.exit(f'{path}: no {key}:')
    if not doc['usage']:
        sys.exit(f'{path}: no usage:')
    return doc


def paragraphs(lines):
    """Lines -> [('p', text) | ('li', text)]."""
    out, buf, kind = [], [], 'p'
    def flush():
        if buf:
            out.append((kind, ' '.join(buf)))
        buf.clear()
    for line in lines:
        if not line:
            flush()
            kind = 'p'
        elif line.startswith('- '):
            flush()
            kind = 'li'
            buf.append(line[2:])
        else:
            buf.append(line)
    flush()
    return out


def help_text(doc):
    out = []
    for i, u in enumerate(doc['usage']):
        pad = ' ' * (8 + len(doc['name']))
        out += textwrap.wrap(u, HELP_WIDTH, initial_indent='usage: ' if i == 0 else '       ',
                             subsequent_indent=pad, break_on_hyphens=False)
    out += ['', doc['summary'][0].upper() + doc['summary'][1:] + '.', '', 'Options:']
    for spec, lines in doc['options']:
        text = ' '.join(l for l in lines if l)
        head = '  ' + ('    ' if spec.startswith('--') else '') + spec
        wrapped = textwrap.wrap(text, HELP_WIDTH - OPT_COL, break_on_hyphens=False)
        if len(head) + 2 > OPT_COL:
            out.append(head)
        else:
            out.append(head.ljust(OPT_COL) + wrapped.pop(0))
        out += [' ' * OPT_COL + w for w in wrapped]
    for title, in_help, lines in doc['sections']:
        if not in_help:
            continue
        out += ['', title[0] + title[1:].lower() + ':']
        for n, (kind, text) in enumerate(paragraphs(lines)):
            if kind == 'p' and n:
                out.append('')
            if kind == 'li':
                out += textwrap.wrap(text, HELP_WIDTH, initial_indent='  - ',
                                     subsequent_indent='    ')
            else:
                out += textwrap.wrap(text, HELP_WIDTH, initial_indent='  ',
                                     subsequent_indent='  ')
    return '\n'.join(out) + '\n'


def roff_escape(text):
    text = text.replace('\\', '\\e').replace('-', '\\-')
    # `code` -> bold
    return re.sub(r'`([^`]+)`', r'\\fB\1\\fR', text)


def roff_line(text):
    text = roff_escape(text)
    return '\\&' + text if text.startswith(('.', "'")) else text


def roff_spec(spec):
    # "-n, --np=N" -> bold option names, italic value names
    parts = []
    for piece in spec.split(', '):
        m = re.match(r'^(-[-\w]+)(?:([ =])(.+))?$', piece)
        if not m:
            sys.exit(f'bad option spec {spec!r}')
        name, sep, val = m.groups()
        s = '\\fB' + roff_escape(name) + '\\fR'
        if val:
            s += sep + '\\fI' + roff_escape(val) + '\\fR'
        parts.append(s)
    return ', '.join(parts)


def man_page(doc, version):
    name = doc['name']
    out = [f'.TH {name.upper()} 1 "" "symm {version}" "symm manual"',
           '.SH NAME', f'{roff_escape(name)} \\- {roff_escape(doc["summary"])}',
           '.SH SYNOPSIS']
    for u in doc['usage']:
        first, _, rest = u.partition(' ')
        out += ['.br' if u != doc['usage'][0] else '',
                f'\\fB{roff_escape(first)}\\fR {roff_escape(rest)}']
    out = [l for l in out if l != '']
    def body(lines):
        res = []
        for kind, text in paragraphs(lines):
            if kind == 'li':
                res += ['.IP \\(bu 2', roff_line(text)]
            else:
                res += ['.PP', roff_line(text)]
        return res
    secs = doc['sections']
    for title, _, lines in [s for s in secs if s[0] == 'DESCRIPTION']:
        out += ['.SH DESCRIPTION'] + body(lines)
    out.append('.SH OPTIONS')
    for spec, lines in doc['options']:
        out += ['.TP', roff_spec(spec)]
        b = body(lines)
        out += b[1:] if b and b[0] == '.PP' else b
    for title, _, lines in [s for s in secs if s[0] != 'DESCRIPTION']:
        out += ['.SH ' + title] + body(lines)
    return '\n'.join(out) + '\n'


def c_header(doc):
    ident = doc['name'].replace('-', '_') + '_usage_text'
    lines = ['/* Generated by runtime/launcher/man/gen_man.py from %s.txt: edit that. */'
             % doc['name'], f'static const char {ident}[] =']
    for l in help_text(doc).splitlines(True):
        lit = l.replace('\\', '\\\\').replace('"', '\\"').replace('\n', '\\n')
        lines.append(f'    "{lit}"')
    lines[-1] += ';'
    return '\n'.join(lines) + '\n'


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    src, man_out, hdr_out, version = sys.argv[1:]
    doc = parse(src)
    with open(man_out, 'w', encoding='utf-8') as f:
        f.write(man_page(doc, version))
    with open(hdr_out, 'w', encoding='utf-8') as f:
        f.write(c_header(doc))


if __name__ == '__main__':
    main()
