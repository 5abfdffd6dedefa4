#!/usr/bin/env bash
# halox bench compare and halox bench report on hand-made result files:
#  - compare matches runs by their key and prints B/A exactly; no common run is exit 1;
#  - report writes one table per series (an md series also its search steps by part, for the
#    runs that have them) and, with gnuplot, the five kinds of plot;
#  - bad input (not JSON, no "runs", a run without "backend") is an error naming the file,
#    and an existing report is not replaced.
#   test_bench_report.sh <halox>
set -u
halox=$1
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

mkdir res
cat > res/md.json <<'J'
{"meta": {"git_revision": "abc", "date": "2026-12-03", "gpu": "NVIDIA H200", "series": "md-dd",
          "command": "halox bench"},
 "runs": [{"system": "water-spce", "atoms": 45000, "mode": "md", "backend": "gpu-mpi", "ranks": 4,
           "gpus": 1, "dd": [4, 1, 1], "us_per_step": 300, "ns_per_day": 576,
           "local_work_us": 60, "nonlocal_work_us": 200, "non_overlap_us": 150},
          {"system": "water-spce", "atoms": 45000, "mode": "md", "backend": "nvshmem", "ranks": 4,
           "gpus": 1, "dd": [4, 1, 1], "us_per_step": 120, "ns_per_day": 1440,
           "ns_per_day_with_search": 1300, "metrics_every": 10, "engine": "gpu",
           "steps": 3000, "warmup_steps": 300,
           "local_work_us": 65, "nonlocal_work_us": 40, "non_overlap_us": 5, "nstlist": 100,
           "search_step_us": 290, "search_step_on": "device", "search_step_retries": 0,
           "search_step_halo_updates": 1,
           "search_step_parts_us": {"state_to_host": 0, "migration": 40, "topology_plan": 70,
                                    "halo_setup": 20, "local_set_upload": 50,
                                    "halo_x_pair_search": 110, "halo_x": 25,
                                    "device_migration": 40}},
          {"system": "water-spce", "atoms": 45000, "mode": "md", "backend": "nvshmem", "ranks": 2,
           "gpus": 1, "dd": [2, 1, 1], "us_per_step": 150, "ns_per_day": 1152,
           "local_work_us": 148, "nonlocal_work_us": 30, "non_overlap_us": 10}]}
J
cat > res/exchange.json <<'J'
{"meta": {"git_revision": "abc", "date": "2026-12-03", "gpu": "NVIDIA H200", "series": "exchange"},
 "runs": [{"system": "water", "atoms": 8000, "mode": "exchange", "backend": "nvshmem",
           "path": "p2p", "ranks": 8, "dd": [2, 2, 2], "pulses": 3, "atoms_per_domain": 1000,
           "exchange_us": 12, "us_per_step_min": 11, "us_per_step_max": 14},
          {"system": "water", "atoms": 88000, "mode": "exchange", "backend": "nvshmem",
           "path": "p2p", "ranks": 8, "dd": [2, 2, 2], "pulses": 3, "atoms_per_domain": 11000,
           "exchange_us": 20},
          {"system": "water", "atoms": 88000, "mode": "exchange", "backend": "gpu-mpi",
           "ranks": 8, "dd": [2, 2, 2], "pulses": 3, "atoms_per_domain": 11000,
           "exchange_us": 700},
          {"system": "water", "atoms": 88000, "mode": "exchange", "backend": "nvshmem",
           "path": "p2p", "ranks": 8, "dd": [8, 1, 1], "pulses": 1, "atoms_per_domain": 11000,
           "exchange_us": 15}]}
J
sed 's/"us_per_step": 120/"us_per_step": 96/' res/md.json > md_b.json

# compare
check
"$halox" bench compare res/md.json md_b.json > cmp.out 2>&1 || fail "compare exited $?: $(cat cmp.out)"
grep -Eq "^md water-spce 45000 nvshmem 4r 1g 4x1x1 +120\.00 +96\.00 +0\.800$" cmp.out ||
    fail "compare: the nvshmem run's ratio is not 96/120 = 0.800: $(cat cmp.out)"
grep -Eq "^md water-spce 45000 gpu-mpi 4r 1g 4x1x1 +300\.00 +300\.00 +1\.000$" cmp.out ||
    fail "compare: the gpu-mpi run is not 1.000: $(cat cmp.out)"
grep -q "3 runs in both; geometric mean of B/A time: 0.928" cmp.out ||
    fail "compare: geometric mean (0.8 x 1 x 1)^(1/3) = 0.928 missing: $(tail -2 cmp.out)"
check
"$halox" bench compare res/md.json res/exchange.json > cmp2.out 2>&1
[ $? -eq 1 ] || fail "compare of disjoint files should exit 1"
grep -q "no run is in both files" cmp2.out || fail "compare of disjoint files: $(cat cmp2.out)"

