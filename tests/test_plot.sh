#!/usr/bin/env bash
# scripts/plot.py: energy plots of a real `halox md --energy` file (two runs on one set of
# axes) and the bar chart of the committed CPU benchmark result are drawn; bad input fails with
# file, line and what is wrong, and leaves an existing plot untouched. Skipped (77) without
# gnuplot.
#   test_plot.sh <halox> <source dir>
set -u
halox=$1
src=$2
plot=$src/scripts/plot.py
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
if ! command -v gnuplot > /dev/null; then
    echo "SKIP: gnuplot is not installed (scripts/setup.sh installs gnuplot-nox)"
    exit 77
fi

# a real energy file: 648-atom water box, 40 steps, energies every 5 steps
"$halox" build water --atoms 648 --seed 3 -o w.gro > /dev/null 2>&1 || fail "halox build"
"$halox" md -c w.gro --steps 40 --rc 0.7 --rlist 0.75 --gen-vel 300 --seed 3 \
    --energy e1.jsonl --nstenergy 5 -o o1.gro -g md1.log > /dev/null 2>&1 || fail "halox md 1"
"$halox" md -c w.gro --steps 40 --rc 0.7 --rlist 0.75 --gen-vel 250 --seed 4 \
    --energy e2.jsonl --nstenergy 5 -o o2.gro -g md2.log > /dev/null 2>&1 || fail "halox md 2"

# good plots: non-empty, the right format, legend entries present
check
python3 "$plot" energies e1.jsonl e2.jsonl --label "300 K" --label "250 K" -o e.svg > out.txt 2>&1 ||
    fail "energies plot: $(cat out.txt)"
{ grep -q "<svg" e.svg && grep -q "300 K" e.svg && grep -q "250 K" e.svg &&
    grep -q "temperature (K)" e.svg; } 2> /dev/null || fail "e.svg lacks the svg tag, legend or axis"
check
python3 "$plot" energies e1.jsonl -o e.png > out.txt 2>&1 || fail "png plot: $(cat out.txt)"
check
tail -n +2 e1.jsonl > nometa.jsonl
python3 "$plot" energies nometa.jsonl -o nometa.svg > out.txt 2>&1 ||
    fail "a file without the metadata line: $(cat out.txt)"
head -c 8 e.png 2> /dev/null | od -An -c | grep -q "P   N   G" || fail "e.png is not a PNG file"
check
python3 "$plot" bench "$src/bench/results/cpu_md_45k.json" -o b.svg > out.txt 2>&1 ||
    fail "bench plot: $(cat out.txt)"
{ grep -q "GROMACS" b.svg && grep -q "halox mixed" b.svg; } 2> /dev/null ||
    fail "b.svg lacks the bar labels"
# the search step by part (halox bench md results; the numbers are made up)
cat > bm.json <<'EOF'
{"runs": [{"backend": "nvshmem", "dd": [2, 2, 1], "ranks": 4, "atoms": 45000,
  "search_step_on": "device", "search_step_parts_us": {"state_to_host": 0, "migration": 40,
  "topology_plan": 80, "halo_setup": 20, "local_set_upload": 30, "halo_x_pair_search": 120}},
 {"backend": "gpu-mpi", "dd": [4, 1, 1], "ranks": 4, "atoms": 45000,
  "search_step_parts_us": {"state_to_host": 400, "migration": 1200, "topology_plan": 900,
  "halo_setup": 300, "local_set_upload": 500, "halo_x_pair_search": 400}},
 {"backend": "gpu", "dd": [1, 1, 1], "ranks": 1, "atoms": 45000}]}
EOF
check
python3 "$plot" search bm.json -o s.svg > out.txt 2>&1 || fail "search plot: $(cat out.txt)"
{ grep -q "on the device" s.svg && grep -q "on the host" s.svg && grep -q "halo set-up" s.svg; } \
    2> /dev/null || fail "s.svg lacks the run labels or the parts"
[ "$(stat -c %a e.svg 2> /dev/null)" = "$(printf '%o' $((0666 & ~$(umask))))" ] ||
    fail "e.svg mode $(stat -c %a e.svg) does not follow the umask"

