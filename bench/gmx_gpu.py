#!/usr/bin/env python3
"""GROMACS on the GPU, run the way halox's GPU benchmarks are compared with it.

    python3 bench/gmx_gpu.py locate [--no-unpack]      where the GROMACS with CUDA is, or why none
    python3 bench/gmx_gpu.py run --conf BOX.gro ...    one mdrun, its result as a halox result file
    python3 bench/gmx_gpu.py parse md.log [--steps N]  the figures of an md.log, as JSON

Finding GROMACS: $HALOX_GMX (a gmx binary), else `gmx` on PATH when it was built with CUDA and
thread-MPI, else a copy already unpacked at /tmp/gmxi, else a tarball that unpacks to /tmp/gmxi
(bin/gmx, share/gromacs): $HALOX_GMX_TARBALL, or .tools/gmx-cuda-sm90.tar.xz in this repository.
The GPU test machines have neither GROMACS nor a network: carry such a tarball with the checkout.

`run` makes the run input with bench/gromacs/common.sh from bench/gromacs/gpu.mdp.in (the
template `halox md -f` also reads: SPC/E or the box's topology, reaction field with eps_rf = 0
(infinity), rc 1.0 nm, dt 2 fs, buffer tolerance 0.005, velocities drawn at 300 K), with a
v-rescale thermostat by default, because GROMACS raises nstlist only with a thermostat
(`--thermostat no` gives NVE and GROMACS's nstlist 10). Then

    GMX_CUDA_GRAPH=1 GMX_ENABLE_DIRECT_GPU_COMM=1 gmx mdrun -nb gpu -update gpu -pin on
        -noconfout -nsteps WARMUP+STEPS -resetstep WARMUP -ntmpi N -ntomp CORES/N
        [-npme 0 -dd A B C] (-gpu_id 01.. | -gputasks 0000..)

with -nstlist 100 (GROMACS's fastest here; HALOX_GMX_NSTLIST=0 leaves the choice to it). Rank i
uses GPU i mod GPUS, as halox's ranks do: one rank per GPU maps with -gpu_id, several per GPU with
-gputasks (a -gpu_id that repeats an id is refused). ns/day is GROMACS's own over the steps after
the reset, every step counted, pair searches included, as halox's "with searches" figure.
"""

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))
import provenance  # noqa: E402

TARBALL = "gmx-cuda-sm90.tar.xz"
# The environment of every GPU mdrun: CUDA graphs and GPU-direct halo exchange between thread-MPI
# ranks, GROMACS's fastest settings for a GPU-resident step.
GMX_ENV = {"GMX_CUDA_GRAPH": "1", "GMX_ENABLE_DIRECT_GPU_COMM": "1"}
NEED = ("a GROMACS build with CUDA and thread-MPI: `gmx` on PATH, HALOX_GMX naming such a gmx, or "
        "HALOX_GMX_TARBALL naming a tarball that unpacks to /tmp/gmxi (bin/gmx; default "
        f"<repository>/.tools/{TARBALL})")


def log(msg):
    print(f"gmx_gpu: {msg}", file=sys.stderr, flush=True)


