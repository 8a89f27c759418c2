#!/usr/bin/env python3
"""Generate abi/symm-abi.json, the machine-readable description of the C ABI.

  gen_abi_json.py --write [--cc CC]          rewrite abi/symm-abi.json and the
                                             generated sections of docs/ABI.md
  gen_abi_json.py --check OUT [--cc CC]      write the description to OUT and fail
                                             (with a diff) when the committed
                                             files differ from it

Sources: include/symm/symm.h (constants, SYMM_STATUS_TABLE, typedefs, structs,
prototypes and their contract lines), abi/symm_dispatch.h (the entries the
runtime answers; every other SYMM_API function is answered by the loader, and
the ABI version), abi/symm.map (the version node that introduced each
function). Struct offsets and sizes, and the value of every constant, come from
a probe compiled with the C compiler (x86-64 Linux, LP64). The schema is in
docs/ABI.md ("abi/symm-abi.json"). Every prototype must carry a contract line;
one that does not, or that does not parse, fails the generator.
"""
import argparse
import difflib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "include", "symm", "symm.h")
DISPATCH = os.path.join(ROOT, "abi", "symm_dispatch.h")
MAP = os.path.join(ROOT, "abi", "symm.map")
JSON_PATH = os.path.join(ROOT, "abi", "symm-abi.json")
DOC = os.path.join(ROOT, "docs", "ABI.md")

SCHEMA = 1
# Constant groups by name prefix (first match wins); a constant that matches
# none fails the generator, so a new family is classified on purpose.
GROUPS = [
    ("SYMM_VERSION", "version"), ("SYMM_SUCCESS", "status"), ("SYMM_ERR_", "status"),
    ("SYMM_STATUS_", "status"), ("SYMM_BACKEND_", "backend"), ("SYMM_BOOTSTRAP_", "bootstrap"),
    ("SYMM_THREAD_", "thread"), ("SYMM_DTYPE_", "dtype"), ("SYMM_UNIQUE_ID_", "unique_id"),
    ("SYMM_TEAM_", "team"), ("SYMM_SIGNAL_", "signal"), ("SYMM_CMP_", "cmp"), ("SYMM_AMO_", "amo"),
    ("SYMM_OP_", "op"), ("SYMM_ASYNC_", "async"), ("SYMM_DEVICE_", "device"),
    ("SYMM_INDEX_", "index"),
]
# Object-like macros of symm.h that are not ABI values.
NOT_VALUES = {"SYMM_SYMM_H", "SYMM_API"}
COLLECTIVE = {"local": "none", "collective(ctx)": "ctx", "collective(team)": "team",
              "collective(buf)": "buf"}
UNTIL = ("return", "quiet", "stream", "buf_free", "finalize", "process", "next_call")
DOC_BEGIN = "<!-- BEGIN GENERATED: status table (abi/gen_abi_json.py; do not edit) -->"
DOC_END = "<!-- END GENERATED: status table -->"


class GenError(Exception):
    pass


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def strip_comments(text):
    """Comments removed, line breaks kept (so '#define' lines stay lines)."""
    return re.sub(r"/\*.*?\*/", lambda m: " " + "\n" * m.group(0).count("\n"), text, flags=re.S)


def c_type(text):
    """Spell a C type as the schema wants: single spaces, '*' separated."""
    tokens = re.findall(r"[A-Za-z_]\w*|\*", text)
    if not tokens or any(t in ("struct", "enum", "union") for t in tokens):
        raise GenError("cannot spell type %r" % text)
    out = ""
    for t in tokens:
        if t == "*":
            out += "*" if out.endswith("*") else " *"
        else:
            out += t if (not out or out.endswith("*")) else " " + t
    return out


# ---- constants, statuses, versions ---------------------------------------------------------

