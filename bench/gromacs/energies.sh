#!/usr/bin/env bash
# Single-point energies of a water configuration computed by GROMACS with halox's physics.
#
#   bench/gromacs/energies.sh CONF.gro [rc [eps_rf [model]]]
#
# Prints one JSON object (kJ/mol): {"lj": LJ (SR), "coulomb": Coulomb (SR), "potential": ...,
# ["kinetic": ...,] "gmx": ..., "precision": ..., "rc": ..., "eps_rf": ..., "model": ...,
# "atoms": ..., "start": "as-given" | "constrained"}.
# Environment: GMX (default gmx; gmx_d gives double precision), KEEP_WORK=1 keeps the work
# directory (printed on stderr), RLIST (default rc: a single point needs no buffer, and any
# rlist >= rc gives the same energies because pairs beyond rc are masked; rc itself lets the box
# be as small as 2 rc), CONSTRAIN_START=1 (see below).
#
# How: grompp with bench/gromacs/<model>.itp and nve.mdp.in, then by default
# `mdrun -rerun CONF.gro`: a rerun evaluates the energy of the frame exactly as given. With
# CONSTRAIN_START=1 instead an nsteps = 0 run with continuation = no: GROMACS first SETTLEs the
# read coordinates (and sets the velocities at -dt/2 to match) and reports the energies of the
# constrained frame plus the kinetic energy. That is what `halox md --steps 0` does, so it is
# the mode to compare halox with. The terms are read back from the .edr with `gmx energy` (its
# .xvg keeps all digits).
#
# Which GROMACS terms: in the Verlet scheme with reaction-field, "Coulomb (SR)" already
# contains the excluded-pair correction (k_rf r^2 - c_rf for every excluded pair within the
# cut-off) and the self term (-1/2 c_rf q_i^2 per atom); there is no separate "RF excl." term
# (that was the group scheme). "LJ (SR)" contains the potential shift. The script checks that
# Potential = LJ (SR) + Coulomb (SR) and fails if GROMACS reports any other potential term.
set -euo pipefail

