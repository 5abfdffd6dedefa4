#!/usr/bin/env bash
# scripts/h200_compare.sh (bench/compare_gpu.py) without a GPU, with the stand-ins of tests/fake
# (gmx, halox, mpirun, nvidia-cuda-mps-control):
#  1. --dry-run: the commands of every configuration: halox md --gpu with the one .mdp, mpirun
#     -np N ... --dd for several ranks, GROMACS with -nb gpu -update gpu, CUDA graphs and direct
#     GPU communication, thread-MPI ranks mapped as halox's (-gputasks 0000 on one GPU, -gpu_id
#     01 on two), -dd and -npme 0, -nstlist 100, -resetstep; every launch under timeout -s KILL;
#     MPS off for the two-GPU runs and on again;
#  2. the budget and the GPU count: what does not fit is skipped and said so;
#  3. no GROMACS anywhere: the halox runs stay, the message says what is needed;
#  4. a real run on the CPU (the stand-ins run the real halox and, where installed, the real
#     gmx): compare.json with provenance (HALOX_GIT_REVISION), both codes' figures from their
#     own logs, the ratio, halox's search step by part from its log, the two .mdp files
#     differing in the thermostat only, the table last;
#  5. sourced by scripts/h200.sh (--exec): progress and table into summary.txt, a return (not an
#     exit), and a skip when the call's time is spent.
#   test_gpu_compare.sh <halox> <repo>
set -u
halox=$1
repo=$2
. "$repo/tests/lib.sh"
fake=$repo/tests/fake
cmp=$repo/scripts/h200_compare.sh
path0=$PATH
real_gmx=$(command -v gmx)
export PATH=$fake:$PATH HALOX_FAKE_LOG=$PWD/fake.log
unset HALOX_GMX_TARBALL HALOX_COMPARE_ARGS

# 1. the dry run, two GPUs, GROMACS found through HALOX_GMX (a pure stand-in: nothing runs)
check
HALOX_GMX=$fake/gmx "$cmp" --dry-run --halox "$halox" --out d1 --gpus 2 > d1.out 2>&1 ||
    fail "dry run exited $?: $(tail -3 d1.out)"
[ -e fake.log ] && grep -q "mdrun\|grompp" fake.log && fail "the dry run ran GROMACS: $(cat fake.log)"
[ -e d1 ] && [ -n "$(ls d1)" ] && fail "the dry run wrote files: $(ls d1)"
python3 - d1.out << 'PY' || fail "dry-run commands: see above"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
bad = []
def need(cond, what):
    if not cond:
        bad.append(what)
def block(name):
    """the command lines of one configuration"""
    i = next(i for i, l in enumerate(lines) if l.startswith(name + ":"))
    out = []
    for l in lines[i + 1:]:
        if re.match(r"^[0-9]+(gpu|r)-", l) or l == "":
            break
        out.append(l)
    return out