def parse_constants(text):
    consts = []
    code = strip_comments(text)
    for m in re.finditer(r"^[ \t]*#[ \t]*define[ \t]+(SYMM_\w+)(?![\w(])[ \t]*(.*)$", code, re.M):
        name, value = m.group(1), m.group(2).strip()
        if name in NOT_VALUES:
            continue
        lit = re.fullmatch(r"(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*", value)
        if not lit:
            raise GenError("#define %s %s: not an integer literal (constants must be plain "
                           "literals so every binding generator keeps them)" % (name, value))
        group = next((g for p, g in GROUPS if name.startswith(p)), None)
        if group is None:
            raise GenError("#define %s: no group for it; add its prefix to GROUPS in %s"
                           % (name, os.path.basename(__file__)))
        consts.append({"name": name, "value": int(lit.group(1), 0), "group": group})
    return consts


def parse_statuses(text):
    m = re.search(r"#define SYMM_STATUS_TABLE\(X\)(.*?)\n\s*\n", text, re.S)
    if not m:
        raise GenError("SYMM_STATUS_TABLE not found in symm.h")
    rows = re.findall(r'X\(\s*(SYMM_\w+)\s*,\s*(\d+)\s*,\s*"((?:[^"\\]|\\.)*)"\s*\)', m.group(1))
    if not rows:
        raise GenError("SYMM_STATUS_TABLE has no entries")
    return [{"name": n, "value": int(v), "description": d} for n, v, d in rows]


def parse_abi_version(dispatch_text):
    ma = re.search(r"#define SYMM_ABI_MAJOR\s+(\d+)", dispatch_text)
    mi = re.search(r"#define SYMM_ABI_MINOR\s+(\d+)", dispatch_text)
    if not ma or not mi:
        raise GenError("SYMM_ABI_MAJOR/MINOR not found in symm_dispatch.h")
    return {"major": int(ma.group(1)), "minor": int(mi.group(1))}


def dispatch_entries(dispatch_text):
    body = dispatch_text.split("#define SYMM_DISPATCH_ENTRIES(X)", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"\bX\(\s*[\w ]+?\s*,\s*(symm_\w+)\s*,", body)


def map_nodes(map_text):
    """{function: version node ("1.0")} from abi/symm.map."""
    text = re.sub(r"/\*.*?\*/", " ", map_text, flags=re.S)
    since = {}
    for node, body in re.findall(r"SYMM_(\d+\.\d+)\s*\{(.*?)\}", text, flags=re.S):
        glob = body.split("local:")[0].replace("global:", "")
        for name in (n.strip() for n in glob.split(";")):
            if name:
                since.setdefault(name, node)
    return since


# ---- typedefs and structs -------------------------------------------------------------------

def parse_typedefs(code):
    out = []
    for m in re.finditer(r"^typedef\s+([^;{}]+?);", code, re.M):
        decl = " ".join(m.group(1).split())
        h = re.fullmatch(r"struct (\w+) \*(\w+)", decl)
        if h:
            out.append({"name": h.group(2), "kind": "handle"})
            continue
        p = re.fullmatch(r"(.+?)\s*\*\s*(\w+)", decl)
        if p:
            out.append({"name": p.group(2), "kind": "pointer", "c_type": c_type(p.group(1) + " *")})
            continue
        i = re.fullmatch(r"(u?int(8|16|32|64)_t) (\w+)", decl)
        if i:
            out.append({"name": i.group(3), "kind": "int", "c_type": i.group(1)})
            continue
        raise GenError("typedef %r: unknown kind" % decl)
    return out


def parse_structs(code, consts):
    values = {c["name"]: c["value"] for c in consts}
    structs = []
    for m in re.finditer(r"typedef\s+struct\s+(\w+)\s*\{(.*?)\}\s*(\w+)\s*;", code, re.S):
        tag, body, name = m.groups()
        if tag != name:
            raise GenError("struct %s is typedef'd as %s: use one name" % (tag, name))
        fields = []
        for decl in (d.strip() for d in body.split(";")):
            if not decl:
                continue
            f = re.fullmatch(r"(.+?)\s*\b(\w+)\s*(?:\[\s*(\w+)\s*\])?", " ".join(decl.split()))
            if not f:
                raise GenError("struct %s: cannot parse field %r" % (name, decl))
            field = {"name": f.group(2), "c_type": c_type(f.group(1))}
            if f.group(3):
                n = f.group(3)
                field["count"] = int(n, 0) if n[0].isdigit() else values.get(n)
                if field["count"] is None:
                    raise GenError("struct %s: array size %s is not a constant" % (name, n))
            fields.append(field)
        structs.append({"name": name, "fields": fields})
    return structs


