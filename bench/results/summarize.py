#!/usr/bin/env python3
# summarize.py - turns a uepoll-bench --json file into the Markdown summary
# used in bench/RESULTS.md (one line per case: medians, ratios, target,
# verdict; then the cross-row checks).  Usage: summarize.py FILE.json
import json
import sys


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


def main(path):
    d = json.load(open(path))
    print("`%s`  \n%s, Linux %s, %s; load average %s at start, %s at end; "
          "null syscall %.0f ns CPU; %d reps; %.0f s" % (
              d["command"], d["date"], d["kernel"], d["machine"], d.get("load_start", "?"),
              d.get("load_end", "?"), d.get("syscall_ns", 0), d["reps"], d.get("seconds", 0)))
    print()
    print("| scenario | case | unit | Linux | uepoll | uepoll, mechanism off | uepoll/Linux | CPU ratio | target | verdict |")
    print("|---|---|---|---:|---:|---:|---:|---:|---|---|")
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
        ratio = "%.2fx" % c["ratio"] if c.get("ratio") else "-"
        cpu = "%.2fx" % c["cpu_ratio"] if c.get("cpu_ratio") else "-"
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["scenario"], c["label"], c["unit"], fmt(med("linux")), fmt(med("uepoll")),
            fmt(med("uepoll-off")), ratio, cpu, c["target"], verdict))
    if d["checks"]:
        print()
        print("| check | value | target | verdict |")
        print("|---|---:|---|---|")
        for k in d["checks"]:
            v = "" if k["target"] == "(reference)" else ("PASS" if k["pass"] else "MISS")
            print("| %s %s | %.2f | %s | %s |" % (k["scenario"], k["what"], k["value"], k["target"], v))


if __name__ == "__main__":
    main(sys.argv[1])
