#!/usr/bin/env bash
# halox md's pair-list interval as the user sees it: who decides it, and where it is written.
#   test_md_nstlist_cli.sh <halox> cpu|gpu
# cpu: the CPU engine keeps nstlist 10 when none is given (no "->" line on stderr or in the log,
#      "nstlist_automatic": false in the energy file); --nstlist and the .mdp's nstlist are used
#      as given.
# gpu (a device is needed; exit 77 without one): with no interval given the run says
#      "nstlist 10 -> N, rlist X -> Y nm, inner rlist Z nm, prune every K steps" on stderr and
#      in the log, with N, Y, Z, K those of `halox plan --gpu` for the same input (the library's
#      rule: tests/test_md_list_setup), and the energy file's metadata has them; an interval
#      given by --nstlist or by the .mdp wins (the command line over the file); --nstcheckpoint
#      50 limits the choice to its divisors (25 for water); a restart continues with the
#      checkpoint's interval, not a new choice.
set -u
halox=$1
mode=${2:-cpu}
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
"$halox" build water --atoms 3000 -o w.gro > /dev/null 2>&1 || {
    echo "build failed"
    exit 1
}
gpu="" steps=20
[[ $mode == gpu ]] && gpu=--gpu steps=60
if [[ $mode == gpu ]]; then
    "$halox" md -c w.gro --gpu --steps 0 -o probe.gro -g probe.log > probe.out 2>&1 || {
        if grep -qE "no GPU|CUDA driver|not compiled" probe.out; then
            echo "skipped: $(grep error probe.out | head -1)"
            exit 77
        fi
    }
fi
printf 'nstlist = 20\n' > run.mdp
# run NAME ARGS...: a short run with an energy file; stderr in NAME.err, log NAME.log
run() {
    local name=$1
    shift
    check
    "$halox" md -c w.gro $gpu --steps $steps --gen-vel 300 --nstenergy 10 -e "$name.jsonl" \
        -o "$name.gro" -g "$name.log" "$@" > "$name.out" 2> "$name.err" || {
        fail "$name: exit $?: $(grep -m1 error "$name.err")"
        return 1
    }
}
# header NAME KEY: a key of the energy file's metadata
header() {
    python3 -c "import json,sys; print(json.dumps(json.loads(open(sys.argv[1]).readline())['run'].get(sys.argv[2])))" "$1.jsonl" "$2"
}
# the given intervals: on both engines used as given, never "->"
for c in "given:--nstlist 40:40" "mdp:-f run.mdp:20" "both:-f run.mdp --nstlist 30:30"; do
    IFS=: read -r name args want <<< "$c"
    # shellcheck disable=SC2086
    run "$name" $args || continue
    got=$(header "$name" nstlist)
    [[ $got == "$want" ]] || fail "$name ($args): energy file nstlist $got, expected $want"
    [[ $(header "$name" nstlist_automatic) == false ]] ||
        fail "$name: nstlist_automatic $(header "$name" nstlist_automatic) for a given interval"
    grep -q -- "->" "$name.err" && fail "$name: stderr says it changed: $(grep -- '->' "$name.err")"
    grep -qE "^  nstlist $want$" "$name.log" || fail "$name: the log lacks 'nstlist $want'"
    echo "ok   $name ($args): nstlist $got"
done
run default || true
if [[ $mode == cpu ]]; then
    check
    [[ $(header default nstlist) == 10 && $(header default nstlist_automatic) == false ]] ||
        fail "cpu default: nstlist $(header default nstlist), automatic $(header default nstlist_automatic)"
    grep -q -- "->" default.err && fail "cpu default: stderr says it changed"
    echo "ok   cpu default: nstlist 10, kept"
    finish test_md_nstlist_cli
    exit
fi
# gpu: the choice, as the plan predicts it
check
"$halox" plan -c w.gro --gpu --ranks 1 --gen-vel 300 --json > plan.json 2> plan.err ||
    fail "plan --gpu: $(cat plan.err)"
read -r pn pr pi pp <<< "$(python3 -c "import json; d=json.load(open('plan.json')); print(d['nstlist'], '%.3f' % d['rlist'], '%.3f' % d['rlist_inner'], d['prune_parts'])")"
want="nstlist 10 -> $pn, rlist [0-9.]+ -> $pr nm, inner rlist $pi nm, prune every $pp steps"
grep -qE "^halox md: $want" default.err || fail "stderr lacks '$want': $(grep -- '->' default.err)"
grep -qE "pair-list interval chosen: $want" default.log ||
    fail "log lacks '$want': $(grep -A1 'pair-list' default.log)"
[[ $(header default nstlist) == "$pn" && $(header default nstlist_automatic) == true ]] ||
    fail "energy file: nstlist $(header default nstlist), automatic $(header default nstlist_automatic)"
[[ $pn -gt 10 ]] || fail "the plan chose nstlist $pn for water at 300 K"
echo "ok   default: $want"
# --nstcheckpoint 50: the divisors of 50 (20 is not one); a restart keeps the interval
run ckpt --checkpoint c.cpt --nstcheckpoint 50 --steps 100 || true
check
[[ $(header ckpt nstlist) == 25 ]] || fail "--nstcheckpoint 50: nstlist $(header ckpt nstlist), expected 25"
"$halox" md -c w.gro --gpu --gen-vel 300 --nstenergy 10 -e ckpt.jsonl -o ckpt.gro -g ckpt.log \
    --checkpoint c.cpt --nstcheckpoint 50 --restart c.cpt --steps 150 > restart.out 2> restart.err ||
    fail "restart: $(grep -m1 error restart.err)"
grep -q "pair-list interval 25, as in the run the checkpoint continues" ckpt.log ||
    fail "restart: the log lacks the checkpoint's interval: $(grep -i 'interval\|nstlist' ckpt.log | tail -3)"
grep -q -- "->" restart.err && fail "restart: stderr says it chose again: $(grep -- '->' restart.err)"
echo "ok   --nstcheckpoint 50: nstlist 25; the restart continues with it"
finish test_md_nstlist_cli