# ---- prototypes and contracts ---------------------------------------------------------------

CONTRACT_RE = re.compile(
    r"Contract: (?P<coll>[\w()]+); thread: (?P<thread>\w+); errors: (?P<errors>[A-Za-z_, ]+); "
    r"keeps: (?P<keeps>[\w, ]+)\.")


def parse_contract(fn, comment, params, returns, status_names):
    text = " ".join(re.sub(r"^\s*(/\*+|\*(?!/))?", "", line).strip()
                    for line in comment.replace("*/", "").splitlines())
    text = " ".join(text.split())
    if "Contract:" not in text:
        raise GenError("%s has no contract: the comment right above the prototype needs its "
                       "'Contract:' line" % fn)
    if text.count("Contract:") != 1:
        raise GenError("%s: the comment right above it holds more than one 'Contract:' line" % fn)
    m = CONTRACT_RE.search(text[text.index("Contract:"):])
    if not m or m.start() != 0:
        raise GenError("%s: cannot parse its contract line %r (see the syntax at the top of "
                       "symm.h)" % (fn, text[text.index("Contract:"):]))
    if m.group("coll") not in COLLECTIVE:
        raise GenError("%s: collective must be one of %s" % (fn, ", ".join(COLLECTIVE)))
    if m.group("thread") not in ("any", "level"):
        raise GenError("%s: thread must be 'any' or 'level'" % fn)
    errors = [] if m.group("errors") == "none" else [e.strip() for e in m.group("errors").split(",")]
    for e in errors:
        if "SYMM_ERR_" + e not in status_names:
            raise GenError("%s: error %s is not in SYMM_STATUS_TABLE" % (fn, e))
    if len(set(errors)) != len(errors):
        raise GenError("%s: an error is listed twice" % fn)
    kept = {}
    if m.group("keeps") != "none":
        for item in (k.strip() for k in m.group("keeps").split(",")):
            k = re.fullmatch(r"(\w+) until (\w+)", item)
            if not k or k.group(2) not in UNTIL:
                raise GenError("%s: keeps item %r must be '<param> until <%s>'"
                               % (fn, item, "|".join(UNTIL)))
            kept[k.group(1)] = k.group(2)
    pointers = [p["name"] for p in params if p["c_type"].endswith("*")]
    for name in kept:
        if name != "return" and name not in pointers:
            raise GenError("%s: keeps names %s, which is not one of its pointer parameters (%s)"
                           % (fn, name, ", ".join(pointers) or "none"))
    if returns.endswith("*") != ("return" in kept):
        raise GenError("%s: a function returning a pointer states its lifetime as 'return until "
                       "...', and only such a function" % fn)
    keeps = [{"param": p, "until": kept.get(p, "return")} for p in pointers]
    if "return" in kept:
        keeps.append({"param": "return", "until": kept["return"]})
    return {"collective": COLLECTIVE[m.group("coll")], "thread": m.group("thread"),
            "errors": errors, "keeps": keeps}


