#!/usr/bin/env bash
# halox md's output files as users name them:
#  - outputs that are not regular files are written through, never renamed or replaced: a FIFO
#    (its reader gets the data), a character device (a private copy of the null device where
#    root may make one, then /dev/null itself), a symbolic link to a device; writing to /dev/full
#    (the final configuration, or the log) fails with "No space left on device" and leaves the
#    device in place;
#  - every output path is checked before the input is read: a missing directory, a path through
#    a regular file, a directory given as a file, an unwritable directory, two outputs that are
#    one file, an output that is an input (the configuration, the parameter file): each fails in
#    seconds (a run of 10^8 steps would
#    otherwise go on), with its message, and writes nothing;
#  - -o equal to -c keeps the input as #conf.gro.1#;
#  - two runs on the same files: the second fails naming the first (its pid), and touches none
#    of the first run's files; a lock file left by a dead run does not block;
#  - 254-byte output names work: lock, backup, temporary and .prev names are shortened.
# The real /dev/null and /dev/full are only given to the binary after it has written a FIFO and
# a private device through: a binary that renamed special files must never run on them as root.
#   test_outputs.sh <halox>
set -u
halox=$1
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"

"$halox" build water --atoms 648 --seed 3 -o w.gro > /dev/null 2>&1 || {
    echo "FAIL: halox build"
    exit 1
}
cp w.gro w.orig.gro
short=(-c w.gro --steps 20 --rc 0.7 --rlist 0.75 --gen-vel 300 --nstenergy 5 --threads 1)
huge=(-c w.gro --steps 100000000 --rc 0.7 --rlist 0.75 --gen-vel 300 --threads 1)

# no_backups DIR NAME: no #NAME.N# next to it
no_backups() {
    ! ls -a "$1" 2> /dev/null | grep -q "^#$2\.[0-9]*#$"
}

# --- 1. a FIFO: the reader gets the energies, the FIFO stays a FIFO, no backup
check
mkfifo e.fifo o.fifo
timeout 60 cat e.fifo > e.copy &
r1=$!
timeout 60 cat o.fifo > o.copy &
r2=$!
timeout 60 "$halox" md "${short[@]}" -e e.fifo -o o.fifo -g fifo.log > fifo.out 2>&1
rc=$?
wait $r1 $r2
special_ok=1
if [ $rc -ne 0 ]; then
    fail "FIFO outputs: exit $rc: $(tail -2 fifo.out)"
    special_ok=0
fi
if [ ! -p e.fifo ] || [ ! -p o.fifo ] || ! no_backups . e.fifo || ! no_backups . o.fifo; then
    fail "a FIFO output was renamed or replaced: $(ls -la | grep fifo | tr '\n' ' ')"
    special_ok=0
fi
[ "$(grep -c '^{"step"' e.copy)" -eq 5 ] || fail "the FIFO's reader got $(grep -c '^{"step"' e.copy) energy lines, want 5"
[ "$(sed -n 2p o.copy)" = "  648" ] || fail "the final configuration did not come through the FIFO"
echo "FIFO: exit $rc, $(wc -l < e.copy) lines through e.fifo, $(wc -l < o.copy) through o.fifo"

# --- 2. a character device: a private null device where root can make one
if [ "$(id -u)" -eq 0 ] && mknod nulldev c 1 3 2> /dev/null; then
    check
    "$halox" md "${short[@]}" -o nulldev -e nulldev -g nulldev -x nulldev --nstxout 5 \
        --checkpoint nulldev > dev.out 2>&1
    rc=$?
    [ $rc -eq 0 ] || fail "device outputs: exit $rc: $(tail -2 dev.out)"
    if [ ! -c nulldev ] || ! no_backups . nulldev; then
        fail "the device node was replaced or backed up: $(ls -la | grep null | tr '\n' ' ')"
        special_ok=0
    fi
    echo "private null device: exit $rc, still a device: $([ -c nulldev ] && echo yes || echo no)"
