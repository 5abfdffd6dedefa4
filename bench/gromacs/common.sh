# Shared by the GROMACS drivers (source it; bash). Builds a GROMACS run input (.tpr) for a water
# configuration with exactly halox's physics: topology from bench/gromacs/<model>.itp, run
# parameters from bench/gromacs/nve.mdp.in.
#
#   hxg_prepare CONF.gro WORKDIR [KEY=VALUE ...]     -> WORKDIR/topol.tpr
#   hxg_mdp OUT.mdp [KEY=VALUE ...]                    -> the run parameters alone (same keys)
#
# Keys (defaults in brackets): GMX [gmx], MODEL [spce], TOP [none: the water model's
# bench/gromacs/<MODEL>.itp; a path: that topology as it is, e.g. the one `halox build mixture
# --top` writes for an ethanol-water mixture], RC [1.0], RLIST [RC + 0.1], EPS_RF [0],
# DT [0.002], NSTEPS [0], NSTLIST [10], NSTCALCENERGY [1], NSTENERGY [1], NSTLOG [1000],
# GEN_VEL [no], GEN_TEMP [300], SEED [1], CONTINUATION [yes unless GEN_VEL=yes: then no]
# (CONTINUATION=no makes GROMACS constrain the starting coordinates before step 0, as halox md
# does), TCOUPL [no], MDP_IN [nve.mdp.in: the template, a file name in bench/gromacs/ or a
# path; gpu.mdp.in is the GPU benchmarks' one], MAXWARN [none: any grompp warning but the one
# about comm-mode = none is an error; N: up to N warnings are let through and printed, for
# benchmark runs of a GROMACS version whose warnings are not known here].

HXG_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

hxg_die() {
    echo "gromacs: $*" >&2
    exit 1
}

# Number of water molecules in a .gro file; fails unless it is made of 3-atom residues in
# O, H, H order (the topology lists [ molecules ] SOL N, so any other layout would be
# silently mismatched by grompp, or caught only as a name warning).
hxg_count_waters() {
    awk -v f="$1" '
        NR == 2 { n = $1 + 0; next }
        NR > 2 && NR <= n + 2 {
            k = (NR - 3) % 3
            name = substr($0, 11, 5); gsub(/ /, "", name)
            el = substr(name, 1, 1)
            if ((k == 0 && el != "O") || (k > 0 && el != "H")) {
                printf "%s:%d: atom %d is \"%s\"; expected water atoms in O H H order\n", \
                    f, NR, NR - 2, name > "/dev/stderr"
                bad = 1; exit
            }
        }
        END {
            if (bad) exit 1
            if (n <= 0 || n % 3 != 0) {
                printf "%s: %d atoms is not a whole number of 3-site waters\n", f, n > "/dev/stderr"
                exit 1
            }
            print n / 3
        }' "$1"
}

