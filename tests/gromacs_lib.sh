# Shared by the tests/gromacs_*.sh comparisons (sourced): the skip (exit 77, CTest SKIP), the
# checks that the tools are there, a fresh work directory, and one .mdp's single point in both
# codes. The caller sets halox (the binary) and work (the work directory).
# shellcheck disable=SC2154 # halox, work: set by the sourcing script
skip() {
    echo "SKIP: $*"
    exit 77
}
need_gmx() {
    command -v gmx > /dev/null 2>&1 || skip "gmx (GROMACS) is not on PATH; scripts/setup.sh installs it"
}
need_gmx_d() {
    command -v gmx_d > /dev/null 2>&1 ||
        skip "gmx_d (double-precision GROMACS) is not on PATH; Debian's gromacs package has it"
}
need_python3() {
    command -v python3 > /dev/null 2>&1 || skip "python3 is not on PATH"
}
# need_halox: $halox is a binary with the build and md commands
need_halox() {
    [[ -x $halox ]] || skip "halox binary '$halox' does not exist"
    for sub in build md; do
        "$halox" "$sub" --help > /dev/null 2>&1 || skip "'halox $sub' is not available in this build"
    done
}
# fresh_work DIR: DIR emptied, the working directory
fresh_work() {
    rm -rf "$1"
    mkdir -p "$1"
    cd "$1" || exit 1
}
# rf_mdp TAG RC EPS_RF EPS_R [LINES]: TAG.mdp, one parameter file for both codes: a single point
# (nsteps = 0, continuation = yes: the coordinates as they are) with reaction field and
# potential-shifted LJ at cut-off RC = rlist; LINES (more parameters) before nstenergy.
rf_mdp() {
    local tag=$1 rc=$2 eps=$3 epsr=$4 extra=${5:-}
    {
        cat << EOF
; one parameter file for halox md -f and gmx grompp -f
integrator               = md
dt                       = 0.002
nsteps                   = 0
continuation             = yes
cutoff-scheme            = Verlet
nstlist                  = 10
verlet-buffer-tolerance  = -1
rlist                    = $rc
coulombtype              = reaction-field
rcoulomb                 = $rc
rvdw                     = $rc
vdw-modifier             = potential-shift
epsilon-r                = $epsr
epsilon-rf               = $eps
EOF
        [[ -z $extra ]] || printf '%s\n' "$extra"
        echo "nstenergy                = 1"
    } > "$tag.mdp"
}
# single_point TAG LABEL MODEL: `halox md -f TAG.mdp` (model MODEL) and `gmx_d grompp` of the
# same .mdp with TAG.top, then `gmx_d mdrun -rerun` of TAG.gro (energies in TAG.rerun.edr).
# Prints why and returns 1 when a step fails (logs under $work).
single_point() {
    local tag=$1 label=$2 model=$3
    if ! "$halox" md -f "$tag.mdp" -c "$tag.gro" --model "$model" -o "$tag.out.gro" \
        -g "$tag.md.log" --threads 1 > "$tag.halox.txt" 2> "$tag.halox.err"; then
        cat "$tag.halox.err"
        echo "FAIL $label: halox md -f failed"
        return 1
    fi
    if ! gmx_d grompp -f "$tag.mdp" -c "$tag.gro" -p "$tag.top" -o "$tag.tpr" -po "$tag.mdout.mdp" \
        -maxwarn 0 > "$tag.grompp.log" 2>&1; then
        tail -n 30 "$tag.grompp.log"
        echo "FAIL $label: gmx grompp refused the written topology (log: $work/$tag.grompp.log)"
        return 1
    fi
    if ! gmx_d mdrun -s "$tag.tpr" -rerun "$tag.gro" -deffnm "$tag.rerun" -nt 1 -pin off \
        > "$tag.mdrun.log" 2>&1; then
        tail -n 20 "$tag.mdrun.log"
        echo "FAIL $label: gmx_d mdrun -rerun failed"
        return 1
    fi
}
