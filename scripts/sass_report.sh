#!/usr/bin/env bash
# Static SASS report of the GPU engine's kernels (docs/design/gpu-engine.md, "The kernels'
# instruction counts (SASS, static)"): builds src/md/gpu/{nb,update,search}_gpu.cu for sm_90 with
# the flags of the project's Release build, then prints per kernel the registers, spills, shared
# memory, theoretical occupancy, and the instruction mix of every loop and of the pair bodies.
# A tool, not a test (CI does not run it); needs nvcc, cuobjdump and python3, no GPU.
#
#   scripts/sass_report.sh [--blocks] [--only REGEX] [--out DIR]
#
# --blocks lists every basic block of the innermost loops (address, size, mix, successors), from
# which the per-item / per-i-cluster / per-pair paths in the design document are read.
# cuobjdump: from PATH, $CUDA_HOME/bin, /usr/local/cuda/bin, or $CUOBJDUMP; a CUDA toolkit
# without it can take the `nvidia-cuda-cuobjdump` Python wheel (pip install --target DIR ...;
# then CUOBJDUMP=DIR/nvidia/cu13/bin/cuobjdump).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=""
args=()
while [ $# -gt 0 ]; do
    case "$1" in
    --out)
        out="$2"
        shift 2
        ;;
    --blocks)
        args+=(--blocks)
        shift
        ;;
    --only)
        args+=(--only "$2")
        shift 2
        ;;
    -h | --help)
        sed -n '2,16p' "$0"
        exit 0
        ;;
    *)
        echo "sass_report.sh: unknown option '$1' (use --blocks, --only REGEX, --out DIR)" >&2
        exit 2
        ;;
    esac
done

find_tool() {
    local name="$1" var="$2"
    if [ -n "${!var:-}" ]; then
        echo "${!var}"
        return 0
    fi
    if command -v "$name" > /dev/null 2>&1; then
        command -v "$name"
        return 0
    fi
    for d in "${CUDA_HOME:-}" /usr/local/cuda; do
        if [ -n "$d" ] && [ -x "$d/bin/$name" ]; then
            echo "$d/bin/$name"
            return 0
        fi
    done
    return 1
}

nvcc="$(find_tool nvcc NVCC)" || {
    echo "sass_report.sh: nvcc not found (PATH, \$CUDA_HOME/bin, /usr/local/cuda/bin; or set NVCC)" >&2
    exit 2
}
cuobjdump="$(find_tool cuobjdump CUOBJDUMP)" || {
    echo "sass_report.sh: cuobjdump not found; install the CUDA toolkit's, or the Python wheel" \
        "nvidia-cuda-cuobjdump into DIR and set CUOBJDUMP=DIR/nvidia/cu13/bin/cuobjdump" >&2
    exit 2
}

if [ -z "$out" ]; then
    out="$(mktemp -d "${TMPDIR:-/tmp}/sass_report.XXXXXX")"
fi
mkdir -p "$out"

# The flags of the Release build (CMakeLists.txt: CMAKE_CUDA_ARCHITECTURES 90, -O3 -DNDEBUG);
# the halo's defines do not change these files' kernels (SASS compared).
cubins=()
for f in nb_gpu update_gpu search_gpu; do
    "$nvcc" -O3 -DNDEBUG -DHX_MD_HAVE_GPU=1 -D_XOPEN_SOURCE=700 -I"$root/include" -I"$root/src" \
        -arch=sm_90 -cubin -Xptxas -v -x cu "$root/src/md/gpu/$f.cu" -o "$out/$f.cubin" \
        > "$out/$f.cubin.ptxas.log" 2>&1 || {
        cat "$out/$f.cubin.ptxas.log" >&2
        echo "sass_report.sh: nvcc failed on src/md/gpu/$f.cu" >&2
        exit 1
    }
    cubins+=("$out/$f.cubin")
done
echo "# $("$nvcc" --version | tail -1), $(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo '?'); cubins and ptxas logs in $out"
python3 "$root/scripts/sass_report.py" --cuobjdump "$cuobjdump" "${args[@]}" "${cubins[@]}"
