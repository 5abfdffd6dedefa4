#!/usr/bin/env bash
# halox and GROMACS on the GPU, side by side in one device call: `halox md --gpu` with its
# defaults against GROMACS with its best GPU settings on the same boxes, 45k/180k/360k water on
# one GPU, 45k on 4 ranks of one GPU under MPS (4x1x1, 2x2x1) and 8 ranks (2x2x2), and with two
# or more GPUs 45k and 180k on two GPUs, one rank each. ns/day with every step counted; the
# table comes last. The work is bench/compare_gpu.py's (see its --help for the details).
#
#   scripts/h200.sh --exec scripts/h200_compare.sh     builds halox, starts MPS, then this
#   scripts/h200_compare.sh [--dry-run] [--halox PATH] [--out DIR] [--budget S] [OPTIONS...]
#
# Sourced by scripts/h200.sh (--exec): HALOX, RES, OUT, say and left come from there; the runs
# get what is left of the call minus HALOX_COMPARE_MARGIN (default 20 s), whatever does not fit
# is skipped and said so; results in $RES/compare (compare.json with provenance, table.txt, the
# logs), the progress and the table in summary.txt. HALOX_COMPARE_ARGS adds options of
# compare_gpu.py (e.g. "--configs 1gpu-45k,4r-4x1x1-45k --seconds 8").
# Standalone: the program from --halox, $HALOX or build/halox; results in --out (default
# out/compare); no time limit unless --budget; --dry-run prints every command and runs nothing.
# GROMACS: a build with CUDA and thread-MPI as `gmx` on PATH (or HALOX_GMX), else a tarball that
# unpacks to /tmp/gmxi, named by HALOX_GMX_TARBALL or kept at .tools/gmx-cuda-sm90.tar.xz in the
# checkout (git-ignored; carry .tools with the device call). Without one, halox still runs and
# the table says why GROMACS is missing. The git revision recorded is HALOX_GIT_REVISION when
# set (a copied tree may carry a stale .git).

hxc_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

if [[ ${BASH_SOURCE[0]} != "$0" ]]; then
    # ---- sourced by scripts/h200.sh -------------------------------------------------------
    hxc_budget=$(($(left) - ${HALOX_COMPARE_MARGIN:-20}))
    if [[ $hxc_budget -lt 40 ]]; then
        say "  compare: skipped (only $(left) s left in the call)"
        return 0
    fi
    export HALOX_BENCH_COMMAND="scripts/h200.sh --exec scripts/h200_compare.sh${HALOX_COMPARE_ARGS:+ ($HALOX_COMPARE_ARGS)}"
    # shellcheck disable=SC2086  # HALOX_COMPARE_ARGS: several options
    python3 "$hxc_root/bench/compare_gpu.py" --halox "$HALOX" --out "$RES/compare" \
        --budget "$hxc_budget" ${HALOX_COMPARE_ARGS:-} 2> "$OUT/logs/compare.err" |
        tee -a "$OUT/summary.txt"
    hxc_rc=${PIPESTATUS[0]}
    say "  compare: rc $hxc_rc ($(elapsed) s; stderr in logs/compare.err)"
    [[ $hxc_rc -ne 0 ]] && tail -5 "$OUT/logs/compare.err" | tee -a "$OUT/summary.txt"
    unset HALOX_BENCH_COMMAND
    return 0
fi

# ---- standalone ---------------------------------------------------------------------------
set -uo pipefail
hxc_command="$0$(printf ' %q' "$@")"
halox=${HALOX:-}
out=$hxc_root/out/compare
budget=0
args=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --halox) halox=$2; shift ;;
    --out) out=$2; shift ;;
    --budget) budget=$2; shift ;;
    -h | --help)
        sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) args+=("$1") ;;
    esac
    shift
done
if [[ -z $halox ]]; then
    for c in "$hxc_root/build/halox" /tmp/halox-h200-build/halox; do
        [[ -x $c ]] && halox=$c && break
    done
fi
if [[ -z $halox ]]; then
    echo "h200_compare.sh: no halox program: give --halox PATH or HALOX, or build it into build/" >&2
    exit 2
fi
export NVSHMEM_DISABLE_NVLS=1
export HALOX_BENCH_COMMAND=${HALOX_BENCH_COMMAND:-$hxc_command}
exec python3 "$hxc_root/bench/compare_gpu.py" --halox "$halox" --out "$out" --budget "$budget" \
    "${args[@]}"
