#!/usr/bin/env python3
"""lock_order_check.py - src/core/lock_order.h and docs/design.md agree.

Reads (a) the numbered list in lock_order.h's opening comment, (b) its
`inline constexpr LockClass kX{"name", level, nests}` constants and (c) the
"#" and "lock" columns of docs/design.md's section 3 table, and checks:
  * both lists number their locks 1, 2, ... N (integers, in order, none
    skipped), and the table has the same N rows;
  * each constant's name appears in exactly one entry of the list and one
    row of the table, and level // 10 is that entry's and that row's
    number (a leaf mutex adds its place among the leaves, 0-9);
  * the constants are declared in the order of their levels, and every
    entry and row names at least one constant.
Usage: lock_order_check.py [SOURCE_DIR]  (default: this script's ../..).
Exit status 0 when they agree; otherwise 1, one line per disagreement.
"""
import os
import re
import sys


def norm(text):
    """Lower case, no backticks, single spaces: how names are compared."""
    return re.sub(r"\s+", " ", text.replace("`", "")).strip().lower()


def comment_entries(header):
    """[(number text, entry text)] of the numbered list in the opening comment."""
    entries = []
    for line in header.splitlines():
        if not line.startswith("//"):
            break  # the opening comment ends at the first non-comment line
        m = re.match(r"//\s{1,3}(\d+(?:\.\d+)?)\.?\s+(\S.*)$", line)
        if m:
            entries.append([m.group(1), m.group(2)])
        elif entries and re.match(r"//\s{4,}\S", line):
            entries[-1][1] += " " + line[2:].strip()
        elif entries and entries[-1] is not None:
            entries.append(None)  # a blank or unindented line closes the list
    return [tuple(e) for e in entries if e is not None]


def class_constants(header):
    """[(constant, name, level)] in declaration order."""
    pat = re.compile(r'inline\s+constexpr\s+LockClass\s+(k\w+)\s*\{\s*"([^"]*)"\s*,\s*(\d+)\s*,\s*(true|false)\s*\}')
    return [(m.group(1), m.group(2), int(m.group(3))) for m in pat.finditer(header)]


def design_rows(design):
    """[(# text, lock column)] of the table in section 3 (rows numbered or '-')."""
    m = re.search(r"^## 3\. Lock order$(.*?)^## ", design, re.M | re.S)
    if not m:
        return None
    rows = []
    for line in m.group(1).splitlines():
        if not line.startswith("|"):
            if rows:
                break  # the first table of the section only
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or cells[0] in ("#", "") or set(cells[0]) <= set("-: "):
            continue
        if cells[0] != "-":
            rows.append((cells[0], cells[1]))
    return rows


def check_numbering(what, numbers, errors):
    for i, n in enumerate(numbers, 1):
        if not re.fullmatch(r"\d+", n):
            errors.append("%s: entry %d is numbered %s, not an integer" % (what, i, n))
        elif int(n) != i:
            errors.append("%s: entry %d is numbered %s (expected %d: 1, 2, ... in order)" % (what, i, n, i))


def owner(what, name, texts, errors):
    """Index of the one text that names `name`; records an error otherwise."""
    key = norm(name)
    hits = [i for i, t in enumerate(texts) if key in norm(t)]
    if len(hits) > 1:
        # A name in several entries: the one whose heading (text before
        # the first ':' or '(') names it, if only one does.
        heads = [i for i in hits if key in norm(re.split(r"[:(]", texts[i], maxsplit=1)[0])]
        if len(heads) == 1:
            return heads[0]
        errors.append("%s: lock '%s' is named by entries %s; name it in one only" %
                      (what, name, ", ".join(str(i + 1) for i in hits)))
        return None
    if not hits:
        errors.append("%s: no entry names lock '%s'" % (what, name))
        return None
    return hits[0]


def main():
    src = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    order_path = os.path.join(src, "src", "core", "lock_order.h")
    design_path = os.path.join(src, "docs", "design.md")
    with open(order_path, encoding="utf-8") as f:
        header = f.read()
    with open(design_path, encoding="utf-8") as f:
        design = f.read()

    errors = []
    entries = comment_entries(header)
    consts = class_constants(header)
    rows = design_rows(design)
    if not entries:
        errors.append("lock_order.h: no numbered list found in the opening comment")
    if not consts:
        errors.append("lock_order.h: no LockClass constants found")
    if not rows:
        errors.append("design.md: no numbered rows found in section 3's table")
    if errors:
        print("\n".join(errors))
        return 1

    check_numbering("lock_order.h list", [n for n, _ in entries], errors)
    check_numbering("design.md section 3 table", [n for n, _ in rows], errors)
    if len(rows) != len(entries):
        errors.append("design.md's table has %d numbered rows, lock_order.h's list %d entries" %
                      (len(rows), len(entries)))

    used_entries, used_rows = set(), set()
    prev = None
    for const, name, level in consts:
        number, place = divmod(level, 10)
        if prev and level < prev[2]:
            errors.append("lock_order.h: %s ('%s', level %d) is declared after %s (level %d): declare the "
                          "constants in level order" % (const, name, level, prev[0], prev[2]))
        prev = (const, name, level)
        e = owner("lock_order.h list", name, [t for _, t in entries], errors)
        r = owner("design.md section 3 table", name, [t for _, t in rows], errors)
        if e is not None:
            used_entries.add(e)
            if entries[e][0] != str(number):
                errors.append("lock '%s': %s has level %d (number %d), but lock_order.h's list numbers it %s" %
                              (name, const, level, number, entries[e][0]))
        if r is not None:
            used_rows.add(r)
            if rows[r][0] != str(number):
                errors.append("lock '%s': %s has level %d (number %d), but design.md's table numbers it %s" %
                              (name, const, level, number, rows[r][0]))
        if e is not None and r is not None and e != r:
            errors.append("lock '%s': entry %d of lock_order.h's list but row %d of design.md's table" %
                          (name, e + 1, r + 1))
        if place and e is not None and entries[e][0] != str(len(entries)):
            errors.append("lock '%s': %s's level %d is not a multiple of ten; only the leaf mutexes (%d) "
                          "add a place" % (name, const, level, len(entries)))
    for i, (n, text) in enumerate(entries):
        if i not in used_entries:
            errors.append("lock_order.h list: entry %s (%s) names no LockClass constant" % (n, text[:40]))
    for i, (n, text) in enumerate(rows):
        if i not in used_rows:
            errors.append("design.md section 3 table: row %s (%s) names no LockClass constant" % (n, text[:40]))

    if errors:
        print("\n".join(errors))
        return 1
    print("lock order: %d locks, %d classes; lock_order.h's list, its constants and design.md's table agree" %
          (len(entries), len(consts)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