# bad input: exit 1, a message naming the file (and line), the good plot untouched, no
# temporary file left behind
cp e.svg good.svg
bad() { # NAME EXPECTED-MESSAGE-REGEX ARGS...
    local name=$1 want=$2
    shift 2
    check
    if python3 "$plot" "$@" > out.txt 2> err.txt; then
        fail "$name: accepted"
        cp good.svg e.svg # so that the next cases are judged on their own
        return
    fi
    grep -Eq "$want" err.txt || fail "$name: message '$(cat err.txt)' does not match '$want'"
    cmp -s e.svg good.svg || fail "$name: the existing e.svg was changed"
    ls -a | grep -q '^\.plot-' && fail "$name: a temporary file was left behind"
}
head -3 e1.jsonl > trunc.jsonl
echo '{"step": 15, "time": 0.03, "potential": 1' >> trunc.jsonl
bad "truncated line" "trunc.jsonl:4: not a JSON object" energies trunc.jsonl -o e.svg
# line 1 is the metadata line (docs/energy-file.md), energy lines follow
check
head -1 e1.jsonl | grep -q '"halox_energy_file":1' || fail "e1.jsonl does not start with the metadata line"
sed '2,$s/"kinetic"/"kin"/' e1.jsonl > nokey.jsonl
bad "missing key" "nokey.jsonl:2: key 'kinetic' is missing" energies nokey.jsonl -o e.svg
sed -E '2s/"total": *[-0-9.e+]+/"total":NaN/' e1.jsonl > nan.jsonl
cmp -s e1.jsonl nan.jsonl && fail "no total on line 2 of e1.jsonl: $(sed -n 2p e1.jsonl)"
bad "NaN energy" "nan.jsonl:2: key 'total' is not a finite number \(nan\)" energies nan.jsonl -o e.svg
# what halox writes for a non-finite energy (docs/energy-json.md)
sed -E '2s/"total": *[-0-9.e+]+/"total":null/' e1.jsonl > null.jsonl
bad "null energy" "null.jsonl:2: key 'total' is null \(halox writes null for a NaN or infinite value" \
    energies null.jsonl -o e.svg
cat e1.jsonl e1.jsonl > twice.jsonl
bad "two runs" "twice.jsonl:$(($(wc -l < e1.jsonl) + 1)): a metadata line after energy lines" \
    energies twice.jsonl -o e.svg
{ cat e1.jsonl; tail -n +2 e1.jsonl; } > back.jsonl
bad "time going back" "back.jsonl:$(($(wc -l < e1.jsonl) + 1)): time .* goes back" \
    energies back.jsonl -o e.svg
sed '1s/"halox_energy_file":1/"halox_energy_file":7/' e1.jsonl > future.jsonl
bad "format version" "future.jsonl:1: energy file format 7" energies future.jsonl -o e.svg
head -2 e1.jsonl > one.jsonl
bad "one frame" "one.jsonl: 1 energy frame" energies one.jsonl -o e.svg
: > empty.jsonl
bad "empty file" "empty.jsonl: 0 energy frame" energies empty.jsonl -o e.svg
bad "missing file" "nothere.jsonl: cannot read" energies nothere.jsonl -o e.svg
bad "label count" "2 --label for 1 files" energies e1.jsonl --label a --label b -o e.svg
bad "output type" "e.pdf: unknown output type" energies e1.jsonl -o e.pdf
bad "output directory" "no/such/dir" energies e1.jsonl -o no/such/dir/e.svg
echo '{"meta": {}}' > nosummary.json
bad "bench without summary" "nosummary.json: no 'summary' list" bench nosummary.json -o e.svg
echo '{"summary": [{"backend": "cpu"}]}' > badsummary.json
bad "bench entry" "badsummary.json: summary\[0\] lacks" bench badsummary.json -o e.svg
echo '{"meta": {}}' > noruns.json
bad "search without runs" "noruns.json: no 'runs' list" search noruns.json -o e.svg
echo '{"runs": [{"backend": "gpu"}]}' > nosearch.json
bad "search without a search step" "no run with search_step_parts_us" search nosearch.json -o e.svg
echo '{"runs": [{"search_step_parts_us": {}}]}' > badrun.json
bad "search run" "badrun.json: runs\\[0\\] lacks" search badrun.json -o e.svg
finish test_plot