else
    echo "note: not root (or mknod refused): the private device case is not run"
fi

# --- 3. /dev/null itself, a link to it, and /dev/full: only for a binary that passed 1 and 2
if [ $special_ok -eq 1 ]; then
    check
    ln -s /dev/null nul.link
    "$halox" md "${short[@]}" -o /dev/null -e /dev/null -g /dev/null -x nul.link --nstxout 5 \
        --checkpoint /dev/null > devnull.out 2>&1
    rc=$?
    [ $rc -eq 0 ] || fail "-o/-e/-g/--checkpoint /dev/null: exit $rc: $(tail -2 devnull.out)"
    [ -c /dev/null ] || fail "/dev/null is no longer a character device"
    ls -a /dev | grep -q '^#null' && fail "a backup of /dev/null appeared in /dev"
    [ -L nul.link ] || fail "the link to /dev/null was replaced"
    # without -g the log goes next to -o, but not into /dev
    rm -f md.log
    "$halox" md "${short[@]}" -o /dev/null > devlog.out 2>&1 || fail "-o /dev/null: $(tail -2 devlog.out)"
    [ -e /dev/md.log ] && { fail "-o /dev/null put its log into /dev"; rm -f /dev/md.log; }
    [ -s md.log ] || fail "-o /dev/null: no md.log in the working directory"
    check
    "$halox" md "${short[@]}" -o /dev/full -g full.log > full.out 2>&1
    rc=$?
    { [ $rc -ne 0 ] && grep -q "No space left on device" full.out; } ||
        fail "-o /dev/full: exit $rc, $(grep error full.out | head -1)"
    [ -c /dev/full ] || fail "/dev/full is no longer a character device"
    ls -a /dev | grep -q '^#full' && fail "a backup of /dev/full appeared in /dev"
    echo "/dev/null written through; /dev/full: exit $rc, $(grep error full.out | head -1)"
    # the log on a full device: the failure is reported (it was ignored, exit 0) before the run
    check
    "$halox" md "${short[@]}" -g /dev/full -o fulllog.gro > fulllog.out 2>&1
    rc=$?
    { [ $rc -ne 0 ] && grep -q "writing the log /dev/full failed: No space left on device" fulllog.out; } ||
        fail "-g /dev/full: exit $rc, $(grep -m1 error fulllog.out)"
    [ -e fulllog.gro ] && fail "-g /dev/full: the run went on and wrote its configuration"
    [ -c /dev/full ] || fail "/dev/full is no longer a character device"
    echo "-g /dev/full: exit $rc, $(grep -m1 error fulllog.out)"
else
    echo "note: the binary replaced a special file above; it is not run on /dev/null or /dev/full"
fi

# --- 4. outputs checked before anything is read or run
# expect_early NAME 'message' ARGS...: fails within 20 s (the run asks for 10^8 steps), with
# the message, and leaves no energy file, no log and the input untouched
expect_early() {
    local name=$1 frag=$2
    shift 2
    check
    rm -f early.jsonl
    local before=$fails start
    start=$(date +%s)
    timeout 20 "$halox" md "$@" > "$name.out" 2>&1
    local rc=$? took=$(($(date +%s) - start))
    if [ $rc -eq 0 ] || [ $rc -eq 124 ]; then
        fail "$name: exit $rc after ${took}s (not refused at start-up)"
    elif ! grep -qF -- "$frag" "$name.out"; then
        fail "$name: message lacks '$frag': $(grep -m1 error "$name.out")"
    fi
    [ -e early.jsonl ] && fail "$name: the energy file was written"
    cmp -s w.gro w.orig.gro || fail "$name: the input w.gro was changed"
    [ $fails -eq $before ] && echo "ok   $name (${took}s): $(grep -m1 error "$name.out" | cut -c1-140)"
}
echo "a file" > plain.txt
mkdir -p adir
expect_early missing-dir-o "mkdir -p nodir" "${huge[@]}" -o nodir/out.gro -g x.log -e early.jsonl
expect_early missing-dir-cpt "the checkpoint (--checkpoint)" "${huge[@]}" -o out.gro -g x.log \
    -e early.jsonl --checkpoint nodir/state.cpt --nstcheckpoint 1000000
