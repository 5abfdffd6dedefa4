# Shared by the shell tests (sourced): a scratch directory that is removed on exit and becomes
# the working directory, failure counting, and the closing "N passed, N failed" line.
hx_work=$(mktemp -d "${TMPDIR:-/tmp}/halox-test.XXXXXX")
trap 'rm -rf "$hx_work"' EXIT
cd "$hx_work" || exit 1
fails=0
checks=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
check() {
    checks=$((checks + 1))
}
# finish NAME: print the summary, return non-zero when anything failed
finish() {
    echo "$1: $((checks - fails)) passed, $fails failed"
    [ "$fails" -eq 0 ]
}
