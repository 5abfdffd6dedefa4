#!/usr/bin/env bash
# CTest "gromacs_topology": the topology `halox build --top` writes runs the same system in
# GROMACS, and one .mdp file drives both codes.
#
#   tests/gromacs_topology.sh HALOX_BINARY WORK_DIR
#
# For each case a box is built with `halox build ... -o conf.gro --top topol.top`; one run.mdp
# (reaction field, potential shift, rc, fixed rlist, nsteps = 0, continuation = yes) is given to
# `halox md -f run.mdp` and to `gmx grompp -f run.mdp -p topol.top` (no warning allowed:
# -maxwarn 0), then `gmx_d mdrun -rerun conf.gro` evaluates the same frame. continuation = yes
# makes both codes take the coordinates as they are (no SETTLE before step 0), so the two
# single points are of one configuration, and LJ (SR) and Coulomb (SR) are compared term by term.
#
# Tolerance, from the arithmetic: both codes are double precision and sum the same pairs, so
# they agree to rounding (~1e-12 relative) except for one known constant: halox's 1/(4 pi eps0)
# is 138.935458, GROMACS 2022 derives 138.9354576444 from CODATA 2018, 2.6e-9 relative, which
# scales the whole Coulomb term (measured: 2.55e-9 on 3000 SPC/E atoms). Required:
# |halox - gmx| <= 1e-8 |gmx| + 1e-5 kJ/mol (the .xvg has 6 decimals). A wrong convention is far
# above that: the smallest term, the k_rf r^2 part of the exclusion correction, is ~1e-3 of the
# Coulomb energy; a missing LJ shift or a wrong c6 is ~1e-2 of LJ.
# Exit 77 (CTest SKIP) when gmx_d or python3 is missing.
set -uo pipefail

halox=$1
work=$2

# shellcheck source=tests/gromacs_lib.sh
. "$(cd "$(dirname "$0")" && pwd)/gromacs_lib.sh"
need_gmx_d
need_python3
fresh_work "$work"

passed=0
failed=0
# kind  model  atoms  rc   eps_rf  seed
cases=("water spce 3000 1.0 0 1" "water spce 2400 0.9 78.5 2" "water spc 2400 1.0 0 3"
    "water tip3p 2400 0.9 0 4" "argon argon 2000 1.0 0 5")
for c in "${cases[@]}"; do
    read -r kind model atoms rc eps seed <<< "$c"
    tag=${model}_rc${rc}_eps${eps}
    label="$model rc=$rc eps_rf=$eps"
    build=("$halox" build "$kind" --atoms "$atoms" --seed "$seed" -o "$tag.gro" --top "$tag.top")
    [[ $kind == water ]] && build+=(--model "$model")
    if ! "${build[@]}" > "$tag.build.log" 2>&1; then
        cat "$tag.build.log"
        echo "FAIL $label: halox build --top failed"
        failed=$((failed + 1))
        continue
    fi
    rf_mdp "$tag" "$rc" "$eps" 1
    if ! single_point "$tag" "$label" "$model"; then
        failed=$((failed + 1))
        continue
    fi
    printf 'LJ-(SR)\nCoulomb-(SR)\nPotential\n\n' |
        gmx_d energy -f "$tag.rerun.edr" -o "$tag.xvg" > "$tag.energy.log" 2>&1
    if python3 - "$label" "$tag.halox.txt" "$tag.xvg" << 'PY'; then
import re, sys
label, htxt, xvg = sys.argv[1:]
h = {}
for line in open(htxt):
    m = re.match(r"^\s+(lj|coulomb|potential)\s+(\S+)", line)
    if m:
        h[m.group(1)] = float(m.group(2))
legend, row = [], None
for line in open(xvg):
    m = re.match(r'^@ s\d+ legend "(.*)"', line)
    if m:
        legend.append(m.group(1))
    elif line.strip() and line[0] not in "#@":
        row = [float(v) for v in line.split()[1:]]
if row is None or len(row) != len(legend):
    sys.exit(f"FAIL {label}: no energy frame in {xvg}")
g = dict(zip(legend, row))
bad = 0
for ht, gt in (("lj", "LJ (SR)"), ("coulomb", "Coulomb (SR)"), ("potential", "Potential")):
    if ht not in h or gt not in g:
        print(f"FAIL {label}: term {ht} missing (halox {sorted(h)}, GROMACS {sorted(g)})")
        bad += 1
        continue
    d = h[ht] - g[gt]
    tol = 1e-8 * abs(g[gt]) + 1e-5
    ok = abs(d) <= tol
    bad += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {label} {ht:9s} halox {h[ht]:.6f} gmx_d {g[gt]:.6f} "
          f"diff {d:.2e} (rel {d / g[gt] if g[gt] else 0:.2e}, tolerance {tol:.1e})")
sys.exit(1 if bad else 0)
PY
        passed=$((passed + 1))
    else
        echo "FAIL $label (files in $work)"
        failed=$((failed + 1))
    fi
done
echo "gromacs_topology: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
