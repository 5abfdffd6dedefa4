#!/usr/bin/env bash
# halox bench --suite paper --quick on the CPU (3000-atom boxes, 1-2 ranks, few steps):
#  - the run files, the merged series files, suite.json and the report are written;
#  - every planned run is accounted for: done, or skipped/failed with a reason; without a GPU the
#    GPU series are recorded as skipped with the reason;
#  - boxes are cached: a second call builds nothing; a damaged cached box is detected by its
#    content hash and rebuilt;
#  - resume: a second call runs nothing that finished; a removed run file is the only run redone;
#    other --steps is another command and runs again; a signal stops the suite with the
#    finished runs kept, and the next call finishes the rest;
#  - --time-budget skips with the reason; bad options are errors (exit 2).
#   test_bench_suite.sh <halox>
set -u
halox=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
export XDG_CACHE_HOME=$PWD/xdg # never the user's cache

suite() { "$halox" bench --suite paper --quick --cache "$PWD/cache" "$@"; }

# --help documents the suite
check
"$halox" bench suite --help > help.out 2>&1 || fail "bench suite --help exited $?"
for w in "--suite paper" --time-budget --max-atoms --ranks --steps --quick --cache Resume --fresh; do
    grep -q -- "$w" help.out || fail "bench suite --help does not mention $w"
done
"$halox" bench --help 2>&1 | grep -q -- "--suite paper" || fail "bench --help does not mention --suite paper"

# 1. the quick suite: water and the mixture, md and exchange (GROMACS has its own check below)
check
suite -o s1 --series md,exchange > s1.out 2> s1.err || fail "quick suite exited $?: $(tail -5 s1.err)"
grep -q "built water-spce" s1.err && grep -q "built ethanol-water-tip3p" s1.err ||
    fail "the first call did not build both boxes: $(grep built s1.err)"
grep -Eq "\[1/[0-9]+\] md_water-spce_3000_1r_1x1x1_cpu .*ETA" s1.err || fail "no progress line with ETA"
ls s1/runs/md_water-spce_3000_1r_1x1x1_cpu.json s1/runs/md_water-spce_3000_2r_2x1x1_cpu.json \
    s1/runs/md_ethanol-water-tip3p_3000_1r_1x1x1_cpu.json > /dev/null || fail "run files missing: $(ls s1/runs)"
for f in s1/md_water-spce_3000.json s1/md_ethanol-water-tip3p_3000.json s1/suite.json s1/REPORT.md; do
    [ -s "$f" ] || fail "$f missing"
done
gpu=0
command -v nvidia-smi > /dev/null && nvidia-smi -L 2> /dev/null | grep -q GPU && gpu=1
python3 - s1 "$gpu" << 'PY' || fail "suite results: see above"
import json, os, sys
d, gpu = sys.argv[1], sys.argv[2] == "1"
s = json.load(open(os.path.join(d, "suite.json")))
m = s["summary"]
assert m["planned"] == m["done"] + m["skipped"] + m["failed"] + m["not_run"], m
assert m["skipped"] == sum(1 for x in s["skipped"] if not x.get("from_run")), m
assert m["failed"] == 0 and m["not_run"] == 0, (m, s["failed"])
assert all(x["reason"] for x in s["skipped"]), "a skip without a reason"
assert s["meta"]["git_revision"] and s["meta"]["series"] == "suite"
if not gpu:
    # every GPU md backend and the exchange series: skipped, with why
    names = {x["backend"] for x in s["skipped"] if x["series"] == "md"}
    want = {"gpu", "gpu-mpi", "gpu-direct", "nvshmem", "nvshmem-p2p", "nvshmem-network", "nvshmem-bulk"}
    assert want <= names, names
    assert any(x["series"] == "exchange" for x in s["skipped"])
    assert all(("GPU" in x["reason"] or "CUDA" in x["reason"] or "NVSHMEM" in x["reason"])
               for x in s["skipped"] if x["backend"] != "cpu"), s["skipped"]
