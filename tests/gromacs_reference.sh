#!/usr/bin/env bash
# CTest "gromacs_reference": the GROMACS tooling itself is right, without halox.
#
#   tests/gromacs_reference.sh SOURCE_DIR WORK_DIR
#
# On a water box made by `gmx solvate` (~1400 atoms, 2.4 nm), bench/gromacs/energies.sh must agree
# with bench/gromacs/reference_energy.py (an independent double-precision evaluation of the
# formulas): this proves the topology, the mdp and the choice of GROMACS terms (Coulomb (SR) =
# pair + excluded-pair correction + self term; LJ (SR) with the shift) before halox is compared
# with them. Cases: SPC/E with eps_rf = 0 (infinity) and 78.5, TIP3P with eps_rf = 0, rc = 1.0.
#
# Tolerances: gmx_d (double precision) against the Python reference: rel 1e-8 + 1e-4 kJ/mol
# (two double evaluations differ only in summation order; .xvg prints 6 decimals). gmx (mixed
# precision) against it: rel 1e-5 of the Coulomb scale |pair| + |excluded| + |self| (of |lj| for
# LJ), since GROMACS accumulates the large, cancelling exclusion and self terms in float:
# measured up to 2.6e-6 of the scale (1.3e-5 of |Coulomb|) on 5184 atoms, 1.3e-6 on this box.
# Exit 77 (CTest SKIP) when gmx or python3 is not installed.
set -uo pipefail

src=$1
work=$2
# shellcheck source=tests/gromacs_lib.sh
. "$(cd "$(dirname "$0")" && pwd)/gromacs_lib.sh"
need_gmx
need_python3
fresh_work "$work"

if ! gmx solvate -cs spc216.gro -box 2.4 2.4 2.4 -o box.gro >solvate.log 2>&1; then
    tail -n 20 solvate.log
    echo "FAIL: gmx solvate could not build the test box (log: $work/solvate.log)"
    exit 1
fi

binaries=(gmx)
if command -v gmx_d >/dev/null 2>&1; then
    binaries+=(gmx_d)
else
    echo "note: gmx_d (double precision) not found; checking mixed precision only"
fi

passed=0
failed=0
for case in "spce 0" "spce 78.5" "tip3p 0"; do
    read -r model eps <<<"$case"
    ref=ref_${model}_${eps}.json
    if ! python3 "$src/bench/gromacs/reference_energy.py" box.gro --rc 1.0 --eps-rf "$eps" \
        --model "$model" >"$ref"; then
        echo "FAIL: reference_energy.py on $model eps_rf=$eps"
        failed=$((failed + 1))
        continue
    fi
    for g in "${binaries[@]}"; do
        out=${g}_${model}_${eps}.json
        if [[ $g == gmx_d ]]; then tol=(--rel 1e-8 --abs 1e-4); else tol=(--rel 1e-5 --abs 1e-3); fi
        if GMX=$g "$src/bench/gromacs/energies.sh" box.gro 1.0 "$eps" "$model" >"$out" &&
            python3 "$src/tests/gromacs_compare.py" --label "$g $model eps_rf=$eps" "${tol[@]}" \
                --scale-from "$ref" --explain "$ref" "$out" "$ref"; then
            passed=$((passed + 1))
        else
            echo "FAIL: $g $model eps_rf=$eps (files in $work)"
            failed=$((failed + 1))
        fi
    done
done
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