halox = lambda b: [l for l in b if " md --gpu " in l]
gmx = lambda b: [l for l in b if " mdrun " in l]
for name, ranks, vis, gpumap, dd in (
        ("1gpu-45k", 1, "0", "-gpu_id 0", None), ("4r-4x1x1-45k", 4, "0", "-gputasks 0000", "4 1 1"),
        ("4r-2x2x1-45k", 4, "0", "-gputasks 0000", "2 2 1"),
        ("8r-2x2x2-45k", 8, "0", "-gputasks 00000000", "2 2 2"),
        ("2gpu-45k", 2, "0,1", "-gpu_id 01", "2 1 1"), ("2gpu-180k", 2, "0,1", "-gpu_id 01", "2 1 1"),
        ("1gpu-180k", 1, "0", "-gpu_id 0", None), ("1gpu-360k", 1, "0", "-gpu_id 0", None)):
    b = block(name)
    h, g = halox(b), gmx(b)
    need(len(h) == 1 and len(g) == 1, f"{name}: one halox and one GROMACS run: {b}")
    if len(h) != 1 or len(g) != 1:
        continue
    h, g = h[0], g[0]
    atoms = name.split("-")[-1]
    need(f"CUDA_VISIBLE_DEVICES={vis} " in h and f"CUDA_VISIBLE_DEVICES={vis} " in g,
         f"{name}: visible GPUs {vis}: {h} / {g}")
    need(re.search(r"timeout -s KILL \d+ ", h) and re.search(r"timeout -s KILL \d+ ", g),
         f"{name}: not under timeout -s KILL")
    need(f"-f {'' if False else ''}" in h and f"box_{atoms}/halox.mdp -c " in h and
         f"box_{atoms}/conf.gro" in h and re.search(r"--steps \d+", h), f"{name}: halox: {h}")
    need(("mpirun " in h and f" -np {ranks} " in h and h.endswith("--dd " + dd.replace(" ", "x")))
         if ranks > 1 else "mpirun" not in h and "--dd" not in h, f"{name}: halox launch: {h}")
    need("-x CUDA_VISIBLE_DEVICES" in h or ranks == 1, f"{name}: mpirun does not pass the GPUs")
    need("GMX_CUDA_GRAPH=1" in g and "GMX_ENABLE_DIRECT_GPU_COMM=1" in g, f"{name}: GMX env: {g}")
    need(" -nb gpu -update gpu " in g and " -nstlist 100 " in g and re.search(
        r"-nsteps (\d+) -resetstep (\d+)", g), f"{name}: mdrun options: {g}")
    need(f"-ntmpi {ranks} " in g and g.endswith(gpumap), f"{name}: ranks/map: {g}")
    need((f"-npme 0 -dd {dd}" in g) if dd else "-dd" not in g, f"{name}: grid: {g}")
    need(f"box_{atoms}/gromacs/topol.tpr" in g, f"{name}: run input: {g}")
# GROMACS's run input from halox's box and topology, the GPU template, v-rescale
gp = [l for l in lines if "hxg_prepare" in l]
need(len(gp) == 3 and all("MDP_IN=gpu.mdp.in" in l and "TCOUPL=v-rescale" in l and
                          "topol.top" in l for l in gp), f"grompp: {gp}")
need(all("TCOUPL=no" in l for l in lines if "hxg_mdp" in l), "halox's mdp is not NVE")
need(len([l for l in lines if "halox build water" in l]) == 3, "three boxes")
# MPS: on for the one-GPU runs, off for one rank per GPU, on again after
order = [l.split(":")[0] for l in lines if re.match(r"^[0-9]+(gpu|r)-.*: ", l)] 
mps = [(i, l) for i, l in enumerate(lines) if "nvidia-cuda-mps-control" in l]
first2 = next(i for i, l in enumerate(lines) if l.startswith("2gpu-45k:"))
last2 = next(i for i, l in enumerate(lines) if l.startswith("2gpu-180k:"))
after = next(i for i, l in enumerate(lines) if l.startswith("8r-2x2x2-45k:"))
quits = [i for i, l in mps if "quit" in l]
starts = [i for i, l in mps if " -d" in l]
need(len(quits) == 1 and quits[0] < first2 and not any(first2 < i < last2 for i, _ in mps),
     f"MPS not stopped once before the two-GPU runs: {mps}")
need(any(last2 < i < after for i in starts) and starts[0] < first2, f"MPS not on around: {mps}")
need(lines[-1].startswith("configuration "), f"the table is not last: {lines[-4:]}")
for b in bad:
    print("  " + b)
sys.exit(1 if bad else 0)
PY

# 2. one GPU and a budget of 150 s: the two-GPU runs and what does not fit are skipped, said so
check
HALOX_GMX=$fake/gmx "$cmp" --dry-run --halox "$halox" --out d2 --gpus 1 --budget 150 > d2.out 2>&1 ||
    fail "dry run with a budget exited $?"
grep -q "^2gpu-45k: skipped: needs 2 GPUs, 1 visible" d2.out || fail "two-GPU run not skipped: $(grep 2gpu d2.out)"
grep -q "^1gpu-360k: skipped: time budget: the pair needs about" d2.out || fail "budget: $(grep skipped d2.out)"
grep -q "^skipped: .*1gpu-360k.*: time budget" d2.out || fail "the table does not list the budget's skips"
grep -q "^1gpu-45k: 45000 atoms" d2.out || fail "the first configuration did not fit 150 s"

# 3. no GROMACS (the PATH without the stand-ins, no tarball): the halox runs stay, the message
#    says what is needed (not checked where a GROMACS with CUDA is installed)
if PATH=$path0 HALOX_GMX_TARBALL=$PWD/none.tar.xz python3 "$repo/bench/gmx_gpu.py" locate \
    --no-unpack > /dev/null 2>&1; then
    echo "test_gpu_compare: a GROMACS with CUDA is installed here: part 3 is not checked"
