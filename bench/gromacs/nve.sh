#!/usr/bin/env bash
# A short GROMACS NVE run of a water configuration with halox's physics; energies as JSON lines.
#
#   bench/gromacs/nve.sh CONF.gro STEPS [rc [eps_rf [model [nstlist [rlist]]]]] > energies.jsonl
#
# One line per step, in halox's --energy format: {"step", "time", "lj", "coulomb", "potential",
# "kinetic", "total", "temperature"} (kJ/mol, K). Velocities come from CONF.gro (zero if it has
# none); the start is SETTLEd first (continuation = no) as halox md does, so `halox md -c CONF.gro
# --steps STEPS --nstenergy 1` is directly comparable line by line.
# Defaults: rc 1.0, eps_rf 0, model spce, nstlist 10, rlist rc + 0.1.
# Environment: GMX (default gmx; gmx_d for double precision), KEEP_WORK=1 keeps the work directory.
#
# Kinetic energy: GROMACS's leap-frog reports the average of the two half-step kinetic energies
# around each step (integrator = md), and so does halox. Temperature: degrees of freedom are
# 6 per rigid water with comm-mode = none; halox subtracts 3 for the centre of mass, so
# temperatures differ by the factor (6N - 3)/6N while kinetic energies agree.
set -euo pipefail

if [[ $# -lt 2 || $1 == -h || $1 == --help ]]; then
    awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
    [[ $# -ge 1 && ($1 == -h || $1 == --help) ]] && exit 0 || exit 2
fi
conf=$1
steps=$2
rc=${3:-1.0}
eps_rf=${4:-0}
model=${5:-spce}
nstlist=${6:-10}
rlist=${7:-$(awk -v r="$rc" 'BEGIN { printf "%.4g", r + 0.1 }')}
GMX=${GMX:-gmx}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=common.sh
source "$here/common.sh"
command -v "$GMX" >/dev/null 2>&1 || hxg_die "'$GMX' not found on PATH (install GROMACS: scripts/setup.sh)"

work=$(mktemp -d "${TMPDIR:-/tmp}/hx_gmx_nve.XXXXXX")
if [[ ${KEEP_WORK:-0} == 1 ]]; then
    echo "nve.sh: work directory $work" >&2
else
    trap 'rm -rf "$work"' EXIT
fi
hxg_prepare "$conf" "$work" GMX="$GMX" MODEL="$model" RC="$rc" EPS_RF="$eps_rf" RLIST="$rlist" \
    NSTLIST="$nstlist" NSTEPS="$steps" CONTINUATION=no NSTCALCENERGY=1 NSTENERGY=1
if ! (cd "$work" && "$GMX" mdrun -s topol.tpr -deffnm md -nt 1 -pin off >mdrun.out 2>&1); then
    tail -n 30 "$work/mdrun.out" >&2
    hxg_die "$GMX mdrun failed (log: $work/md.log)"
fi
printf 'LJ-(SR)\nCoulomb-(SR)\nPotential\nKinetic-En.\nTotal-Energy\nTemperature\n\n' |
    "$GMX" energy -f "$work/md.edr" -o "$work/energy.xvg" >"$work/energy.out" 2>&1 ||
    hxg_die "$GMX energy failed: $(tail -n 5 "$work/energy.out")"
dt=$(awk -F= '$1 ~ /^dt / { gsub(/ /, "", $2); print $2 }' "$work/grompp.mdp")

python3 - "$work/energy.xvg" "$dt" <<'EOF'
import json
import re
import sys

xvg, dt = sys.argv[1], float(sys.argv[2])
keys = {"LJ (SR)": "lj", "Coulomb (SR)": "coulomb", "Potential": "potential",
        "Kinetic En.": "kinetic", "Total Energy": "total", "Temperature": "temperature"}
legend = []
with open(xvg) as f:
    for line in f:
        m = re.match(r'^@ s(\d+) legend "(.*)"', line)
        if m:
            legend.append(keys[m.group(2)])
        elif line.strip() and line[0] not in "#@":
            v = [float(x) for x in line.split()]
            out = {"step": round(v[0] / dt), "time": v[0]}
            out.update(zip(legend, v[1:]))
            print(json.dumps(out))
EOF
