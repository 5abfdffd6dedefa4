#!/usr/bin/env bash
# `scripts/test.sh --quick` is quick: the long physics tests carry the CTest label "long", the
# quick run excludes that label, and CI (test.sh without --quick) runs everything.
#   test_quick.sh <build dir> <source dir>
set -u
build=$1
src=$2
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
# Read the labels from the generated test files: running `ctest -N` here would overwrite the
# Testing/Temporary/LastTest.log of the ctest run that runs this test.
props=$(cat "$build"/tests/CTestTestfile.cmake 2> /dev/null | grep '^set_tests_properties')
long=$(echo "$props" | grep 'LABELS "[^"]*long' | sed 's/^set_tests_properties(\[=\[\([^]]*\)\]=\].*/\1/')
quick=$(echo "$props" | grep -v 'LABELS "[^"]*long' | sed 's/^set_tests_properties(\[=\[\([^]]*\)\]=\].*/\1/')
# the tests that take tens of seconds to minutes on CI's two cores
for t in test_md_nve test_md_determinism test_dd_md test_dd_md_mpi_np4 test_dd_md_mpi_np8 test_md_physics; do
    check
    if ! echo "$quick" | grep -qx "$t" && ! echo "$long" | grep -qx "$t"; then
        continue # not built here (e.g. no MPI)
    fi
    echo "$long" | grep -qx "$t" || fail "$t is not labelled long"
    echo "$quick" | grep -qx "$t" && fail "$t runs in the quick set"
done
check
grep -q 'ctest .*-LE long' "$src/scripts/test.sh" || fail "scripts/test.sh --quick does not exclude 'long'"
echo "quick set: $(echo "$quick" | wc -l) tests; long: $(echo "$long" | tr '\n' ' ')"
finish test_quick
