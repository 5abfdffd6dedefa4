#!/usr/bin/env bash
# The search step's timeline (HALOX_SEARCH_TRACE, src/gpu/trace.h; scripts/search_trace.py).
#   test_search_trace.sh <source dir> [<halox> <mpiexec> [mpiexec flags...]]
# Always: the script on traces with known times: two processes whose device clocks are 7 and 9
# ms ahead of the host's (each with a wide calibration and a narrow one, of which the narrow one
# must be taken), search steps of known lengths; the medians of lengths, points and spans are
# known numbers (the spans summed by kind and the emulation's runtime calls per span too), a
# repeated device label is numbered, the calibrated search step and the first
# --skip ones are left out. Bad input (a missing rank, a malformed line, no files) fails with
# the file and line.
# With <halox> (a GPU or the CPU emulation; exit 77 without a device): a decomposed run of 2
# processes traced for real, and what must hold whatever the machine: every host point in the
# schedule's order, every device point of the decomposition before the host saw the device
# step end (dd.waited) and the pair search's last stage before the host saw the search end
# (pair_search): causality, which a wrong clock alignment or a misplaced point breaks; in the
# CPU emulation, which counts the host's CUDA runtime calls per span, no synchronisation with
# the device outside the two spans that wait for its results.
set -u
src=$1
halox=${2:-}
shift $(($# < 2 ? $# : 2))
mpiexec=("$@")
tr=$src/scripts/search_trace.py
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

python3 - << 'EOF'
OFF = [7_000_000, 9_000_000]
for r in range(2):
    with open(f"t.rank{r}.txt", "w") as f:
        f.write("# halox search trace v1\nrank %d nranks 2\n" % r)
        for n in range(6):
            B = 10_000_000 * (n + 1)
            f.write(f"s {n} {10 * n}\n")
            f.write(f"h begin {B + 1000 * r}\n")
            if n == 0:
                # wide and off-centre, then narrow and exact
                f.write(f"c 100 {OFF[r] + 260} 300\n")
                f.write(f"c 1000 {OFF[r] + 1001} 1002\n")
            f.write(f"a begin {100 * n} 0 {n} 7\n")
            f.write(f"h dd.launched {B + 10000}\n")
            f.write(f"a dd.launched {100 * n + 3} 1 {n} {9 + n}\n")
            f.write(f"h dd.waited {B + 50000 + 10000 * r}\n")
            f.write(f"a dd.waited {100 * n + 3} 1 {n + 1} {9 + n}\n")
            f.write(f"h dd.reduced {B + 62000}\n")
            f.write(f"h end {B + 100000 + 1000 * n + 500 * r}\n")
            f.write(f"d 0 0 0 dd.migration {OFF[r] + B + 12000}\n")
            f.write(f"d 0 0 1 message {OFF[r] + B + 30000}\n")
            f.write(f"d 0 0 2 message {OFF[r] + B + 40000}\n")
            f.write(f"d 1 2 0 nb.start {OFF[r] + B + 70000}\n")
        f.write("dropped 0\n")
EOF
check
python3 "$tr" t --skip 1 --json t.json > out.txt 2>&1 || fail "analysis failed: $(cat out.txt)"
check
python3 - << 'EOF' || fail "wrong figures: $(cat out.txt)"
import json, sys
d = json.load(open("t.json"))
bad = []
def want(name, got, exp):
    if got != exp:
        bad.append(f"{name}: {got} != {exp}")
# searches 2..5 (0 calibrated, 1 skipped): lengths 102.5 .. 105.5 us
want("searches", d["searches"], 4)
want("length", d["length_us"], 104.0)
want("length min/max", d["length_us_min_max"], [102.5, 105.5])
want("begin", d["host_points_us"]["begin"], [0.0, 1.0])
want("dd.waited", d["host_points_us"]["dd.waited"], [50.0, 60.0])
want("span launched->waited", d["host_spans_us"]["dd.launched -> dd.waited"], [40.0, 50.0])
want("span reduced->end", d["host_spans_us"]["dd.reduced -> end"], [41.5, 42.0])
want("dd.migration", d["device_points_us"]["dd.migration"], [12.0, 12.0])
want("message#2", d["device_points_us"]["message#2"], [40.0, 40.0])
want("nb.start[rest]", d["device_points_us"]["nb.start[rest]"], [70.0, 70.0])
want("calibration", d["calibration_half_width_us"], [0.001, 0.001])
# the spans summed by kind (own host work, device waits, MPI with the others) and who ended last
want("by kind", d["by_kind_us"], {"own host work": [10.0, 9.0],
                                  "waits for its device": [40.0, 50.0],
                                  "MPI and the others": [53.5, 44.0]})
want("last to end", d["last_to_end"], [0, 4])
# runtime calls per span (the emulation's counts): launches / graphs / syncs / other
calls = d["emulated_runtime_calls"]
want("calls begin->launched", calls["begin -> dd.launched"], [[3, 1, 0, 5.5], [3, 1, 0, 5.5]])
want("calls launched->waited", calls["dd.launched -> dd.waited"], [[0, 0, 1, 0], [0, 0, 1, 0]])
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
check
# the plot, where gnuplot is installed (scripts/plot.py says so otherwise)
if command -v gnuplot > /dev/null; then
    python3 "$tr" t --skip 1 --plot t.png > out.txt 2>&1 || fail "plot failed: $(cat out.txt)"
    [[ -s t.png ]] || fail "no plot"
fi
check
python3 "$tr" t --skip 9 > out.txt 2>&1 && fail "a trace with nothing left after --skip was accepted"
grep -q "no search step traced on every process" out.txt || fail "skip message: $(cat out.txt)"
check
mv t.rank1.txt keep.txt
python3 "$tr" t > out.txt 2>&1 && fail "a missing rank was accepted"
grep -q "traces of ranks \[0\], expected 0..1" out.txt || fail "missing rank message: $(cat out.txt)"
check
sed "4s/^h begin .*/h begin/" keep.txt > t.rank1.txt
python3 "$tr" t > out.txt 2>&1 && fail "a short line was accepted"
grep -q "t.rank1.txt:4: " out.txt || fail "short line message: $(cat out.txt)"
check
rm -f t.rank*.txt
python3 "$tr" t > out.txt 2>&1 && fail "no files accepted"
grep -q "no trace files t.rank\*.txt" out.txt || fail "no files message: $(cat out.txt)"
check

if [[ -n $halox ]]; then
    "$halox" build water --atoms 1500 -o w.gro > /dev/null 2>&1 || fail "build failed"
    check
    "$halox" md -c w.gro --gpu --steps 0 -o probe.gro -g probe.log > probe.out 2>&1 || {
        if grep -qE "no GPU|no CUDA|CUDA driver|not compiled" probe.out; then
            echo "skipped: $(grep -m1 error probe.out)"
            exit 77
        fi
    }
    # 8 search steps: 4 calibrated, 2 skipped, 2 analysed
    HALOX_SEARCH_TRACE=$PWD/run timeout -s KILL 600 \
        "${mpiexec[@]}" -np 2 "$halox" md -c w.gro --gpu --dd 2x1x1 \
        --steps 80 --nstlist 10 -o o.gro -g o.log > run.out 2>&1 ||
        fail "traced run failed: $(grep -m3 -i error run.out)"
    check
    python3 "$tr" run --json run.json --plot run.png > out.txt 2>&1 ||
        fail "analysis of the run failed: $(cat out.txt)"
    check
    python3 - << 'EOF' || fail "the run's trace breaks causality: $(cat out.txt)"
import json, sys
d = json.load(open("run.json"))
h, dv = d["host_points_us"], d["device_points_us"]
order = ["begin", "dd.launched", "dd.waited", "dd.reduced", "dd_search", "counts", "set_home",
         "plan", "agree_plan", "halo_refresh", "set_local", "agree_set_local", "x_halo",
         "pair_search", "end"]
bad = []
missing = [p for p in order if p not in h]
if missing:
    bad.append(f"host points missing: {missing}")
for r in range(d["ranks"]):
    t = [h[p][r] for p in order if p in h]
    for a, b, p in zip(t, t[1:], order[1:]):
        if b < a:
            bad.append(f"rank {r}: host point {p} at {b} us before the one before it ({a})")
    # the alignment's half-width is the slack a device point may have past a host point
    slack = d["calibration_half_width_us"][r] + 0.5
    dd = [k for k in dv if not k.startswith("nb.")]
    if not dd or "nb.status[rest]" not in dv:
        bad.append(f"device points missing: {sorted(dv)}")
        break
    for k in dd:
        if dv[k][r] > h["dd.waited"][r] + slack:
            bad.append(f"rank {r}: device point {k} at {dv[k][r]} us, after the host saw the "
                       f"device step end ({h['dd.waited'][r]})")
    if dv["nb.status[rest]"][r] > h["pair_search"][r] + slack:
        bad.append(f"rank {r}: the pair search's status at {dv['nb.status[rest]'][r]} us, after "
                   f"the host saw it ({h['pair_search'][r]})")
# In the CPU emulation the trace also counts the host's CUDA runtime calls per span: the
# search step synchronises with the device only where it waits for its results (the device
# step's counts, the pair search's status); a synchronisation anywhere else drains the GPU
# between the host's decisions.
calls = d.get("emulated_runtime_calls")
if calls is not None:
    allowed = {"dd.launched -> dd.waited", "x_halo -> pair_search"}
    for sp, vals in calls.items():
        for r, v in enumerate(vals):
            if v and v[2] > 0 and sp not in allowed:
                bad.append(f"rank {r}: {v[2]:g} synchronisations with the device in the span "
                           f"{sp} (only {sorted(allowed)} wait for the device)")
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
    check
fi
finish test_search_trace
