#!/usr/bin/env python3
# summarize.py - turns a uepoll-bench --json file into the Markdown tables
# of README.md and bench/RESULTS.md: the run's header line (command, machine,
# load, null-syscall cost and the floors measured in the same run), one line
# per case (medians, uepoll/Linux, CPU ratio, uepoll/limit, target, verdict)
# and the cross-row checks.
#
#   summarize.py FILE.json            print the tables
#   summarize.py --compare A.json B.json
#                                     the verdicts of A's targets on both runs,
#                                     side by side (two machines with different
#                                     system-call costs): a floor target is
#                                     judged on B from B's own floors and CPU
#                                     times; the ratios, measured and projected
#                                     to 0.1 us and 1 us system calls
#   summarize.py --write FILE.json    rewrite, in README.md and bench/RESULTS.md,
#                                     only the text between the markers
#                                     <!-- bench-table:begin --> and
#                                     <!-- bench-table:end --> (one command
#                                     regenerates every figure; nothing is
#                                     edited by hand)
import json
import os
import re
import subprocess
import sys

BEGIN = "<!-- bench-table:begin -->"
END = "<!-- bench-table:end -->"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e9:
        return "%.2fG" % (v / 1e9)
    if a >= 1e6:
        return "%.2fM" % (v / 1e6)
    if a >= 1e4:
        return "%.1fk" % (v / 1e3)
    if a >= 100:
        return "%.0f" % v
    return "%.1f" % v


def header(d, commit):
    lines = ["`%s`  " % d["command"]]
    lines.append("%s, Linux %s, %s; %sload average %s at start, %s at end; %d reps; %.0f s  " % (
        d["date"], d["kernel"], d["machine"], ("tables written at commit %s; " % commit) if commit else "",
        d.get("load_start", "?"), d.get("load_end", "?"), d["reps"], d.get("seconds", 0)))
    lim = d.get("limits")
    if lim:
        lines.append("**null system call %.0f ns CPU** (every Linux epoll call pays it, no uepoll call does); "
                     "floors measured in the same run: hash insert+erase %.1f ns (ctl pair), ready flag + 12-byte "
                     "copy %.2f ns (zero-timeout wait), futex round trip %.0f ns (blocking handoff), %d CPUs" % (
                         lim["syscall_ns"], lim["hash_pair_ns"], lim["wait_ns"], lim["futex_rt_ns"], lim["cpus"]))
    else:
        lines.append("**null system call %.0f ns CPU**" % d.get("syscall_ns", 0))
    return lines


def case_rows(d):
    out = ["| scenario | case | unit | Linux | uepoll | uepoll, mechanism off | uepoll/Linux | CPU ratio "
           "| uepoll/limit | target | verdict |",
           "|---|---|---|---:|---:|---:|---:|---:|---:|---|---|"]
    for c in d["cases"]:
        b = c["backends"]

        def med(name):
            v = b.get(name)
            return v["median"] if v and v.get("ran") else None

        extra = b.get("uepoll", {}).get("extra", {}) if b.get("uepoll", {}).get("ran") else {}
        notes = []
        for k in ("uep_allocs/pair", "mallocs/pair", "lost"):
            if k in extra:
                notes.append("%s %g" % (k, round(extra[k], 4)))
        verdict = c["verdict"] or ""
        if notes:
            verdict += " (" + ", ".join(notes) + ")"
        label = c["label"]
        lnote = b.get("linux", {}).get("note", "")
        m = re.search(r"(?:to|at) ([0-9,]+) \(RLIMIT_NOFILE\)", lnote)
        if m:  # Linux ran a smaller N: say so in the row
            label += " (Linux N=%s: RLIMIT_NOFILE)" % m.group(1)
        ratio = "%.2fx" % c["ratio"] if c.get("ratio") else "-"
        cpu = "%.2fx" % c["cpu_ratio"] if c.get("cpu_ratio") else "-"
        lim = "%.3f" % c["limit_ratio"] if c.get("limit_ratio") else "-"
        target = c["target"]
        if c.get("floor_multiple"):
            target += " (here %.0fx)" % c["floor_multiple"]
        out.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["scenario"], label, c["unit"], fmt(med("linux")), fmt(med("uepoll")),
            fmt(med("uepoll-off")), ratio, cpu, lim, target, verdict))
    if d["checks"]:
        out += ["", "| check | value | target | verdict |", "|---|---:|---|---|"]
        for k in d["checks"]:
            v = "" if k["target"] == "(reference)" else ("PASS" if k["pass"] else "MISS")
            out.append("| %s %s | %.2f | %s | %s |" % (k["scenario"], k["what"], k["value"], k["target"], v))
    return out


def tables(d, commit=None):
    return "\n".join(header(d, commit) + [""] + case_rows(d)) + "\n"