w = json.load(open(os.path.join(d, "md_water-spce_3000.json")))
cpu = [r for r in w["runs"] if r["backend"] == "cpu"]
assert {r["ranks"] for r in cpu} == {1, 2}, cpu
assert all(r["us_per_step"] > 0 and r["ns_per_day"] > 0 and r["system"] == "water-spce" for r in cpu)
assert [r for r in cpu if r["ranks"] == 2][0]["dd"] == [2, 1, 1]
mix = json.load(open(os.path.join(d, "md_ethanol-water-tip3p_3000.json")))
assert any(r["backend"] == "cpu" and r["model"] == "oplsaa-tip3p" for r in mix["runs"]), mix["runs"]
PY
grep -q "^## Headline" s1/REPORT.md && grep -q "| water-spce | 3000 | cpu |" s1/REPORT.md ||
    fail "the report lacks the headline table"
grep -q "Not run here, and why:" s1/REPORT.md || [ "$gpu" = 1 ] || fail "the report lacks the skipped runs"
if command -v gnuplot > /dev/null; then
    for p in md_water-spce_3000_nsday md_water-spce_3000_efficiency md_water-spce_3000_breakdown; do
        [ -s "s1/$p.png" ] && grep -q "($p.png)" s1/REPORT.md || fail "plot $p missing or not linked"
    done
fi

