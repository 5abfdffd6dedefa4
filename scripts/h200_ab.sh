#!/usr/bin/env bash
# A/B harness for one device call, sourced by a call's own file (itself sourced by
# `scripts/h200.sh --exec FILE`, with here, OUT, HALOX, gen, prefix, say and left set):
#
#   source scripts/h200_ab.sh
#   ab_build_base PATCH        # the working tree less PATCH (patch -R) built in /tmp/hx-base;
#                              # sets BASE to its halox binary (empty if the build failed)
#   abrun NAME NP DD BINARY STEPS [ARGS...] [-- VAR=VALUE...]
#                              # `halox md --gpu` on the 45k water box, NP ranks, --dd DD
#                              # (1x1x1: no --dd), every step counted; one summary line with
#                              # ns/day and the search step's parts from its log
#   ab_stages GLOB             # the pair search by stage of runs with HALOX_GPU_SEARCH_TIMING=1
#
# Runs of the two trees are to be alternated by the caller (base1, new1, base2, new2, ...):
# machines of one kind differ by more than most changes, and so does one machine over minutes.
# Every run has a launcher timeout (a hung GPU process ignores everything else) and is skipped
# when less than 40 s of the call are left.

ab_build_base() {
    local patch=$1 t0
    local bdir=/tmp/hx-base
    BASE=""
    rm -rf "$bdir" && mkdir -p "$bdir"
    for p in CMakeLists.txt cmake src include app tests bench data examples scripts; do
        [[ -e $here/$p ]] && cp -a "$here/$p" "$bdir/"
    done
    t0=$(date +%s)
    if (cd "$bdir" && patch -s -R -p1 < "$patch") > "$OUT/logs/base_patch.log" 2>&1 &&
        cmake -S "$bdir" -B "$bdir/build" $gen -DCMAKE_BUILD_TYPE=Release -DHALOX_WITH_CUDA=ON \
            -DHALOX_WITH_MPI=ON -DHALOX_WITH_NVSHMEM=${HALOX_NVSHMEM:-ON} \
            ${NVSHMEM_HOME_WHEEL:+-DNVSHMEM_HOME=$NVSHMEM_HOME_WHEEL} \
            ${prefix:+-DCMAKE_PREFIX_PATH=$prefix} > "$OUT/logs/base_configure.log" 2>&1 &&
        cmake --build "$bdir/build" -j "$(nproc)" --target halox_app > "$OUT/logs/base_build.log" 2>&1; then
        say "  base build ok ($(($(date +%s) - t0)) s)"
        BASE=$bdir/build/halox
    else
        say "  base build FAILED"
        tail -20 "$OUT/logs/base_build.log" "$OUT/logs/base_patch.log" | tee -a "$summary"
    fi
}

ab_pmpi=(mpirun --allow-run-as-root --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY
    -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_BOOTSTRAP_MPI_PLUGIN
    -x LD_LIBRARY_PATH -x HALOX_GIT_REVISION --bind-to none)
ab_w45=$OUT/logs/ab_w45k.gro
[[ -f $ab_w45 ]] || "$HALOX" build water --model spce --atoms 45000 --seed 1 -o "$ab_w45" \
    > "$OUT/logs/ab_build.log" 2>&1

abrun() {
    local nm=$1 np=$2 dd=$3 bin=$4 steps=$5
    shift 5
    local extra=()
    while [[ $# -gt 0 && $1 != -- ]]; do extra+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    if [[ -z $bin || ! -x $bin ]]; then
        say "    $nm: skipped (no binary)"
        return
    fi
    if [[ $(left) -lt 40 ]]; then
        say "    $nm: skipped (the call's time is spent)"
        return
    fi
    local t0=$(date +%s)
    local ddarg=(--dd "$dd")
    [[ $dd == 1x1x1 ]] && ddarg=()
    timeout -s KILL 100 "${ab_pmpi[@]}" -np "$np" env X=1 "$@" "$bin" md --gpu -c "$ab_w45" \
        "${ddarg[@]}" --steps "$steps" "${extra[@]}" -o "$OUT/logs/$nm.gro" \
        -g "$OUT/logs/$nm.md.log" > "$OUT/logs/$nm.out" 2>&1
    local rc=$?
    rm -f "$OUT/logs/$nm.gro"
    local perf srch nst
    perf=$(grep -h "^performance:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-60)
    srch=$(grep -h "^search step:" "$OUT/logs/$nm.md.log" 2>/dev/null | cut -c14-400)
    nst=$(grep -ho "nstlist [0-9]* -> [0-9]*\|nstlist [0-9]*" "$OUT/logs/$nm.md.log" 2>/dev/null | head -1)
    say "    $nm: rc $rc, $(($(date +%s) - t0)) s; $nst; $perf; search $srch"
}

ab_stages() {
    local f
    for f in $1; do
        [[ -f $f ]] || continue
        say "  $(basename "$f"): $(grep -h 'pair search by stage' "$f" | head -1 | cut -c1-260)"
    done
}
