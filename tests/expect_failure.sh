#!/usr/bin/env bash
# A test that must fail, and fail in the way it is meant to: runs COMMAND, passes when it exits
# with a failure status and its output has a line matching REGEX (grep -E): the message that
# names what a test caught. A command that passes, is killed (timeout: exit 124, 137), is skipped
# (exit 77) or fails without the message fails this test, saying which.
#
#   expect_failure.sh REGEX COMMAND [ARGS...]
set -uo pipefail
if [[ $# -lt 2 ]]; then
    echo "usage: expect_failure.sh REGEX COMMAND [ARGS...]" >&2
    exit 2
fi
regex=$1
shift
log=$(mktemp "${TMPDIR:-/tmp}/expect_failure.XXXXXX")
trap 'rm -f "$log"' EXIT
"$@" > "$log" 2>&1
rc=$?
cat "$log"
echo "expect_failure: the command exited with status $rc"
case $rc in
0)
    echo "expect_failure: FAIL: it passed, but must fail (the fault it runs with was not caught)"
    exit 1
    ;;
77)
    echo "expect_failure: FAIL: it was skipped, so it proved nothing"
    exit 1
    ;;
124 | 137)
    echo "expect_failure: FAIL: it was killed by its time limit: a hang is not the failure expected"
    exit 1
    ;;
esac
n=$(grep -cE -- "$regex" "$log")
if [[ $n -eq 0 ]]; then
    echo "expect_failure: FAIL: no line of its output matches '$regex'"
    exit 1
fi
echo "expect_failure: ok: it failed as expected ($n lines match '$regex'), e.g."
grep -m1 -E -- "$regex" "$log" | cut -c1-300
exit 0
