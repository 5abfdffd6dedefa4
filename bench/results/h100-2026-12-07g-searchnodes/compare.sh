#!/usr/bin/env bash
# (sourced by scripts/h200.sh --exec after the GPU suite; RES, BUILD, HALOX, say, left set)
# GROMACS beside halox's defaults in the same call: one GPU 45k, 4 ranks 4x1x1 and 2x2x1 at 45k
here=$(pwd)
[[ -z ${HALOX_GMX_TARBALL:-} && -f $here/.tools/gmx-cuda-sm90.tar.xz ]] && export HALOX_GMX_TARBALL=$here/.tools/gmx-cuda-sm90.tar.xz
cbudget=$(($(left) - 15))
if [[ $cbudget -gt 60 ]]; then
    export HALOX_BENCH_COMMAND="compare.sh: bench/compare_gpu.py --configs 1gpu-45k,4r-4x1x1-45k,4r-2x2x1-45k --seconds 6"
    t0=$(date +%s)
    python3 bench/compare_gpu.py --halox "$HALOX" --out "$OUT/compare" --budget "$cbudget" \
        --seconds 6 --configs 1gpu-45k,4r-4x1x1-45k,4r-2x2x1-45k > "$OUT/logs/compare.log" 2>&1
    say "  compare: rc $?, $(($(date +%s) - t0)) s"
    tail -8 "$OUT/logs/compare.log" | cut -c1-170 | sed 's/^/    /' | tee -a "$summary"
else
    say "  compare: skipped (only $(left) s left)"
fi
