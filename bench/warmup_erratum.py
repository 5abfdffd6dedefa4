#!/usr/bin/env python3
"""`halox bench md` figures measured before the warm-up count fix, and what they become.

    python3 bench/warmup_erratum.py FILE.json [FILE.json ...]   # a table: as recorded, corrected
    python3 bench/warmup_erratum.py --markdown FILE.json ...    # the same as a Markdown table

Until commit 956fb72 (on main with the merge of the device search step, 2026-12-05),
hx_md_run zeroed its times when it started but kept the step and search counts from the
engine's creation. `halox bench md` runs its warm-up and its timed steps as two hx_md_run
calls of one engine and divides the timed run's time by those counts, so every time per step
and per search step it wrote was low by the factor (warmup + steps) / steps, and every ns/day
high by the same factor: 1.10 for the usual --warmup 300 --steps 3000 (and 200/2000), 1.05
for 200/4000. The phase metrics (local, non-local, non-overlap) divide by a sample count that
was reset, and are right. Nothing else is affected: `halox md`'s log (one hx_md_run),
`gpu_md_bench` (before 2026-12-04 evening its own loop; since then differences of the engine's
counts around the timed run), `halox bench exchange`, and every GROMACS figure.

The correction is exact for the time per step with every step counted (its numerator is the
timed run's whole time, its denominator the steps of both runs plus one); for the times that
leave out search steps or count only them it assumes both runs searched at the same rate, which
holds to a search per run (0.1 %). Checked against an independent measurement of the same
engine in the same device call (bench/results/h200-2026-12-04g-roofab: gpu_md_bench's own
step loop 97.3 / 299.9 / 582.8 us per step at 45k / 180k / 360k atoms, `halox bench md`
87.8 / 275.8 / 536.1 as recorded, 96.6 / 303.4 / 589.7 corrected).

A file is affected when it is `halox bench md` output (runs with `warmup_steps` > 0 and an
`engine`) whose git revision does not contain the fix; inside a git clone that is checked with
`git merge-base --is-ancestor`, elsewhere by the date (before 2026-12-05). The committed JSON
files stay as they were measured; the README and docs/design quote the corrected figures.
"""
import argparse
import json
import os
import subprocess
import sys

FIX_COMMIT = "956fb72faf58202510013edff0b1cdefd53dd644"
FIX_DATE = "2026-12-05"


def affected(meta, repo):
    rev = meta.get("git_revision") or ""
    if repo and len(rev) >= 7:
        r = subprocess.run(["git", "-C", repo, "merge-base", "--is-ancestor", FIX_COMMIT, rev],
                           capture_output=True)
        if r.returncode in (0, 1):
            return r.returncode == 1
    return (meta.get("date") or "") < FIX_DATE


def rows(path, repo):
    with open(path) as f:
        d = json.load(f)
    meta = d.get("meta", {})
    hit = affected(meta, repo)
    for r in d.get("runs", []):
        if not isinstance(r, dict) or "engine" not in r or "us_per_step" not in r:
            continue
        w, s = r.get("warmup_steps") or 0, r.get("steps") or 0
        k = (w + s) / s if (hit and s > 0) else 1.0
        dd = "x".join(str(x) for x in r.get("dd", [1, 1, 1]))
        yield {
            "file": os.path.relpath(path),
            "atoms": r.get("atoms"),
            "dd": dd,
            "backend": r.get("backend"),
            "factor": k,
            "all": (r.get("ns_per_day_with_search"), r.get("ns_per_day_with_search", 0) / k),
            "plain": (r.get("ns_per_day"), r.get("ns_per_day", 0) / k),
            "us": (r.get("us_per_step"), r.get("us_per_step", 0) * k),
            "search": (r.get("search_step_us"), (r.get("search_step_us") or 0) * k),
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    repo = os.path.dirname(here)
    if subprocess.run(["git", "-C", repo, "rev-parse", "--git-dir"],
                      capture_output=True).returncode != 0:
        repo = None
    out = []
    for f in a.files:
        try:
            out.extend(rows(f, repo))
        except (OSError, ValueError) as e:
            print(f"warmup_erratum: {f}: {e}", file=sys.stderr)
            return 1
    hdr = ["file", "atoms", "dd", "backend", "factor", "ns/day every step", "ns/day w/o search",
           "us/step w/o search", "search step us"]
    fmt = lambda p, nd: f"{p[0]:.{nd}f} -> {p[1]:.{nd}f}" if p[0] is not None else "-"
    lines = [[r["file"], str(r["atoms"]), r["dd"], r["backend"], f"{r['factor']:.3f}",
              fmt(r["all"], 0), fmt(r["plain"], 0), fmt(r["us"], 1), fmt(r["search"], 0)]
             for r in out]
    if a.markdown:
        print("| " + " | ".join(hdr) + " |")
        print("|" + " --- |" * len(hdr))
        for l in lines:
            print("| " + " | ".join(l) + " |")
    else:
        wid = [max(len(x) for x in col) for col in zip(hdr, *lines)]
        for l in [hdr] + lines:
            print("  ".join(x.ljust(n) for x, n in zip(l, wid)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
