#!/usr/bin/env python3
"""halox md --gpu and GROMACS on the GPU, side by side in one call (scripts/h200_compare.sh).

    python3 bench/compare_gpu.py --halox BUILD/halox --out DIR [--budget S] [--dry-run] ...

What a user gets from each code, every step counted: `halox md --gpu` with its defaults (the
log's closing "performance:" line covers every step, pair searches included) against GROMACS
with its best GPU settings (bench/gmx_gpu.py: -nb gpu -update gpu, CUDA graphs, direct GPU
communication, thread-MPI ranks, -nstlist 100 (HALOX_GMX_NSTLIST); ns/day from md.log over the steps
after -resetstep, searches included). Both on the same box and topology
(`halox build water --atoms N --top topol.top`) and the same run parameters: one .mdp from
bench/gromacs/gpu.mdp.in read by `halox md -f` and `gmx grompp -f` (SPC/E, reaction field
eps_rf = 0, rc 1.0 nm, dt 2 fs, buffer tolerance 0.005, velocities at 300 K). The two files
differ in the thermostat only: GROMACS raises nstlist only with one, so by default it runs
v-rescale while halox runs NVE as its defaults do (--thermostat both|none to change that).

The configurations (the issues' benchmarks), most telling first; each is a pair of runs, and a
pair that does not fit what is left of --budget is skipped, with the reason:
  1gpu       45k, 180k, 360k atoms on one GPU: halox md --gpu; gmx -ntmpi 1
  4r-4x1x1   45k on 4 ranks of one GPU under MPS: mpirun -np 4 halox md --gpu --dd 4x1x1;
             gmx -ntmpi 4 -gputasks 0000 -dd 4 1 1 (and 2x2x1 the same way)
  8r-2x2x2   45k on 8 ranks of one GPU, 2x2x2
  2gpu       with two or more GPUs: 45k and 180k, one rank per GPU (2x1x1; MPS off unless
             --mps-2gpu): mpirun -np 2 halox md --gpu --dd 2x1x1; gmx -ntmpi 2 -gpu_id 01
Steps: each run is sized to take about --seconds of stepping from the expected ns/day of its
code and configuration, corrected by what the runs so far measured. Every launch runs under
`timeout -s KILL`. Results: DIR/compare.json (bench/results format: meta with provenance, the
runs, the comparison, what was skipped), rewritten after every run; logs in DIR/<config>/.
The table printed last has halox, GROMACS, their ratio (above 1: halox faster) with every step
counted, beside it halox without its search work (the timing table's repartition+search
taken out of its total: not what a user gets), and halox's search step in µs per search with
where it ran (device or host); the runs in compare.json carry the search step by part
(search_step_parts_us, as halox bench md writes it) from the log's "search step:" line.
"""

import argparse
import hashlib
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "scripts"))
import gmx_gpu  # noqa: E402
import provenance  # noqa: E402

DT = 0.002  # ps
STEPS_PER_S_PER_NSDAY = 1.0 / (DT * 1e-3 * 86400.0)  # ns/day -> steps/s at 2 fs: x * 5.79
# Expected ns/day (every step counted) before anything ran here: H200 figures of 2026-12-04
# (halox md --gpu defaults and GROMACS in the same call), rounded down. Only the step counts
# depend on them; the runs measured in this call correct them.
EXPECT = {
    # key: (ranks, gpus, atoms) -> (halox, gromacs)
    (1, 1, 45000): (1700, 1300), (1, 1, 180000): (600, 450), (1, 1, 360000): (300, 220),
    (4, 1, 45000): (380, 560), (8, 1, 45000): (300, 450),
    (2, 2, 45000): (330, 1300), (2, 2, 180000): (178, 520),
}
START_S = {"halox": 6.0, "halox-mpi": 20.0, "gromacs": 10.0}  # start-up besides the steps
# the two-GPU runs next to each other: MPS goes off for them and on again once
CONFIGS = ["1gpu-45k", "4r-4x1x1-45k", "4r-2x2x1-45k", "1gpu-180k", "2gpu-45k", "2gpu-180k",
           "8r-2x2x2-45k", "1gpu-360k"]


def say(msg=""):
    print(msg, flush=True)


