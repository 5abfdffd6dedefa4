#!/usr/bin/env bash
# Install what halox needs to build, test and benchmark on Debian 12 (bookworm).
#
#   scripts/setup.sh              minimal set + GROMACS (reference energies, benchmarks) + gnuplot
#   scripts/setup.sh --minimal    compiler, CMake, MPI, python3: what the CI test suite needs
#   scripts/setup.sh --fuzz       also clang + libclang-rt-14-dev (libFuzzer harnesses)
#   scripts/setup.sh --dry-run    only say what is missing
#
# Idempotent: every package is checked with dpkg-query first, so a second run installs nothing,
# needs no network and takes well under a second. apt-get update runs at most once, and only
# when something is missing. Nothing is fetched from anywhere but the configured apt sources.
# Runs as root, or through sudo when not root.
set -euo pipefail

usage() {
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
}

minimal=0
fuzz=0
dry_run=0
for arg in "$@"; do
    case "$arg" in
    --minimal) minimal=1 ;;
    --fuzz) fuzz=1 ;;
    --dry-run) dry_run=1 ;;
    -h | --help)
        usage
        exit 0
        ;;
    *)
        echo "setup.sh: unknown option '$arg' (use --minimal, --fuzz, --dry-run or --help)" >&2
        exit 2
        ;;
    esac
done

if [[ ! -r /etc/debian_version ]] || ! command -v dpkg-query >/dev/null 2>&1; then
    echo "setup.sh: this script installs Debian packages with apt; this machine is not" \
        "Debian-based. Install by hand: a C11 compiler, CMake >= 3.25, Open MPI (headers +" \
        "mpirun), python3, and optionally GROMACS and gnuplot." >&2
    exit 1
fi

# python3 is in the minimal set because the provenance script and the test drivers use it.
packages=(build-essential cmake libopenmpi-dev openmpi-bin python3 libcjson-dev)
if [[ $minimal -eq 0 ]]; then
    packages+=(ninja-build gromacs gnuplot-nox)
fi
if [[ $fuzz -eq 1 ]]; then
    packages+=(clang libclang-rt-14-dev)
fi

is_installed() {
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q '^install ok installed$'
}

# NVSHMEM for the GPU-initiated halo backend: where nvcc exists (CUDA code is compiled, also in
# CI without a GPU), the nvidia-nvshmem-cu13 wheel from PyPI, the version of the H200 test
# machine. CMake finds it through python3. Skipped when importable already or with --minimal.
NVSHMEM_WHEEL=nvidia-nvshmem-cu13==3.4.5
# Installed with --target into a directory every user can read (not root's own site-packages):
# the programs link libnvshmem_host from there, and they also run as ordinary users (the MPI
# tests launch halox as one). CMake looks there first.
NVSHMEM_TARGET=/usr/local/lib/halox-deps
ensure_nvshmem() {
    [[ $minimal -eq 0 ]] || return 0
    command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]] || return 0
    if [[ -r $NVSHMEM_TARGET/nvidia/nvshmem/include/nvshmem.h ]]; then
        return 0
    fi
    if [[ $dry_run -eq 1 ]]; then
        echo "setup.sh: missing: $NVSHMEM_WHEEL (python wheel, into $NVSHMEM_TARGET)"
        return 0
    fi
    echo "setup.sh: installing $NVSHMEM_WHEEL into $NVSHMEM_TARGET (pip)"
    local as=()
    [[ $(id -u) -eq 0 ]] || as=(sudo)
    "${as[@]}" python3 -m pip install --quiet --disable-pip-version-check --no-deps --root-user-action=ignore \
        --target "$NVSHMEM_TARGET" "$NVSHMEM_WHEEL" && "${as[@]}" chmod -R a+rX "$NVSHMEM_TARGET" || {
        echo "setup.sh: pip could not install $NVSHMEM_WHEEL; the NVSHMEM backend will not be" \
            "built" >&2
    }
}
ensure_nvshmem

missing=()
for p in "${packages[@]}"; do
    is_installed "$p" || missing+=("$p")
done

if [[ ${#missing[@]} -eq 0 ]]; then
    echo "setup.sh: all ${#packages[@]} packages already installed (${packages[*]})"
    exit 0
fi

echo "setup.sh: missing: ${missing[*]}"
if [[ $dry_run -eq 1 ]]; then
    exit 0
fi

if [[ $(id -u) -eq 0 ]]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "setup.sh: not root and sudo is not installed; run as root or install sudo" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
# Packages cannot be located on a fresh image until the lists have been fetched once.
"${as_root[@]}" apt-get update -q
# --no-install-recommends keeps the image small; every package listed works without its
# recommends (GROMACS's only recommends are cpp and mpi-default-bin, which build-essential and
# openmpi-bin already bring).
"${as_root[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"

failed=()
for p in "${missing[@]}"; do
    is_installed "$p" || failed+=("$p")
done
if [[ ${#failed[@]} -gt 0 ]]; then
    echo "setup.sh: apt-get finished but these are still not installed: ${failed[*]}" >&2
    exit 1
fi
echo "setup.sh: installed: ${missing[*]}"
