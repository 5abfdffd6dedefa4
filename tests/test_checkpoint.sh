#!/usr/bin/env bash
# Checkpoints as a user meets them:
#  - a run that dies after a checkpoint and is restarted gives the same energies, trajectory and
#    final configuration, bit for bit, as the uninterrupted run (one domain, an in-process
#    decomposition with a thermostat, and under MPI when given);
#  - the previous checkpoint is kept as FILE.prev;
#  - a checkpoint from a run with other parameters is refused, naming the parameter;
#  - a damaged or truncated checkpoint is refused with its message, and nothing is written;
#  - the restart continues the recorded output files by identity (spelled differently, a link,
#    another working directory), refuses another file with data and a file cut since, and
#    starts a new file under a new name.
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
    # another rank count: warned (singular and plural right: it said "1 ranks")
    check
    "${mpiexec[@]}" -np 2 "$halox" md "${common[@]}" --steps 60 --restart single.cpt \
        -o ranks.gro -g ranks.log > ranks.out 2>&1 || fail "restart on 2 ranks: $(grep -m1 error ranks.out)"
    grep -q "single.cpt was written with 1 rank, this run has 2: the continuation is exact physics" ranks.out ||
        fail "restart on another rank count: $(grep -m1 warning ranks.out)"
fi

# Restart identity: the restart continues the files the checkpoint recorded when they are the
# same files, however the names are spelled (./run//e.jsonl, a symbolic link, another working
# directory), and refuses to append to any other file with data in it.
mkdir -p run
"$halox" md "${common[@]}" -o run/full.gro -e run/full.jsonl -x run/full.traj.gro --nstxout 10 \
    -g run/full.log > id.full.out 2>&1 || fail "identity: the uninterrupted run failed"
# crash_run NAME: a run killed at step 33 that left run/NAME.cpt of step 20, and half an energy
# line after what the checkpoint recorded (what a crash leaves when the buffer was flushed)
crash_run() {
    HALOX_FAULT_INJECT=exit:0:33 "$halox" md "${common[@]}" -o "run/$1.gro" -e "run/$1.jsonl" \
        -x "run/$1.traj.gro" --nstxout 10 -g "run/$1.log" --checkpoint "run/$1.cpt" \
        --nstcheckpoint 20 > "$1.crash.out" 2>&1
    printf '{"step": 25, "time": 0.05, "lj": -12' >> "run/$1.jsonl"
}
check
crash_run id
ln -s run/id.traj.gro traj.link
"$halox" md "${common[@]}" -o run/id.gro -e ./run//id.jsonl -x traj.link --nstxout 10 \
    -g run/id.log --checkpoint run/id.cpt --restart run/id.cpt > id.restart.out 2>&1 ||
    fail "identity: the restart failed: $(tail -2 id.restart.out)"
cmp -s run/full.jsonl run/id.jsonl || fail "identity: energies differ (./run//id.jsonl not taken as run/id.jsonl)"
cmp -s run/full.traj.gro run/id.traj.gro || fail "identity: trajectory differs (the link not taken as its file)"
check
crash_run cwd
(cd run && "$halox" md "${common[@]}" -c ../w.gro -o cwd.gro -e cwd.jsonl -x cwd.traj.gro \
    --nstxout 10 -g cwd.log --checkpoint cwd.cpt --restart cwd.cpt > ../cwd.restart.out 2>&1) ||
    fail "identity: the restart from another directory failed: $(tail -2 cwd.restart.out)"
cmp -s run/full.jsonl run/cwd.jsonl || fail "identity: energies differ after a restart from run/"
# another file with data: refused, untouched
check
crash_run other
echo '{"step": 0, "time": 0.0}' > other.jsonl
cp other.jsonl other.orig
"$halox" md "${common[@]}" -o run/other.gro -e other.jsonl -x run/other.traj.gro --nstxout 10 \
    -g run/other.log --checkpoint run/other.cpt --restart run/other.cpt > other.restart.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "exists but is not the file run/other.cpt recorded" other.restart.out; } ||
    fail "identity: appending to another file: exit $rc, $(grep -m1 error other.restart.out)"
cmp -s other.jsonl other.orig || fail "identity: the other file was changed"
[ -e run/other.gro ] && fail "identity: a refused restart wrote its final configuration"
# the recorded file, cut shorter since: refused
check
crash_run short
head -c 100 run/short.jsonl > cut && cat cut > run/short.jsonl
"$halox" md "${common[@]}" -o run/short.gro -e run/short.jsonl -x run/short.traj.gro \
    --nstxout 10 -g run/short.log --checkpoint run/short.cpt --restart run/short.cpt \
    > short.restart.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "has 100 bytes, fewer than the" short.restart.out; } ||
    fail "identity: a cut energy file: exit $rc, $(grep -m1 error short.restart.out)"
