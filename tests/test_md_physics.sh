#!/usr/bin/env bash
# halox md runs whose physics a user reads off the outputs (label long: tens of seconds, minutes
# under the sanitizers; scripts/test.sh --quick skips them, CI runs them):
#  - v-rescale: the conserved energy (GROMACS's "Conserved En.") in the energy file and in the
#    log's energies every --nstlog steps, and conserved while the thermostat heats the box;
#  - a mixture built with the model name halox md takes, written with its velocities, runs at
#    the relaxation's temperature.
#   test_md_physics.sh <halox>
set -u
halox=$1
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

"$halox" build water --atoms 3000 --seed 1 -o big.gro > /dev/null 2>&1 || {
    echo "FAIL: halox build"
    exit 1
}
"$halox" build water --atoms 648 --seed 3 -o w.gro > /dev/null 2>&1 || {
    echo "FAIL: halox build"
    exit 1
}

# --- 1. v-rescale: the conserved energy (GROMACS's "Conserved En.": total energy minus the
# thermostat's work) in the energy file and the log, and conserved: from 100 K the thermostat
# heats the box to 300 K, so the total energy rises by ~5000 kJ/mol, while the conserved energy
# must stay within the bar of an NVE run: its drift below the buffer tolerance 0.005 kJ/mol/ps
# per atom (measured 4e-4 over these 1 ps; the pair list's error is its only systematic source)
check
"$halox" md -c big.gro --steps 500 --rc 0.9 --threads 2 --gen-vel 100 --thermostat v-rescale \
    --ref-t 300 --tau-t 0.1 --nstenergy 10 --nstlog 100 -e vr.jsonl -o vr.gro -g vr.log > vr.out 2>&1 ||
    fail "v-rescale run: $(tail -2 vr.out)"
cons=$(sed -n 's/^conserved-energy drift: \([-0-9.e+]*\) kJ\/mol\/ps per atom (v-rescale.*/\1/p' vr.log)
tot=$(sed -n 's/^total-energy drift: \([-0-9.e+]*\) kJ\/mol\/ps per atom.*/\1/p' vr.log)
{ [ -n "$cons" ] && [ -n "$tot" ] && awk -v c="$cons" -v t="$tot" 'BEGIN { exit !(c < 0.005 && c > -0.005 && t > 0.1) }'; } ||
    fail "v-rescale: conserved-energy drift '$cons' (want |.| < 0.005), total-energy drift '$tot' (want > 0.1: the thermostat heats)"
echo "v-rescale 100 -> 300 K: total-energy drift $tot, conserved-energy drift $cons kJ/mol/ps per atom"
head -1 vr.jsonl | grep -q '"total":"kJ/mol","conserved":"kJ/mol"' || fail "the energy file's columns lack conserved"
[ "$(grep -c '"conserved":' vr.jsonl)" -eq 52 ] || fail "not every energy line has the conserved energy"
# the log: energies every --nstlog steps (steps 0, 100, ..., 500), GROMACS's names
[ "$(grep -Ec '^ +Step +Time$' vr.log)" -eq 6 ] ||
    fail "energies in the log: $(grep -Ec '^ +Step +Time$' vr.log) blocks, want 6 (steps 0 to 500 by 100)"
grep -q "Conserved En." vr.log || fail "the log's energies lack Conserved En."
# an NVE energy file keeps its columns (conserved = total there)
"$halox" md -c w.gro --steps 10 --rc 0.7 --gen-vel 300 --nstenergy 5 -e nve.jsonl -o nve.gro \
    -g nve.log > nve.out 2>&1
grep -q conserved nve.jsonl && fail "an NVE energy file has a conserved column"

# --- 2. one set of model names between halox build and halox md (a water model's name for a
# mixture is refused: test_md_options), and a mixture written with its velocities (it was written without: the first run started from rest); pure ethanol reports
# its O-O distance (it reported OW-OW of no water). A short relaxation (--relax) keeps it quick.
check
"$halox" build mixture --ethanol-fraction 1 --atoms 900 --model oplsaa-spce --relax 0.05 \
    -o eth.gro > eth.out 2>&1 || fail "build mixture: $(tail -2 eth.out)"
grep -q "min O-O (ethanol) 0\.[0-9]* nm -> eth.gro" eth.out || fail "pure ethanol: $(tail -1 eth.out)"
grep -q "OW-OW" eth.out && fail "pure ethanol reports an OW-OW distance"
[ "$(sed -n 3p eth.gro | wc -c)" -gt 60 ] || fail "the mixture was written without velocities"
"$halox" md -c eth.gro --model oplsaa-spce --steps 0 --rc 0.9 -o eth_out.gro -g eth.log > eth_md.out 2>&1 ||
    fail "md of the mixture with the build's model name: $(grep -m1 error eth_md.out)"
grep -q "has no velocities" eth_md.out && fail "md of the built mixture starts from rest"
t=$(sed -n 's/^  temperature \([0-9.]*\) K$/\1/p' eth_md.out)
awk -v t="${t:-0}" 'BEGIN { exit !(t > 100) }' ||
    fail "md of the built mixture: T = '$t' K at step 0 (want the relaxation's, ~200-300 K)"
echo "mixture: built and run as oplsaa-spce, T at step 0 $t K; $(grep -o 'min O-O.*' eth.out)"

finish test_md_physics