if [[ $# -lt 1 || $1 == -h || $1 == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    [[ $# -ge 1 ]] && exit 0 || exit 2
fi
conf=$1
rc=${2:-1.0}
eps_rf=${3:-0}
model=${4:-spce}
GMX=${GMX:-gmx}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"

command -v "$GMX" >/dev/null 2>&1 || hxg_die "'$GMX' not found on PATH (install GROMACS: scripts/setup.sh)"
command -v python3 >/dev/null 2>&1 || hxg_die "python3 not found (scripts/setup.sh --minimal installs it)"

work=$(mktemp -d "${TMPDIR:-/tmp}/hx_gmx_energies.XXXXXX")
if [[ ${KEEP_WORK:-0} == 1 ]]; then
    echo "energies.sh: work directory $work" >&2
else
    trap 'rm -rf "$work"' EXIT
fi

constrain=${CONSTRAIN_START:-0}
if [[ $constrain == 1 ]]; then start=constrained continuation=no; else start=as-given continuation=yes; fi
hxg_prepare "$conf" "$work" GMX="$GMX" MODEL="$model" RC="$rc" EPS_RF="$eps_rf" \
    RLIST="${RLIST:-$rc}" NSTEPS=0 CONTINUATION=$continuation
# One thread: a single frame of a few thousand atoms is milliseconds; more threads would only
# compete with whatever else runs. -rerun of a .gro file reads its coordinates and box.
conf_abs=$(realpath "$conf")
if [[ $constrain == 1 ]]; then
    mdrun=(mdrun -s topol.tpr -deffnm rerun -nt 1 -pin off)
else
    mdrun=(mdrun -s topol.tpr -rerun "$conf_abs" -deffnm rerun -nt 1 -pin off)
fi
if ! (cd "$work" && "$GMX" "${mdrun[@]}" >mdrun.out 2>&1); then
    tail -n 30 "$work/mdrun.out" >&2
    hxg_die "$GMX ${mdrun[*]} failed (log: $work/rerun.log)"
fi
# The term list comes from `gmx dump -e` (every term in the file, in order); the values from
# `gmx energy` whose .xvg keeps all digits (dump rounds to 6 significant digits).
"$GMX" dump -e "$work/rerun.edr" >"$work/dump.txt" 2>"$work/dump.err" ||
    hxg_die "$GMX dump -e failed: $(tail -n 3 "$work/dump.err")"
terms='LJ-(SR)\nCoulomb-(SR)\nPotential\n'
[[ $constrain == 1 ]] && terms+='Kinetic-En.\n'
printf "$terms\n" |
    "$GMX" energy -f "$work/rerun.edr" -o "$work/energy.xvg" >"$work/energy.out" 2>&1 ||
    hxg_die "$GMX energy failed: $(tail -n 5 "$work/energy.out")"
precision=$("$GMX" --version 2>/dev/null | awk -F: '/^Precision/ { gsub(/ /, "", $2); print $2 }')

python3 - "$work/dump.txt" "$work/energy.xvg" "$GMX" "$precision" "$rc" "$eps_rf" "$model" "$conf" \
    "$start" <<'EOF'
import json
import re
import sys

dump, xvg, gmx, precision, rc, eps_rf, model, conf, start = sys.argv[1:]
# gmx dump -e starts with "energy components:" and one line per term: "    0  LJ (SR)  (kJ/mol)".
order = []
with open(dump) as f:
    for line in f:
        m = re.match(r"^\s+\d+\s+(\S.*?)\s+\([^()]*\)\s*$", line)
        if m:
            order.append(m.group(1))
        elif order:
            break
for need in ("LJ (SR)", "Coulomb (SR)", "Potential"):
    if need not in order:
        sys.exit(f"energies.sh: term '{need}' not in {dump} (found: {order})")
# Everything GROMACS lists before "Potential" is a potential-energy term. With this topology and
# mdp only LJ (SR) and Coulomb (SR) may be there; anything else (dispersion correction, RF excl.,
# bonded terms) means the setup no longer matches halox.
others = [t for t in order[: order.index("Potential")] if t not in ("LJ (SR)", "Coulomb (SR)")]
if others:
    sys.exit(f"energies.sh: unexpected potential terms {others}: the setup differs from halox")
# energy.xvg: legend lines '@ s0 legend "LJ (SR)"', then rows "time v0 v1 v2".
legend, rows = [], []
with open(xvg) as f:
    for line in f:
        m = re.match(r'^@ s(\d+) legend "(.*)"', line)
        if m:
            legend.append(m.group(2))
        elif line.strip() and line[0] not in "#@":
            rows.append([float(v) for v in line.split()])
if len(rows) != 1 or len(rows[0]) != len(legend) + 1:
    sys.exit(f"energies.sh: expected one frame with {len(legend)} values in {xvg}")
terms = dict(zip(legend, rows[0][1:]))
lj, coul, pot = terms["LJ (SR)"], terms["Coulomb (SR)"], terms["Potential"]
# The .edr stores floats in mixed precision; Potential is summed in double before it is stored.
tol = 1e-6 * (abs(lj) + abs(coul)) + 1e-3
if abs(lj + coul - pot) > tol:
    sys.exit(f"energies.sh: LJ (SR) + Coulomb (SR) = {lj + coul} but Potential = {pot}")
natoms = None
with open(conf) as f:
    f.readline()
    natoms = int(f.readline().split()[0])
out = {"lj": lj, "coulomb": coul, "potential": pot}
if "Kinetic En." in terms:
    out["kinetic"] = terms["Kinetic En."]
out.update({"gmx": gmx, "precision": precision, "model": model, "rc": float(rc),
            "eps_rf": float(eps_rf), "atoms": natoms, "start": start})
print(json.dumps(out))
EOF
