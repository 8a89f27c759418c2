#!/usr/bin/env python3
"""Check that code cites docs/DECISIONS.md and docs/GPU-RESULTS.md by headings they have.

A citation is `docs/DECISIONS.md "<heading>"` or `docs/GPU-RESULTS.md "<heading>"` in a comment
of a file under runtime/, include/, tests/ or scripts/ (several headings: `"A", "B"` or
`"A" and "B"`), or a link to one of their anchors (`GPU-RESULTS.md#<anchor>`). The quoted text
may run over a comment's line breaks. It must equal the text of a heading of that file
(`##`, `###` or `####`, without the hashes); an anchor must be one of GitHub's anchors of its
headings. A citation with no heading ("docs/DECISIONS.md says why") is listed, not counted stale.

    python3 scripts/check-citations.py [-v]    (from the repository root)

Exit status: 0 when no citation is stale, 1 otherwise.
"""
import os
import re
import sys

DOCS = {"DECISIONS": "docs/DECISIONS.md", "GPU-RESULTS": "docs/GPU-RESULTS.md"}
TREES = ("runtime", "include", "tests", "scripts")
EXTS = (".c", ".h", ".cu", ".cuh", ".cc", ".py", ".sh", ".build", ".rs", ".go", ".zig")

# A comment's line break and its continuation marks: "\n * ", "\n // ", "\n # ".
BREAK = re.compile(r"\s*\n[ \t]*(?:\*(?!/)|//|#)?[ \t]*")
CITE = re.compile(r"(?:docs/)?(DECISIONS|GPU-RESULTS)\.md")
QUOTED = re.compile(r'\s*,?\s*"([^"\n]+)"')
MORE = re.compile(r'\s*(?:,|and|,\s*and)\s*"([^"\n]+)"')
ANCHOR = re.compile(r"#([A-Za-z0-9_-]+)")


def slug(text):
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    s = text.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s, flags=re.UNICODE)
    return s.replace(" ", "-")


def headings(path):
    names, anchors = set(), set()
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = re.match(r"(#{1,6})\s+(.*?)\s*$", line)
            if m and not line.startswith("#!"):
                names.add(m.group(2))
                anchors.add(slug(m.group(2)))
    return names, anchors


def sources(root):
    for tree in TREES:
        for d, dirs, files in os.walk(os.path.join(root, tree)):
            dirs[:] = sorted(x for x in dirs if not x.startswith(".") and x != "__pycache__")
            for name in sorted(files):
                if name.endswith(EXTS) or name == "meson.build":
                    yield os.path.join(d, name)


def citations(text):
    """(offset, doc, [headings], anchor or None) for every citation in text."""
    for m in CITE.finditer(text):
        doc, end = m.group(1), m.end()
        tail = text[end:end + 600]
        if tail.startswith("#"):
            a = ANCHOR.match(tail)
            yield m.start(), doc, [], a.group(1) if a else ""
            continue
        flat = BREAK.sub(" ", tail)
        q = QUOTED.match(flat)
        names = []
        while q:
            names.append(re.sub(r"\s+", " ", q.group(1)).strip())
            flat = flat[q.end():]
            q = MORE.match(flat)
        yield m.start(), doc, names, None


def main():
    verbose = "-v" in sys.argv[1:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    known = {d: headings(os.path.join(root, p)) for d, p in DOCS.items()}
    n_ok = n_bare = 0
    stale = []
    for path in sources(root):
        if os.path.samefile(path, os.path.abspath(__file__)):
            continue  # this file's own examples
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except UnicodeDecodeError:
            continue
        rel = os.path.relpath(path, root)
        for off, doc, names, anchor in citations(text):
            where = "%s:%d" % (rel, text.count("\n", 0, off) + 1)
            names_ok, anchors_ok = known[doc]
            if anchor is not None:
                if anchor in anchors_ok:
                    n_ok += 1
                    if verbose:
                        print("ok     %s: %s#%s" % (where, DOCS[doc], anchor))
                else:
                    stale.append("%s: %s#%s: no such anchor" % (where, DOCS[doc], anchor))
                continue
            if not names:
                n_bare += 1
                if verbose:
                    print("bare   %s: %s (no heading named)" % (where, DOCS[doc]))
                continue
            for name in names:
                if name in names_ok:
                    n_ok += 1
                    if verbose:
                        print('ok     %s: %s "%s"' % (where, DOCS[doc], name))
                else:
                    stale.append('%s: %s "%s": no such heading' % (where, DOCS[doc], name))
    for s in stale:
        print("STALE  " + s)
    print("%d citations of a heading, %d stale; %d without a heading" %
          (n_ok + len(stale), len(stale), n_bare))
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