expect_early missing-dir-e "does not exist" "${huge[@]}" -o out.gro -g x.log -e nodir2/early.jsonl
expect_early through-file "is not a directory" "${huge[@]}" -o out.gro -g x.log -e early.jsonl \
    -x plain.txt/t.gro --nstxout 10
expect_early o-is-dir "is a directory" "${huge[@]}" -o adir -g x.log -e early.jsonl
expect_early same-file "are the same file" "${huge[@]}" -o out.gro -g x.log -e early.jsonl \
    -x ./adir/../early.jsonl --nstxout 10
expect_early output-is-input "is the input" "${huge[@]}" -o out.gro -g w.gro -e early.jsonl
# the parameter file is an input too: -g run.mdp would have replaced it by the log
printf 'nstlist = 10\n' > in.mdp
cp in.mdp in.orig.mdp
expect_early log-is-mdp "the log (-g) in.mdp is the parameter file (-f) in.mdp" "${huge[@]}" \
    -f in.mdp -o out.gro -g in.mdp -e early.jsonl
cmp -s in.mdp in.orig.mdp || fail "log-is-mdp: the parameter file was changed"
no_backups . in.mdp || fail "log-is-mdp: the parameter file was backed up (renamed)"
expect_early energy-is-mdp "the energy file (-e) in.mdp is the parameter file (-f)" "${huge[@]}" \
    -f in.mdp -o out.gro -g x.log -e in.mdp
