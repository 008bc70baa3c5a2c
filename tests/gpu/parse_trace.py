#!/usr/bin/env python3
"""parse_trace.py TRACE.json STEPS: a --trace file of a run on cuda, as
Perfetto reads it: valid JSON Object Format, host stages on pid 1, and on
the device track exactly STEPS events (one per step of the plan), each
named "op kernel" with a nonempty kernel name and a positive duration."""
import json
import sys

t = json.load(open(sys.argv[1]))
steps = int(sys.argv[2]) if len(sys.argv) > 2 else None
ev = [e for e in t["traceEvents"] if e.get("ph") == "X"]
host = [e for e in ev if e["pid"] == 1]
dev = [e for e in ev if e["pid"] == 2]
fails = []
if not any(e["name"] == "run (cuda)" for e in host):
    fails.append("no run (cuda) span on the host")
if steps is not None and len(dev) != steps:
    fails.append("%d device events, the plan has %d steps" % (len(dev), steps))
for e in dev:
    parts = e["name"].split(" ")
    if len(parts) != 2 or not parts[0] or not parts[1] or e["dur"] <= 0 or e["args"]["kernel"] != parts[1]:
        fails.append("badly named or empty device event %r" % e)
        break
names = sorted({e["name"] for e in dev})
print("trace: %d host events, %d device events (%d distinct names), device total %.3f ms" % (
    len(host), len(dev), len(names), sum(e["dur"] for e in dev) / 1e3))
for f in fails:
    print("FAIL:", f)
print("trace: %s" % ("all checks passed" if not fails else "failed"))
sys.exit(1 if fails else 0)
