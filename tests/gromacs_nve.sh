#!/usr/bin/env bash
# CTest "gromacs_nve": a short halox NVE trajectory equals GROMACS's (double precision), step by
# step: forces, SETTLE, leap-frog, the kinetic-energy average and the pair list together.
#
#   tests/gromacs_nve.sh HALOX_BINARY SOURCE_DIR WORK_DIR
#
# Start: a 2400-atom box from `halox build water`, velocities drawn once by
# `halox md --steps 0 --gen-vel 300` and written to the .gro; both codes then read that same
# file (SETTLEing it first) and run NVE with energies every step: halox md --nstenergy 1 against
# bench/gromacs/nve.sh with gmx_d. Cases:
#   spce  rc 1.0 eps_rf 0     nstlist 1,  rlist 1.0  30 steps, 1 thread  (no buffer question)
#   spce  rc 0.9 eps_rf 78.5  nstlist 10, rlist 1.3  20 steps, 2 threads
#   tip3p rc 1.0 eps_rf 0     nstlist 10, rlist 1.3  20 steps, 1 thread
# The lattice start relaxes violently (kinetic energy triples in 20 steps), so the buffered cases
# use a generous rlist: with rlist 1.1 halox's list misses pairs by step 10 while GROMACS's cluster
# list (which holds pairs somewhat beyond rlist) does not, and the runs part for that reason.
#
# Tolerance: per step, per term, rel 1e-7 of the scale (|value|; the Coulomb parts' magnitudes for
# coulomb) + 1e-3 kJ/mol. Measured: at most 7e-5 kJ/mol over 40 steps, which is halox's printed
# precision (10 significant digits) plus the slow growth of round-off differences. Any force or
# integrator convention difference shows at step 1 at the 1e-3 level or above.
# Exit 77 (CTest SKIP) when gmx_d, python3 or halox's build/md subcommands are missing.
set -uo pipefail

halox=$1
src=$2
work=$3

# shellcheck source=tests/gromacs_lib.sh
. "$(cd "$(dirname "$0")" && pwd)/gromacs_lib.sh"
need_gmx_d
need_python3
need_halox

fresh_work "$work"

passed=0
failed=0
# model  rc   eps_rf  nstlist  rlist  steps  threads  seed
cases=("spce 1.0 0 1 1.0 30 1 5" "spce 0.9 78.5 10 1.3 20 2 6" "tip3p 1.0 0 10 1.3 20 1 7")
for c in "${cases[@]}"; do
    read -r model rc eps nstlist rlist steps threads seed <<<"$c"
    tag=${model}_rc${rc}_eps${eps}_nstlist${nstlist}
    label="$model rc=$rc eps_rf=$eps nstlist=$nstlist rlist=$rlist seed=$seed"
    if ! "$halox" build water --model "$model" --atoms 2400 --seed "$seed" -o "$tag.lattice.gro" \
        >"$tag.build.log" 2>&1 ||
        ! "$halox" md -c "$tag.lattice.gro" --model "$model" --steps 0 --gen-vel 300 \
            --seed "$seed" -o "$tag.gro" -g "$tag.vel.log" >"$tag.vel.out" 2>&1; then
        cat "$tag.build.log" "$tag.vel.out" 2>/dev/null
        echo "FAIL $label: could not make the starting configuration with velocities"
        failed=$((failed + 1))
        continue
    fi
    if ! "$halox" md -c "$tag.gro" --model "$model" --steps "$steps" --rc "$rc" --eps-rf "$eps" \
        --nstlist "$nstlist" --rlist "$rlist" --energy "$tag.halox.jsonl" --nstenergy 1 \
        -o "$tag.out.gro" -g "$tag.md.log" --threads "$threads" >"$tag.md.out" 2>&1; then
        cat "$tag.md.out"
        echo "FAIL $label: halox md failed"
        failed=$((failed + 1))
        continue
    fi
    if ! GMX=gmx_d "$src/bench/gromacs/nve.sh" "$tag.gro" "$steps" "$rc" "$eps" "$model" \
        "$nstlist" "$rlist" >"$tag.gmx_d.jsonl" ||
        ! python3 "$src/bench/gromacs/reference_energy.py" "$tag.gro" --rc "$rc" --eps-rf "$eps" \
            --model "$model" >"$tag.ref.json"; then
        echo "FAIL $label: GROMACS run or reference decomposition failed"
        failed=$((failed + 1))
        continue
    fi
    if python3 "$src/tests/gromacs_compare.py" --label "$label" --all-steps --rel 1e-7 \
        --abs 1e-3 --terms lj,coulomb,potential,kinetic,total --scale-from "$tag.ref.json" \
        "$tag.halox.jsonl" "$tag.gmx_d.jsonl"; then
        passed=$((passed + 1))
    else
        echo "FAIL $label (files in $work)"
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
