#!/usr/bin/env python3
"""The short table of scripts/h200.sh: every exchange run of the result files in a directory,
with the signalling floor model and the speed-ups of nvshmem over the CPU-driven baselines."""
import glob, json, os, sys
rows = []
for f in sorted(glob.glob(os.path.join(sys.argv[1], "exchange_*.json"))):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f"{f}: unreadable ({e})"); continue
    for r in d.get("runs", []):
        rows.append((os.path.basename(f)[:-5], r))
if rows:
    print(f"\n{'file':34} {'backend':16} {'dd':7} {'at/dom':>7} {'P':>2} {'L':>2} "
          f"{'dev us':>8} {'wall us':>8} {'floor':>6} {'us/lvl':>6}")
    for name, r in rows:
        dd = "x".join(str(v) for v in r["dd"])
        fl = r.get("floor_us"); pl = r.get("us_per_level")
        print(f"{name[:34]:34} {r['backend']:16} {dd:7} {r['atoms_per_domain']:7d} "
              f"{r['pulses']:2d} {r['dependency_levels']:2d} {r['exchange_us']:8.1f} "
              f"{r['us_per_step']:8.1f} {fl if fl is None else round(fl,1)!s:>6} "
              f"{pl if pl is None else round(pl,1)!s:>6}")
    print("\nspeed-up of nvshmem (device median) over the baselines:")
    key = lambda r: (tuple(r["dd"]), r["atoms_per_domain"])
    by = {}
    for name, r in rows:
        by.setdefault((name,) + key(r), {})[r["backend"]] = r["exchange_us"]
    for k, v in by.items():
        if "nvshmem" in v and v["nvshmem"] > 0:
            parts = [f"{b} {v[b] / v['nvshmem']:.1f}x" for b in ("gpu-mpi", "gpu-direct") if b in v]
            print(f"  {k[0][:34]:34} {'x'.join(map(str, k[1])):7} {k[2]:7d}: " + ", ".join(parts)
                  + "   (targets: gpu-mpi >= 10x, gpu-direct >= 3x)")
