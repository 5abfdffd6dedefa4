#!/usr/bin/env python3
"""Line up the per-PE traces of the fused NVSHMEM exchange and say where a step's time goes.

    HALOX_NVSHMEM_TRACE=/tmp/tr mpirun -np 8 halox-test bench exchange ... --backends nvshmem
    scripts/nvshmem_trace.py /tmp/tr.0 [--json OUT.json] [--plot OUT.png]

--plot draws three consecutive steps from the middle of the trace as a timeline, one row per PE:
the coordinate kernel (start to its last pulse received) and the force kernel as bars, the
signals sent (triangles) and seen (circles) of each pulse as marks (gnuplot, as scripts/plot.py).

The backend writes PREFIX.<instance>.rank<R>.txt when an exchange is destroyed (a test hook,
src/halo/nvshmem/nvshmem_hooks.cu, in halox-test and the test programs, not in halox):
%globaltimer stamps of the last 4096 steps, one clock for every process on a GPU. For the steps
every PE holds, the medians over steps (and the max over PEs or pulses where said) of:

  period        x_start(s+1) - x_start(s): one step of the exchange
  start skew    max - min over PEs of x_start: how far apart the PEs' coordinate kernels begin
  x span        last pulse received - x_start, per PE
  x->f gap      f_start - last pulse received: the kernel boundary inside a step
  f span        f_end - f_start, per PE
  f->x gap      next x_start - f_end: the kernel boundary between steps
  pack          x_sent - x_start, pulses without dependencies: pack + fences + signal
  dep wait      x_dep - x_start, pulses with dependencies: waiting for the pulses referenced
  dep->sent     x_sent - x_dep: the dependent part packed and signalled
  x hop         receiver's x_recv - sender's x_sent: signal to seen, one pulse
  f hop         receiver's f_recv - sender's f_sent
  f accumulate  f_done - f_recv: a pulse's forces added in
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from trace_files import rank_files  # noqa: E402


def fail(msg):
    print(f"nvshmem_trace.py: error: {msg}", file=sys.stderr)
    sys.exit(1)


def read(path):
    pe = {"pulses": [], "steps": {}}
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            w = line.split()
            try:
                if w[0] == "rank":
                    pe["rank"], pe["npes"] = int(w[1]), int(w[3])
                    pe["npulses"], pe["traced"] = int(w[5]), int(w[7])
                elif w[0] == "pulse":
                    pe["pulses"].append({"send_pe": int(w[3]), "recv_pe": int(w[5]),
                                         "deps": int(w[7])})
                elif w[0] == "describe":
                    pe["describe"] = line[len("describe "):]
                else:
                    v = [int(x) for x in w]
                    n = pe["traced"]
                    if len(v) != 4 + 6 * n:
                        fail(f"{path}:{ln}: {len(v)} numbers, expected {4 + 6 * n}")
                    rec = {"x_start": v[1], "f_start": v[2], "f_end": v[3]}
                    for k, name in enumerate(["x_dep", "x_sent", "x_recv", "f_sent", "f_recv",
                                              "f_done"]):
                        rec[name] = [v[4 + 6 * q + k] for q in range(n)]
                    pe["steps"][v[0]] = rec
            except (ValueError, IndexError):
                fail(f"{path}:{ln}: cannot read '{line[:60]}'")
    if "rank" not in pe:
        fail(f"{path}: no header line")
    return pe


def plot(pes, steps, out):
    """Timeline of three consecutive steps (all PEs hold them) from the middle of the trace."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import tempfile
    from plot import PlotError, gp_quote, run_gnuplot, terminal_for
    mid = len(steps) // 2
    win = [s for s in steps[mid:mid + 3]]
    t0 = min(pes[r]["steps"][win[0]]["x_start"] for r in pes)
    us = lambda t: (t - t0) / 1e3  # noqa: E731
    with tempfile.TemporaryDirectory() as tmp:
        bars_x = os.path.join(tmp, "x.dat")
        bars_f = os.path.join(tmp, "f.dat")
        sent = os.path.join(tmp, "sent.dat")
        seen = os.path.join(tmp, "seen.dat")
        with open(bars_x, "w") as fx, open(bars_f, "w") as ff, open(sent, "w") as fs, \
                open(seen, "w") as fr:
            for r, d in pes.items():
                n = d["traced"]
                for s in win:
                    t = d["steps"][s]
                    last = max(t["x_recv"][:n]) if n else t["x_start"]
                    fx.write(f"{us(t['x_start'])} {us(last)} {r}\n")
                    ff.write(f"{us(t['f_start'])} {us(t['f_end'])} {r}\n")
                    for q in range(n):
                        for k in ("x_sent", "f_sent"):
                            if t[k][q]:
                                fs.write(f"{us(t[k][q])} {r}\n")
                        for k in ("x_recv", "f_recv"):
                            if t[k][q]:
                                fr.write(f"{us(t[k][q])} {r}\n")
        npes = len(pes)
        h = 160 + 40 * npes
        script = f"""set terminal {terminal_for(out).format(h=h)}
set title "fused NVSHMEM exchange, {npes} PEs: steps {win[0]}-{win[-1]} (%globaltimer)" noenhanced
set xlabel "time (us)"
set ylabel "PE"
set yrange [-0.7:{npes - 0.3}]
set ytics 1
set grid xtics
set key outside bottom center horizontal
plot {gp_quote(bars_x)} using (($1+$2)/2):3:(($2-$1)/2):(0.3) with boxxyerror \
       fs solid 0.5 lc rgb '#4477aa' title 'coordinate kernel', \
     {gp_quote(bars_f)} using (($1+$2)/2):3:(($2-$1)/2):(0.3) with boxxyerror \
       fs solid 0.5 lc rgb '#cc6677' title 'force kernel', \
     {gp_quote(sent)} using 1:($2+0.38) with points pt 9 ps 0.9 lc rgb 'black' title 'signal sent', \
     {gp_quote(seen)} using 1:($2-0.38) with points pt 7 ps 0.6 lc rgb '#228833' title 'signal seen'
"""
        try:
            run_gnuplot(script, out, tmp)
        except PlotError as e:
            fail(str(e))


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) / 1e3 if xs else None  # ns -> us