def gmx_info(gmx):
    """The fields of `gmx --version` ({} when it does not run)."""
    try:
        p = subprocess.run([gmx, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return {}
    if p.returncode != 0:
        return {}
    fields = {}
    for line in (p.stdout + p.stderr).splitlines():
        if ":" in line:
            k, v = line.split(":", 1)
            fields.setdefault(k.strip(), v.strip())
    return fields


def gpu_capable(gmx):
    """None when gmx can run these benchmarks, else why not."""
    f = gmx_info(gmx)
    if not f:
        return f"{gmx} --version does not run"
    gpu = f.get("GPU support", "")
    if "CUDA" not in gpu:
        return f"{gmx} has no CUDA support (GPU support: {gpu or 'not reported'})"
    mpi = f.get("MPI library", "")
    if mpi and mpi != "thread_mpi":
        return f"{gmx} is built with {mpi}; these runs start thread-MPI ranks (-ntmpi)"
    return None


def unpack_dir(env=None):
    """Where the tarball is unpacked: /tmp, the prefix its GROMACS was built for (it finds its
    data there); HALOX_GMX_UNPACK_DIR moves it (the tests' own tarballs)."""
    env = os.environ if env is None else env
    return env.get("HALOX_GMX_UNPACK_DIR") or "/tmp"


def tarball_path(env=None, repo=REPO):
    env = os.environ if env is None else env
    return env.get("HALOX_GMX_TARBALL") or os.path.join(repo, ".tools", TARBALL)


def locate(unpack=True, env=None, repo=REPO):
    """(gmx path, how it was found) or (None, why there is none)."""
    env = os.environ if env is None else env
    tried = []
    explicit = env.get("HALOX_GMX")
    if explicit:
        path = shutil.which(explicit) or explicit
        why = gpu_capable(path)
        if why:
            return None, f"HALOX_GMX={explicit}: {why}"
        return path, "HALOX_GMX"
    on_path = shutil.which("gmx", path=env.get("PATH"))
    if on_path:
        why = gpu_capable(on_path)
        if why is None:
            return on_path, "PATH"
        tried.append(why)
    where = unpack_dir(env)
    prefix = os.path.join(where, "gmxi")
    unpacked = os.path.join(prefix, "bin", "gmx")
    if os.access(unpacked, os.X_OK) and gpu_capable(unpacked) is None:
        return unpacked, f"{prefix} (unpacked earlier)"
    tar = tarball_path(env, repo)
    if not os.path.isfile(tar):
        what = ("HALOX_GMX_TARBALL=" + tar) if env.get("HALOX_GMX_TARBALL") else tar
        tried.append(f"no tarball at {what}")
        return None, "no GROMACS with CUDA (" + "; ".join(tried) + "): needs " + NEED
    if not unpack:
        return unpacked, f"{tar} (to be unpacked at {where})"
    log(f"unpacking {tar} at {where}")
    p = subprocess.run(["tar", "-xf", tar, "-C", where], capture_output=True, text=True)
    if p.returncode != 0:
        return None, f"cannot unpack {tar}: {p.stderr.strip()[-300:]}"
    if not os.access(unpacked, os.X_OK):
        return None, f"{tar} did not unpack to {unpacked}: needs {NEED}"
    why = gpu_capable(unpacked)
    if why:
        return None, f"{tar}: {why}"
    return unpacked, tar


def gpu_map(ranks, gpus):
    """mdrun's GPU options: rank i on GPU i mod gpus, as halox places its ranks."""
    ids = [i % gpus for i in range(ranks)]
    sep = "" if gpus <= 10 else ","
    if len(set(ids)) == len(ids):
        return ["-gpu_id", sep.join(str(i) for i in ids)]
    return ["-gputasks", sep.join(str(i) for i in ids)]


# GROMACS's pair-list interval on the GPU. Left to itself (mdp nstlist 10) it raises it only as far
# as its buffer rules allow with the CPU search it runs (25 for SPC/E at 45k, 2026-12-04: 2 ms of
# host search per search step, 956 ns/day); its documentation advises 100 and more for runs with
# the update on the GPU, and -nstlist 100 (it then chooses rlist for that interval, 1.498 nm) is
# what it runs fastest with here (1374 ns/day at 45k on an H200). 0: GROMACS's own choice.
GMX_NSTLIST = int(os.environ.get("HALOX_GMX_NSTLIST", "100"))


def mdrun_command(gmx, ranks, gpus, dd, nsteps, resetstep, ntomp, tpr="topol.tpr", deffnm="md",
                  nstlist=None):
    nstlist = GMX_NSTLIST if nstlist is None else nstlist
    cmd = [gmx, "mdrun", "-s", tpr, "-deffnm", deffnm, "-nb", "gpu", "-update", "gpu",
           "-pin", "on", "-noconfout", "-nsteps", str(nsteps), "-resetstep", str(resetstep),
           "-ntmpi", str(ranks), "-ntomp", str(ntomp)]
    if nstlist > 0:
        cmd += ["-nstlist", str(nstlist)]
    if ranks > 1:
        # reaction field: no PME ranks; the grid halox runs
        cmd += ["-npme", "0", "-dd"] + [str(d) for d in dd]
    return cmd + gpu_map(ranks, gpus)


def reset_step(nsteps):
    """-resetstep for a run of nsteps: a fifth of it as the warm-up, on a multiple of 100 steps
    in long runs (the pair-list interval GROMACS picks on a GPU), so that the counted steps hold
    their share of pair searches."""
    r = nsteps // 5
    return r // 100 * 100 if nsteps >= 1000 else r


NUM = r"([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"


def parse_md_log(text, steps=None):
    """GROMACS's own figures from an md.log: ns/day, wall time, the pair-list interval it chose,
    the grid, version. steps: the counted steps (after the reset), for the time per step."""
    out = {}
    m = re.search(r"^Performance:\s+" + NUM + r"\s+" + NUM, text, re.M)
    if m:
        out["ns_per_day"] = float(m.group(1))
        out["hours_per_ns"] = float(m.group(2))
    m = re.search(r"^\s+Time:\s+" + NUM + r"\s+" + NUM, text, re.M)
    if m:
        out["core_s"] = float(m.group(1))
        out["wall_s"] = float(m.group(2))
    m = re.search(r"Changing nstlist from (\d+) to (\d+), rlist from " + NUM + " to " + NUM, text)
    if m:
        out["nstlist_mdp"] = int(m.group(1))
        out["nstlist"] = int(m.group(2))
        out["rlist"] = float(m.group(4))
    else:
        m = re.search(r"^\s+nstlist\s+=\s+(\d+)", text, re.M)
        if m:
            out["nstlist"] = int(m.group(1))
        m = re.search(r"^\s+rlist\s+=\s+" + NUM, text, re.M)
        if m:
            out["rlist"] = float(m.group(1))
    m = re.search(r"Can not increase nstlist because ([^\n]*)", text)
    if m:
        out["nstlist_note"] = "can not increase nstlist because " + m.group(1).strip()
    m = re.search(r"Domain decomposition grid (\d+) x (\d+) x (\d+)", text)
    out["dd"] = [int(m.group(i)) for i in (1, 2, 3)] if m else [1, 1, 1]
    m = re.search(r"^step (\d+): resetting all time and cycle counters", text, re.M)
    if m:
        out["reset_at_step"] = int(m.group(1))
    m = re.search(r"^GROMACS version:\s+(.*)$", text, re.M)
    if m:
        out["gromacs_version"] = m.group(1).strip()
    m = re.search(r"^GPU support:\s+(.*)$", text, re.M)
    if m:
        out["gpu_support"] = m.group(1).strip()
    # what GROMACS said about its GPU set-up (graphs, direct communication, task mapping)
    notes = []
    for line in text.splitlines():
        s = line.strip()
        if re.search(r"CUDA Graph|GPU direct communication|direct GPU communication|"
                     r"Mapping of GPU IDs|PP tasks will do|GPU-resident|update and constraints "
                     r"on the GPU", s, re.I) and s not in notes:
            notes.append(s)
    if notes:
        out["gpu_notes"] = notes[:12]
    m = re.search(r"^Fatal error:\s*\n(.*?)(?:\n\n|\n-{5,})", text, re.M | re.S)
    if m:
        out["fatal_error"] = " ".join(m.group(1).split())
    if steps and "wall_s" in out:
        out["us_per_step"] = out["wall_s"] / steps * 1e6
    return out


def meta(command, gmx=None, halox=None):
    m = provenance.collect(command=command, repo=REPO, gmx=gmx or "gmx")
    # a tree copied to a device machine may carry a stale .git: the caller names the commit
    if os.environ.get("HALOX_GIT_REVISION"):
        m["git_revision"] = os.environ["HALOX_GIT_REVISION"]
    topo = provenance._run(["nvidia-smi", "topo", "-m"])
    if topo:
        m["gpu_topology"] = topo
    if halox:
        # the build and the GPUs as halox sees them
        ver = provenance._run([halox, "version"])
        if ver:
            m["halox_version"] = ver
    return m


def cores():
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def quoted(cmd):
    return " ".join(shlex.quote(c) for c in cmd)


def prepare(gmx, conf, work, a, nsteps, dry=False):
    """grompp through bench/gromacs/common.sh: WORK/topol.tpr and WORK/grompp.mdp."""
    settings = {"GMX": gmx, "MODEL": a.model, "TOP": a.top or "", "MDP_IN": "gpu.mdp.in",
                "TCOUPL": a.thermostat, "DT": a.dt, "RC": a.rc, "EPS_RF": a.eps_rf,
                "NSTEPS": nsteps, "GEN_VEL": "yes", "GEN_TEMP": a.temp, "SEED": a.seed,
                "MAXWARN": a.maxwarn}
    script = (f"source {shlex.quote(os.path.join(HERE, 'gromacs', 'common.sh'))} && hxg_prepare "
              f"{shlex.quote(conf)} {shlex.quote(work)} "
              + " ".join(shlex.quote(f"{k}={v}") for k, v in settings.items()))
    cmd = ["bash", "-c", script]
    if dry:
        print(quoted(cmd))
        return True
    os.makedirs(work, exist_ok=True)
    with open(os.path.join(work, "prepare.log"), "w") as f:
        p = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT)
    return p.returncode == 0


def grompp_warnings(work):
    try:
        with open(os.path.join(work, "grompp.log"), errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    return [" ".join(w.split()) for w in re.findall(r"^WARNING \d+ \[[^\]]*\]:\s*\n(.*?)\n\n",
                                                    text, re.M | re.S)]


def cmd_run(a):
    if a.ranks < 1 or a.gpus < 1 or a.steps < 1 or a.warmup < 0:
        raise SystemExit("gmx_gpu: --ranks, --gpus and --steps must be >= 1, --warmup >= 0")
    dd = [int(x) for x in a.dd.lower().split("x")] if a.dd else [a.ranks, 1, 1]
    if len(dd) != 3 or dd[0] * dd[1] * dd[2] != a.ranks:
        raise SystemExit(f"gmx_gpu: --dd {a.dd}: three factors whose product is --ranks {a.ranks}")
    if not a.top and a.model not in ("spce", "spc", "tip3p"):
        raise SystemExit(f"gmx_gpu: --model {a.model} needs --top (the box's topology)")
    conf = os.path.abspath(a.conf)
    if a.top:
        a.top = os.path.abspath(a.top)
    nsteps = a.warmup + a.steps
    ntomp = max(1, (a.cores or cores()) // a.ranks)
    command = os.environ.get("HALOX_BENCH_COMMAND") or quoted([sys.argv[0]] + sys.argv[1:])
    if a.dry_run:
        gmx, how = locate(unpack=False)
        gmx = gmx or "gmx"
        work = a.workdir or "WORKDIR"
        prepare(gmx, conf, work, a, nsteps, dry=True)
        env = " ".join(f"{k}={v}" for k, v in GMX_ENV.items())
        print(f"cd {shlex.quote(work)} && env {env} OMP_NUM_THREADS={ntomp} "
              + quoted(mdrun_command(gmx, a.ranks, a.gpus, dd, nsteps, a.warmup, ntomp)))
        return 0
    gmx, how = locate()
    base = {"system": a.system or f"water-{a.model}", "model": a.model, "atoms": a.atoms,
            "mode": "md", "backend": "gromacs", "engine": "gpu", "ranks": a.ranks,
            "gpus": min(a.gpus, a.ranks), "dd": dd}
    out = a.out
    if gmx is None:
        raise SystemExit(f"gmx_gpu: error: {how}")
    log(f"GROMACS: {gmx} ({how})")
    work = os.path.abspath(a.workdir or tempfile.mkdtemp(prefix="halox_gmx_gpu."))
    os.makedirs(work, exist_ok=True)
    if not prepare(gmx, conf, work, a, nsteps):
        with open(os.path.join(work, "prepare.log"), errors="replace") as f:
            tail = f.read()[-2000:]
        raise SystemExit(f"gmx_gpu: grompp failed ({work}/prepare.log):\n{tail}")
    cmd = mdrun_command(gmx, a.ranks, a.gpus, dd, nsteps, a.warmup, ntomp)
    env = dict(os.environ, OMP_NUM_THREADS=str(ntomp), **GMX_ENV)
    log(f"running in {work}: {quoted(cmd)}")
    t0 = time.perf_counter()
    with open(os.path.join(work, "mdrun.out"), "w") as f:
        p = subprocess.run(cmd, cwd=work, stdout=f, stderr=subprocess.STDOUT, env=env)
    wall = time.perf_counter() - t0
    try:
        with open(os.path.join(work, "md.log"), errors="replace") as f:
            text = f.read()
    except OSError:
        text = ""
    parsed = parse_md_log(text, a.steps)
    if p.returncode != 0 or "ns_per_day" not in parsed:
        with open(os.path.join(work, "mdrun.out"), errors="replace") as f:
            tail = f.read()[-2000:]
        why = parsed.get("fatal_error") or tail
        raise SystemExit(f"gmx_gpu: mdrun failed (exit {p.returncode}; {work}/md.log): {why}")
    run = dict(base, **{
        "steps": a.steps, "warmup_steps": a.warmup,
        "us_per_step": parsed["us_per_step"], "ns_per_day": parsed["ns_per_day"],
        # GROMACS counts every step, its pair searches included
        "us_per_step_with_search": parsed["us_per_step"],
        "ns_per_day_with_search": parsed["ns_per_day"],
        "nstlist": parsed.get("nstlist"), "rlist": parsed.get("rlist"),
        "dd_gromacs": parsed["dd"], "thermostat": a.thermostat, "dt_ps": a.dt, "rc": a.rc,
        "threads_per_rank": ntomp, "precision": "mixed (GROMACS CUDA kernels)",
        "timing": f"GROMACS counters after -resetstep {a.warmup}: every step counted, pair "
                  "searches included",
        "command": "env " + " ".join(f"{k}={v}" for k, v in GMX_ENV.items()) + " " + quoted(cmd),
        "gromacs": parsed.get("gromacs_version"), "gromacs_binary": f"{gmx} ({how})",
        "grompp_warnings": grompp_warnings(work), "wall_s": wall, "workdir": work})
    for k in ("nstlist_note", "gpu_notes"):
        if k in parsed:
            run[k] = parsed[k]
    provenance.write_json_atomic(out, {"meta": meta(command, gmx), "runs": [run]})
    if not a.keep_files:
        # the run input, checkpoint and energies are large (100 MB at millions of atoms) and
        # not read: the logs and the .mdp stay
        for f in os.listdir(work):
            if f.endswith((".tpr", ".cpt", ".edr", ".trr", ".xtc")):
                os.unlink(os.path.join(work, f))
    print(f"GROMACS GPU {a.atoms} atoms, {a.ranks} rank(s) on {run['gpus']} GPU(s), "
          f"{'x'.join(map(str, dd))}: {run['ns_per_day']:.1f} ns/day, "
          f"{run['us_per_step']:.1f} us/step (nstlist {run['nstlist']}) -> {out}")
    return 0


def main():
    ap = argparse.ArgumentParser(prog="bench/gmx_gpu.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    lo = sub.add_parser("locate", help="print the GROMACS that `run` uses, or why there is none")
    lo.add_argument("--no-unpack", action="store_true",
                    help="say where the tarball would unpack, without unpacking it")
    pa = sub.add_parser("parse", help="the figures of a GROMACS md.log as JSON")
    pa.add_argument("log")
    pa.add_argument("--steps", type=int, help="the counted steps (for the time per step)")
    ru = sub.add_parser("run", help="one GPU mdrun, written as a halox result file")
    ru.add_argument("--conf", required=True, help="the box (.gro)")
    ru.add_argument("--top", help="its GROMACS topology (default: bench/gromacs/<model>.itp)")
    ru.add_argument("--model", default="spce")
    ru.add_argument("--system", help="the system's name in the results (default water-MODEL)")
    ru.add_argument("--atoms", type=int, default=0, help="atoms, for the results")
    ru.add_argument("--ranks", type=int, default=1, help="thread-MPI ranks")
    ru.add_argument("--gpus", type=int, default=1, help="GPUs the ranks are spread over")
    ru.add_argument("--dd", help="domain grid AxBxC (default RANKSx1x1)")
    ru.add_argument("--steps", type=int, default=2000, help="counted steps")
    ru.add_argument("--warmup", type=int, default=200, help="steps before the counters reset")
    ru.add_argument("--thermostat", default="v-rescale", choices=["v-rescale", "no"])
    ru.add_argument("--temp", type=float, default=300.0)
    ru.add_argument("--seed", type=int, default=1)
    ru.add_argument("--dt", type=float, default=0.002)
    ru.add_argument("--rc", type=float, default=1.0)
    ru.add_argument("--eps-rf", type=float, default=0.0)
    ru.add_argument("--maxwarn", type=int, default=5,
                    help="grompp warnings let through (printed and recorded)")
    ru.add_argument("--cores", type=int, help="cores to share over the ranks (default: all)")
    ru.add_argument("--workdir", help="where GROMACS runs (default: a new temporary directory)")
    ru.add_argument("--out", default="gmx_gpu.json", help="the result file")
    ru.add_argument("--dry-run", action="store_true", help="print the commands only")
    ru.add_argument("--keep-files", action="store_true",
                    help="keep the run input, checkpoint and energy file in --workdir")
    a = ap.parse_args()
    if a.what == "locate":
        gmx, how = locate(unpack=not a.no_unpack)
        if gmx is None:
            print(how)
            return 1
        print(f"{gmx}\t{how}")
        return 0
    if a.what == "parse":
        with open(a.log, errors="replace") as f:
            json.dump(parse_md_log(f.read(), a.steps), sys.stdout, indent=2)
        print()
        return 0
    return cmd_run(a)


if __name__ == "__main__":
    sys.exit(main())
