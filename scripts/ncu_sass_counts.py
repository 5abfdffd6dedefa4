#!/usr/bin/env python3
"""Executed instructions of one kernel by opcode, from ncu's source page (ncu -i REP --page source
--csv --print-source sass > FILE.csv): warp instructions executed, shared-memory wavefronts (and
their ideal count, which differs where there are bank conflicts) and stall samples per opcode, then
the instructions grouped by how often each executed (which loop level they belong to).
docs/design/gpu-engine.md ("Roofline") takes its counts from this.
Usage: ncu_sass_counts.py FILE.csv [TOP]"""
import collections
import csv
import sys

path = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
rows = list(csv.reader(open(path)))
hdr = rows[1]
body = []
for r in rows[2:]:
    if r and r[0] == "Kernel Name":  # a second copy of the page: the first is enough
        break
    body.append(r)
col = {h: i for i, h in enumerate(hdr)}
iex, isrc = col["Instructions Executed"], col["Source"]
iwf, iwfi = col["L1 Wavefronts Shared"], col["L1 Wavefronts Shared Ideal"]
isamp = col["Warp Stall Sampling (All Samples)"]
num = lambda r, i: float(r[i] or 0) if i < len(r) else 0.0
ops, wf, wfi, samp = (collections.Counter() for _ in range(4))
levels, nlev = collections.Counter(), collections.Counter()
total = 0.0
for r in body:
    src = r[isrc].strip()
    words = src.split()
    if not words:
        continue
    op = words[1] if words[0].startswith("@") and len(words) > 1 else words[0]
    key = op if op.split(".")[0] in ("LDS", "STS", "LDG", "SHFL", "MUFU", "REDG") else op.split(".")[0]
    ex = num(r, iex)
    total += ex
    ops[key] += ex
    wf[key] += num(r, iwf)
    wfi[key] += num(r, iwfi)
    samp[key] += num(r, isamp)
    levels[int(ex)] += ex
    nlev[int(ex)] += 1
print("warp instructions executed: %.0f; shared wavefronts %.0f (ideal %.0f)"
      % (total, sum(wf.values()), sum(wfi.values())))
for k, v in ops.most_common(top):
    print("  %-20s %12.0f %5.1f %%  wavefronts %10.0f (ideal %10.0f)  stall samples %6.0f"
          % (k, v, 100 * v / max(total, 1), wf[k], wfi[k], samp[k]))
print("by execution count (instructions executed that many times):")
for e, v in sorted(levels.items(), key=lambda kv: -kv[1])[:top]:
    print("  %10d x %4d instructions = %12.0f (%4.1f %%)" % (e, nlev[e], v, 100 * v / max(total, 1)))
