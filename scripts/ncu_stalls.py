#!/usr/bin/env python3
"""Where a kernel's warps stall, from ncu's source page (ncu -i REP --page source --csv
--print-source sass > FILE.csv): the stall reasons over the whole kernel, then the SASS lines
with the most samples and their two main reasons.  Usage: ncu_stalls.py FILE.csv [LINES]"""
import csv, sys, collections
f = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 25
rows = list(csv.reader(open(f)))
hdr = rows[1]; rows = rows[2:]
# some ncu versions print the page twice (a second "Kernel Name" header): keep the first
for k, r in enumerate(rows):
    if r and r[0] == "Kernel Name":
        rows = rows[:k]
        break
ia, isrc, isamp = hdr.index("Address"), hdr.index("Source"), hdr.index("Warp Stall Sampling (All Samples)")
stalls = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
tot = collections.Counter(); total = 0
recs = []
for r in rows:
    if len(r) <= isamp: continue
    try: s = float(r[isamp] or 0)
    except ValueError: continue
    total += s
    br = {hdr[i][6:]: float(r[i] or 0) for i in stalls}
    for k, v in br.items(): tot[k] += v
    recs.append((s, r[ia], r[isrc], br))
print("total samples", total)
if total == 0:
    sys.exit(0)
print("by reason:", ", ".join("%s %.0f%%" % (k, 100 * v / total) for k, v in tot.most_common(8)))
recs.sort(key=lambda x: -x[0])
for s, a, src, br in recs[:n]:
    top = sorted(br.items(), key=lambda kv: -kv[1])[:2]
    print("%5.1f%% %s %-60s %s" % (100 * s / total, a, src[:60], " ".join("%s:%d" % kv for kv in top)))
