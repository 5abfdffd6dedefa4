#!/usr/bin/env python3
"""CPU MD benchmark: halox md against GROMACS mdrun on the same water box, same parameters.

With --mixture X the system is an ethanol-water mixture at ethanol mole fraction X instead
(`halox build mixture --ethanol-fraction X --model <water> --top`, OPLS-AA ethanol with the
--model water, `halox md --model oplsaa-<water>`); GROMACS runs the topology halox wrote, with
its default constraint solver (LINCS) for ethanol's bonds to hydrogen, halox with SHAKE.

    bench/cpu_md.sh [options]          (the wrapper; see --help)

The issue's benchmark: the 45k-atom SPC/E box from `halox build water --atoms 45198 --seed 1`,
rc 1.0 nm, reaction field eps_rf = 0 (infinity), dt 2 fs, SETTLE, nstlist 10, fixed rlist,
NVE. GROMACS runs `gmx mdrun -ntmpi 1 -ntomp T -nb cpu -pin on -resethway`, halox runs
`halox md --threads T` with OpenMP threads pinned the same way; both on the same .gro file.
With --ranks "1 2", rank counts > 1 run `mpirun -np N gmx_mpi mdrun` and
`mpirun -np N halox md --dd Nx1x1` (halox MPI runs are skipped, with the reason recorded, when
halox has no --dd option yet).

Writes bench/results/cpu_md_<atoms/1000>k.json (or --out) atomically: {"meta": ..., "runs": [...],
"comparison": [...]} and prints a table. Timing: GROMACS's own counters over the second half of
the run (-resethway, so the first half is the warm-up); halox: the wall-time difference of a run
of warmup+steps steps and a run of warmup steps, which cancels start-up, input, set-up and
warm-up (halox's own end-of-run figure is recorded beside it).
"""

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))
import provenance  # noqa: E402


def log(msg):
    print(f"cpu_md: {msg}", file=sys.stderr, flush=True)


def run(cmd, cwd, logfile, env=None, check=True):
    """Run a command with output to logfile; return (returncode, wall seconds)."""
    log("running: " + " ".join(shlex.quote(c) for c in cmd))
    t0 = time.perf_counter()
    with open(logfile, "w") as f:
        p = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, env=env)
    wall = time.perf_counter() - t0
    if check and p.returncode != 0:
        with open(logfile, errors="replace") as f:
            tail = f.read()[-3000:]
        raise SystemExit(f"cpu_md: command failed (rc {p.returncode}), log {logfile}:\n{tail}")
    return p.returncode, wall


def mpirun_prefix(n):
    cmd = ["mpirun", "-np", str(n)]
    ver = subprocess.run(["mpirun", "--version"], capture_output=True, text=True).stdout
    if "Open MPI" in ver or "OpenRTE" in ver:
        # More ranks than cores happens on small CI machines; root is normal in containers.
        cmd += ["--oversubscribe"]
        if os.geteuid() == 0:
            cmd += ["--allow-run-as-root"]
    return cmd