def parse_functions(text, status_names, runtime_entries, since):
    funcs = []
    comments = [(m.start(), m.end(), m.group(0)) for m in re.finditer(r"/\*.*?\*/", text, re.S)]
    inside = lambda pos: any(s <= pos < e for s, e, _ in comments)
    for m in re.finditer(r"^SYMM_API\s+([^;]*?)\b(symm_\w+)\s*\(([^;]*?)\)\s*;", text, re.M | re.S):
        if inside(m.start()):
            continue
        ret, name, plist = c_type(m.group(1)), m.group(2), " ".join(m.group(3).split())
        params = []
        if plist != "void":
            for p in plist.split(","):
                pm = re.fullmatch(r"(.+?)\s*\b(\w+)", p.strip())
                if not pm:
                    raise GenError("%s: cannot parse parameter %r" % (name, p))
                params.append({"name": pm.group(2), "c_type": c_type(pm.group(1))})
        before = [c for c in comments if c[1] <= m.start()]
        if not before or text[before[-1][1]:m.start()].strip():
            raise GenError("%s has no contract: put a comment with its 'Contract:' line right "
                           "above the prototype" % name)
        contract = parse_contract(name, before[-1][2], params, ret, status_names)
        if name not in since:
            raise GenError("%s is in no version node of abi/symm.map" % name)
        funcs.append(dict([("name", name), ("returns", ret), ("params", params),
                           ("since", since[name]),
                           ("answered_by", "runtime" if name in runtime_entries else "loader")]
                          + list(contract.items())))
    if not funcs:
        raise GenError("no SYMM_API prototypes found")
    return funcs


# ---- the probe: layouts and values as the C compiler sees them -------------------------------

def probe(cc, consts, structs):
    lines = ["#include <stdio.h>", "#include <stddef.h>", "#include <symm/symm.h>",
             "int main(void) {",
             '    printf("P %zu %zu\\n", sizeof(void *), sizeof(long));']
    for c in consts:
        n = c["name"]
        lines.append('    printf("C %s %%llu\\n", (unsigned long long)(%s));' % (n, n))
    for s in structs:
        n = s["name"]
        lines.append('    printf("S %s %%zu %%zu\\n", sizeof(%s), _Alignof(%s));' % (n, n, n))
        for f in s["fields"]:
            lines.append('    printf("F %s %s %%zu %%zu\\n", offsetof(%s, %s), sizeof(((%s *)0)->%s));'
                         % (n, f["name"], n, f["name"], n, f["name"]))
    lines += ["    return 0;", "}", ""]
    with tempfile.TemporaryDirectory(prefix="symm-abi-") as tmp:
        src, exe = os.path.join(tmp, "probe.c"), os.path.join(tmp, "probe")
        with open(src, "w", encoding="utf-8") as f:
            f.write("\n".join(lines))
        cmd = shlex.split(cc) + ["-std=c11", "-I", os.path.join(ROOT, "include"), src, "-o", exe]
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode != 0:
            raise GenError("probe compile failed (%s):\n%s" % (" ".join(cmd), p.stderr))
        out = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    got = {"C": {}, "S": {}, "F": {}}
    for line in out.splitlines():
        kind, *rest = line.split()
        if kind == "P":
            if rest != ["8", "8"]:
                raise GenError("the probe is not LP64 (pointer %s, long %s bytes)" % tuple(rest))
        elif kind == "C":
            got["C"][rest[0]] = int(rest[1])
        elif kind == "S":
            got["S"][rest[0]] = (int(rest[1]), int(rest[2]))
        else:
            got["F"][(rest[0], rest[1])] = (int(rest[2]), int(rest[3]))
    for c in consts:
        if got["C"][c["name"]] != c["value"]:
            raise GenError("%s: the header spells %d, the compiler sees %d"
                           % (c["name"], c["value"], got["C"][c["name"]]))
    laid = []
    for s in structs:
        size, align = got["S"][s["name"]]
        fields = []
        for f in s["fields"]:
            off, fsize = got["F"][(s["name"], f["name"])]
            fields.append(dict(list(f.items()) + [("offset", off), ("size", fsize)]))
        laid.append({"name": s["name"], "size": size, "align": align, "fields": fields})
    return laid


# ---- assembly, the doc section, main ---------------------------------------------------------