def parse_config(name):
    """'4r-2x2x1-45k' -> dict(name, ranks, gpus, dd, atoms)."""
    m = re.fullmatch(r"(?:(\d)gpu|(\d+)r-(\d+)x(\d+)x(\d+))-(\d+)k", name)
    if not m:
        raise SystemExit(f"compare_gpu: unknown configuration '{name}' (known: "
                         + " ".join(CONFIGS) + "; NAME is Ngpu-Ak or Rr-AxBxC-Ak)")
    atoms = int(m.group(6)) * 1000
    if m.group(1):
        g = int(m.group(1))
        return {"name": name, "ranks": g, "gpus": g, "dd": [g, 1, 1], "atoms": atoms}
    dd = [int(m.group(i)) for i in (3, 4, 5)]
    r = int(m.group(2))
    if dd[0] * dd[1] * dd[2] != r:
        raise SystemExit(f"compare_gpu: {name}: the grid's product is not {r}")
    return {"name": name, "ranks": r, "gpus": 1, "dd": dd, "atoms": atoms}


def expected(cfg, code, scale):
    key = (cfg["ranks"], cfg["gpus"], cfg["atoms"])
    if key in EXPECT:
        base = EXPECT[key][0 if code == "halox" else 1]
    else:  # another size: per-atom cost from the nearest known run of the placement
        near = [k for k in EXPECT if k[:2] == key[:2]] or [(1, 1, 45000)]
        k = min(near, key=lambda k: abs(math.log(k[2] / key[2])))
        base = EXPECT[k][0 if code == "halox" else 1] * k[2] / key[2]
    return base * scale.get(code, 1.0)


def steps_for(nsday, seconds, fixed=0):
    """A step count that takes about `seconds` at `nsday`, in whole thousands (>= 2000); or
    the fixed count asked for."""
    if fixed > 0:
        return fixed
    n = seconds * nsday * STEPS_PER_S_PER_NSDAY
    return max(2000, int(round(n / 1000.0)) * 1000)


# ---- halox's md.log ---------------------------------------------------------------------------
HALOX_PERF = re.compile(r"^performance:\s*" + gmx_gpu.NUM + r"\s*ns/day,\s*" + gmx_gpu.NUM
                        + r"\s*us/step(.*)$", re.M)
# "search step: X us per search, slowest rank (N searches, M on the device[; slow paths: G buffer
# growths, U halo updates]): state to host A, migration B, ... us" (app/md_report.c)
HALOX_SEARCH = re.compile(r"^search step: " + gmx_gpu.NUM + r" us per search, slowest rank \((\d+) "
                          r"searches, (\d+) on the device(?:; slow paths: (\d+) buffer growths, "
                          r"(\d+) halo updates)?\):(.*) us$", re.M)
# the log's names of the parts -> the keys of halox bench md's search_step_parts_us
SEARCH_KEYS = {"state to host": "state_to_host", "migration": "migration",
               "topology+plan": "topology_plan", "halo set-up": "halo_setup",
               "local set+upload": "local_set_upload", "x halo+pair search": "halo_x_pair_search",
               "of which x halo": "halo_x", "device migration": "device_migration",
               "device local set": "device_local_set", "device plan maps": "device_plan_maps",
               "counts+reduction": "counts_reduction", "plan from counts": "plan_from_counts",
               "agreements": "agreements"}


def parse_search_line(text):
    """The search step by part from halox md's log: {} when the log has no such line."""
    m = HALOX_SEARCH.findall(text)
    if not m:
        return {}
    us, n, ndev, grow, upd, rest = m[-1]
    parts = {}
    for item in rest.split(","):
        p = re.fullmatch(r"\s*(.+?) " + gmx_gpu.NUM + r"\s*", item)
        if p and p.group(1) in SEARCH_KEYS:
            parts[SEARCH_KEYS[p.group(1)]] = float(p.group(2))
    out = {"search_step_us": float(us), "search_step_parts_us": parts,
           "search_step_searches": int(n), "search_step_device_searches": int(ndev),
           "search_step_on": "device" if int(ndev) > 0 else "host"}
    if grow != "":
        out.update(search_step_retries=int(grow), search_step_halo_updates=int(upd))
    return out


