#!/usr/bin/env bash
# CTest "gromacs_energy": halox's single-point energies equal GROMACS's on the same configuration.
#
#   tests/gromacs_energy.sh HALOX_BINARY SOURCE_DIR WORK_DIR
#
# For each case (model, rc, eps_rf, seed) a box of ~2400 atoms is built with `halox build water`,
# its energies computed with `halox md --steps 0` (step-0 line of the --energy file) and with
# GROMACS through `CONSTRAIN_START=1 bench/gromacs/energies.sh` (nsteps = 0, continuation = no),
# and LJ, Coulomb, the potential and the kinetic energy are compared term by term.
#
# Why the constrained start: `halox md` SETTLEs the coordinates it reads before step 0 (the
# .gro's 3 decimals do not keep the water geometry exact), and so does GROMACS with
# continuation = no, so both report the energies of the same constrained frame, and the kinetic
# energy of the velocities that SETTLE's correction leaves. A plain rerun of the raw file differs
# by a few kJ/mol (measured on a 2400-atom box: LJ 0.04, Coulomb 4.5 kJ/mol).
#
# halox's coulomb is GROMACS's "Coulomb (SR)" (pairs + excluded-pair correction + self term),
# its lj is "LJ (SR)" (potential-shifted).
#
# Tolerances: |diff| <= rel * scale + abs, scale = |reference| for lj and kinetic, the sum of the
# magnitudes of the Coulomb parts (pairs, excluded pairs, self; from reference_energy.py) for
# coulomb, and |lj| + that for the potential:
#   gmx_d, double precision like halox: rel 1e-7, abs 1e-3 kJ/mol. Two double evaluations agree to
#     ~1e-11 (measured against reference_energy.py); 1e-7 leaves room for a different last digit
#     of 1/(4 pi eps0) (138.935458 vs 138.93545764...) and none for a wrong convention: the
#     smallest, the k_rf r^2 part of the exclusion correction, is ~1e-3 of the Coulomb scale.
#   gmx, mixed precision: rel 1e-5, abs 1e-3: GROMACS sums the large, cancelling self and
#     exclusion terms in float; measured at most 2.6e-6 of the scale against double (5184 atoms;
#     3e-7 on these 2400-atom boxes). The double comparison is the sharp one; this one shows the
#     agreement holds for the GROMACS build people actually run.
# Exit 77 (CTest SKIP) with the reason when gmx, python3 or halox's build/md subcommands are missing.
set -uo pipefail

halox=$1
src=$2
work=$3

# shellcheck source=tests/gromacs_lib.sh
. "$(cd "$(dirname "$0")" && pwd)/gromacs_lib.sh"
need_gmx
need_python3
need_halox

fresh_work "$work"

binaries=(gmx)
if command -v gmx_d >/dev/null 2>&1; then
    binaries+=(gmx_d)
else
    echo "note: gmx_d (double precision) not found; comparing with mixed precision only"
fi

passed=0
failed=0
# model  rc   eps_rf  seed
cases=("spce 1.0 0 1" "spce 1.0 78.5 2" "spc 1.0 0 3" "tip3p 0.9 0 4")
for c in "${cases[@]}"; do
    read -r model rc eps seed <<<"$c"
    tag=${model}_rc${rc}_eps${eps}_seed${seed}
    label="$model rc=$rc eps_rf=$eps seed=$seed"
    conf=$tag.gro
    if ! "$halox" build water --model "$model" --atoms 2400 --seed "$seed" -o "$conf" \
        >"$tag.build.log" 2>&1; then
        cat "$tag.build.log"
        echo "FAIL $label: halox build failed"
        failed=$((failed + 1))
        continue
    fi
    if ! "$halox" md -c "$conf" --steps 0 --rc "$rc" --eps-rf "$eps" --model "$model" \
        --energy "$tag.halox.jsonl" --nstenergy 1 -o "$tag.out.gro" -g "$tag.md.log" \
        --threads 1 >"$tag.md.out" 2>&1; then
        cat "$tag.md.out"
        echo "FAIL $label: halox md --steps 0 failed"
        failed=$((failed + 1))
        continue
    fi
    # The Coulomb decomposition sets the tolerance scale and explains a failure.
    if ! python3 "$src/bench/gromacs/reference_energy.py" "$conf" --rc "$rc" --eps-rf "$eps" \
        --model "$model" >"$tag.ref.json"; then
        echo "FAIL $label: reference_energy.py failed"
        failed=$((failed + 1))
        continue
    fi
    for g in "${binaries[@]}"; do
        out=$tag.$g.json
        if [[ $g == gmx_d ]]; then tol=(--rel 1e-7 --abs 1e-3); else tol=(--rel 1e-5 --abs 1e-3); fi
        if ! CONSTRAIN_START=1 GMX=$g "$src/bench/gromacs/energies.sh" "$conf" "$rc" "$eps" \
            "$model" >"$out"; then
            echo "FAIL $label: GROMACS ($g) energies failed"
            failed=$((failed + 1))
            continue
        fi
        if python3 "$src/tests/gromacs_compare.py" --label "$label halox vs $g" "${tol[@]}" \
            --terms lj,coulomb,potential,kinetic --scale-from "$tag.ref.json" \
            --explain "$tag.ref.json" "$tag.halox.jsonl" "$out"; then
            passed=$((passed + 1))
        else
            echo "FAIL $label: halox vs $g (files in $work)"
            failed=$((failed + 1))
        fi
    done
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