def describe(cc):
    header, dispatch = read(HEADER), read(DISPATCH)
    code = strip_comments(header)
    consts = parse_constants(header)
    statuses = parse_statuses(header)
    value = {c["name"]: c["value"] for c in consts}
    for s in statuses:
        if value.get(s["name"]) != s["value"]:
            raise GenError("%s: SYMM_STATUS_TABLE says %d, the #define says %s"
                           % (s["name"], s["value"], value.get(s["name"])))
    names = {s["name"] for s in statuses}
    runtime = set(dispatch_entries(dispatch))
    funcs = parse_functions(header, names, runtime, map_nodes(read(MAP)))
    unknown = runtime - {f["name"] for f in funcs}
    if unknown:
        raise GenError("dispatch entries not declared in symm.h: %s" % ", ".join(sorted(unknown)))
    structs = probe(cc, consts, parse_structs(code, consts))
    return {
        "schema": SCHEMA,
        "version": {"major": value["SYMM_VERSION_MAJOR"], "minor": value["SYMM_VERSION_MINOR"],
                    "patch": value["SYMM_VERSION_PATCH"], "encoded": value["SYMM_VERSION"]},
        "abi": parse_abi_version(dispatch),
        "constants": consts,
        "statuses": statuses,
        "typedefs": parse_typedefs(code),
        "structs": structs,
        "functions": funcs,
    }


def render_json(desc):
    return json.dumps(desc, indent=2) + "\n"


def status_table(desc):
    rows = ["| value | status | meaning |", "|---|---|---|"]
    rows += ["| %d | `%s` | %s |" % (s["value"], s["name"], s["description"])
             for s in desc["statuses"]]
    return "\n".join(rows)


def render_doc(doc, desc):
    if doc.count(DOC_BEGIN) != 1 or doc.count(DOC_END) != 1:
        raise GenError("docs/ABI.md must hold the markers once each:\n  %s\n  %s"
                       % (DOC_BEGIN, DOC_END))
    head, rest = doc.split(DOC_BEGIN)
    _, tail = rest.split(DOC_END)
    return head + DOC_BEGIN + "\n" + status_table(desc) + "\n" + DOC_END + tail


def diff(old, new, a, b):
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", metavar="OUT")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    args = ap.parse_args()
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        print("SKIP: the description is of x86-64 Linux; this is %s %s"
              % (platform.system(), platform.machine()))
        return 77
    try:
        desc = describe(args.cc)
    except GenError as e:
        print("FAIL %s" % e)
        return 1
    text, doc = render_json(desc), read(DOC)
    try:
        new_doc = render_doc(doc, desc)
    except GenError as e:
        print("FAIL %s" % e)
        return 1
    if args.write:
        for path, old, new in ((JSON_PATH, read(JSON_PATH) if os.path.exists(JSON_PATH) else "",
                                text), (DOC, doc, new_doc)):
            if old != new:
                with open(path, "w", encoding="utf-8") as f:
                    f.write(new)
                print("wrote %s" % os.path.relpath(path, ROOT))
        print("%d functions, %d constants, %d structs" % (len(desc["functions"]),
              len(desc["constants"]), len(desc["structs"])))
        return 0
    with open(args.check, "w", encoding="utf-8") as f:
        f.write(text)
    bad = 0
    committed = read(JSON_PATH) if os.path.exists(JSON_PATH) else ""
    for old, new, name in ((committed, text, "abi/symm-abi.json"), (doc, new_doc, "docs/ABI.md")):
        if old != new:
            bad += 1
            print("FAIL %s is stale (committed vs generated from the headers):" % name)
            print(diff(old, new, "committed/" + name, "generated/" + name))
    if bad:
        print("run `python3 abi/gen_abi_json.py --write`, review the diff and commit it")
        return 1
    print("abi/symm-abi.json and the status table of docs/ABI.md match the headers "
          "(%d functions, %d constants, %d structs)" % (len(desc["functions"]),
                                                        len(desc["constants"]),
                                                        len(desc["structs"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