# report without a directory: refused (it wrote REPORT.md and PNGs into bench/results, which
# is tracked in the repository, when run from there)
check
mkdir -p bench/results
cp res/md.json bench/results/
"$halox" bench report > nodir.out 2>&1
rc=$?
{ [ $rc -eq 2 ] && grep -q "give the directory of the result files: halox bench report DIR" nodir.out; } ||
    fail "report without DIR: exit $rc, $(head -1 nodir.out)"
[ "$(ls bench/results)" = "md.json" ] || fail "report without DIR wrote into bench/results: $(ls bench/results | tr '\n' ' ')"

# report
check
"$halox" bench report res > rep.out 2>&1 || fail "report exited $?: $(cat rep.out)"
[ -s res/REPORT.md ] || fail "report: res/REPORT.md missing"
# a bench md file of 2026-12-03 with a warm-up: its figures are too fast by (300 + 3000) / 3000
grep -q "^\*\*Too fast by up to 1.10x:\*\* these runs were written before 2026-12-05" res/REPORT.md ||
    fail "report: the warm-up count error of an old bench md file is not said"
[ "$(grep -c 'Too fast by' res/REPORT.md)" = 1 ] || fail "report: the warm-up note where it does not belong"
grep -q "^## md-dd$" res/REPORT.md && grep -q "^## exchange$" res/REPORT.md ||
    fail "report: a series heading is missing"
# md rows: ns/day with every step counted first ("–" where the file has none), then the
# paper's convention; the sampled phases of the 2-rank run exceed its measured step (148 + 10 >
# 150): marked, and the note says why
grep -q "| water-spce | 45000 | nvshmem | 4 | 1 | 4x1x1 | 1300.0 | 120.0 | 1440.0 | 65.0 | 40.0 | 5.0 |" \
    res/REPORT.md || fail "report: the nvshmem md row is wrong: $(grep '| nvshmem | 4 |' res/REPORT.md)"
grep -q "| water-spce | 45000 | gpu-mpi | 4 | 1 | 4x1x1 | – | 300.0 | 576.0 | 60.0 | 200.0 | 150.0 |" \
    res/REPORT.md || fail "report: a run without the with-search figure must show –"
grep -q "| water-spce | 45000 | nvshmem | 2 | 1 | 2x1x1 | – | 150.0 | 1152.0 | 148.0 | 30.0 | 10.0 † |" \
    res/REPORT.md || fail "report: sampled phases above the measured step are not marked"
grep -q "sampled with events (every 10 steps).*† marks a run whose sampled local work" res/REPORT.md ||
    fail "report: the note on sampled phases is missing"
# the search steps by part, for the run that has them only; where it ran, its slow paths
grep -q "| water-spce | 45000 | nvshmem | 4 | 4x1x1 | 100 | device | 290.0 | 0.0 | 40.0 | 70.0 | 20.0 | 50.0 | 110.0 | 25.0 | 1 |" \
    res/REPORT.md || fail "report: the search-step row is wrong: $(grep '| device |' res/REPORT.md)"
[ "$(grep -c '| 4x1x1 | 100 | device |\|| host |' res/REPORT.md)" = 1 ] ||
    fail "report: search-step rows for runs without search parts"
# the headline ranks by ns/day with every step counted and gives the paper's figure beside it
grep -q "| water-spce | 45000 | nvshmem | 1300.0 | 1440.0 | 120.0 | 4 | 4x1x1 |" res/REPORT.md ||
    fail "report: headline row: $(grep -A6 '^## Headline' res/REPORT.md)"
grep -q "| nvshmem | p2p | 2x2x2 | 8 | 1000 | 3 | 12.0 | 11.0 – 14.0 |" res/REPORT.md ||
    fail "report: the exchange row with its spread is wrong"
grep -q "| gpu-mpi | – | 2x2x2 | 8 | 11000 | 3 | 700.0 | – |" res/REPORT.md ||
    fail "report: a run without spread must show –"
if command -v gnuplot > /dev/null; then
    for p in md_nsday md_breakdown md_search exchange_atoms exchange_pulses; do
        check
        [ -s res/$p.png ] && head -c 8 res/$p.png | od -c | grep -q "P   N   G" ||
            fail "report: plot $p.png missing or not a PNG"
        grep -q "($p.png)" res/REPORT.md || fail "report: $p.png is not linked"
    done
fi

# halox bench md runs a series on the CPU and writes a result the report reads
check
"$halox" bench md --atoms 1500 --backends cpu --steps 20 --warmup 5 --nstlist 10 --nstmetrics 5 \
    -o res/md_cpu.json > mdb.out 2>&1 || fail "bench md exited $?: $(tail -3 mdb.out)"
python3 - res/md_cpu.json << 'PY' || fail "bench md result: $(cat res/md_cpu.json | head -c 600)"
import json, math, sys
d = json.load(open(sys.argv[1]))
assert d["meta"]["series"] == "md" and d["meta"]["git_revision"], d["meta"]
r = d["runs"][0]
assert r["mode"] == "md" and r["backend"] == "cpu" and r["ranks"] == 1 and r["dd"] == [1, 1, 1]
assert r["atoms"] == 1500 and r["steps"] == 20 and r["nstlist"] == 10
assert r["us_per_step"] > 0 and abs(r["ns_per_day"] - 0.002e-3 * 86400 / (r["us_per_step"] * 1e-6)) < 1e-6 * r["ns_per_day"]
assert r["local_work_us_min"] <= r["local_work_us"] <= r["local_work_us_max"] and r["local_work_us"] > 0
# the search step by part: on the host (one domain), no slow path; the six parts tile it (one
# rank: each part's slowest rank is this one)
p = r["search_step_parts_us"]
six = ["state_to_host", "migration", "topology_plan", "halo_setup", "local_set_upload",
       "halo_x_pair_search"]
