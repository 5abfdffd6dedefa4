#!/usr/bin/env python3
"""bench/gmx_gpu.py and bench/compare_gpu.py without a GPU: the md.log parsers on logs of real
runs (tests/fixtures), the GPU task mapping, the reset step, the step sizing, the configuration
names, and where GROMACS is found (PATH, HALOX_GMX, a tarball unpacked, nothing: the message).

    tests/test_gmx_gpu.py REPO
"""

import os
import stat
import subprocess
import sys
import tarfile
import tempfile

REPO = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(REPO, "bench"))
import compare_gpu  # noqa: E402
import gmx_gpu  # noqa: E402

FIX = os.path.join(REPO, "tests", "fixtures")
FAKE = os.path.join(REPO, "tests", "fake", "gmx")
fails = 0
checks = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print(f"FAIL: {what}")


def close(a, b, tol=1e-9):
    return a is not None and abs(a - b) <= tol * max(1.0, abs(b))


def read(name):
    with open(os.path.join(FIX, name)) as f:
        return f.read()


# 1. GROMACS's md.log (2 ranks, DD 2x1x1, nstlist raised by GROMACS, counters reset at 100 of
#    300 steps): the figures exactly as printed; the time per step from the wall time over the
#    200 counted steps (0.946 s / 200 = 4730 us, which at 2 fs is 36.5 ns/day: GROMACS's 36.727
#    comes from its unrounded time, so the two agree to the 3 digits of the wall time)
p = gmx_gpu.parse_md_log(read("gmx_md_dd2.log"), steps=200)
check(close(p.get("ns_per_day"), 36.727), f"GROMACS ns/day: {p.get('ns_per_day')}")
check(close(p.get("wall_s"), 0.946) and close(p.get("core_s"), 1.870), f"Time line: {p}")
check(close(p.get("us_per_step"), 4730.0), f"us/step: {p.get('us_per_step')}")
check("ns_per_day" in p and "us_per_step" in p and
      abs(0.002 * 1e-3 * 86400 / (p["us_per_step"] * 1e-6) / p["ns_per_day"] - 1) < 0.01,
      "ns/day and the wall time per step disagree by more than the rounding of the wall time")
check(p.get("nstlist") == 20 and p.get("nstlist_mdp") == 10 and close(p.get("rlist"), 1.172),
      f"pair list: {p}")
check(p.get("dd") == [2, 1, 1], f"grid: {p.get('dd')}")
check(p.get("reset_at_step") == 100, f"reset step: {p.get('reset_at_step')}")
check(p.get("gromacs_version") == "2022.5-Debian_2022.5_2", f"version: {p.get('gromacs_version')}")
check("fatal_error" not in p, "a good run read as failed")
p = gmx_gpu.parse_md_log(read("gmx_md_fatal.log"))
check("ns_per_day" not in p, "a failed run has no ns/day")
check(p.get("fatal_error", "").startswith("The size of the domain decomposition grid (3) does "
                                          "not match the number of PP ranks (2)"),
      f"fatal error: {p.get('fatal_error')}")

# 2. halox's md.log: the closing line (every step), the search work, what the run used
h = compare_gpu.parse_halox_log(read("halox_md_dd4.log"))
check(close(h.get("ns_per_day"), 72.469) and close(h.get("us_per_step"), 2384.5),
      f"halox performance line: {h}")
check(h.get("steps") == 100 and h.get("atoms") == 3000, f"steps/atoms: {h}")
check(h.get("nstlist") == 10 and close(h.get("rlist"), 1.072) and h.get("dd") == [2, 2, 1],
      f"halox parameters: {h}")
check(h.get("engine") == "cpu" and h.get("halo") == "host", f"backend line: {h}")
check(h.get("searches") == 11 and close(h.get("search_s"), 0.040) and close(h.get("total_s"),
                                                                           0.238), f"timing: {h}")
# without the search work: 0.198 s over 100 steps -> 1980 us -> 87.27 ns/day
check(close(h.get("ns_per_day_search_work_removed"), 0.002e-3 * 86400 / 1980e-6, 1e-9),
      f"without search work: {h.get('ns_per_day_search_work_removed')}")

# 3. GPU task mapping: rank i on GPU i mod GPUs, as halox places its ranks; -gpu_id only when
#    no id repeats (GROMACS refuses a repeated -gpu_id)
for (ranks, gpus), want in {(1, 1): ["-gpu_id", "0"], (2, 2): ["-gpu_id", "01"],
                            (4, 1): ["-gputasks", "0000"], (4, 2): ["-gputasks", "0101"],
                            (8, 1): ["-gputasks", "00000000"], (2, 1): ["-gputasks", "00"],
                            (12, 12): ["-gpu_id", ",".join(str(i) for i in range(12))]}.items():
    got = gmx_gpu.gpu_map(ranks, gpus)
    check(got == want, f"gpu_map({ranks}, {gpus}) = {got}, want {want}")
cmd = gmx_gpu.mdrun_command("gmx", 4, 1, [2, 2, 1], 10000, 2000, 4)
s = " ".join(cmd)
check("-nb gpu -update gpu" in s and "-ntmpi 4 -ntomp 4" in s and "-npme 0 -dd 2 2 1" in s
      and s.endswith("-gputasks 0000") and "-nstlist 100" in s
      and "-nsteps 10000 -resetstep 2000" in s, f"mdrun command: {s}")
s = " ".join(gmx_gpu.mdrun_command("gmx", 4, 1, [2, 2, 1], 10000, 2000, 4, nstlist=0))
check("-nstlist" not in s, f"GROMACS's own interval passes no -nstlist: {s}")
s = " ".join(gmx_gpu.mdrun_command("gmx", 1, 1, [1, 1, 1], 1000, 200, 16))
check("-dd" not in s and "-npme" not in s and "-ntmpi 1 -ntomp 16" in s, f"one rank: {s}")

