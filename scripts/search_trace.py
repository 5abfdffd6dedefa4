#!/usr/bin/env python3
"""Line up the per-process timelines of the decomposed search step and say where its time goes.

    HALOX_SEARCH_TRACE=/tmp/st mpirun -np 4 halox md --gpu --dd 4x1x1 ...
    scripts/search_trace.py /tmp/st [--json OUT.json] [--plot OUT.png] [--skip N]

The engine writes PREFIX.rank<R>.txt per process at its end (src/gpu/trace.h): for every search
step on the device, host points of the step (CLOCK_MONOTONIC ns, one clock for the processes of
a host) and device points (%globaltimer ns, one clock for the processes on a GPU: a one-thread
kernel after each kernel or message of the device decomposition and after each stage of the
pair search), and a few calibrations of one clock against the other (a device stamp between two
host readings). The narrowest calibration of each process maps its device points to the host's
clock; its half-width is the alignment's uncertainty, printed.

Search steps with a calibration in them (the first few: the calibration waits for the device)
and the first --skip N (default 2) are left out. For the others, times are taken from the
search step's start (the earliest "begin" of any process), and the medians over search steps
are printed:
  length        the last process's "end" (the whole search step as the slowest process sees it)
  host points   per process, when it reached each point of src/mdrun/schedule.c and the device
                decomposition's host side (dd.launched, dd.waited, dd.reduced)
  host spans    per process, the time from each host point to the next: a span that ends in a
                wait (dd.waited: the device step; dd.reduced, agree_*, pair_search: the other
                processes or the device) is where this process waited
  device points per process, when each kernel or message ended on the device (a stage name:
                when that stage ended; dd.migration, dd.local_set, dd.plan: when the part began)
  by kind       per process, its host spans summed by what they are (SPAN_KIND): its own host
                work (runtime calls, bookkeeping), waits for its device, MPI (the plan's
                messages and the collectives, with the waits for the slowest process); and how
                often each process was the last to end
Exit status 1 with the file and line for a trace that cannot be read.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_files import rank_files  # noqa: E402


def fail(msg):
    print(f"search_trace.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def read_rank(path):
    """{rank, nranks, calib: [(h0, g, h1)], searches: {n: {step, cal, host: [(label, ns)],
    dev: [(key, ns)]}}}"""
    r = {"calib": [], "searches": {}}
    cur = None
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            w = line.split()
            if not w or w[0].startswith("#"):
                continue
            try:
                if w[0] == "rank":
                    r["rank"], r["nranks"] = int(w[1]), int(w[3])
                elif w[0] == "s":
                    cur = {"step": int(w[2]), "cal": False, "host": [], "dev": []}
                    r["searches"][int(w[1])] = cur
                elif w[0] == "c":
                    if len(w) != 4:
                        fail(f"{path}:{ln}: a calibration has 3 numbers, not {len(w) - 1}")
                    r["calib"].append((int(w[1]), int(w[2]), int(w[3])))
                    if cur is not None:
                        cur["cal"] = True
                elif w[0] == "h":
                    if cur is None or len(w) != 3:
                        fail(f"{path}:{ln}: a host point outside a search step or not "
                             f"'h LABEL NS'")
                    cur["host"].append((w[1], int(w[2])))
                elif w[0] == "d":
                    if cur is None or len(w) != 6:
                        fail(f"{path}:{ln}: a device point outside a search step or not "
                             f"'d WHO SUB IDX LABEL NS'")
                    cur["dev"].append(((int(w[1]), int(w[2]), int(w[3]), w[4]), int(w[5])))
                elif w[0] == "a":
                    # the CPU emulation's count of CUDA runtime calls at the host point before
                    if cur is None or len(w) != 6:
                        fail(f"{path}:{ln}: runtime calls outside a search step or not "
                             f"'a LABEL N N N N'")
                    cur.setdefault("calls", []).append((w[1], [int(x) for x in w[2:]]))
                elif w[0] == "dropped":
                    r["dropped"] = int(w[1])
                else:
                    fail(f"{path}:{ln}: unknown line '{line.strip()[:60]}'")
            except (ValueError, IndexError):
                fail(f"{path}:{ln}: cannot read '{line.strip()[:60]}'")
    if "rank" not in r:
        fail(f"{path}: no 'rank R nranks N' line")
    return r


def offset_of(r, path):
    """(device - host offset in ns, half-width in ns) from the narrowest calibration."""
    if not r["calib"]:
        fail(f"{path}: no calibration of the device clock (the run made no search step on the "
             f"device?)")
    h0, g, h1 = min(r["calib"], key=lambda c: c[2] - c[0])
    return g - (h0 + h1) // 2, (h1 - h0) / 2


def dev_label(key):
    who, sub, idx, label = key
    if not label.startswith("nb."):
        return label
    return f"{label}[{ {0: 'all', 1: 'home', 2: 'rest'}.get(sub, sub)}]"


# What each host span of src/mdrun/schedule.c is, by the point it ends at: the process's own
# work (its CUDA runtime calls and bookkeeping), a wait for its device, or MPI (messages and
# collectives, which include the wait for the slowest process).
SPAN_KIND = {
    "dd.launched": "host", "dd.waited": "device", "dd.reduced": "mpi", "dd_search": "host",
    "counts": "host", "set_home": "host", "plan": "mpi", "agree_plan": "mpi",
    "halo_refresh": "host", "set_local": "host", "agree_set_local": "mpi", "x_halo": "host",
    "pair_search": "device", "end": "mpi",
}
KIND_NAME = {"host": "own host work", "device": "waits for its device", "mpi": "MPI and the others"}


def median_us(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs) / 1e3, 2) if xs else None


def analyse(ranks, skip):
    common = None
    for r in ranks:
        ok = {n for n, s in r["searches"].items()
              if not s["cal"] and any(h[0] == "end" for h in s["host"])}
        common = ok if common is None else common & ok
    ns = sorted(common or [])[skip:]
    if not ns:
        fail("no search step traced on every process after the calibrations "
             f"(--skip {skip}): run more search steps")
    res = {"searches": len(ns), "ranks": len(ranks), "calibration_half_width_us":
           [round(r["half"] / 1e3, 3) for r in ranks]}
    length, host, dev, spans, kinds, slowest = [], {}, {}, {}, {}, []
    host_order, dev_order = [], []
    per_search = {}
    for n in ns:
        t0 = min(dict(r["searches"][n]["host"])["begin"] for r in ranks)
        end = max(dict(r["searches"][n]["host"])["end"] for r in ranks)
        length.append(end - t0)
        per_search[n] = end - t0
        for k, r in enumerate(ranks):
            s = r["searches"][n]
            prev = None
            tot = {kind: 0 for kind in KIND_NAME}
            for lab, t in s["host"]:
                if lab not in host_order:
                    host_order.append(lab)
                host.setdefault(lab, [[] for _ in ranks])[k].append(t - t0)
                if prev is not None:
                    sp = f"{prev[0]} -> {lab}"
                    spans.setdefault(sp, [[] for _ in ranks])[k].append(t - prev[1])
                    tot[SPAN_KIND.get(lab, "host")] += t - prev[1]
                prev = (lab, t)
            for kind, v in tot.items():
                kinds.setdefault(kind, [[] for _ in ranks])[k].append(v)
            last = max(range(len(ranks)),
                       key=lambda q: dict(ranks[q]["searches"][n]["host"])["end"])
            if k == 0:
                slowest.append(last)
            seen = {}
            for key, g in sorted(s["dev"], key=lambda e: e[1]):
                lab = dev_label(key)
                # a label that repeats in one search (a kernel per pulse or domain, the
                # messages): numbered in the order of its stamps
                seen[lab] = seen.get(lab, 0) + 1
                if seen[lab] > 1:
                    lab = f"{lab}#{seen[lab]}"
                if lab not in dev_order:
                    dev_order.append(lab)
                dev.setdefault(lab, [[] for _ in ranks])[k].append(g - r["offset"] - t0)
    # the emulation's CUDA runtime calls per host span (medians over search steps)
    calls = {}
    for n in ns:
        for k, r in enumerate(ranks):
            c = r["searches"][n].get("calls", [])
            for (a, ca), (b, cb) in zip(c, c[1:]):
                d = [y - x for x, y in zip(ca, cb)]
                calls.setdefault(f"{a} -> {b}", [[] for _ in ranks])[k].append(d)
    if calls:
        res["emulated_runtime_calls"] = {
            sp: [[statistics.median(col) for col in zip(*v)] if v else None for v in vals]
            for sp, vals in calls.items()}
    res["length_us"] = median_us(length)
    res["length_us_min_max"] = [round(min(length) / 1e3, 2), round(max(length) / 1e3, 2)]
    res["host_points_us"] = {lab: [median_us(v) for v in host[lab]] for lab in host_order}
    res["host_spans_us"] = {sp: [median_us(v) for v in vals] for sp, vals in spans.items()}
    # from each process's begin to its end, by what the spans are (medians per process)
    res["by_kind_us"] = {KIND_NAME[kd]: [median_us(v) for v in kinds[kd]] for kd in KIND_NAME
                         if kd in kinds}
    res["last_to_end"] = [slowest.count(k) for k in range(len(ranks))]
    res["device_points_us"] = {lab: [median_us(v) for v in dev[lab]] for lab in dev_order}
    # the median search step itself, for the plot
    mid = sorted(ns, key=lambda n: per_search[n])[len(ns) // 2]
    res["median_search"] = mid
    return res


def table(title, rows, nranks):
    print(title)
    print("  " + f"{'':<34}" + "".join(f"{'rank ' + str(k):>10}" for k in range(nranks)))
    for lab, vals in rows.items():
        cells = "".join(f"{'-' if v is None else format(v, '.1f'):>10}" for v in vals)
        print(f"  {lab:<34}{cells}")


def plot(ranks, n, out):
    """One search step (the median one): per process a host row (its spans) and a device row
    (each point's interval from the point before on that process)."""
    import tempfile
    from plot import PlotError, gp_quote, run_gnuplot, terminal_for
    t0 = min(dict(r["searches"][n]["host"])["begin"] for r in ranks)
    with tempfile.TemporaryDirectory() as tmp:
        fh, fd, fn = (os.path.join(tmp, x) for x in ("h.dat", "d.dat", "n.dat"))
        with open(fh, "w") as H, open(fd, "w") as D, open(fn, "w") as N:
            for k, r in enumerate(ranks):
                pts = r["searches"][n]["host"]
                for j in range(1, len(pts)):
                    a, b = (pts[j - 1][1] - t0) / 1e3, (pts[j][1] - t0) / 1e3
                    H.write(f"{a} {b} {2 * k + 0.5} {j % 2}\n")
                dv = sorted(r["searches"][n]["dev"], key=lambda e: e[1])
                for j in range(1, len(dv)):
                    a = (dv[j - 1][1] - r["offset"] - t0) / 1e3
                    b = (dv[j][1] - r["offset"] - t0) / 1e3
                    (N if dv[j][0][3].startswith("nb.") else D).write(f"{a} {b} {2 * k}\n")
        nr = len(ranks)
        h = 200 + 60 * nr
        script = f"""set terminal {terminal_for(out).format(h=h)}
set title "search step {n}: {nr} processes (host rows above device rows)" noenhanced
set xlabel "time from the search step's start (us)"
set ytics ({", ".join(f'"{k} dev" {2 * k}, "{k} host" {2 * k + 0.5}' for k in range(nr))})
set yrange [-0.5:{2 * nr - 0.7}]
set grid xtics
set key outside bottom center horizontal
plot {gp_quote(fh)} using (($1+$2)/2):3:(($2-$1)/2):(0.18):($4 > 0 ? 0x888888 : 0xbbbbbb) \
       with boxxyerror fs solid 0.8 lc rgb variable title 'host spans', \
     {gp_quote(fd)} using (($1+$2)/2):3:(($2-$1)/2):(0.18) with boxxyerror \
       fs solid 0.5 border lc rgb 'black' lc rgb '#4477aa' title 'device decomposition', \
     {gp_quote(fn)} using (($1+$2)/2):3:(($2-$1)/2):(0.18) with boxxyerror \
       fs solid 0.5 border lc rgb 'black' lc rgb '#cc6677' title 'pair search'
"""
        try:
            run_gnuplot(script, out, tmp)
        except PlotError as e:
            fail(str(e))


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("prefix", help="HALOX_SEARCH_TRACE's prefix (PREFIX.rank<R>.txt)")
    ap.add_argument("--json", metavar="OUT", help="the figures as JSON")
    ap.add_argument("--plot", metavar="OUT.png", help="the median search step as a timeline")
    ap.add_argument("--skip", type=int, default=2, metavar="N",
                    help="search steps left out after the calibrated ones (default 2)")
    a = ap.parse_args()
    prefix, out, png, skip = a.prefix, a.json, a.plot, a.skip
    if skip < 0:
        fail(f"--skip {skip}: give 0 or more")
    files = rank_files(prefix, "HALOX_SEARCH_TRACE", fail)
    ranks = []
    for p in files:
        r = read_rank(p)
        r["offset"], r["half"] = offset_of(r, p)
        ranks.append(r)
    got = [r["rank"] for r in ranks]
    if got != list(range(ranks[0]["nranks"])):
        fail(f"traces of ranks {got}, expected 0..{ranks[0]['nranks'] - 1}")
    res = analyse(ranks, skip)
    nr = len(ranks)
    print(f"search steps: {res['searches']} on {nr} processes; length (the last process's "
          f"end) median {res['length_us']} us, min {res['length_us_min_max'][0]}, max "
          f"{res['length_us_min_max'][1]}")
    print("clock alignment (device to host), half-width per process (us): " +
          ", ".join(f"{w:.2f}" for w in res["calibration_half_width_us"]))
    table("each process's search step by kind of span (median us; the spans below, summed)",
          res["by_kind_us"], nr)
    print("  " + f"{'last to end (search steps)':<34}" +
          "".join(f"{v:>10}" for v in res["last_to_end"]))
    table("host points (median us from the search step's start)", res["host_points_us"], nr)
    table("host spans (median us from one point to the next)", res["host_spans_us"], nr)
    table("device points (median us from the search step's start; a kernel's end)",
          res["device_points_us"], nr)
    if "emulated_runtime_calls" in res:
        print("CUDA runtime calls per host span, counted by the CPU emulation (median per "
              "process: kernel launches / graph launches / synchronisations / other calls)")
        for sp, vals in res["emulated_runtime_calls"].items():
            cells = "".join(f"{'-' if v is None else '/'.join(format(x, 'g') for x in v):>14}"
                            for v in vals)
            print(f"  {sp:<34}{cells}")
    if out:
        with open(out, "w") as f:
            json.dump(res, f, indent=1)
    if png:
        plot(ranks, res["median_search"], png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