# a new name: a new file, metadata first, then the continued steps
check
crash_run new
"$halox" md "${common[@]}" -o run/new.gro -e new.jsonl -x run/new.traj.gro --nstxout 10 \
    -g run/new.log --checkpoint run/new.cpt --restart run/new.cpt > new.restart.out 2>&1 ||
    fail "identity: a restart into a new energy file failed: $(tail -2 new.restart.out)"
{ head -1 new.jsonl | grep -q '"halox_energy_file":1' &&
    diff <(tail -n +2 new.jsonl) <(grep -A1000 '^{"step": *20,' run/full.jsonl) > /dev/null; } ||
    fail "identity: the new energy file is not the metadata line plus steps 20 to 50"
echo "restart identity: spelled, linked, from another directory, refused, cut, new: checked"

# a restart given -c: the configuration must be the checkpoint's system (issue 29, item 1); a
# restart with -c of another system continued the checkpoint's system while its log named the
# other file, and a -c that does not exist was not noticed
"$halox" build water --atoms 648 --seed 3 -o small.gro > /dev/null 2>&1
sed '3s/ OW/ OX/' w.gro > renamed.gro
cp single.cpt single.keep
# wrong_conf NAME 'message' ARGS...: refused with the message, nothing written, checkpoint kept
wrong_conf() {
    local name=$1 frag=$2
    shift 2
    check
    "$halox" md "${common[@]}" --steps 60 "$@" --restart single.cpt -o "$name.gro" -g "$name.log" \
        > "$name.out" 2>&1
    local rc=$?
    { [ $rc -ne 0 ] && grep -qF -- "$frag" "$name.out"; } ||
        fail "restart with $name: exit $rc, $(grep -m1 error "$name.out")"
    [ -e "$name.gro" ] && fail "restart with $name: a refused restart wrote its configuration"
    cmp -s single.cpt single.keep || fail "restart with $name: the checkpoint was changed"
    echo "restart -c $name: exit $rc, $(grep -m1 error "$name.out" | cut -c1-120)"
}
wrong_conf other-system "small.gro and single.cpt are different systems: small.gro has 648 atoms" \
    -c small.gro
wrong_conf other-names "renamed.gro:3: atom 1 is SOL OX, but in single.cpt it is SOL OW" \
    -c renamed.gro
wrong_conf missing-conf "cannot open 'nothere.gro' for reading" -c nothere.gro
check
"$halox" md "${common[@]}" --steps 60 --restart single.cpt -o same.gro -g same.log > same.out 2>&1 ||
    fail "restart with -c of the checkpoint's system: $(grep -m1 error same.out)"
grep -q "conf w.gro (checked: the system of single.cpt)" same.log ||
    fail "the log of a restart does not say that -c was checked"

# a restart with another --threads: exact physics, not bit for bit (the thread count orders
# the force sums): said (issue 29, item 11)
check
"$halox" md "${common[@]}" --steps 60 --threads 2 --restart single.cpt -o thr.gro -g thr.log \
    > thr.out 2>&1 || fail "restart with --threads 2: $(grep -m1 error thr.out)"
grep -q "single.cpt was written with 1 thread per rank, this run has 2: the continuation is exact physics but not bit-identical" thr.out ||
    fail "restart with another --threads is not warned: $(head -2 thr.out)"
grep -q "was written with" same.out && fail "a restart with the same --threads is warned"

# a restart of a run whose rlist came from the buffer tolerance: pairs missed by design are not
# warned with the advice to leave rlist out (it was left out; the restart had taken the
# resolved rlist for a given one)
check
tol=(-c w.gro --rc 0.7 --gen-vel 300 --threads 1 --check-pairs 1)
"$halox" md "${tol[@]}" --steps 20 --checkpoint tol.cpt -o tol.gro -g tol.log > tol.out 2>&1
"$halox" md "${tol[@]}" --steps 60 --checkpoint tol.cpt --restart tol.cpt -o tol.gro -g tol.log \
    > tol2.out 2>&1 || fail "restart of a tolerance-rlist run: $(grep -m1 error tol2.out)"
grep -q "missed in total (rlist is from the buffer tolerance" tol.log ||
    fail "the tolerance-rlist restart missed no pairs (this check is void): $(grep missed tol.log)"
grep -q "leave rlist out" tol2.out && fail "a restart advises leaving out an rlist that was left out"