else
    check
    PATH=$path0 HALOX_GMX_TARBALL=$PWD/none.tar.xz "$cmp" --dry-run --halox "$halox" \
        --out d3 --gpus 1 --configs 1gpu-45k > d3.out 2>&1 || fail "dry run without GROMACS exited $?"
    grep -q "^GROMACS: none, its runs are skipped: .*HALOX_GMX_TARBALL.*none.tar.xz.*/tmp/gmxi" d3.out ||
        fail "no GROMACS: $(head -2 d3.out)"
    grep -q " md --gpu " d3.out && ! grep -q " mdrun " d3.out ||
        fail "without GROMACS: halox should still run, GROMACS not"
    grep -q "^skipped: 1gpu-45k gromacs: no GROMACS with CUDA" d3.out || fail "the table does not say why"
fi

# 4. a real run on the CPU through the stand-ins (3000 atoms, 100 steps)
if [ -n "$real_gmx" ] && "$real_gmx" --version 2> /dev/null | grep -q "MPI library: *thread_mpi"; then
    check
    rm -f fake.log
    HALOX_GMX=$fake/gmx HALOX_FAKE_GMX_REAL=$real_gmx HALOX_FAKE_REAL=$halox \
        HALOX_GIT_REVISION=feedc0de "$cmp" --halox "$fake/halox" --out r1 --gpus 2 --steps 100 \
        --configs "1gpu-3k 2r-2x1x1-3k 2gpu-3k" > r1.out 2> r1.err || fail "the run exited $?: $(tail -5 r1.err)"
    python3 - r1 r1.out fake.log << 'PY' || fail "the run's results: see above"
import json, sys
d, out, fl = sys.argv[1:]
j = json.load(open(d + "/compare.json"))
bad = []
def need(c, w):
    if not c:
        bad.append(w)
m = j["meta"]
need(m["git_revision"] == "feedc0de", f"git revision {m['git_revision']}")
need(m["command"].startswith(__import__("os").path.abspath(sys.argv[0]) if False else "")
     and "h200_compare.sh" in m["command"] and "--configs" in m["command"], m["command"])
need(m.get("gromacs") and "halox_version" in m and m["series"] == "compare_gpu", m)
need(len(m.get("boxes", {}).get("3000", {}).get("conf_sha256", "")) == 64, m.get("boxes"))
import os
left = [os.path.join(a, f) for a, _, fs in os.walk(d) for f in fs
        if f.endswith((".gro", ".tpr", ".cpt", ".edr", ".trr"))]
need(not left, f"bulky files left: {left}")
runs = j["runs"]
need(len(runs) == 6 and not [r for r in runs if "failed" in r], [r.get("failed") for r in runs])
for r in runs:
    need(r["ns_per_day"] > 0 and r["us_per_step"] > 0 and r["ns_per_day_with_search"] ==
         r["ns_per_day"] and r["atoms"] == 3000 and r["mode"] == "md" and r["engine"] == "gpu",
         f"run {r['config']} {r['code']}")
    # ns/day and us/step of each code's own log agree (2 fs): within the rounding of the log
    need(abs(0.002e-3 * 86400 / (r["us_per_step"] * 1e-6) / r["ns_per_day"] - 1) < 0.02,
         f"{r['config']} {r['code']}: {r['ns_per_day']} ns/day vs {r['us_per_step']} us/step")
g = {r["config"]: r for r in runs if r["code"] == "gromacs"}
h = {r["config"]: r for r in runs if r["code"] == "halox"}
need(g["2r-2x1x1-3k"]["command"].endswith("-ntmpi 2 -ntomp 1 -nstlist 100 -npme 0 -dd 2 1 1 -gputasks 00"),
     g["2r-2x1x1-3k"]["command"])