def head_commit():
    try:
        return subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def rewrite(path, text):
    s = open(path).read()
    # The markers count only on lines of their own (prose may quote them).
    pat = re.compile(r"^" + re.escape(BEGIN) + r"\n.*?^" + re.escape(END) + r"$", re.S | re.M)
    if not pat.search(s):
        sys.exit("summarize.py: %s has no %s ... %s region" % (path, BEGIN, END))
    s = pat.sub(lambda _: BEGIN + "\n" + text + END, s, count=1)
    open(path, "w").write(s)
    print("rewrote the table region of %s" % os.path.relpath(path, ROOT))


def floor_of(d, c):
    lim = d.get("limits", {})
    return lim.get("wait_ns") if c.get("floor") == "wait" else lim.get("hash_pair_ns")


def cpu_of(c, name):
    v = c["backends"].get(name, {})
    if not v.get("ran"):
        return None
    for k in ("cpu_ns/op", "cpu_ns/event", "cpu_ns/cmd"):
        if v.get("extra", {}).get(k):
            return v["extra"][k]
    return None


def judged(d, c, target_case):
    """(value shown, verdict) of target_case's target on run d's case c."""
    if target_case.get("floor_k"):
        u, f = cpu_of(c, "uepoll"), floor_of(d, target_case)
        if not u or not f:
            return "-", ""
        m = u / f
        ok = m <= target_case["floor_k"]
        extra = c["backends"].get("uepoll", {}).get("extra", {})
        for k in ("uep_allocs/pair", "mallocs/pair"):
            if k in extra and extra[k] >= 0.001:
                ok = False
        return "%.0fx floor" % m, "PASS" if ok else "MISS"
    if target_case.get("by_cpu"):
        if not c.get("cpu_ratio"):
            return "-", ""
        return "CPU %.2fx" % c["cpu_ratio"], "PASS" if c["cpu_ratio"] >= 0.9 else "MISS"
    r = "%.2fx" % c["ratio"] if c.get("ratio") else "-"
    return r, c.get("verdict") or ""


def projected(d, c, target_case, s):
    n = target_case.get("linux_syscalls") or 0
    lc, uc, sc = cpu_of(c, "linux"), cpu_of(c, "uepoll"), d.get("limits", {}).get("syscall_ns")
    if not n or not lc or not uc or not sc:
        return "-"
    there = lc + n * (s - sc)
    return "%.1fx" % (there / uc) if there > 0 else "-"


def compare(a, b):
    sa, sb = a["limits"]["syscall_ns"], b["limits"]["syscall_ns"]
    out = ["A: `%s`, %s, %s, null system call **%.0f ns**  " % (a["command"], a["date"], a["machine"], sa),
           "B: `%s`, %s, %s, null system call **%.0f ns**" % (b["command"], b["date"], b["machine"], sb),
           "",
           "| row | target (A's) | A | A verdict | B | B verdict | uepoll/Linux CPU: A | B "
           "| A projected to 0.1 us / 1 us | B projected to 0.1 us / 1 us |",
           "|---|---|---:|---|---:|---|---:|---:|---:|---:|"]
    index = {(c["scenario"], c["label"]): c for c in b["cases"]}
    for c in a["cases"]:
        if not c.get("target") or c["target"].startswith("("):
            continue
        cb = index.get((c["scenario"], c["label"]))
        if cb is None:  # a scenario of one row whose size differs (memory N)
            same = [x for x in b["cases"] if x["scenario"] == c["scenario"]]
            mine = [x for x in a["cases"] if x["scenario"] == c["scenario"]]
            cb = same[0] if len(same) == 1 and len(mine) == 1 else None
        va, ja = judged(a, c, c)
        vb, jb = judged(b, cb, c) if cb else ("-", "")
        cra = "%.1fx" % c["cpu_ratio"] if c.get("cpu_ratio") else "-"
        crb = "%.1fx" % cb["cpu_ratio"] if cb and cb.get("cpu_ratio") else "-"
        pa = "%s / %s" % (projected(a, c, c, 100), projected(a, c, c, 1000))
        pb = "%s / %s" % (projected(b, cb, c, 100), projected(b, cb, c, 1000)) if cb else "-"
        out.append("| %s %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["scenario"], c["label"], c["target"], va, ja, vb, jb, cra, crb, pa, pb))
    return "\n".join(out) + "\n"


def main(argv):
    if argv and argv[0] == "--compare":
        if len(argv) != 3:
            sys.exit("usage: summarize.py --compare A.json B.json")
        sys.stdout.write(compare(json.load(open(argv[1])), json.load(open(argv[2]))))
        return
    write = "--write" in argv
    args = [a for a in argv if a != "--write"]
    if len(args) != 1:
        sys.exit("usage: summarize.py [--write] FILE.json")
    d = json.load(open(args[0]))
    text = tables(d, head_commit() if write else None)
    if not write:
        sys.stdout.write(text)
        return
    for f in ("README.md", os.path.join("bench", "RESULTS.md")):
        rewrite(os.path.join(ROOT, f), text)
    lim = d.get("limits", {})
    print("null system call on the measuring machine: %.0f ns CPU" % lim.get("syscall_ns", d.get("syscall_ns", 0)))


if __name__ == "__main__":
    main(sys.argv[1:])