def parse_halox_log(text):
    """The closing performance line (every step), the timing table's search and total, the
    backend, pair-list interval and radius the run used."""
    out = {}
    m = HALOX_PERF.findall(text)
    if m:
        last = m[-1]
        out.update(ns_per_day=float(last[0]), us_per_step=float(last[1]))
        n = re.search(r"\((\d+) steps, (\d+) atoms", last[2])
        if n:
            out.update(steps=int(n.group(1)), atoms=int(n.group(2)))
    m = re.search(r"^\s+backend (\S+), halo exchange (\S+)", text, re.M)
    if m:
        out["engine"], out["halo"] = m.group(1).rstrip(","), m.group(2)
    m = re.search(r"^\s+nstlist (\d+)", text, re.M)
    if m:
        out["nstlist"] = int(m.group(1))
    m = re.search(r"^\s+rlist " + gmx_gpu.NUM, text, re.M)
    if m:
        out["rlist"] = float(m.group(1))
    m = re.search(r"^\s+grid (\d+) x (\d+) x (\d+)", text, re.M)
    if m:
        out["dd"] = [int(m.group(i)) for i in (1, 2, 3)]
    m = re.search(r"(?:pair searches|repartitions/pair searches) (\d+)", text)
    if m:
        out["searches"] = int(m.group(1))
    rows = {}
    for name in ("repartition+search", "total"):
        r = re.search(r"^\s+" + re.escape(name) + r"\s+" + gmx_gpu.NUM, text, re.M)
        if r:
            rows[name] = float(r.group(1))
    out.update(parse_search_line(text))
    if "total" in rows and "repartition+search" in rows and out.get("steps"):
        rest = rows["total"] - rows["repartition+search"]
        out["search_s"] = rows["repartition+search"]
        out["total_s"] = rows["total"]
        if rest > 0:
            out["ns_per_day_search_work_removed"] = (DT * 1e-3 * 86400.0
                                                     / (rest / out["steps"]))
    return out