need(g["2gpu-3k"]["command"].endswith("-gpu_id 01") and g["2gpu-3k"]["gpus"] == 2, g["2gpu-3k"])
need(g["1gpu-3k"]["dd_gromacs"] == [1, 1, 1] and g["2gpu-3k"]["dd_gromacs"] == [2, 1, 1], "grids")
need(g["1gpu-3k"]["nstlist"] > 10, f"GROMACS kept nstlist {g['1gpu-3k']['nstlist']}: no thermostat?")
need(h["2gpu-3k"]["nstlist"] == 10 and h["2gpu-3k"]["backend"] != "gromacs", h["2gpu-3k"])
# the search step by part from halox's log (on the host here: the CPU engine), into the run and
# the comparison
for k, r in h.items():
    p = r.get("search_step_parts_us", {})
    need(r.get("search_step_on") == "host" and r.get("search_step_us", 0) > 0 and
         all(p.get(x, -1) >= 0 for x in ("state_to_host", "migration", "topology_plan",
             "halo_setup", "local_set_upload", "halo_x_pair_search")) and
         r.get("search_step_searches", 0) >= 1, f"{k}: search step {r.get('search_step_us')} "
         f"on {r.get('search_step_on')}: {p}")
need(all(c.get("halox_search_step_us", 0) > 0 and c.get("halox_search_step_on") == "host"
         for c in j["comparison"]), [c.get("halox_search_step_us") for c in j["comparison"]])
need(h["1gpu-3k"]["mps"] and not h["2gpu-3k"]["mps"], "MPS state per run")
need(g["1gpu-3k"]["steps"] == 100 and g["1gpu-3k"]["warmup_steps"] == 25, "GROMACS steps")
for c in j["comparison"]:
    need(abs(c["halox_over_gromacs"] - c["halox_ns_per_day"] / c["gromacs_ns_per_day"]) < 1e-12
         and c["halox_ns_per_day_search_work_removed"] > c["halox_ns_per_day"], c)
need(len(j["comparison"]) == 3, j["comparison"])
text = open(out).read().splitlines()
need(text[-1].startswith("2gpu-3k ") and text[-6].startswith("halox md --gpu"), text[-7:])
calls = open(fl).read().splitlines()
mps = [i for i, l in enumerate(calls) if l.startswith("mps")]
two = next(i for i, l in enumerate(calls) if "2gpu-3k/halox.md.log" in l)
need(calls[mps[0]] == "mps -d" and any(calls[i] == "mps quit" and i < two for i in mps)
     and calls[mps[-1]] == "mps -d" and mps[-1] > two, f"MPS calls: {[calls[i] for i in mps]}")
for b in bad:
    print("  " + str(b)[:400])
sys.exit(1 if bad else 0)
PY
    # one template, two files: they differ in the thermostat only
    diff r1/box_3k/halox.mdp r1/box_3k/gromacs/grompp.mdp > mdp.diff
    [ "$(grep -c '^[<>]' mdp.diff)" = 2 ] && grep -q "^< tcoupl *= no" mdp.diff &&
        grep -q "^> tcoupl *= v-rescale" mdp.diff || fail "the two .mdp files: $(cat mdp.diff)"
else
    echo "test_gpu_compare: no thread-MPI gmx: the real run (part 4) is not checked"
fi

# 5. sourced by scripts/h200.sh --exec
check
(
    OUT=$PWD/h200
    RES=$OUT/results
    mkdir -p "$OUT/logs" "$RES"
    : > "$OUT/summary.txt"
    say() { echo "$*" | tee -a "$OUT/summary.txt"; }
    t_start=$(date +%s)
    elapsed() { echo $(($(date +%s) - t_start)); }
    budget=560
    left() { echo $((budget - $(elapsed))); }
    HALOX=$halox HALOX_GMX=$fake/gmx HALOX_COMPARE_ARGS="--dry-run --gpus 1 --configs 1gpu-45k"
    export HALOX_GMX
    # shellcheck source=/dev/null
    source "$cmp"
    echo "returned" >> "$OUT/summary.txt"
    budget=50
    source "$cmp"
) > s1.out 2>&1
grep -q "^configuration " h200/summary.txt && grep -q "^  compare: rc 0" h200/summary.txt ||
    fail "sourced: no table or rc in summary.txt: $(cat h200/summary.txt)"
grep -q "^returned" h200/summary.txt || fail "sourced: the script exited instead of returning"
grep -q "compare: skipped (only [0-9]* s left in the call)" h200/summary.txt ||
    fail "sourced with 50 s left: not skipped: $(tail -2 h200/summary.txt)"

finish test_gpu_compare
