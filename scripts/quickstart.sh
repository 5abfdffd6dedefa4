#!/usr/bin/env bash
# Install what is missing, build halox, and run the main job on a built-in default system:
# a 3000-atom SPC/E water box, its halo plan on 8 domains, and a short MD run over MPI on 2
# ranks (domain-decomposed, halo exchange by the MPI backend), with the timing table and, where
# gnuplot is installed, a plot of the energies. Where a GPU is present (and halox was built with
# CUDA) the same box also runs on it: the GPU-resident step on one GPU, then two ranks sharing it
# with the GPU-initiated NVSHMEM halo exchange (under MPS when the daemon can be started).
#
#   scripts/quickstart.sh [build-dir]
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$here/build}
out=${HALOX_OUT:-$here/out/quickstart}
jobs=$(nproc 2>/dev/null || echo 2)

"$here/scripts/setup.sh" --minimal
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build "$build" -j "$jobs" > /dev/null
halox=$build/halox
mkdir -p "$out"

echo "== halox plan: 3000-atom SPC/E box, 8 domains"
"$halox" plan --atoms 3000 --ranks 8

echo
echo "== halox build + md (2 MPI ranks)"
"$halox" build water --model spce --atoms 3000 --seed 1 -o "$out/water.gro"
mpirun_flags=()
if mpirun --version 2>/dev/null | grep -q "Open MPI"; then
    mpirun_flags=(--oversubscribe)
    [[ $(id -u) -eq 0 ]] && mpirun_flags+=(--allow-run-as-root)
fi
mpirun "${mpirun_flags[@]}" -np 2 "$halox" md -c "$out/water.gro" --steps 500 \
    --gen-vel 300 --seed 1 -o "$out/final.gro" -g "$out/md.log" \
    --energy "$out/energies.jsonl" --nstenergy 50
echo
tail -n 16 "$out/md.log"
echo
outputs="final.gro, energies.jsonl, md.log"
if command -v gnuplot > /dev/null; then
    python3 "$here/scripts/plot.py" energies "$out/energies.jsonl" \
        --title "quickstart: 3000-atom SPC/E, NVE, 2 ranks" -o "$out/energies.svg" > /dev/null
    outputs+=", energies.svg"
fi

# The GPU, when there is one: `halox version` lists what the library finds
if "$halox" version | grep -q "^  gpu 0:"; then
    echo
    echo "== the GPU: $("$halox" version | sed -n 's/^  gpu 0: *//p')"
    "$halox" md -c "$out/water.gro" --gpu --steps 2000 --gen-vel 300 --seed 1 \
        -o "$out/final_gpu.gro" -g "$out/md_gpu.log" --energy "$out/energies_gpu.jsonl" \
        --nstenergy 100
    tail -n 6 "$out/md_gpu.log"
    outputs+=", final_gpu.gro, md_gpu.log"
    if "$halox" version | grep -q "^  nvshmem: compiled"; then
        export CUDA_MPS_PIPE_DIRECTORY=${CUDA_MPS_PIPE_DIRECTORY:-/tmp/halox_mps_pipe}
        export CUDA_MPS_LOG_DIRECTORY=${CUDA_MPS_LOG_DIRECTORY:-/tmp/halox_mps_log}
        mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
        started=0
        nvidia-cuda-mps-control -d 2> /dev/null && started=1
        echo
        echo "== 2 ranks on the GPU, NVSHMEM halo exchange"
        NVSHMEM_DISABLE_NVLS=1 mpirun "${mpirun_flags[@]}" -x CUDA_MPS_PIPE_DIRECTORY \
            -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_DISABLE_NVLS -np 2 "$halox" md \
            -c "$out/water.gro" --gpu --halo nvshmem --steps 2000 --gen-vel 300 --seed 1 \
            -o "$out/final_gpu2.gro" -g "$out/md_gpu2.log" || true
        tail -n 6 "$out/md_gpu2.log" 2> /dev/null || true
        [[ $started -eq 1 ]] && echo quit | nvidia-cuda-mps-control
        outputs+=", md_gpu2.log"
    fi
else
    echo
    echo "(no GPU here: $("$halox" version | sed -n 's/^  gpus: *//p'); the GPU steps are skipped)"
fi
echo "outputs in $out ($outputs)"