def halox_has(halox, sub, option=None):
    try:
        p = subprocess.run([halox, sub, "--help"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return False
    if p.returncode != 0:
        return False
    return option is None or re.search(r"(^|\s)" + re.escape(option) + r"\b", p.stdout + p.stderr)


def gro_atoms_box(path):
    with open(path) as f:
        lines = f.read().splitlines()
    n = int(lines[1].split()[0])
    return n, [float(v) for v in lines[2 + n].split()[:3]]


def build_conf(a, work):
    """The benchmark configuration: --conf, else halox build, else gmx solvate (fallback)."""
    if a.conf:
        return os.path.abspath(a.conf), "given: " + a.conf
    conf = os.path.join(work, "conf.gro")
    if a.mixture is not None:
        a.top = os.path.join(work, "topol.top")
        cmd = [a.halox, "build", "mixture", "--ethanol-fraction", str(a.mixture), "--model",
               a.model, "--atoms", str(a.atoms), "--seed", str(a.seed), "-o", conf, "--top",
               a.top]
        run(cmd, work, os.path.join(work, "build.log"))
        return conf, " ".join(cmd)
    if a.halox and halox_has(a.halox, "build"):
        cmd = [a.halox, "build", "water", "--model", a.model, "--atoms", str(a.atoms),
               "--seed", str(a.seed), "-o", conf]
        run(cmd, work, os.path.join(work, "build.log"))
        return conf, " ".join(cmd)
    # Without halox build (early development): a GROMACS-made box of about the same size, so
    # that the GROMACS side can be tested. Recorded in the results as conf_source.
    nwat = a.atoms / 3.0
    edge = (nwat / 33.4) ** (1.0 / 3.0)  # 33.4 waters per nm^3 at 1 g/cm^3
    cmd = [a.gmx, "solvate", "-cs", "spc216.gro", "-box", f"{edge:.3f}", f"{edge:.3f}",
           f"{edge:.3f}", "-o", conf]
    run(cmd, work, os.path.join(work, "solvate.log"))
    log("halox build is not available: using a gmx solvate box instead")
    return conf, " ".join(cmd) + " (halox build not available)"


def equilibrate(a, conf, work):
    """Thermalise the lattice box so that both codes start from the same liquid state.

    halox build puts molecules on a lattice; left to NVE, it relaxes within ~50 fs and heats to
    ~1000 K. A short v-rescale run at --temp (with a generous list buffer while the lattice
    melts) gives a configuration with velocities that both codes then read: halox md takes the
    file's velocities, GROMACS runs with gen-vel = no. Returns the new .gro, or None when there
    is no halox md to do it (then both codes generate their own velocities).
    """
    if a.equil_steps <= 0 or not a.halox or not halox_has(a.halox, "md"):
        return None
    out = os.path.join(work, "equilibrated.gro")
    cmd = [a.halox, "md", "-c", conf, "--steps", str(a.equil_steps), "--dt", str(a.dt),
           "--rc", str(a.rc), "--rlist", str(max(a.rlist, a.rc + 0.2)), "--nstlist", "10",
           "--eps-rf", str(a.eps_rf), "--model", a.md_model, "--gen-vel", str(a.temp),
           "--seed", str(a.seed), "--thermostat", "v-rescale", "--ref-t", str(a.temp),
           "--tau-t", "0.1", "--energy", os.path.join(work, "equilibrate.jsonl"),
           "--nstenergy", "50", "-o", out, "-g", os.path.join(work, "equilibrate.log"),
           "--threads", str(a.threads)]
    env = dict(os.environ, OMP_NUM_THREADS=str(a.threads), OMP_PROC_BIND="close",
               OMP_PLACES="cores")
    run(cmd, work, os.path.join(work, "equilibrate.out"), env=env)
    return out


def gromacs_run(a, conf, work, ranks, rnd=0):
    d = os.path.join(work, f"gromacs_np{ranks}" + (f"_r{rnd}" if a.repeat > 1 else ""))
    os.makedirs(d, exist_ok=True)
    nsteps = 2 * a.steps  # -resethway: the first half is the warm-up
    gmx = a.gmx if ranks == 1 else a.gmx_mpi
    settings = {
        "GMX": gmx, "MODEL": a.model, "RC": a.rc, "RLIST": a.rlist, "EPS_RF": a.eps_rf,
        "TOP": a.top or "",
        "DT": a.dt, "NSTEPS": nsteps, "NSTLIST": a.nstlist, "NSTCALCENERGY": a.nstenergy,
        "NSTENERGY": a.nstenergy, "NSTLOG": max(a.nstenergy, 1000),
        "GEN_VEL": "no" if a.have_velocities else "yes", "GEN_TEMP": a.temp, "SEED": a.seed,
        # Constrain the start in both cases, as halox md does.
        "CONTINUATION": "no",
    }
    script = (f"source {shlex.quote(os.path.join(HERE, 'gromacs', 'common.sh'))} && hxg_prepare "
              f"{shlex.quote(conf)} {shlex.quote(d)} "
              + " ".join(f"{k}={v}" for k, v in settings.items()))
    run(["bash", "-c", script], d, os.path.join(d, "prepare.log"))
    ntomp = max(1, a.threads // ranks)
    mdrun = ["mdrun", "-s", "topol.tpr", "-deffnm", "md", "-ntomp", str(ntomp), "-nb", "cpu",
             "-pin", "on", "-resethway", "-noconfout", "-nsteps", str(nsteps)]
    if ranks == 1:
        cmd = [gmx] + mdrun[:1] + ["-ntmpi", "1"] + mdrun[1:]
    else:
        # mpirun must not bind: GROMACS pins its own threads (-pin on) and would back off if
        # it found an affinity already set.
        cmd = mpirun_prefix(ranks) + ["--bind-to", "none", gmx] + mdrun + ["-npme", "0"]
    run(cmd, d, os.path.join(d, "mdrun.out"))
    with open(os.path.join(d, "md.log"), errors="replace") as f:
        text = f.read()
    m = re.search(r"^Performance:\s+([\d.]+)\s+([\d.]+)", text, re.M)
    w = re.search(r"^\s+Time:\s+([\d.]+)\s+([\d.]+)", text, re.M)
    if not m or not w:
        raise SystemExit(f"cpu_md: no Performance/Time line in {d}/md.log")
    ns_day = float(m.group(1))
    wall = float(w.group(2))
    measured = nsteps - nsteps // 2
    dd = re.search(r"Domain decomposition grid (\d+) x (\d+) x (\d+)", text)
    # share of the halo communication in GROMACS's own cycle accounting (ranks > 1)
    comm = {}
    for row, key in (("Comm. coord.", "comm_coord"), ("Wait + Comm. F", "comm_force")):
        r = re.search(r"^\s*" + re.escape(row) + r"\s+\d+\s+\d+\s+\d+\s+([\d.]+)\s+[\d.]+\s+([\d.]+)",
                      text, re.M)
        if r:
            comm[key + "_s"] = float(r.group(1))
            comm[key + "_percent"] = float(r.group(2))
    extra = {}
    if comm:
        extra["halo_share"] = (comm.get("comm_coord_percent", 0.0) +
                               comm.get("comm_force_percent", 0.0)) / 100.0
        extra["exchange_us"] = (comm.get("comm_coord_s", 0.0) + comm.get("comm_force_s", 0.0)) \
            / measured * 1e6
        extra["gromacs_cycle_accounting"] = comm
    return {
        "system": a.system, "atoms": a.natoms, "mode": "md", "backend": "gromacs",
        "ranks": ranks, "threads_per_rank": ntomp, "gpus": 0,
        "dd": [int(dd.group(i)) for i in (1, 2, 3)] if dd else [1, 1, 1],
        "steps": measured, "warmup_steps": nsteps // 2,
        "us_per_step": wall / measured * 1e6, "ns_per_day": ns_day,
        "precision": "mixed (float SIMD kernels)", "timing": "GROMACS counters, -resethway",
        "command": " ".join(shlex.quote(c) for c in cmd), "workdir": d, **extra,
    }


# halox's closing line: "performance: X ns/day, Y us/step, ..., halo exchange Z us/step (...)"
HALOX_PERF = re.compile(r"^performance:\s*([\d.]+(?:e[+-]?\d+)?)\s*ns/day,\s*"
                        r"([\d.]+(?:e[+-]?\d+)?)\s*us/step", re.M)


def halox_reported(paths):
    """The ns/day and us/step figures of the last performance line halox wrote, if any."""
    found = {}
    for p in paths:
        try:
            with open(p, errors="replace") as f:
                text = f.read()
        except OSError:
            continue
        vals = HALOX_PERF.findall(text)
        if vals:
            found = {"ns_per_day": float(vals[-1][0]), "us_per_step": float(vals[-1][1])}
    return found


def halox_run(a, conf, work, ranks, precision, rnd=0):
    d = os.path.join(work, f"halox_np{ranks}_{precision}" + (f"_r{rnd}" if a.repeat > 1 else ""))
    os.makedirs(d, exist_ok=True)
    base = {"system": a.system, "atoms": a.natoms, "mode": "md",
            "backend": "cpu" if ranks == 1 else "cpu-mpi", "ranks": ranks, "gpus": 0,
            "threads_per_rank": max(1, a.threads // ranks), "precision": precision,
            "dd": [ranks, 1, 1]}
    if not a.halox or not halox_has(a.halox, "md"):
        return dict(base, skipped="halox md is not available (no binary or no md subcommand)")
    if ranks > 1 and not halox_has(a.halox, "md", "--dd"):
        return dict(base, skipped="halox md has no --dd option yet (single-domain only)")
    nt = base["threads_per_rank"]
    env = dict(os.environ, OMP_NUM_THREADS=str(nt), OMP_PROC_BIND="close", OMP_PLACES="cores")

    def cmd_for(steps, tag):
        md = [a.halox, "md", "-c", conf, "--steps", str(steps), "--dt", str(a.dt),
              "--rc", str(a.rc), "--rlist", str(a.rlist), "--nstlist", str(a.nstlist),
              "--eps-rf", str(a.eps_rf), "--model", a.md_model,
              "--gen-vel", "-1" if a.have_velocities else str(a.temp),
              "--seed", str(a.seed), "--energy", f"{tag}.jsonl", "--nstenergy", str(a.nstenergy),
              "-o", f"{tag}.gro", "-g", f"{tag}.log", "--threads", str(nt),
              "--precision", precision]
        if ranks == 1:
            return md
        # Bind each rank to its cores; OMP_* above pins the threads inside.
        return (mpirun_prefix(ranks) + ["--bind-to", "core" if nt == 1 else "none",
                                        "-x", "OMP_NUM_THREADS", "-x", "OMP_PROC_BIND",
                                        "-x", "OMP_PLACES"] + md + ["--dd", f"{ranks}x1x1"])

    # Two runs, warmup+steps and warmup steps: the difference of their wall times is the time
    # of `steps` steps after the warm-up, start-up and set-up cancelling, like GROMACS's
    # -resethway counters. halox's own end-of-run figure covers every step of its run (warm-up
    # and first pair search included), so it is recorded beside, not used.
    full = cmd_for(a.warmup + a.steps, "md")
    _, t_full = run(full, d, os.path.join(d, "md.out"), env=env)
    reported = halox_reported([os.path.join(d, "md.log"), os.path.join(d, "md.out")])
    short = cmd_for(a.warmup, "warm")
    _, t_short = run(short, d, os.path.join(d, "warm.out"), env=env)
    out = dict(base, steps=a.steps, warmup_steps=a.warmup,
               command=" ".join(shlex.quote(c) for c in full), workdir=d,
               us_per_step=(t_full - t_short) / a.steps * 1e6, wall_s=t_full,
               wall_warmup_only_s=t_short,
               timing=f"wall({a.warmup + a.steps} steps) - wall({a.warmup} steps)")
    if "us_per_step" in reported:
        out["halox_reported_us_per_step"] = reported["us_per_step"]
    if "ns_per_day" in reported:
        out["halox_reported_ns_per_day"] = reported["ns_per_day"]
    out["ns_per_day"] = a.dt * 1e-3 * 86400 / (out["us_per_step"] * 1e-6)
    out.update(halox_timing_table(os.path.join(d, "md.log"), a.warmup + a.steps))
    return out


def halox_timing_table(path, nsteps):
    """The paper's per-step metrics from halox's timing table (rank 0): local work (home-home
    pairs), non-local work (halo pairs), the halo exchange (coordinates + forces) and its share
    of the step."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return {}
    rows = {}
    for name in ("non-bonded local", "halo exchange x", "non-bonded non-local", "halo exchange f",
                 "total"):
        r = re.search(r"^\s+" + re.escape(name) + r"\s+([\d.]+)", text, re.M)
        if r:
            rows[name] = float(r.group(1))
    if "total" not in rows or nsteps <= 0:
        return {}
    halo = rows.get("halo exchange x", 0.0) + rows.get("halo exchange f", 0.0)
    return {"local_work_us": rows.get("non-bonded local", 0.0) / nsteps * 1e6,
            "nonlocal_work_us": rows.get("non-bonded non-local", 0.0) / nsteps * 1e6,
            "exchange_us": halo / nsteps * 1e6,
            "halo_share": halo / rows["total"] if rows["total"] > 0 else None}


def main():
    ap = argparse.ArgumentParser(
        prog="bench/cpu_md.sh", description=__doc__.split("\n\n")[0],
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--atoms", type=int, default=45198, help="atoms in the water box")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--model", default="spce", choices=["spce", "spc", "tip3p"])
    ap.add_argument("--conf", help="use this .gro instead of building one")
    ap.add_argument("--mixture", type=float, default=None, metavar="X",
                    help="ethanol-water mixture at ethanol mole fraction X (OPLS-AA ethanol with "
                         "the --model water) instead of pure water")
    ap.add_argument("--top", help="GROMACS topology of --conf (a mixture's, from halox build "
                                  "--top); default: the water model's bench/gromacs/<model>.itp")
    ap.add_argument("--steps", type=int, default=2000, help="measured steps")
    ap.add_argument("--warmup", type=int, default=500,
                    help="halox warm-up steps (GROMACS warms up for --steps with -resethway)")
    ap.add_argument("--threads", type=int, default=2, help="cores per run (split over ranks)")
    ap.add_argument("--ranks", default="1", help='rank counts, e.g. "1 2"')
    ap.add_argument("--repeat", type=int, default=1,
                    help="rounds of every run, interleaved (GROMACS, halox, GROMACS, ...); the "
                    "comparison uses medians, for machines whose speed drifts")
    ap.add_argument("--precision", default="double mixed",
                    help='halox non-bonded precisions to run, e.g. "double mixed"')
    ap.add_argument("--rc", type=float, default=1.0)
    ap.add_argument("--rlist", type=float, default=1.1, help="fixed pair-list radius, both codes")
    ap.add_argument("--nstlist", type=int, default=10)
    ap.add_argument("--eps-rf", type=float, default=0.0)
    ap.add_argument("--dt", type=float, default=0.002)
    ap.add_argument("--temp", type=float, default=300.0, help="temperature of the start (K)")
    ap.add_argument("--equil-steps", type=int, default=1000,
                    help="halox md v-rescale steps that melt the lattice box first (0: none; "
                    "then both codes draw their own velocities)")
    ap.add_argument("--nstenergy", type=int, default=1000,
                    help="energy interval, both codes (GROMACS nstcalcenergy = nstenergy)")
    ap.add_argument("--halox", default=os.environ.get("HALOX"),
                    help="halox binary (default $HALOX, build/halox, or halox on PATH)")
    ap.add_argument("--build-dir", help="CMake build dir of the halox binary (for provenance)")
    ap.add_argument("--gmx", default="gmx")
    ap.add_argument("--gmx-mpi", default="gmx_mpi")
    ap.add_argument("--skip-gromacs", action="store_true")
    ap.add_argument("--skip-halox", action="store_true")
    ap.add_argument("--out", help="results file (default bench/results/cpu_md_<N>k.json)")
    ap.add_argument("--workdir", help="where runs happen (default: a new temporary directory)")
    a = ap.parse_args()

    ranks = [int(r) for r in a.ranks.replace(",", " ").split()]
    if not ranks or min(ranks) < 1:
        ap.error("--ranks needs positive rank counts")
    if a.rlist < a.rc:
        ap.error("--rlist must be >= --rc")
    if a.repeat < 1:
        ap.error("--repeat must be >= 1")
    if a.mixture is not None and not 0.0 <= a.mixture <= 1.0:
        ap.error("--mixture takes an ethanol mole fraction between 0 and 1")
    if a.mixture is not None and a.conf and not a.top:
        ap.error("--mixture with --conf needs --top (the topology halox build --top wrote)")
    if a.top:
        a.top = os.path.abspath(a.top)
    # the model halox md runs, the system's name in the results
    a.md_model = a.model if a.mixture is None else f"oplsaa-{a.model}"
    a.system = (f"water-{a.model}" if a.mixture is None
                else f"ethanol-water-x{a.mixture:g}-{a.model}")
    if a.skip_halox:
        a.halox = None
    elif a.halox is None:
        for cand in (os.path.join(REPO, "build", "halox"), shutil.which("halox")):
            if cand and os.access(cand, os.X_OK):
                a.halox = cand
                break
    if a.halox:
        a.halox = os.path.abspath(a.halox)
    if not a.skip_gromacs:
        need = [a.gmx] + ([a.gmx_mpi, "mpirun"] if max(ranks) > 1 else [])
        missing = [t for t in need if shutil.which(t) is None]
        if missing:
            raise SystemExit(f"cpu_md: not found: {missing} (scripts/setup.sh installs GROMACS "
                             "and Open MPI), or pass --skip-gromacs")
    out = a.out or os.path.join(REPO, "bench", "results", f"cpu_md_{round(a.atoms / 1000)}k.json")
    work = a.workdir or tempfile.mkdtemp(prefix="halox_cpu_md.")
    os.makedirs(work, exist_ok=True)
    work = os.path.abspath(work)
    log(f"work directory {work}")

    command = os.environ.get("HALOX_BENCH_COMMAND") or " ".join(
        shlex.quote(c) for c in [sys.argv[0]] + sys.argv[1:])
    build_dir = a.build_dir or (os.path.dirname(a.halox) if a.halox else None)
    meta = provenance.collect(command=command, build_dir=build_dir, repo=REPO, gmx=a.gmx)

    conf, conf_source = build_conf(a, work)
    equilibrated = equilibrate(a, conf, work)
    a.have_velocities = equilibrated is not None
    if equilibrated:
        conf_source += f"; then {a.equil_steps} steps of halox md with v-rescale at {a.temp} K"
        conf = equilibrated
    a.natoms, box = gro_atoms_box(conf)
    if min(box) < 2 * a.rlist:
        raise SystemExit(f"cpu_md: box {box} is shorter than 2 rlist = {2 * a.rlist}")

    runs = []
    for rnd in range(a.repeat):
        if a.repeat > 1:
            log(f"round {rnd + 1} of {a.repeat}")
        for r in ranks:
            if not a.skip_gromacs:
                runs.append(dict(gromacs_run(a, conf, work, r, rnd), round=rnd))
            if a.halox or not a.skip_halox:
                for prec in a.precision.split():
                    runs.append(dict(halox_run(a, conf, work, r, prec, rnd), round=rnd))
    params = {"rc": a.rc, "rlist": a.rlist, "nstlist": a.nstlist, "eps_rf": a.eps_rf,
              "dt": a.dt, "constraints": "SETTLE", "ensemble": "NVE", "temperature": a.temp,
              "velocities": "from the equilibrated file" if a.have_velocities
              else "generated by each code",
              "nstenergy": a.nstenergy, "model": a.md_model, "box_nm": box,
              "conf_source": conf_source}
    for r in runs:
        r["parameters"] = params

    # One row per (code, ranks, precision): the median over the rounds (the run itself with
    # one round); the comparison is made on these medians.
    def key(x):
        return (x["backend"] == "gromacs", x["ranks"], x.get("precision"))

    summary = []
    for k in dict.fromkeys(key(x) for x in runs):
        rs = [x for x in runs if key(x) == k and "us_per_step" in x]
        if not rs:
            continue
        us = sorted(x["us_per_step"] for x in rs)
        med = statistics.median(us)
        first = rs[0]
        summary.append({"backend": first["backend"], "ranks": first["ranks"],
                        "precision": first.get("precision"),
                        "threads_per_rank": first["threads_per_rank"], "steps": first["steps"],
                        "rounds": len(us), "us_per_step_median": med, "us_per_step_min": us[0],
                        "us_per_step_max": us[-1],
                        "ns_per_day_median": a.dt * 1e-3 * 86400 / (med * 1e-6),
                        "halo_share_median": statistics.median(
                            [x["halo_share"] for x in rs if x.get("halo_share") is not None])
                        if any(x.get("halo_share") is not None for x in rs) else None})
    comparison = []
    for r in ranks:
        g = next((x for x in summary if x["backend"] == "gromacs" and x["ranks"] == r), None)
        for h in (x for x in summary if x["backend"] != "gromacs" and x["ranks"] == r):
            if g:
                per_round = []
                for rnd in range(a.repeat):
                    gr = [x for x in runs if x["backend"] == "gromacs" and x["ranks"] == r and
                          x["round"] == rnd and "us_per_step" in x]
                    hr = [x for x in runs if x["backend"] != "gromacs" and x["ranks"] == r and
                          x.get("precision") == h["precision"] and x["round"] == rnd and
                          "us_per_step" in x]
                    if gr and hr:
                        per_round.append(hr[0]["us_per_step"] / gr[0]["us_per_step"])
                comparison.append({"ranks": r, "halox_precision": h["precision"],
                                   "halox_over_gromacs_time": h["us_per_step_median"] /
                                   g["us_per_step_median"],
                                   "ratio_per_round": per_round,
                                   "gromacs_us_per_step": g["us_per_step_median"],
                                   "halox_us_per_step": h["us_per_step_median"],
                                   "halox_halo_share": h["halo_share_median"],
                                   "gromacs_halo_share": g["halo_share_median"]})
    provenance.write_json_atomic(out, {"meta": meta, "runs": runs, "summary": summary,
                                       "comparison": comparison})

    print(f"\n{a.natoms} atoms {a.model}, rc {a.rc} rlist {a.rlist} nstlist {a.nstlist} "
          f"eps_rf {a.eps_rf} dt {a.dt}, {a.threads} cores")
    print(f"{'code':16s} {'ranks':>5s} {'thr/rank':>8s} {'steps':>6s} {'rounds':>6s} "
          f"{'us/step':>10s} {'min':>9s} {'max':>9s} {'ns/day':>9s} {'halo share':>10s}")
    for r in runs:
        if "skipped" in r and r.get("round", 0) == 0:
            name = "GROMACS" if r["backend"] == "gromacs" else f"halox {r['precision']}"
            print(f"{name:16s} {r['ranks']:5d} {r['threads_per_rank']:8d}  skipped: {r['skipped']}")
    for r in summary:
        name = "GROMACS" if r["backend"] == "gromacs" else f"halox {r['precision']}"
        share = r.get("halo_share_median")
        share = f"{100 * share:9.1f}%" if share is not None else f"{'-':>10s}"
        print(f"{name:16s} {r['ranks']:5d} {r['threads_per_rank']:8d} {r['steps']:6d} "
              f"{r['rounds']:6d} {r['us_per_step_median']:10.1f} {r['us_per_step_min']:9.1f} "
              f"{r['us_per_step_max']:9.1f} {r['ns_per_day_median']:9.3f} {share}")
    print("us/step: the median over the rounds")
    for c in comparison:
        rounds = ", ".join(f"{x:.2f}" for x in c["ratio_per_round"])
        print(f"ranks {c['ranks']}: halox ({c['halox_precision']}) takes "
              f"{c['halox_over_gromacs_time']:.2f}x GROMACS's time per step"
              + (f" (per round: {rounds})" if len(c["ratio_per_round"]) > 1 else ""))
    print(f"results: {out}")
    # the same numbers as a bar chart next to the JSON, where gnuplot is installed
    if summary and shutil.which("gnuplot"):
        plot = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "plot.py")
        svg = os.path.splitext(out)[0] + ".svg"
        r = subprocess.run([sys.executable, plot, "bench", out, "-o", svg], capture_output=True,
                           text=True)
        print(f"plot: {svg}" if r.returncode == 0 else f"plot failed: {r.stderr.strip()}")


if __name__ == "__main__":
    main()