# 2. resume and the cache: nothing is built or run again
check
touch -d "2000-01-01" s1/runs/*.json
suite -o s1 --series md,exchange > s2.out 2> s2.err || fail "second call exited $?: $(tail -3 s2.err)"
grep -q "built" s2.err && fail "the second call built a box again: $(grep built s2.err)"
grep -q "\[1/" s2.err && fail "the second call ran something again: $(grep '\[' s2.err)"
grep -Eq "([0-9]+) runs done \(\1 of them from an earlier call\)" s2.out ||
    fail "second call: not every run came from the first: $(tail -2 s2.out)"
[ -z "$(find s1/runs -newer s1.out -name '*.json')" ] || fail "a finished run file was rewritten"

# 3. a removed run file is the one run redone
check
rm s1/runs/md_water-spce_3000_2r_2x1x1_cpu.json
suite -o s1 --series md,exchange > s3.out 2> s3.err || fail "third call exited $?"
[ "$(grep -c '^halox bench suite: \[' s3.err)" = 1 ] && grep -q "md_water-spce_3000_2r_2x1x1_cpu" s3.err ||
    fail "third call should run exactly the removed run: $(grep '\[' s3.err)"

# 4. other steps: another command, run again (and only the water box is needed)
check
suite -o s1 --series md --systems water --steps 12 > s4.out 2> s4.err || fail "--steps 12 exited $?"
[ "$(grep -c '^halox bench suite: \[' s4.err)" = 2 ] || fail "--steps 12 should rerun both water runs: $(grep '\[' s4.err)"

# 5. a damaged cached box is found by its content hash and rebuilt
check
rec=$(grep -l "kind=water " cache/*.json | head -1)
box=${rec%.json}.gro
[ -f "$box" ] || fail "no cached water box next to $rec"
# one digit of the first atom's x changes: a file that still reads, with another content
python3 -c "
import sys
p = sys.argv[1]
lines = open(p).read().split(chr(10))
c = lines[2][27]  # the last digit of x (%8.3f in columns 21-28)
assert c.isdigit(), lines[2]
lines[2] = lines[2][:27] + str((int(c) + 1) % 10) + lines[2][28:]
open(p, 'w').write(chr(10).join(lines))
" "$box" || fail "could not damage $box"
suite -o s5 --series md --systems water > s5.out 2> s5.err || fail "call with a damaged box exited $?"
grep -q "does not match its recorded content hash" s5.err && grep -q "built water-spce" s5.err ||
    fail "the damaged box was not detected and rebuilt: $(head -3 s5.err)"
suite -o s5 --series md --systems water --fresh > s6.out 2> s6.err || fail "--fresh exited $?"
grep -q "built" s6.err && fail "the rebuilt box was not reused"
grep -q "content hash" s6.err && fail "the rebuilt box does not match its record"
[ "$(grep -c '^halox bench suite: \[' s6.err)" = 2 ] || fail "--fresh should run both water runs again"

# 6. a signal (SIGTERM here: a background job of a script ignores SIGINT; the suite handles
#    both alike) stops the current run, finished runs stay, the next call finishes the rest
check
# (the program itself in the background, not the shell function: $! must be halox)
"$halox" bench --suite paper --quick --cache "$PWD/cache" -o s7 --series md --systems water \
    --steps 4000 > s7.out 2> s7.err &
pid=$!
# killed once the second run has started: waiting for the first run's result and a fixed pause
# instead let the second run finish first on a fast machine; the first run may take minutes under
# the sanitizers on a loaded machine (40 s seen with 30 s allowed). 4000 steps (~3 s of the 2-rank
# run on an idle 2-core machine): mpirun passes the stop on to the ranks a second later (Open MPI
# 4.1: SIGCONT, odls_base_sigkill_timeout, SIGTERM), and at 1000 steps (0.8 s) the run had
# finished by then, every time.
started=0
for _ in $(seq 1 2400); do
    grep -q '\[2/2\]' s7.err 2> /dev/null && started=1 && break
    kill -0 $pid 2> /dev/null || break
    sleep 0.1
done
[ $started = 1 ] || fail "SIGTERM case: the second run did not start within 240 s: $(tail -2 s7.err)"
sleep 0.2
kill -TERM $pid
wait $pid
rc=$?
[ $rc -eq 143 ] && grep -q "interrupted: run the same command again to resume" s7.out ||
    fail "SIGTERM: exit $rc, $(tail -2 s7.out)"
grep -q "1 runs done (0 of them from an earlier call).*1 not run" s7.out ||
    fail "SIGTERM did not stop the second run: $(grep 'runs done' s7.out)"
suite -o s7 --series md --systems water --steps 4000 > s8.out 2> s8.err || fail "resume after SIGTERM exited $?"
grep -q "2 runs done (1 of them from an earlier call)" s8.out || fail "resume after SIGTERM: $(tail -2 s8.out)"

# 7. the time budget skips with the reason
check
suite -o s9 --series md --systems water --time-budget 0.001 --no-report > s9.out 2>&1 ||
    fail "--time-budget exited $?"
python3 -c "
import json, sys
s = json.load(open('s9/suite.json'))
b = [x for x in s['skipped'] if x['reason'].startswith('time budget')]
assert len(b) == 2 and s['summary']['done'] == 0, s
" || fail "--time-budget: runs not skipped with the budget as reason"

# 8. GROMACS as a peer, where installed
if command -v gmx > /dev/null && command -v python3 > /dev/null; then
    check
    suite -o s10 --series gromacs --systems water --ranks 1 > s10.out 2> s10.err ||
        fail "GROMACS series exited $?: $(tail -3 s10.err)"
    grep -Eq '"backend":[[:space:]]*"gromacs"' s10/md_water-spce_3000.json || fail "no GROMACS run in the results"
fi

# 8b. GROMACS on the GPU, beside every GPU md run (same box, ranks, GPUs, grid): planned with its
#     command, skipped with the reason where it cannot run, and run through the stand-in of
#     tests/fake/gmx (the real gmx on the CPU with the GPU options taken out): the results in the
#     series file as backend gromacs, engine gpu, and the report's halox-against-GROMACS table
check
fake=$here/fake
suite -o g1 --series md,gromacs --dry-run > g1.out 2>&1 || fail "dry run exited $?"
if [ "$gpu" = 0 ]; then
    grep -Eq "^gromacs-gpu_water-spce_3000_1r_1x1x1 +tier 0 +- +no GPU" g1.out ||
        fail "without a GPU the GROMACS GPU runs are not skipped with the reason: $(grep gromacs-gpu g1.out | head -2)"
fi
HALOX_GMX=$fake/gmx suite -o g2 --series md,gromacs --systems water --dry-run --assume-gpus 2 \
    > g2.out 2>&1 || fail "dry run --assume-gpus 2 exited $?"
for n in 1 2; do
    grep -A1 -E "^gromacs-gpu_water-spce_3000_${n}r_${n}x1x1 +tier 0 +[0-9]+ s" g2.out | tail -1 |
        grep -q "bench/gmx_gpu.py run --conf .*\.gro --model spce --system water-spce --atoms 3000 --ranks $n --gpus $n --dd ${n}x1x1 --steps 20 --warmup 5 .*--out g2/runs/gromacs-gpu_water-spce_3000_${n}r_${n}x1x1.json" ||
        fail "GROMACS GPU run of $n rank(s) not planned with its command: $(grep -A1 "gromacs-gpu.*_${n}r_" g2.out)"
done
grep -Eq "^md_water-spce_3000_1r_1x1x1_gpu +tier 0 +[0-9]" g2.out || fail "--assume-gpus: the GPU md run not planned"
if ! PATH=/usr/bin:/bin HALOX_GMX_TARBALL=$PWD/none.tar.xz python3 "$here/../bench/gmx_gpu.py" \
    locate --no-unpack > /dev/null 2>&1; then
    HALOX_GMX_TARBALL=$PWD/none.tar.xz suite -o g3 --series gromacs --systems water --dry-run \
        --assume-gpus 1 > g3.out 2>&1
    grep -Eq "^gromacs-gpu_water-spce_3000_1r_1x1x1 .* no GROMACS with CUDA .*HALOX_GMX_TARBALL" g3.out ||
        fail "no GROMACS with CUDA: not skipped with what is needed: $(grep gromacs-gpu g3.out | head -1)"
fi
real_gmx=$(command -v gmx)
if [ -n "$real_gmx" ] && "$real_gmx" --version 2> /dev/null | grep -q "MPI library: *thread_mpi"; then
    HALOX_GMX=$fake/gmx HALOX_FAKE_GMX_REAL=$real_gmx suite -o g4 --series md,gromacs \
        --systems water --backends cpu,gpu --assume-gpus 1 > g4.out 2> g4.err ||
        fail "GROMACS GPU series exited $?: $(tail -3 g4.err)"
    python3 - g4 << 'PY' || fail "GROMACS GPU results: see above"
import json, os, sys
d = sys.argv[1]
w = json.load(open(os.path.join(d, "md_water-spce_3000.json")))
g = sorted((r for r in w["runs"] if r["backend"] == "gromacs" and r.get("engine") == "gpu"),
           key=lambda r: r["ranks"])
assert [(r["ranks"], r["gpus"], r["dd"]) for r in g] == [(1, 1, [1, 1, 1]), (2, 1, [2, 1, 1])], g
assert all(r["ns_per_day"] > 0 and r["ns_per_day_with_search"] == r["ns_per_day"] and
           r["steps"] == 20 and r["warmup_steps"] == 5 and r["system"] == "water-spce" and
           "GMX_CUDA_GRAPH=1 GMX_ENABLE_DIRECT_GPU_COMM=1" in r["command"] and
           "-nb gpu -update gpu" in r["command"] for r in g), g
assert g[1]["command"].endswith("-ntmpi 2 -ntomp 1 -npme 0 -dd 2 1 1 -gputasks 00") or \
    "-npme 0 -dd 2 1 1 -gputasks 00" in g[1]["command"], g[1]["command"]
s = json.load(open(os.path.join(d, "suite.json")))
assert s["summary"]["failed"] == 0, s["failed"]
PY
    sed -n '/^## halox against GROMACS/,/^## /p' g4/REPORT.md > g4.vs
    grep -Eq "^\| water-spce \| 3000 \| GPU \| 2 \| 1 \| 2x1x1 \| – \| – \| – \| [0-9.]+ \| – \|" g4.vs ||
        fail "report: no GROMACS GPU row: $(cat g4.vs)"
    # the CPU row: halox's fastest CPU run against GROMACS's, the ratio theirs (within the
    # rounding of the printed ns/day to 0.1 and of the ratio to 0.01)
    awk -F' *[|] *' '$2 == "water-spce" && $4 == "CPU" && $5 == 1 {
            n++; r = $9 / $11
            if ($8 != "cpu" || !($9 > 0) || !($11 > 0) || ($12 - r) ^ 2 > (0.006 + r * 0.1 / $11 + r * 0.05 / $9) ^ 2) bad = 1
        } END { exit !(n == 1 && !bad) }' g4.vs ||
        fail "report: the CPU row has no halox/GROMACS ratio that matches its figures: $(cat g4.vs)"
    grep -q "| gromacs gpu |" g4/REPORT.md || fail "report: the headline has no 'gromacs gpu' row"
fi

# 9. bad input
check
"$halox" bench --suite nope > b1.out 2>&1
[ $? -eq 2 ] && grep -q "unknown suite 'nope'" b1.out || fail "--suite nope: $(cat b1.out)"
"$halox" bench suite --ranks 2,x > b2.out 2>&1
[ $? -eq 2 ] && grep -q "ranks '2,x'" b2.out || fail "--ranks 2,x: $(cat b2.out)"
"$halox" bench suite --systems water,argon > b3.out 2>&1
[ $? -eq 2 ] && grep -q "unknown name 'argon'" b3.out || fail "--systems argon: $(cat b3.out)"

finish test_bench_suite
