#!/usr/bin/env bash
# Checkpoints as a user meets them:
#  - a run that dies after a checkpoint and is restarted gives the same energies, trajectory and
#    final configuration, bit for bit, as the uninterrupted run (one domain, an in-process
#    decomposition with a thermostat, and under MPI when given);
#  - the previous checkpoint is kept as FILE.prev;
#  - a checkpoint from a run with other parameters is refused, naming the parameter;
#  - a damaged or truncated checkpoint is refused with its message, and nothing is written.
#   test_checkpoint.sh <halox> [mpiexec [flags...]]
set -u
halox=$1
shift
mpiexec=("$@")
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

"$halox" build water --atoms 1500 --seed 3 -o w.gro > /dev/null || {
    echo "FAIL: halox build"
    exit 1
}

# crash_and_restart NAME LAUNCH... -- ARGS...: uninterrupted vs killed at step 33 + restarted
crash_and_restart() {
    local name=$1
    shift
    local launch=()
    while [ "$1" != "--" ]; do
        launch+=("$1")
        shift
    done
    shift
    local args=("$@")
    check
    "${launch[@]}" "$halox" md "${args[@]}" -o "$name.full.gro" -e "$name.full.jsonl" \
        -x "$name.full.traj.gro" --nstxout 10 -g "$name.full.log" > "$name.full.out" 2>&1 ||
        { fail "$name: the uninterrupted run failed: $(tail -3 "$name.full.out")"; return; }
    HALOX_FAULT_INJECT=exit:0:33 "${launch[@]}" "$halox" md "${args[@]}" -o "$name.gro" \
        -e "$name.jsonl" -x "$name.traj.gro" --nstxout 10 -g "$name.log" \
        --checkpoint "$name.cpt" --nstcheckpoint 20 > "$name.crash.out" 2>&1
    [ $? -ne 0 ] || fail "$name: the injected crash did not happen"
    [ -e "$name.gro" ] && fail "$name: a crashed run wrote its final configuration"
    "${launch[@]}" "$halox" md "${args[@]}" -o "$name.gro" -e "$name.jsonl" \
        -x "$name.traj.gro" --nstxout 10 -g "$name.log" --checkpoint "$name.cpt" \
        --restart "$name.cpt" > "$name.restart.out" 2>&1 ||
        { fail "$name: the restart failed: $(tail -3 "$name.restart.out")"; return; }
    cmp -s "$name.full.jsonl" "$name.jsonl" || fail "$name: energies differ after the restart"
    cmp -s "$name.full.traj.gro" "$name.traj.gro" || fail "$name: trajectory differs"
    cmp -s "$name.full.gro" "$name.gro" || fail "$name: final configuration differs"
    [ -e "$name.cpt.prev" ] || fail "$name: the previous checkpoint was not kept"
    grep -q "restart from $name.cpt at step 20" "$name.log" ||
        fail "$name: the log does not record the restart"
    echo "$name: restart at step 20 reproduces the uninterrupted run"
}

common=(-c w.gro --steps 50 --rc 0.7 --rlist 0.8 --gen-vel 300 --seed 5 --nstenergy 5
    --threads 1)
crash_and_restart single -- "${common[@]}"
crash_and_restart dd2x2 -- "${common[@]}" --dd 2x2x1 --thermostat v-rescale
if [ ${#mpiexec[@]} -gt 0 ]; then
    crash_and_restart mpi3 "${mpiexec[@]}" -np 3 -- "${common[@]}" --thermostat v-rescale
fi

# other parameters
check
"$halox" md "${common[@]}" --rc 0.75 --restart single.cpt -o other.gro > other.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "other parameters: rc (checkpoint 0.69999999999999996, this run 0.75)" \
    other.out; } || fail "parameter mismatch: rc $rc, $(head -2 other.out)"
[ -e other.gro ] && fail "a refused restart wrote output"

# damaged and truncated checkpoints
check
cp single.cpt bad.cpt
printf '\x55' | dd of=bad.cpt bs=1 seek=2000 conv=notrunc 2> /dev/null
"$halox" md "${common[@]}" --restart bad.cpt -o bad.gro > bad.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "damaged or truncated" bad.out; } ||
    fail "damaged checkpoint: rc $rc, $(head -2 bad.out)"
check
head -c 3000 single.cpt > short.cpt
"$halox" md "${common[@]}" --restart short.cpt -o bad.gro > short.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "damaged or truncated" short.out; } ||
    fail "truncated checkpoint: rc $rc, $(head -2 short.out)"
check
"$halox" md "${common[@]}" --restart w.gro -o bad.gro > notckpt.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "is not a halox checkpoint" notckpt.out; } ||
    fail "not a checkpoint: rc $rc, $(head -2 notckpt.out)"
[ -e bad.gro ] && fail "a refused restart wrote output"

finish test_checkpoint