# 4. reset step: a fifth, on 100 steps in long runs; step sizing; configuration names
check([gmx_gpu.reset_step(n) for n in (100, 125, 1000, 113000, 49999)] == [20, 25, 200, 22600,
                                                                           9900],
      "reset_step")
check(compare_gpu.steps_for(1700, 12) == 118000, f"steps_for(1700, 12) = "
      f"{compare_gpu.steps_for(1700, 12)} (12 s at 1700 ns/day and 2 fs: 118056 steps)")
check(compare_gpu.steps_for(1, 12) == 2000 and compare_gpu.steps_for(1700, 12, 300) == 300,
      "steps_for: floor of 2000, fixed count")
c = compare_gpu.parse_config("4r-2x2x1-45k")
check(c == {"name": "4r-2x2x1-45k", "ranks": 4, "gpus": 1, "dd": [2, 2, 1], "atoms": 45000}, c)
c = compare_gpu.parse_config("2gpu-180k")
check(c["ranks"] == 2 and c["gpus"] == 2 and c["dd"] == [2, 1, 1] and c["atoms"] == 180000, c)
for bad in ("4r-3x1x1-45k", "gpu-45k", "1gpu"):
    try:
        compare_gpu.parse_config(bad)
        check(False, f"parse_config accepted {bad}")
    except SystemExit as e:
        check("compare_gpu" in str(e), f"{bad}: {e}")

# 5. where GROMACS comes from
with tempfile.TemporaryDirectory() as t:
    nogmx = os.path.join(t, "bin")
    os.makedirs(nogmx)
    env = {"PATH": nogmx, "HALOX_GMX_TARBALL": os.path.join(t, "missing.tar.xz"),
           "HALOX_GMX_UNPACK_DIR": t}
    g, why = gmx_gpu.locate(env=env, repo=t)
    check(g is None and "HALOX_GMX_TARBALL" in why and "missing.tar.xz" in why
          and "/tmp/gmxi" in why, f"nothing found: {why}")
    # a gmx on PATH without CUDA is passed over, and said so
    cpu = os.path.join(nogmx, "gmx")
    with open(cpu, "w") as f:
        f.write("#!/bin/sh\nprintf 'GROMACS version:    x\\nMPI library:        thread_mpi\\n"
                "GPU support:        disabled\\n'\n")
    os.chmod(cpu, 0o755)
    g, why = gmx_gpu.locate(env=env, repo=t)
    check(g is None and "no CUDA support" in why, f"CPU gmx on PATH: {why}")
    # HALOX_GMX: taken as it is when it has CUDA
    g, why = gmx_gpu.locate(env=dict(env, HALOX_GMX=FAKE), repo=t)
    check(g == FAKE and why == "HALOX_GMX", f"HALOX_GMX: {g} {why}")
    # an MPI build is refused: these runs start thread-MPI ranks
    mpi = os.path.join(t, "gmx_mpi")
    with open(mpi, "w") as f:
        f.write("#!/bin/sh\nprintf 'MPI library:        MPI\\nGPU support:        CUDA\\n'\n")
    os.chmod(mpi, 0o755)
    g, why = gmx_gpu.locate(env=dict(env, HALOX_GMX=mpi), repo=t)
    check(g is None and "thread-MPI" in why, f"MPI gmx: {why}")
    # a tarball that unpacks to gmxi/bin/gmx: unpacked once, then found unpacked
    tb = os.path.join(t, "g.tar.xz")
    with tarfile.open(tb, "w:xz") as z:
        z.add(FAKE, arcname="gmxi/bin/gmx")
    g, why = gmx_gpu.locate(unpack=False, env=dict(env, HALOX_GMX_TARBALL=tb), repo=t)
    check(g == os.path.join(t, "gmxi", "bin", "gmx") and "to be unpacked" in why
          and not os.path.exists(g), f"--no-unpack: {g} {why}")
    g, why = gmx_gpu.locate(env=dict(env, HALOX_GMX_TARBALL=tb), repo=t)
    check(g == os.path.join(t, "gmxi", "bin", "gmx") and why == tb and os.access(g, os.X_OK),
          f"tarball: {g} {why}")
    g, why = gmx_gpu.locate(env=dict(env, HALOX_GMX_TARBALL=tb), repo=t)
    check(g is not None and "unpacked earlier" in why, f"second call: {why}")
    # the default tarball place: .tools in the repository
    os.makedirs(os.path.join(t, "repo", ".tools"))
    os.rename(tb, os.path.join(t, "repo", ".tools", gmx_gpu.TARBALL))
    e2 = {"PATH": nogmx, "HALOX_GMX_UNPACK_DIR": os.path.join(t, "u")}
    os.makedirs(e2["HALOX_GMX_UNPACK_DIR"])
    g, why = gmx_gpu.locate(env=e2, repo=os.path.join(t, "repo"))
    check(g is not None and why.endswith(os.path.join(".tools", gmx_gpu.TARBALL)),
          f".tools tarball: {g} {why}")
    # the command line: locate says why and exits 1
    r = subprocess.run([sys.executable, os.path.join(REPO, "bench", "gmx_gpu.py"), "locate",
                        "--no-unpack"], capture_output=True, text=True,
                       env=dict(os.environ, **env, HALOX_GMX=mpi))
    check(r.returncode == 1 and "thread-MPI" in r.stdout, f"locate CLI: {r.returncode} {r.stdout}")

print(f"test_gmx_gpu: {checks - fails} passed, {fails} failed")
sys.exit(1 if fails else 0)