def main():
    args = sys.argv[1:]
    if not args or args[0] in ("-h", "--help"):
        print(__doc__)
        return 0 if args else 2
    prefix, out, png = args[0], None, None
    rest = args[1:]
    while rest:
        if len(rest) >= 2 and rest[0] == "--json":
            out = rest[1]
        elif len(rest) >= 2 and rest[0] == "--plot":
            png = rest[1]
        else:
            fail("usage: nvshmem_trace.py PREFIX.INSTANCE [--json OUT] [--plot OUT.png]")
        rest = rest[2:]
    files = rank_files(prefix, "HALOX_NVSHMEM_TRACE", fail)
    pes = {}
    for p in files:
        d = read(p)
        pes[d["rank"]] = d
    npes = next(iter(pes.values()))["npes"]
    if sorted(pes) != list(range(npes)):
        fail(f"{prefix}: traces of PEs {sorted(pes)}, expected 0..{npes - 1}")
    steps = sorted(set.intersection(*[set(d["steps"]) for d in pes.values()]))
    if len(steps) < 10:
        fail(f"{prefix}: only {len(steps)} steps traced on every PE")
    steps = steps[1:-1]  # the first may have started before the timing, the last is cut
    m = {k: [] for k in ["period", "start skew", "x span", "x->f gap", "f span", "f->x gap",
                         "pack", "dep wait", "dep->sent", "x hop", "f hop", "f accumulate"]}
    for s in steps:
        st = {r: pes[r]["steps"][s] for r in pes}
        xs = [st[r]["x_start"] for r in pes]
        m["start skew"].append(max(xs) - min(xs))
        per = {k: [] for k in m}
        for r, d in pes.items():
            t = st[r]
            n = d["traced"]
            last_x = max(t["x_recv"][:n]) if n else t["x_start"]
            if s + 1 in d["steps"]:
                per["period"].append(d["steps"][s + 1]["x_start"] - t["x_start"])
                per["f->x gap"].append(d["steps"][s + 1]["x_start"] - t["f_end"])
            per["x span"].append(last_x - t["x_start"])
            per["x->f gap"].append(t["f_start"] - last_x)
            per["f span"].append(t["f_end"] - t["f_start"])
            for q in range(n):
                pl = d["pulses"][q]
                if pl["deps"] == 0:
                    per["pack"].append(t["x_sent"][q] - t["x_start"])
                elif t["x_dep"][q]:
                    per["dep wait"].append(t["x_dep"][q] - t["x_start"])
                    per["dep->sent"].append(t["x_sent"][q] - t["x_dep"][q])
                to, back = pl["send_pe"], pl["recv_pe"]
                if to in st and st[to]["x_recv"][q]:
                    per["x hop"].append(st[to]["x_recv"][q] - t["x_sent"][q])
                if back in st and t["f_sent"][q] and st[back]["f_recv"][q]:
                    per["f hop"].append(st[back]["f_recv"][q] - t["f_sent"][q])
                if t["f_done"][q] and t["f_recv"][q]:
                    per["f accumulate"].append(t["f_done"][q] - t["f_recv"][q])
        for k, v in per.items():
            if v:
                m[k].append(max(v))  # the slowest PE or pulse of the step
    res = {k: med(v) for k, v in m.items()}
    d0 = pes[0]
    print(f"{prefix}: {npes} PEs, {d0['npulses']} pulses, {len(steps)} steps "
          f"(median over steps of the slowest PE or pulse, us)")
    for k, v in res.items():
        print(f"  {k:<13} {'-' if v is None else f'{v:8.2f}'}")
    if out:
        doc = {"trace": os.path.basename(prefix), "pes": npes, "pulses": d0["npulses"],
               "steps": len(steps), "describe": d0.get("describe", ""),
               "us_median_slowest": res}
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp, out)
    if png:
        plot(pes, steps, png)
    return 0


if __name__ == "__main__":
    sys.exit(main())