# a checkpoint at the end of a v-rescale run continues bit for bit, the conserved energy (the
# thermostat's work, in the checkpoint) included: the end's single-point evaluation drew the
# thermostat's random numbers and kept them drawn, so the continued run coupled differently
check
vargs=(-c w.gro --rc 0.7 --rlist 0.8 --threads 1 --gen-vel 300 --seed 5 --thermostat v-rescale
    --nstenergy 5)
"$halox" md "${vargs[@]}" --steps 80 -e vfull.jsonl -o vfull.gro -g vfull.log > vfull.out 2>&1
"$halox" md "${vargs[@]}" --steps 40 -e vpart.jsonl -o vpart.gro -g vpart.log \
    --checkpoint vpart.cpt > vpart.out 2>&1
"$halox" md "${vargs[@]}" --steps 80 -e vpart.jsonl -o vpart.gro -g vpart.log \
    --checkpoint vpart.cpt --restart vpart.cpt > vpart2.out 2>&1 ||
    fail "v-rescale restart from the end checkpoint: $(grep -m1 error vpart2.out)"
{ cmp -s vfull.jsonl vpart.jsonl && cmp -s vfull.gro vpart.gro; } ||
    fail "v-rescale: the run continued from its end checkpoint differs from the uninterrupted one"
grep -q '"conserved":' vfull.jsonl || fail "v-rescale: no conserved energy in the energy file"
grep -aq '^thermostat_work -\?0x' vpart.cpt || fail "v-rescale: the checkpoint lacks the thermostat's work"
# a checkpoint of format 1 (before the thermostat's work was recorded) is still read, with a
# warning that the conserved energy starts again
check
python3 - << 'PY'
import struct
d = open("vpart.cpt", "rb").read()[:-8]
d = d.replace(b"HALOX-CHECKPOINT 2\n", b"HALOX-CHECKPOINT 1\n", 1)
i = d.index(b"thermostat_work ")
d = d[:i] + d[d.index(b"\n", i) + 1:]
h = 0xcbf29ce484222325
for x in d:
    h = ((h ^ x) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
open("v1.cpt", "wb").write(d + struct.pack("<Q", h))
PY
"$halox" md "${vargs[@]}" --steps 100 --restart v1.cpt -o v1.gro -g v1.log > v1.out 2>&1 ||
    fail "restart from a format-1 checkpoint: $(grep -m1 error v1.out)"
grep -q "v1.cpt is a checkpoint of format 1, which did not record the thermostat's work: the run continues bit for bit, but its conserved energy starts again" v1.out ||
    fail "format-1 checkpoint of a v-rescale run: no warning: $(head -2 v1.out)"

# other parameters
check
"$halox" md "${common[@]}" --rc 0.75 --restart single.cpt -o other.gro > other.out 2>&1
rc=$?
# (numbers as they were given: it said 'rc (checkpoint 0.69999999999999996, ...)')
{ [ $rc -ne 0 ] && grep -q "other parameters: rc (checkpoint 0.7, this run 0.75)" \
    other.out; } || fail "parameter mismatch: rc $rc, $(head -2 other.out)"
[ -e other.gro ] && fail "a refused restart wrote output"

# damaged and truncated checkpoints
check
cp single.cpt bad.cpt
printf '\x55' | dd of=bad.cpt bs=1 seek=2000 conv=notrunc 2> /dev/null
"$halox" md "${common[@]}" --restart bad.cpt -o bad.gro > bad.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "bad.cpt is damaged or truncated (checksum mismatch); there is no previous checkpoint (bad.cpt.prev) to continue from: start the run again" bad.out; } ||
    fail "damaged checkpoint: rc $rc, $(head -2 bad.out)"
# with FILE.prev there, the message points to it (it pointed to FILE.prev also when there was
# none: issue 29, item 9)
check
cp single.cpt single.good
printf '\x55' | dd of=single.cpt bs=1 seek=2000 conv=notrunc 2> /dev/null
"$halox" md "${common[@]}" --restart single.cpt -o bad.gro > badprev.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "single.cpt is damaged or truncated (checksum mismatch); the previous checkpoint single.cpt.prev is there: continue from it with --restart single.cpt.prev" badprev.out; } ||
    fail "damaged checkpoint with .prev: rc $rc, $(head -2 badprev.out)"
mv single.good single.cpt
# a checkpoint of a format this halox does not know (a newer one)
check
sed '1s/HALOX-CHECKPOINT 2/HALOX-CHECKPOINT 7/' single.cpt > future.cpt
"$halox" md "${common[@]}" --restart future.cpt -o bad.gro > future.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && grep -q "future.cpt is a checkpoint of format '7', which this halox cannot read" future.out; } ||
    fail "checkpoint of an unknown format: rc $rc, $(head -2 future.out)"
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