# ---- the driver -------------------------------------------------------------------------------
class Driver:
    def __init__(self, a):
        self.a = a
        self.t0 = time.monotonic()
        self.scale = {}  # code -> measured / expected ns/day, geometric mean
        self.logs = {}  # code -> list of log ratios
        self.runs, self.comparison, self.skipped = [], [], []
        self.boxes = {}  # atoms -> (gro, top, tpr dir)
        self.mps = None  # None: unknown/untouched, True/False: as this driver set it
        self.virtual = 0.0  # the dry run's clock

    def elapsed(self):
        # a dry run spends the predicted times, so that it shows what the budget would cut
        return self.virtual if self.a.dry_run else time.monotonic() - self.t0

    def left(self):
        if self.a.budget <= 0:
            return float("inf")
        return self.a.budget - self.elapsed()

    # -- commands --
    def sh(self, cmd, log, env=None, timeout=None):
        """Run cmd (logged into `log`) under `timeout -s KILL`; the exit status."""
        full = (["timeout", "-s", "KILL", str(int(timeout))] if timeout else []) + cmd
        if self.a.dry_run:
            envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in (env or {}).items()
                            if os.environ.get(k) != v)
            say(("env " + envs + " " if envs else "") + gmx_gpu.quoted(full))
            return 0
        # its own process group: what a launch leaves behind (the ranks of an mpirun that
        # timeout killed) is ended with it, and holds no GPU during the next run
        with open(log, "w") as f:
            p = subprocess.Popen(full, stdout=f, stderr=subprocess.STDOUT,
                                 env=dict(os.environ, **(env or {})), start_new_session=True)
            rc = p.wait()
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        return rc

    def launcher(self, n):
        return shlex.split(self.a.mpirun) + ["-np", str(n)]

    def mps_set(self, on):
        """Start or stop the MPS control daemon (when there is one); remembered for the runs."""
        ctl = shutil.which("nvidia-cuda-mps-control")
        if not ctl and not self.a.dry_run:
            return
        if self.mps is on:
            return
        # (-d when a daemon already runs: it says so and leaves that one running)
        if on:
            self.sh(["nvidia-cuda-mps-control", "-d"], os.path.join(self.a.out, "mps.log"))
        else:
            self.sh(["bash", "-c", "echo quit | nvidia-cuda-mps-control; sleep 1"],
                    os.path.join(self.a.out, "mps.log"))
        self.mps = on

    def gpu_healthy(self):
        if self.a.dry_run:
            return True
        return self.sh([self.a.halox, "version"], os.devnull, timeout=30) == 0

    # -- boxes and run inputs --
    def box(self, atoms):
        if atoms in self.boxes:
            return self.boxes[atoms]
        d = os.path.join(self.a.out, f"box_{atoms // 1000}k")
        if not self.a.dry_run:
            os.makedirs(d, exist_ok=True)
        gro, top = os.path.join(d, "conf.gro"), os.path.join(d, "topol.top")
        rc = self.sh([self.a.halox, "build", "water", "--model", "spce", "--atoms", str(atoms),
                      "--seed", str(self.a.seed), "-o", gro, "--top", top],
                     os.path.join(d, "build.log"), timeout=300)
        if rc != 0:
            self.boxes[atoms] = None
            return None
        # one mdp per code from the one template; GROMACS's run input made once per box
        common = ["MDP_IN=gpu.mdp.in", f"DT={DT}", "RC=1.0", "EPS_RF=0", "GEN_VEL=yes",
                  "GEN_TEMP=300", f"SEED={self.a.seed}", "NSTEPS=0"]
        t_h = "v-rescale" if self.a.thermostat == "both" else "no"
        t_g = "no" if self.a.thermostat == "none" else "v-rescale"
        src = shlex.quote(os.path.join(HERE, "gromacs", "common.sh"))
        mdp_h = os.path.join(d, "halox.mdp")
        rc = self.sh(["bash", "-c", f"source {src} && hxg_mdp {shlex.quote(mdp_h)} "
                      + " ".join(common + [f"TCOUPL={t_h}"])], os.path.join(d, "mdp.log"))
        gdir = os.path.join(d, "gromacs")
        if self.gmx and rc == 0:
            settings = common + [f"TCOUPL={t_g}", f"TOP={top}", f"GMX={self.gmx}", "MAXWARN=5"]
            rc_g = self.sh(["bash", "-c", f"source {src} && hxg_prepare {shlex.quote(gro)} "
                            f"{shlex.quote(gdir)} " + " ".join(shlex.quote(x) for x in settings)],
                           os.path.join(d, "grompp.out"),
                           timeout=max(30, min(600, self.left())))
            if rc_g != 0:
                say(f"  grompp failed for {atoms} atoms: see {d}/grompp.out")
                gdir = None
        self.boxes[atoms] = (gro, mdp_h, gdir) if rc == 0 else None
        if rc == 0 and not self.a.dry_run:
            # what the box was, for the record: the files themselves are removed at the end
            self.meta.setdefault("boxes", {})[str(atoms)] = {
                "command": f"halox build water --model spce --atoms {atoms} --seed "
                           f"{self.a.seed} -o conf.gro --top topol.top",
                "conf_sha256": sha256(gro), "top_sha256": sha256(top)}
        return self.boxes[atoms]

    # -- one run of each code --
    def run_halox(self, cfg, box, d):
        gro, mdp, _ = box
        r, g = cfg["ranks"], cfg["gpus"]
        nsday = expected(cfg, "halox", self.scale)
        steps = steps_for(nsday, self.a.seconds, self.a.steps)
        log = os.path.join(d, "halox.md.log")
        cmd = [self.a.halox, "md", "--gpu", "-f", mdp, "-c", gro, "--steps", str(steps),
               "-o", os.path.join(d, "halox.confout.gro"), "-g", log]
        if r > 1:
            cmd = self.launcher(r) + cmd + ["--dd", "x".join(map(str, cfg["dd"]))]
        pred = START_S["halox-mpi" if r > 1 else "halox"] + steps / (nsday *
                                                                     STEPS_PER_S_PER_NSDAY)
        env = {"CUDA_VISIBLE_DEVICES": ",".join(str(i) for i in range(g))}
        res = {"system": "water-spce", "model": "spce", "atoms": cfg["atoms"], "mode": "md",
               "backend": "gpu" if r == 1 else "nvshmem", "engine": "gpu", "ranks": r,
               "gpus": g, "dd": cfg["dd"], "code": "halox", "config": cfg["name"],
               "mps": bool(self.mps), "thermostat": "v-rescale" if self.a.thermostat == "both"
               else "no", "timing": "halox md's closing performance line: every step counted, "
               "pair searches included", "steps": steps,
               "command": ("CUDA_VISIBLE_DEVICES=" + env["CUDA_VISIBLE_DEVICES"] + " "
                           + gmx_gpu.quoted(cmd)), "log": log}
        return self.execute(res, cmd, env, pred, os.path.join(d, "halox.out"),
                            lambda: self.read_halox(log, res))

    def read_halox(self, log, res):
        try:
            with open(log, errors="replace") as f:
                p = parse_halox_log(f.read())
        except OSError:
            return "no log " + log
        if "ns_per_day" not in p:
            return f"no performance line in {log}"
        res.update(us_per_step=p["us_per_step"], ns_per_day=p["ns_per_day"],
                   ns_per_day_with_search=p["ns_per_day"],
                   us_per_step_with_search=p["us_per_step"], atoms=p.get("atoms", res["atoms"]))
        if r := p.get("halo"):
            res["backend"] = "gpu" if res["ranks"] == 1 else {"direct": "gpu-direct",
                                                             "mpi": "gpu-mpi"}.get(r, r)
        for k in ("nstlist", "rlist", "searches", "search_s", "total_s",
                  "ns_per_day_search_work_removed", "search_step_us", "search_step_parts_us",
                  "search_step_on", "search_step_searches", "search_step_device_searches",
                  "search_step_retries", "search_step_halo_updates"):
            if k in p:
                res[k] = p[k]
        return None

    def run_gromacs(self, cfg, box, d):
        gro, _, gdir = box
        r, g = cfg["ranks"], cfg["gpus"]
        nsday = expected(cfg, "gromacs", self.scale)
        # a fifth is the warm-up
        nsteps = steps_for(nsday, self.a.seconds * 1.25, self.a.steps * 5 // 4)
        reset = gmx_gpu.reset_step(nsteps)
        ntomp = max(1, gmx_gpu.cores() // r)
        tpr = os.path.join(gdir, "topol.tpr")
        cmd = gmx_gpu.mdrun_command(self.gmx, r, g, cfg["dd"], nsteps, reset, ntomp, tpr=tpr,
                                    deffnm=os.path.join(d, "gromacs"))
        pred = START_S["gromacs"] + nsteps / (nsday * STEPS_PER_S_PER_NSDAY)
        env = dict(gmx_gpu.GMX_ENV, OMP_NUM_THREADS=str(ntomp),
                   CUDA_VISIBLE_DEVICES=",".join(str(i) for i in range(g)))
        res = {"system": "water-spce", "model": "spce", "atoms": cfg["atoms"], "mode": "md",
               "backend": "gromacs", "engine": "gpu", "ranks": r, "gpus": g, "dd": cfg["dd"],
               "code": "gromacs", "config": cfg["name"], "mps": bool(self.mps),
               "thermostat": "no" if self.a.thermostat == "none" else "v-rescale",
               "steps": nsteps - reset, "warmup_steps": reset, "threads_per_rank": ntomp,
               "timing": f"GROMACS counters after -resetstep {reset}: every step counted, pair "
               "searches included",
               "command": "env " + " ".join(f"{k}={v}" for k, v in env.items()) + " "
               + gmx_gpu.quoted(cmd), "log": os.path.join(d, "gromacs.log"),
               "gromacs_binary": f"{self.gmx} ({self.gmx_how})"}
        return self.execute(res, cmd, env, pred, os.path.join(d, "gromacs.out"),
                            lambda: self.read_gromacs(res))

    def read_gromacs(self, res):
        try:
            with open(res["log"], errors="replace") as f:
                p = gmx_gpu.parse_md_log(f.read(), res["steps"])
        except OSError:
            return "no md.log " + res["log"]
        if "ns_per_day" not in p:
            return p.get("fatal_error") or f"no Performance line in {res['log']}"
        res.update(us_per_step=p["us_per_step"], ns_per_day=p["ns_per_day"],
                   ns_per_day_with_search=p["ns_per_day"],
                   us_per_step_with_search=p["us_per_step"], nstlist=p.get("nstlist"),
                   rlist=p.get("rlist"), dd_gromacs=p.get("dd"),
                   gromacs=p.get("gromacs_version"))
        for k in ("nstlist_note", "gpu_notes"):
            if k in p:
                res[k] = p[k]
        return None

    def execute(self, res, cmd, env, pred, out, read):
        """Run one code's launch within what is left; returns res with its figures, or with
        "failed" (the reason) or None when skipped for time."""
        left = self.left()
        if pred > left:
            self.skipped.append({"config": res["config"], "code": res["code"],
                                 "reason": f"time budget: needs about {pred:.0f} s, "
                                           f"{max(left, 0):.0f} s left"})
            return None
        limit = min(3.0 * pred + 60.0, left) if math.isfinite(left) else 3.0 * pred + 60.0
        t0 = time.monotonic()
        rc = self.sh(cmd, out, env=env, timeout=max(limit, 10))
        res["wall_s"] = time.monotonic() - t0
        res["predicted_s"] = pred
        if self.a.dry_run:
            self.virtual += pred
            return res
        why = read() if rc == 0 else None
        if rc != 0 or why:
            try:
                with open(out, errors="replace") as f:
                    tail = " ".join(f.read()[-600:].split())
            except OSError:
                tail = ""
            res["failed"] = (f"killed after {limit:.0f} s (timeout -s KILL)" if rc == 137
                             else why or f"exit status {rc}: {tail}")
            if rc != 0 and not self.gpu_healthy():
                say("  the GPU does not answer after this failure: restarting MPS")
                was = self.mps
                self.mps = None
                self.mps_set(False)
                if was:
                    self.mps_set(True)
            return res
        # the steps of the next runs of this code follow what this one measured
        ratio = res["ns_per_day"] / expected(
            {"ranks": res["ranks"], "gpus": res["gpus"], "atoms": res["atoms"]}, res["code"], {})
        self.logs.setdefault(res["code"], []).append(math.log(max(ratio, 1e-3)))
        ls = self.logs[res["code"]]
        self.scale[res["code"]] = math.exp(sum(ls) / len(ls))
        return res

    def save(self):
        if self.a.dry_run:
            return
        provenance.write_json_atomic(os.path.join(self.a.out, "compare.json"), {
            "meta": self.meta, "runs": self.runs, "comparison": self.comparison,
            "skipped": self.skipped})

    def config(self, cfg):
        name = cfg["name"]
        if cfg["gpus"] > self.ngpus:
            self.skipped.append({"config": name, "reason": f"needs {cfg['gpus']} GPUs, "
                                 f"{self.ngpus} visible"})
            say(f"{name}: skipped: needs {cfg['gpus']} GPUs, {self.ngpus} visible")
            return
        # the pair must fit: a ratio needs both codes
        pred = (START_S["halox-mpi" if cfg["ranks"] > 1 else "halox"] + START_S["gromacs"]
                + self.a.seconds * 2.25)
        if pred > self.left():
            why = f"time budget: the pair needs about {pred:.0f} s, {max(self.left(), 0):.0f} s left"
            self.skipped.append({"config": name, "reason": why})
            say(f"{name}: skipped: {why}")
            return
        # Several ranks on one GPU run concurrently only under MPS, and the one-GPU runs of the
        # earlier measurements ran under it (scripts/h200.sh starts it); one rank per GPU needs
        # none. Set for every configuration, so that each run records the state it ran in.
        self.mps_set(cfg["gpus"] == 1 or self.a.mps_2gpu)
        say(f"{name}: {cfg['atoms']} atoms, {cfg['ranks']} rank(s) on {cfg['gpus']} GPU(s), "
            f"{'x'.join(map(str, cfg['dd']))}, MPS {'on' if self.mps else 'off'} "
            f"({self.elapsed():.0f} s)")
        box = self.box(cfg["atoms"])
        if box is None:
            self.skipped.append({"config": name, "reason": "building the box failed"})
            return
        d = os.path.join(self.a.out, name)
        if not self.a.dry_run:
            os.makedirs(d, exist_ok=True)
        got = {}
        h = self.run_halox(cfg, box, d)
        if h is not None:
            self.runs.append(h)
            got["halox"] = h
            self.save()
        if not self.gmx:
            self.skipped.append({"config": name, "code": "gromacs", "reason": self.gmx_how})
        elif box[2] is None:
            self.skipped.append({"config": name, "code": "gromacs", "reason": "grompp failed"})
        else:
            g = self.run_gromacs(cfg, box, d)
            if g is not None:
                self.runs.append(g)
                got["gromacs"] = g
        for code, r in got.items():
            if "failed" in r:
                say(f"  {code}: FAILED: {r['failed'][:300]}")
            elif "ns_per_day" in r:
                say(f"  {code}: {r['ns_per_day']:.1f} ns/day, {r['us_per_step']:.1f} us/step, "
                    f"nstlist {r.get('nstlist')}, {r['wall_s']:.0f} s")
        h, g = got.get("halox", {}), got.get("gromacs", {})
        if "ns_per_day" in h or "ns_per_day" in g:
            c = {"config": name, "atoms": h.get("atoms", cfg["atoms"]), "ranks": cfg["ranks"],
                 "gpus": cfg["gpus"], "dd": cfg["dd"], "mps": bool(self.mps),
                 "halox_ns_per_day": h.get("ns_per_day"),
                 "gromacs_ns_per_day": g.get("ns_per_day"),
                 "halox_ns_per_day_search_work_removed": h.get("ns_per_day_search_work_removed"),
                 "halox_nstlist": h.get("nstlist"), "gromacs_nstlist": g.get("nstlist"),
                 "halox_search_step_us": h.get("search_step_us"),
                 "halox_search_step_on": h.get("search_step_on")}
            if c["halox_ns_per_day"] and c["gromacs_ns_per_day"]:
                c["halox_over_gromacs"] = c["halox_ns_per_day"] / c["gromacs_ns_per_day"]
            self.comparison.append(c)
        self.save()

    def table(self):
        lines = [f"halox md --gpu (defaults) against GROMACS ({self.gmx_version or 'GROMACS'}; "
                 "GPU update, CUDA graphs, direct GPU communication, -nstlist 100 unless HALOX_GMX_NSTLIST says otherwise), same call,",
                 "ns/day with every step counted (pair searches included); halox/GROMACS above 1: "
                 "halox faster",
                 f"{'configuration':16s} {'atoms':>7s} {'grid':>6s} {'MPS':>3s} {'halox':>8s} "
                 f"{'GROMACS':>8s} {'ratio':>6s} {'halox w/o search':>16s} {'nstlist h/G':>11s} "
                 f"{'halox search us':>15s}"]
        for c in self.comparison:
            def f(v, fmt):
                return format(v, fmt) if v is not None else "-"
            lines.append(
                f"{c['config']:16s} {c['atoms']:7d} {'x'.join(map(str, c['dd'])):>6s} "
                f"{'on' if c['mps'] else 'off':>3s} {f(c['halox_ns_per_day'], '8.1f'):>8s} "
                f"{f(c['gromacs_ns_per_day'], '8.1f'):>8s} "
                f"{f(c.get('halox_over_gromacs'), '6.2f'):>6s} "
                f"{f(c['halox_ns_per_day_search_work_removed'], '16.1f'):>16s} "
                f"{f(c['halox_nstlist'], 'd') + '/' + f(c['gromacs_nstlist'], 'd'):>11s} "
                f"{f(c.get('halox_search_step_us'), '.1f') + ' ' + (c.get('halox_search_step_on') or ''):>15s}")
        # one line per reason, with the runs it kept out
        reasons = {}
        for s in self.skipped:
            reasons.setdefault(s["reason"], []).append(
                s["config"] + (" " + s["code"] if s.get("code") else ""))
        for why, which in reasons.items():
            lines.append(f"skipped: {', '.join(which)}: {why}")
        for r in self.runs:
            if "failed" in r:
                lines.append(f"failed: {r['config']} {r['code']}: {r['failed'][:200]}")
        return lines

    def main(self):
        a = self.a
        if not a.dry_run:
            os.makedirs(a.out, exist_ok=True)
        self.gmx, self.gmx_how = gmx_gpu.locate(unpack=not a.dry_run)
        if self.gmx is None:
            say(f"GROMACS: none, its runs are skipped: {self.gmx_how}")
        else:
            say(f"GROMACS: {self.gmx} ({self.gmx_how})")
        info = gmx_gpu.gmx_info(self.gmx) if self.gmx and not a.dry_run else {}
        self.gmx_version = info.get("GROMACS version")
        self.ngpus = a.gpus if a.gpus is not None else count_gpus()
        say(f"{self.ngpus} GPU(s) visible; budget "
            + (f"{a.budget:.0f} s" if a.budget > 0 else "unlimited"))
        self.meta = gmx_gpu.meta(os.environ.get("HALOX_BENCH_COMMAND")
                                 or gmx_gpu.quoted([sys.argv[0]] + sys.argv[1:]),
                                 self.gmx, a.halox) if not a.dry_run else {}
        self.meta.update(series="compare_gpu", gpus_visible=self.ngpus,
                         halox=a.halox, target_seconds_per_run=a.seconds,
                         thermostat={"both": "v-rescale in both",
                                     "none": "NVE in both (GROMACS keeps nstlist 10)",
                                     "gromacs": "GROMACS v-rescale (it raises nstlist only "
                                                "with a thermostat), halox NVE (its default)"}
                         [a.thermostat])
        for name in a.configs.replace(",", " ").split():
            self.config(parse_config(name))
        if self.mps is False and not a.dry_run:
            self.mps_set(True)  # leave the machine as found (h200.sh runs under MPS)
        self.save()
        if not a.dry_run and not a.keep_files:
            remove_bulky(a.out)
        lines = self.table()
        if not a.dry_run:
            with open(os.path.join(a.out, "table.txt"), "w") as f:
                f.write("\n".join(lines) + "\n")
        say("")
        for line in lines:
            say(line)
        return 0


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# Large files the record does not need (boxes and final frames are rebuilt by the recorded
# commands; run inputs, checkpoints and energy files are not read): removed at the end unless
# --keep-files, so that the results carried back from a device call stay small.
BULKY = (".gro", ".tpr", ".cpt", ".edr", ".trr", ".xtc")


def remove_bulky(top):
    n = 0
    for d, _, files in os.walk(top):
        for f in files:
            if f.endswith(BULKY):
                os.unlink(os.path.join(d, f))
                n += 1
    return n


def count_gpus():
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return 0
    n = sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))
    vis = os.environ.get("CUDA_VISIBLE_DEVICES")
    if vis is not None and vis.strip():
        n = min(n, len([x for x in vis.split(",") if x.strip()]))
    return n