assert r["search_step_on"] == "host" and r["search_step_retries"] == 0 and r["search_step_halo_updates"] == 0, r
assert r["search_step_us"] > 0 and abs(sum(p[k] for k in six) - r["search_step_us"]) <= 1e-6 * r["search_step_us"] + 1e-3, (p, r["search_step_us"])
sc = r["search_step_clock_us"]
assert sc > r["search_step_us"], ("a whole search step holds its search and a step's forces", sc, r["search_step_us"])
PY
# the step clock's split: the plain steps' and the search steps' times add up to the run's
# (steps 5..24 after 5 of warm-up: 2 search steps, 18 plain, and the closing evaluation, about
# a plain step). A timing property: on a 2-core machine running other tests beside this one a
# stall of tens of ms lands in one part of a 20-step run and not the other (CI once saw the run
# at 12x its unloaded time, rebuilt 36% short), so the bound of 25% must hold in one of three
# runs; an accounting error (a step counted twice, a part left out) misses it in all three.
rebuilds=""
for attempt in 1 2 3; do
    [ $attempt = 1 ] || "$halox" bench md --atoms 1500 --backends cpu --steps 20 --warmup 5 \
        --nstlist 10 --nstmetrics 5 -o res/md_cpu_again.json > mdb2.out 2>&1 ||
        fail "bench md (again) exited $?: $(tail -3 mdb2.out)"
    f=res/md_cpu.json
    [ $attempt = 1 ] || f=res/md_cpu_again.json
    got=$(python3 - "$f" << 'PY'
import json, sys
r = json.load(open(sys.argv[1]))["runs"][0]
sc, pl, every = r["search_step_clock_us"], r["us_per_step"], r["us_per_step_with_search"]
rebuilt = (19 * pl + 2 * sc) / 21
print("ok" if abs(rebuilt - every) <= 0.25 * every else "off", "rebuilt %.1f us per step, the run took %.1f" % (rebuilt, every))
PY
)
    rebuilds="$rebuilds; $got"
    case "$got" in ok*) break ;; esac
done
rm -f res/md_cpu_again.json
case "$got" in ok*) ;; *) fail "bench md: plain and search steps do not rebuild the run's time in 3 runs$rebuilds" ;; esac
check
"$halox" bench report res > rep2.out 2>&1 && grep -q "| water-spce | 1500 | cpu | 1 | 0 | 1x1x1 |" res/REPORT.md ||
    fail "the report lacks the bench md run: $(cat rep2.out)"
[ "$(grep -c 'Too fast by' res/REPORT.md)" = 1 ] ||
    fail "report: a bench md file written today gets the warm-up note"
"$halox" bench md --atoms 1500 --backends tpu > bad5.out 2>&1
[ $? -eq 2 ] && grep -q "unknown backend 'tpu'" bad5.out || fail "bench md, bad backend: $(cat bad5.out)"

# a series whose x does not vary gets no line plot: the md_cpu set has one rank count
check
[ ! -e res/md_cpu_nsday.png ] || fail "report drew ns/day against ranks for a single rank count"

# bad input
good=$(md5sum res/REPORT.md)
mkdir bad
echo "not json" > bad/a.json
check
"$halox" bench report bad -o res/REPORT.md > bad.out 2>&1
[ $? -ne 0 ] || fail "report of a non-JSON file exited 0"
grep -q "bad/a.json: not valid JSON" bad.out || fail "report: message lacks the file: $(cat bad.out)"
[ "$(md5sum res/REPORT.md)" = "$good" ] || fail "a failed report replaced the good one"
echo '{"meta": {}}' > bad/a.json
check
"$halox" bench compare bad/a.json res/md.json > bad2.out 2>&1
[ $? -ne 0 ] && grep -q 'bad/a.json: a result file has a "meta" object and a "runs" array' bad2.out ||
    fail "compare of a file without runs: $(cat bad2.out)"
echo '{"meta": {}, "runs": [{"mode": "md"}]}' > bad/a.json
check
"$halox" bench compare bad/a.json res/md.json > bad3.out 2>&1
[ $? -ne 0 ] && grep -q 'bad/a.json: run 1 lacks "mode" or "backend"' bad3.out ||
    fail "compare of a run without backend: $(cat bad3.out)"
check
"$halox" bench report empty_dir_missing > bad4.out 2>&1
[ $? -ne 0 ] && grep -q "empty_dir_missing: cannot open the results directory" bad4.out ||
    fail "report of a missing directory: $(cat bad4.out)"

finish test_bench_report
