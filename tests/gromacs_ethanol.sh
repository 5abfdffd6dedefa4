#!/usr/bin/env bash
# CTest "gromacs_ethanol": ethanol-water single points of halox equal GROMACS's, term by term,
# through the topology `halox build mixture --top` writes.
#
#   tests/gromacs_ethanol.sh HALOX_BINARY WORK_DIR
#
# For each case a mixture is built with `halox build mixture ... -o conf.gro --top topol.top`;
# one run.mdp (reaction field, potential shift, rc, rlist = rc, nsteps = 0, continuation = yes)
# drives `halox md -f run.mdp --model oplsaa-WATER` and `gmx_d grompp -f run.mdp -p topol.top`
# (-maxwarn 0), then `gmx_d mdrun -rerun conf.gro` evaluates the same frame: continuation = yes
# makes both codes take the coordinates as they are (no SETTLE or SHAKE before step 0). Compared:
# LJ (SR), Coulomb (SR), Bond, Angle, Ryckaert-Bell., LJ-14, Coulomb-14 and Potential; GROMACS
# must report no other potential term. Also the degrees of freedom: GROMACS counts 3N minus the
# constraints (comm-mode = none, as halox's .mdp reader requires), halox that minus 3 (the
# centre-of-mass motion it removes once at the start).
#
# Tolerance, from the arithmetic (as tests/gromacs_topology.sh): both codes are double precision
# and sum the same terms, so they agree to rounding except for 1/(4 pi eps0): halox's 138.935458
# against GROMACS 2022's 138.9354576444 (CODATA 2018), 2.6e-9 relative on the Coulomb terms.
# Required per term: |halox - gmx| <= 1e-8 |gmx| + 1e-5 kJ/mol (the .xvg keeps 6 decimals) -
# tighter than the 1e-6 the issue asks. Every convention error is far above it: a 1-4 pair
# with reaction field instead of plain Coulomb, a missing fudge factor, the RF correction of
# excluded pairs, a 1-5 pair excluded, psi = phi instead of phi - 180 degrees are 1e-4 to 1 of
# their terms.
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
# fraction  water  atoms  rc   eps_rf  epsilon_r  seed
cases=("0.1 tip3p 2400 1.0 0 1 1" "0.1 spce 2400 0.9 78.5 1 2" "0.3 tip3p 2400 1.0 0 2 3"
    "1.0 tip3p 2400 1.0 0 1 4")
for c in "${cases[@]}"; do
    read -r frac water atoms rc eps epsr seed <<< "$c"
    tag=x${frac}_${water}_rc${rc}_eps${eps}_epsr${epsr}
    label="x_ethanol=$frac $water rc=$rc eps_rf=$eps eps_r=$epsr"
    if ! "$halox" build mixture --ethanol-fraction "$frac" --model "oplsaa-$water" \
        --atoms "$atoms" --seed "$seed" -o "$tag.gro" --top "$tag.top" > "$tag.build.log" 2>&1; then
        cat "$tag.build.log"
        echo "FAIL $label: halox build mixture --top failed"
        failed=$((failed + 1))
        continue
    fi
    rf_mdp "$tag" "$rc" "$eps" "$epsr" "constraints              = none
comm-mode                = none"
    if ! single_point "$tag" "$label" "oplsaa-$water"; then
        failed=$((failed + 1))
        continue
    fi
    gmx_d dump -e "$tag.rerun.edr" > "$tag.dump.txt" 2> /dev/null
    printf 'Bond\nAngle\nRyckaert-Bell.\nLJ-14\nCoulomb-14\nLJ-(SR)\nCoulomb-(SR)\nPotential\n\n' |
        gmx_d energy -f "$tag.rerun.edr" -o "$tag.xvg" > "$tag.energy.log" 2>&1
    if python3 - "$label" "$tag.halox.txt" "$tag.xvg" "$tag.dump.txt" "$tag.grompp.log" \
        "$tag.md.log" << 'PY'; then
import re, sys
label, htxt, xvg, dump, grompp, mdlog = sys.argv[1:]
h = {}
for line in open(htxt):
    m = re.match(r"^\s+(lj|coulomb|bonds|angles|dihedrals|lj14|coulomb14|potential)\s+(\S+)", line)
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
# every potential term GROMACS lists must be one halox has
order = []
for line in open(dump):
    m = re.match(r"^\s+\d+\s+(\S.*?)\s+\([^()]*\)\s*$", line)
    if m:
        order.append(m.group(1))
    elif order:
        break
known = ["Bond", "Angle", "Ryckaert-Bell.", "LJ-14", "Coulomb-14", "LJ (SR)", "Coulomb (SR)"]
if "Potential" in order:
    extra = [t for t in order[: order.index("Potential")] if t not in known]
    if extra:
        print(f"FAIL {label}: GROMACS has potential terms halox does not: {extra}")
        bad += 1
pairs = (("lj", "LJ (SR)"), ("coulomb", "Coulomb (SR)"), ("bonds", "Bond"), ("angles", "Angle"),
         ("dihedrals", "Ryckaert-Bell."), ("lj14", "LJ-14"), ("coulomb14", "Coulomb-14"),
         ("potential", "Potential"))
for ht, gt in pairs:
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
gdof = hdof = None
for line in open(grompp):
    m = re.search(r"Number of degrees of freedom in T-Coupling group \S+ is ([0-9.]+)", line)
    if m:
        gdof = float(m.group(1))
for line in open(mdlog):
    m = re.search(r"degrees of freedom ([0-9.]+)", line)
    if m:
        hdof = float(m.group(1))
if gdof is None or hdof is None or hdof + 3 != gdof:
    print(f"FAIL {label}: degrees of freedom halox {hdof} + 3 vs GROMACS {gdof}")
    bad += 1
else:
    print(f"ok   {label} degrees of freedom halox {hdof:.0f} (+3 centre of mass) = GROMACS {gdof:.0f}")
sys.exit(1 if bad else 0)
PY
        passed=$((passed + 1))
    else
        echo "FAIL $label (files in $work)"
        failed=$((failed + 1))
    fi
done
echo "gromacs_ethanol: $passed passed, $failed failed"
[[ $failed -eq 0 ]]