def main():
    ap = argparse.ArgumentParser(prog="bench/compare_gpu.py", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--halox", default=os.environ.get("HALOX"), help="the halox program")
    ap.add_argument("--out", default="compare", help="results and logs")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="seconds this may take (0: no limit); what does not fit is skipped")
    ap.add_argument("--seconds", type=float, default=12.0,
                    help="stepping time each run is sized for")
    ap.add_argument("--configs", default=" ".join(CONFIGS),
                    help="configurations, in order (Ngpu-Ak: N ranks on N GPUs; Rr-AxBxC-Ak: R "
                         "ranks on one GPU)")
    ap.add_argument("--steps", type=int, default=0,
                    help="steps of every halox run (GROMACS: 1.25 x, a fifth before the reset); "
                         "0: sized by --seconds")
    ap.add_argument("--gpus", type=int, help="GPUs visible (default: nvidia-smi -L)")
    ap.add_argument("--thermostat", default="gromacs", choices=["gromacs", "both", "none"],
                    help="v-rescale for GROMACS only, for both, or NVE for both")
    ap.add_argument("--mps-2gpu", action="store_true",
                    help="keep MPS on for the runs of one rank per GPU")
    ap.add_argument("--mpirun", default="mpirun --allow-run-as-root --oversubscribe --bind-to none"
                    " -x CUDA_VISIBLE_DEVICES -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
                    " -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN -x LD_LIBRARY_PATH"
                    " -x HALOX_GIT_REVISION", help="launcher of several ranks, before -np N")
    ap.add_argument("--seed", type=int, default=1, help="seed of the boxes")
    ap.add_argument("--keep-files", action="store_true",
                    help="keep the boxes, run inputs and final frames (removed by default: "
                         "the record has their commands and hashes)")
    ap.add_argument("--dry-run", action="store_true",
                    help="print every command (boxes, run inputs, runs) and run nothing")
    a = ap.parse_args()
    if not a.halox:
        raise SystemExit("compare_gpu: give --halox (or set HALOX): the halox program to run")
    if not a.dry_run and not (os.access(a.halox, os.X_OK) or shutil.which(a.halox)):
        raise SystemExit(f"compare_gpu: {a.halox} is not an executable halox: build it first "
                         "(scripts/h200.sh builds and then sources scripts/h200_compare.sh)")
    a.out = os.path.abspath(a.out)
    return Driver(a).main()


if __name__ == "__main__":
    sys.exit(main())