cmp -s in.mdp in.orig.mdp || fail "energy-is-mdp: the parameter file was changed"
if [ "$(id -u)" -eq 0 ] && id nobody > /dev/null 2>&1 && command -v su > /dev/null; then
    # an unwritable directory: root writes anywhere, so run as an ordinary user
    check
    chmod 755 "$hx_work"
    chmod 644 w.gro
    cp "$halox" ./halox_copy && chmod 755 ./halox_copy
    mkdir -p ro && chmod 755 ro
    su nobody -s /bin/sh -c "cd '$hx_work' && timeout 20 ./halox_copy md -c w.gro \
        --steps 100000000 --rc 0.7 --threads 1 -o ro/out.gro -g ro.log" > ro.out 2>&1
    rc=$?
    { [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "cannot create files in the directory 'ro'" ro.out; } ||
        fail "unwritable directory: exit $rc, $(grep -m1 error ro.out)"
    echo "unwritable directory (as nobody): exit $rc"
fi

# --- 5. -o the same as -c: the input is kept as #name.1#
check
cp w.orig.gro in.gro
"$halox" md -c in.gro -o in.gro --steps 5 --rc 0.7 --rlist 0.75 --gen-vel 300 --threads 1 \
    -g inplace.log > inplace.out 2>&1 || fail "-o = -c: $(tail -2 inplace.out)"
cmp -s '#in.gro.1#' w.orig.gro || fail "-o = -c: the input was not kept as #in.gro.1#"
cmp -s in.gro w.orig.gro && fail "-o = -c: the output did not replace in.gro"
grep -q "backed up the input in.gro to #in.gro.1#" inplace.out || fail "-o = -c: not reported"

# --- 6. two runs on the same files
check
"$halox" md "${huge[@]}" --nstenergy 10 -e a.jsonl -g a.log -o a.gro > a.out 2>&1 &
pid_a=$!
for _ in $(seq 150); do
    grep -q '^{"step"' a.jsonl 2> /dev/null && break
    sleep 0.2
done
grep -q '^{"step"' a.jsonl 2> /dev/null || fail "run A did not start: $(tail -2 a.out)"
# B: same energy file and log, its own final configuration
timeout 20 "$halox" md "${short[@]}" -e a.jsonl -g a.log -o b.gro > b.out 2>&1
rc=$?
{ [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "is being written by another halox run (pid $pid_a on" b.out; } ||
    fail "second run on the same files: exit $rc, $(grep -m1 error b.out)"
no_backups . a.log && no_backups . a.jsonl ||
    fail "the second run backed up the first run's files"
kill -0 $pid_a 2> /dev/null || fail "run A died"
# A goes on writing (on a loaded machine that may take a while)
n1=$(wc -l < a.jsonl)
for _ in $(seq 150); do
    [ "$(wc -l < a.jsonl)" -gt "$n1" ] && break
    sleep 0.2
done
[ "$(wc -l < a.jsonl)" -gt "$n1" ] || fail "run A stopped writing its energy file"
kill -TERM $pid_a
wait $pid_a
rc_a=$?
[ $rc_a -eq 143 ] || fail "run A after SIGTERM: exit $rc_a, want 143: $(tail -2 a.out)"
ls -a | grep -q 'halox-lock' && fail "lock files left after the run: $(ls -a | grep halox-lock)"
echo "second run: $(grep -m1 error b.out | cut -c1-150)"
# a lock file left by a dead run (nobody holds it) does not block
check
echo "pid 1 on nowhere" > .stale.jsonl.halox-lock
"$halox" md "${short[@]}" -e stale.jsonl -g stale.log -o stale.gro > stale.out 2>&1 ||
    fail "a stale lock file blocked the run: $(grep -m1 error stale.out)"
[ -e .stale.jsonl.halox-lock ] && fail "the stale lock file was not removed"

# --- 7. long file names: a name may have 255 bytes, but the lock (.NAME.halox-lock), backup
# (#NAME.1#), temporary (NAME.tmp.PID) and previous checkpoint (NAME.prev) next to it are longer
# (a 254-byte -o failed at the lock); they are shortened with a hash and everything works
check
long() { printf "$1%.0s" $(seq "$2"); }
lo="$(long o 250).gro" le="$(long e 248).jsonl" lg="$(long g 250).log" lx="$(long x 246).traj.gro"
lc="$(long c 250).cpt"
longrun() {
    "$halox" md "${short[@]}" -o "$lo" -e "$le" -g "$lg" -x "$lx" --nstxout 5 --checkpoint "$lc" \
        --nstcheckpoint 10 "$@" > long.out 2>&1
}
longrun
rc=$?
[ $rc -eq 0 ] || fail "254-byte output names: exit $rc, $(grep -m1 error long.out)"
[ -s "$lo" ] && [ -s "$le" ] && [ -s "$lg" ] && [ -s "$lx" ] && [ -s "$lc" ] ||
    fail "254-byte output names: an output is missing"
longrun
rc=$?
[ $rc -eq 0 ] || fail "254-byte output names, second run: exit $rc, $(grep -m1 error long.out)"
nbak=$(ls -a | grep -c '^#[eglx]*~[0-9a-f]\{8\}\.[^#]*1#$')
[ "$nbak" -eq 3 ] || fail "254-byte output names: $nbak shortened backups (log, energy, trajectory), want 3: $(ls -a | grep '^#' | cut -c1-20 | tr '\n' ' ')"
ls -a | grep -q '^c*~[0-9a-f]\{8\}\.prev$' || fail "254-byte checkpoint name: no shortened .prev"
ls -a | grep -q 'halox-lock' && fail "254-byte output names: lock files left"
longrun --steps 30 --restart "$lc"
rc=$?
[ $rc -eq 0 ] || fail "254-byte output names, restart: exit $rc, $(grep -m1 error long.out)"
echo "254-byte names: runs, backups ($nbak), .prev and restart: exit $rc"

finish test_outputs
