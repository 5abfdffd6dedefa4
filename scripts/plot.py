#!/usr/bin/env python3
"""Plots of halox output, drawn by gnuplot (Debian package gnuplot-nox, in scripts/setup.sh).

  plot.py energies E.jsonl [E2.jsonl ...] [--label NAME ...] -o energies.svg
      total energy, potential and kinetic energy, and temperature against time, from
      `halox md --energy` files (or GROMACS runs converted to that format by
      bench/gromacs/nve.sh); several files are drawn on the same axes to compare runs.
  plot.py bench RESULT.json -o bench.svg
      µs per step of every code and rank count of a bench/cpu_md.sh result: bar = median over
      the rounds, whisker = min to max.
  plot.py search RESULT.json [RESULT2.json ...] -o search.svg
      the search step of every run of `halox bench md` results, µs per search step stacked by
      part (search_step_parts_us: state to host, migration, topology and plan, halo set-up,
      local set and upload, coordinate halo and pair search; slowest rank of each part), the
      label saying whether the search ran on the device or the host.

SVG or PNG, chosen by the output's extension. The output is written to a temporary file in
the same directory and renamed into place, so a failed plot never leaves a half-written file
or replaces a good one. Bad input is an error naming the file, the line and what is wrong.
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

ENERGY_KEYS = ("step", "time", "potential", "kinetic", "total", "temperature")


class PlotError(Exception):
    pass


META_KEY = "halox_energy_file"  # the first line of a halox energy file (docs/energy-file.md)


def read_energies(path):
    """Rows of an energy file as lists of floats in ENERGY_KEYS order. The metadata line that
    halox md writes first (units, run parameters) is checked and skipped; files without one
    (older halox, bench/gromacs/nve.sh) are read the same way."""
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise PlotError(f"{path}: cannot read: {e.strerror}")
    rows = []
    seen = False
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise PlotError(f"{path}:{n}: not a JSON object ({e.msg}); expected one line per "
                            "energy frame as written by `halox md --energy`")
        if not isinstance(obj, dict):
            raise PlotError(f"{path}:{n}: expected a JSON object, found {type(obj).__name__}")
        if META_KEY in obj:
            if seen:
                raise PlotError(f"{path}:{n}: a metadata line after energy lines; is this two "
                                "runs in one file?")
            if obj[META_KEY] != 1:
                raise PlotError(f"{path}:{n}: energy file format {obj[META_KEY]!r}; this "
                                "script reads format 1")
            units = obj.get("columns", {})
            for k, want in (("time", "ps"), ("total", "kJ/mol"), ("temperature", "K")):
                if units.get(k, want) != want:
                    raise PlotError(f"{path}:{n}: column '{k}' is in {units.get(k)!r}, not "
                                    f"{want}")
            continue
        seen = True
        row = []
        for k in ENERGY_KEYS:
            v = obj.get(k)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                if k not in obj:
                    what = "missing"
                elif v is None:
                    what = "null (halox writes null for a NaN or infinite value: the run blew up)"
                else:
                    what = f"not a finite number ({v!r})"
                raise PlotError(f"{path}:{n}: key '{k}' is {what}; an energy line needs "
                                + ", ".join(ENERGY_KEYS))
            row.append(float(v))
        if rows and row[1] < rows[-1][1]:
            raise PlotError(f"{path}:{n}: time {row[1]} ps goes back (previous line "
                            f"{rows[-1][1]} ps); is this two runs in one file?")
        rows.append(row)
    if len(rows) < 2:
        raise PlotError(f"{path}: {len(rows)} energy frame(s); a plot needs at least 2 "
                        "(write energies more often with --nstenergy)")
    return rows


def gp_quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def terminal_for(out):
    ext = os.path.splitext(out)[1].lower()
    if ext == ".svg":
        return "svg size 900,{h} dynamic enhanced font 'sans,12' background rgb 'white'"
    if ext == ".png":
        return "pngcairo size 900,{h} enhanced font 'sans,11'"
    raise PlotError(f"{out}: unknown output type '{ext or '(none)'}'; use a .svg or .png name")


def run_gnuplot(script, out, tmpdir):
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:
        raise PlotError("gnuplot not found; install it with scripts/setup.sh "
                        "(Debian package gnuplot-nox)")
    outdir = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(outdir):
        raise PlotError(f"{out}: directory {outdir} does not exist")
    fd, tmp_out = tempfile.mkstemp(prefix=".plot-", suffix=os.path.splitext(out)[1], dir=outdir)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp_out, 0o666 & ~umask)  # mkstemp makes it 0600; a plot is for sharing
    try:
        gp = os.path.join(tmpdir, "plot.gp")
        with open(gp, "w", encoding="utf-8") as f:
            f.write(f"set output {gp_quote(tmp_out)}\n")
            f.write(script)
        r = subprocess.run([gnuplot, gp], capture_output=True, text=True)
        if r.returncode != 0 or os.path.getsize(tmp_out) == 0:
            raise PlotError(f"gnuplot failed (exit {r.returncode}): {r.stderr.strip()}")
        os.replace(tmp_out, out)
    finally:
        if os.path.exists(tmp_out):
            os.unlink(tmp_out)


def plot_energies(args):
    labels = args.label or []
    if labels and len(labels) != len(args.files):
        raise PlotError(f"{len(labels)} --label for {len(args.files)} files; give one per file "
                        "or none")
    if not labels:
        labels = [os.path.basename(p) for p in args.files]
    with tempfile.TemporaryDirectory() as tmp:
        data = []
        for i, path in enumerate(args.files):
            rows = read_energies(path)
            dat = os.path.join(tmp, f"e{i}.dat")
            with open(dat, "w", encoding="utf-8") as f:
                for r in rows:
                    f.write(" ".join(repr(v) for v in r) + "\n")
            data.append(dat)
        # columns: 1 step, 2 time, 3 potential, 4 kinetic, 5 total, 6 temperature
        panels = [("total energy (kJ/mol)", 5), ("potential (kJ/mol)", 3),
                  ("kinetic (kJ/mol)", 4), ("temperature (K)", 6)]
        s = [f"set terminal {terminal_for(args.output).format(h=900)}",
             "set multiplot layout 4,1 title " + gp_quote(args.title or "halox md energies"),
             "set grid", "set key top right", "set format y '%.6g'", "set lmargin 14"]
        for k, (ylabel, col) in enumerate(panels):
            s.append(f"set ylabel {gp_quote(ylabel)}")
            s.append("set xlabel " + gp_quote("time (ps)" if k == len(panels) - 1 else ""))
            parts = [f"{gp_quote(d)} using 2:{col} with lines lw 1.5 title {gp_quote(l)}"
                     for d, l in zip(data, labels)]
            s.append("plot " + ", ".join(parts))
        s.append("unset multiplot")
        run_gnuplot("\n".join(s) + "\n", args.output, tmp)


def plot_bench(args):
    try:
        with open(args.result, encoding="utf-8") as f:
            res = json.load(f)
    except OSError as e:
        raise PlotError(f"{args.result}: cannot read: {e.strerror}")
    except json.JSONDecodeError as e:
        raise PlotError(f"{args.result}:{e.lineno}: not JSON ({e.msg})")
    summary = res.get("summary") if isinstance(res, dict) else None
    if not isinstance(summary, list) or not summary:
        raise PlotError(f"{args.result}: no 'summary' list; expected a bench/cpu_md.sh result "
                        "(bench/README.md)")
    meta = res.get("meta", {}) if isinstance(res.get("meta"), dict) else {}
    rows = []
    for i, e in enumerate(summary):
        try:
            gromacs = e["backend"] == "gromacs"
            # "mixed (float SIMD kernels)" is too long for a bar label
            code = "GROMACS" if gromacs else "halox " + str(e["precision"]).split(" (")[0]
            med, lo, hi = (float(e[k]) for k in
                           ("us_per_step_median", "us_per_step_min", "us_per_step_max"))
            label = f"{code}\\n{int(e['ranks'])} rank(s) x {int(e['threads_per_rank'])} thr"
        except (KeyError, TypeError, ValueError) as ex:
            raise PlotError(f"{args.result}: summary[{i}] lacks a usable {ex}; expected "
                            "backend, precision, ranks, threads_per_rank, us_per_step_*")
        color = 1 if gromacs else 2 if "double" in str(e["precision"]) else 3
        rows.append((label, med / 1000, lo / 1000, hi / 1000, color))
    title = args.title or "MD time per step, {} ({}), median and range over rounds".format(
        meta.get("cpu", "CPU"), meta.get("date", "")[:10])
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "bench.dat")
        with open(dat, "w", encoding="utf-8") as f:
            for i, (label, med, lo, hi, color) in enumerate(rows):
                f.write(f'{i} {med} {lo} {hi} {color} "{label}"\n')
        s = [f"set terminal {terminal_for(args.output).format(h=520)}",
             f"set title {gp_quote(title)}", "set ylabel 'ms per step (lower is faster)'",
             "set style fill solid 0.8 border -1", "set boxwidth 0.7", "set grid ytics",
             "set yrange [0:*]", "set xrange [-0.6:{}]".format(len(rows) - 0.4),
             "set xtics scale 0 font ',10'", "set bmargin 4", "unset key",
             "set palette defined (1 '#777777', 2 '#4a7ab5', 3 '#d9822b')", "unset colorbox",
             "set cbrange [1:3]",
             f"plot {gp_quote(dat)} using 1:2:5:xtic(6) with boxes lc palette, "
             f"'' using 1:2:3:4 with yerrorbars lc rgb 'black' pt 0, "
             f"'' using 1:($4):(sprintf('%.1f', $2)) with labels offset 0,0.8 font ',10'"]
        run_gnuplot("\n".join(s) + "\n", args.output, tmp)


SEARCH_PARTS = (("state_to_host", "state to host"), ("migration", "migration"),
                ("topology_plan", "topology + plan (device: maps + counts)"),
                ("halo_setup", "halo set-up"),
                ("local_set_upload", "local set + upload (device: lists + modules)"),
                ("halo_x_pair_search", "x halo + pair search"))


def plot_search(args):
    rows = []
    for path in args.results:
        try:
            with open(path, encoding="utf-8") as f:
                res = json.load(f)
        except OSError as e:
            raise PlotError(f"{path}: cannot read: {e.strerror}")
        except json.JSONDecodeError as e:
            raise PlotError(f"{path}:{e.lineno}: not JSON ({e.msg})")
        runs = res.get("runs") if isinstance(res, dict) else None
        if not isinstance(runs, list):
            raise PlotError(f"{path}: no 'runs' list; expected a `halox bench md` result")
        for i, r in enumerate(runs):
            parts = r.get("search_step_parts_us") if isinstance(r, dict) else None
            if not isinstance(parts, dict):
                continue  # a run without searches or from an older halox
            try:
                vals = [max(0.0, float(parts.get(k, 0.0))) for k, _ in SEARCH_PARTS]
                dd = "x".join(str(int(v)) for v in r.get("dd", []))
                label = "{} {} {}r\\n{}k, on the {}".format(
                    r["backend"], dd, int(r["ranks"]), int(round(int(r["atoms"]) / 1000)),
                    r.get("search_step_on", "host"))
            except (KeyError, TypeError, ValueError) as ex:
                raise PlotError(f"{path}: runs[{i}] lacks a usable {ex}; expected backend, dd, "
                                "ranks, atoms and search_step_parts_us")
            rows.append((label, vals))
    if not rows:
        raise PlotError("no run with search_step_parts_us in " + ", ".join(args.results))
    title = args.title or "search step by part (µs per search step, slowest rank per part)"
    with tempfile.TemporaryDirectory() as tmp:
        dat = os.path.join(tmp, "search.dat")
        with open(dat, "w", encoding="utf-8") as f:
            for label, vals in rows:
                f.write('"{}" {}\n'.format(label, " ".join(repr(v) for v in vals)))
        plots = [f"{gp_quote(dat)} using 2:xtic(1) title {gp_quote(SEARCH_PARTS[0][1])}"]
        plots += [f"'' using {k + 2} title {gp_quote(name)}"
                  for k, (_, name) in enumerate(SEARCH_PARTS) if k > 0]
        s = [f"set terminal {terminal_for(args.output).format(h=560)}",
             f"set title {gp_quote(title)}", "set ylabel 'µs per search step'",
             "set style data histograms", "set style histogram rowstacked",
             "set style fill solid 0.8 border -1", "set boxwidth 0.6", "set grid y",
             "set yrange [0:*]", "set key outside top center horizontal font ',9'",
             "set xtics rotate by -30 font ',9'", "set bmargin 8",
             "plot " + ", ".join(plots)]
        run_gnuplot("\n".join(s) + "\n", args.output, tmp)


def main(argv):
    ap = argparse.ArgumentParser(prog="plot.py", description=__doc__.split("\n\n")[0],
                                 epilog="Details: the docstring of scripts/plot.py.")
    sub = ap.add_subparsers(dest="what", required=True)
    pe = sub.add_parser("energies", help="energies and temperature against time")
    pe.add_argument("files", nargs="+", help="energy files (JSON lines, halox md --energy)")
    pe.add_argument("--label", action="append", help="legend entry per file (repeat)")
    pe.add_argument("--title")
    pe.add_argument("-o", "--output", required=True, help="output .svg or .png")
    pe.set_defaults(func=plot_energies)
    pb = sub.add_parser("bench", help="µs per step of a bench/cpu_md.sh result")
    pb.add_argument("result", help="result JSON (bench/results/cpu_md_*.json)")
    pb.add_argument("--title")
    pb.add_argument("-o", "--output", required=True, help="output .svg or .png")
    pb.set_defaults(func=plot_bench)
    ps = sub.add_parser("search", help="the search step by part, halox bench md results")
    ps.add_argument("results", nargs="+", help="result JSON of halox bench md")
    ps.add_argument("--title")
    ps.add_argument("-o", "--output", required=True, help="output .svg or .png")
    ps.set_defaults(func=plot_search)
    args = ap.parse_args(argv)
    try:
        terminal_for(args.output)
        args.func(args)
    except PlotError as e:
        print(f"plot.py {args.what}: error: {e}", file=sys.stderr)
        return 1
    print(f"plot.py: wrote {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