# The run parameters of hxg_prepare, from the template MDP_IN with the settings filled in.
hxg_mdp() {
    local out=$1
    shift
    local GMX=gmx MODEL=spce TOP="" RC=1.0 RLIST="" EPS_RF=0 DT=0.002 NSTEPS=0 NSTLIST=10
    local NSTCALCENERGY=1 NSTENERGY=1 NSTLOG=1000 GEN_VEL=no GEN_TEMP=300 SEED=1 CONTINUATION=""
    local TCOUPL=no MDP_IN=nve.mdp.in MAXWARN=""
    local kv
    for kv in "$@"; do
        case "${kv%%=*}" in
        GMX | MODEL | TOP | RC | RLIST | EPS_RF | DT | NSTEPS | NSTLIST | NSTCALCENERGY | NSTENERGY | \
            NSTLOG | GEN_VEL | GEN_TEMP | SEED | CONTINUATION | TCOUPL | MDP_IN | MAXWARN) local "$kv" ;;
        *) hxg_die "hxg_mdp: unknown setting '$kv'" ;;
        esac
    done
    [[ -n $RLIST ]] || RLIST=$(awk -v r="$RC" 'BEGIN { printf "%.4g", r + 0.1 }')
    if [[ -z $CONTINUATION ]]; then
        CONTINUATION=yes
        [[ $GEN_VEL == yes ]] && CONTINUATION=no
    fi
    [[ $MDP_IN == */* ]] || MDP_IN=$HXG_DIR/$MDP_IN
    [[ -r $MDP_IN ]] || hxg_die "cannot read the mdp template '$MDP_IN'"
    sed -e "s/@DT@/$DT/" -e "s/@CONTINUATION@/$CONTINUATION/" -e "s/@NSTEPS@/$NSTEPS/" -e "s/@GEN_VEL@/$GEN_VEL/" \
        -e "s/@GEN_TEMP@/$GEN_TEMP/" -e "s/@SEED@/$SEED/" -e "s/@NSTLIST@/$NSTLIST/" \
        -e "s/@RLIST@/$RLIST/" -e "s/@RC@/$RC/g" -e "s/@EPS_RF@/$EPS_RF/" \
        -e "s/@NSTCALCENERGY@/$NSTCALCENERGY/" -e "s/@NSTENERGY@/$NSTENERGY/" \
        -e "s/@NSTLOG@/$NSTLOG/" -e "s/@TCOUPL@/$TCOUPL/" "$MDP_IN" >"$out"
    if grep -q '@[A-Z_]*@' "$out"; then
        hxg_die "unfilled placeholder in $out: $(grep -o '@[A-Z_]*@' "$out" | head -1)"
    fi
}

hxg_prepare() {
    local conf=$1 work=$2
    shift 2
    local GMX=gmx MODEL=spce TOP="" RC=1.0 RLIST="" EPS_RF=0 DT=0.002 NSTEPS=0 NSTLIST=10
    local NSTCALCENERGY=1 NSTENERGY=1 NSTLOG=1000 GEN_VEL=no GEN_TEMP=300 SEED=1 CONTINUATION=""
    local TCOUPL=no MDP_IN=nve.mdp.in MAXWARN=""
    local kv
    for kv in "$@"; do
        case "${kv%%=*}" in
        GMX | MODEL | TOP | RC | RLIST | EPS_RF | DT | NSTEPS | NSTLIST | NSTCALCENERGY | NSTENERGY | \
            NSTLOG | GEN_VEL | GEN_TEMP | SEED | CONTINUATION | TCOUPL | MDP_IN | MAXWARN) local "$kv" ;;
        *) hxg_die "hxg_prepare: unknown setting '$kv'" ;;
        esac
    done
    [[ -r $conf ]] || hxg_die "cannot read configuration '$conf'"
    if [[ -n $TOP ]]; then
        [[ -r $TOP ]] || hxg_die "cannot read topology '$TOP'"
        mkdir -p "$work"
        cp "$TOP" "$work/topol.top"
    else
        [[ -r $HXG_DIR/$MODEL.itp ]] ||
            hxg_die "no topology for model '$MODEL' ($HXG_DIR/$MODEL.itp); known: spce spc tip3p"
        local nwat
        nwat=$(hxg_count_waters "$conf") || exit 1
        mkdir -p "$work"
        {
            echo "#include \"$HXG_DIR/$MODEL.itp\""
            echo
            echo "[ system ]"
            echo "$MODEL water, $nwat molecules, compared with halox"
            echo
            echo "[ molecules ]"
            echo "SOL $nwat"
        } >"$work/topol.top"
    fi
    hxg_mdp "$work/grompp.mdp" "$@"
    # Any grompp warning is a mismatch with halox's setup that must be looked at, except one:
    # comm-mode = none (halox removes no centre-of-mass motion) draws a warning for nsteps > 0.
    # That one is allowed through -maxwarn 1, and the log is checked to hold no other.
    local maxwarn=0
    [[ $NSTEPS -gt 0 ]] && maxwarn=1
    [[ -n $MAXWARN ]] && maxwarn=$MAXWARN
    if ! "$GMX" grompp -f "$work/grompp.mdp" -c "$conf" -p "$work/topol.top" \
        -o "$work/topol.tpr" -po "$work/mdout.mdp" -maxwarn "$maxwarn" >"$work/grompp.log" 2>&1; then
        tail -n 30 "$work/grompp.log" >&2
        hxg_die "$GMX grompp failed on $conf (full log: $work/grompp.log)"
    fi
    local nwarn ncom
    nwarn=$(grep -c '^WARNING [0-9]' "$work/grompp.log" || true)
    ncom=$(grep -A1 '^WARNING [0-9]' "$work/grompp.log" | grep -c 'center of mass motion removal' || true)
    if [[ -n $MAXWARN && $nwarn -ne $ncom ]]; then
        echo "gromacs: $GMX grompp warned (let through by MAXWARN=$MAXWARN):" >&2
        grep -A6 '^WARNING [0-9]' "$work/grompp.log" >&2
    elif [[ $nwarn -ne $ncom ]]; then
        grep -A6 '^WARNING [0-9]' "$work/grompp.log" >&2
        hxg_die "$GMX grompp warned about more than comm-mode (log: $work/grompp.log)"
    fi
}
