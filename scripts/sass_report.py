#!/usr/bin/env python3
"""Static SASS report of the GPU engine's kernels (issue 28; docs/design/gpu-engine.md, "The
kernels' instruction counts (SASS, static)").

Reads cubins built for sm_90 (scripts/sass_report.sh builds them) and prints, per kernel:
registers, shared memory, stack, spills (ptxas -v), the theoretical occupancy on a Hopper
multiprocessor, and the instruction mix of each loop (found by its back-edge: a branch to a
block that dominates it) and of the pair bodies (the blocks holding a MUFU.RSQ). With --blocks,
every basic block of the innermost loops, so that per-item and per-i-cluster paths can be read
off the listing.

Static counts, not executed ones: a count per loop body is what one pass over every block of the
body would issue; which blocks a pass takes depends on the data (the masks). No GPU needed.
"""
import argparse
import os
import re
import subprocess
import sys

# Hopper (sm_90) multiprocessor limits used for the occupancy (CUDA occupancy rules)
SM_REGS = 65536
SM_WARPS = 64
SM_BLOCKS = 32
SM_SMEM = 233472  # 228 KB usable by blocks
BLOCK_SMEM_RESERVE = 1024  # the runtime's per-block reserve
REG_ALLOC_WARP = 256  # registers are allocated per warp in units of 256

# The kernels reported, with the block size each is launched with (src/md/gpu/*.cu) and what it
# is. Dynamic shared memory (k_list_build's candidate list) is not in the cubin: added here.
KERNELS = [
    ("k_nb_2h<false,16>", r"^_Z7k_nb_2hILb0ELi16E", 64, 0, "pair kernel comb-2hs (default)"),
    ("k_nb_2h<false,14>", r"^_Z7k_nb_2hILb0ELi14E", 64, 0, "comb-2hs, HALOX_GPU_NB_RESIDENT=14"),
    ("k_nb_2h<false,12>", r"^_Z7k_nb_2hILb0ELi12E", 64, 0, "comb-2hs, HALOX_GPU_NB_RESIDENT=12"),
    ("k_nb_2h<true,16>", r"^_Z7k_nb_2hILb1ELi16E", 64, 0, "pair kernel comb-2hsn"),
    ("k_nb_2h<true,14>", r"^_Z7k_nb_2hILb1ELi14E", 64, 0, "comb-2hsn, HALOX_GPU_NB_RESIDENT=14"),
    ("k_nb_2h<true,12>", r"^_Z7k_nb_2hILb1ELi12E", 64, 0, "comb-2hsn, HALOX_GPU_NB_RESIDENT=12"),
    ("k_nb_fast<true>", r"^_Z9k_nb_fastILb1E", 64, 0, "pair kernel comb (one warp per half)"),
    ("k_nb_fast<false>", r"^_Z9k_nb_fastILb0E", 64, 0, "pair kernel table"),
    ("k_nb_f", r"^_Z6k_nb_f7", 64, 0, "pair kernel ref"),
    ("k_nb_2he", r"^_Z8k_nb_2he", 64, 0, "pair kernel with energies (energy steps)"),
    ("k_nb_fe", r"^_Z7k_nb_fe", 64, 0, "with energies, HALOX_GPU_NB_KERNEL=ref"),
    ("k_prune<false>", r"^_Z7k_pruneILb0E", 256, 0, "rolling prune (default)"),
    ("k_prune<true>", r"^_Z7k_pruneILb1E", 256, 0, "rolling prune, HALOX_GPU_PRUNE=fast"),
    ("k_home_terms", r"^_Z12k_home_terms", 128, 0, "home atoms' RF terms (beside the pairs)"),
    ("k_update<0,0>", r"^_Z8k_updateILb0ELb0E", 128, 0, "update (default)"),
    ("k_update<0,1>", r"^_Z8k_updateILb0ELb1E", 128, 0, "update, HALOX_GPU_KE_DEFER=1"),
    ("k_update<1,0>", r"^_Z8k_updateILb1ELb0E", 128, 0, "update, HALOX_GPU_UPDATE_EARLY=1"),
    ("k_update<1,1>", r"^_Z8k_updateILb1ELb1E", 128, 0, "update, EARLY=1 KE_DEFER=1"),
    ("k_list_build", r"^_Z12k_list_build", 128, 0, "list build (search steps)"),
]


def classify(op):
    """Instruction class of a SASS opcode (with modifiers)."""
    b = op.split(".")[0]
    if b in ("FFMA", "FMUL", "FADD", "FFMA32I", "FMUL32I", "FADD32I", "FMNMX"):
        return "fp32"
    if b in ("FSETP", "FSEL", "FCHK"):
        return "fcmp"
    if b in ("DFMA", "DMUL", "DADD", "DSETP", "DMNMX"):
        return "fp64"
    if b == "MUFU":
        return "mufu"
    if b in ("F2F", "F2I", "I2F", "FRND", "F2FP", "I2FP", "F2IP"):
        return "cvt"
    if b == "LDS":
        return "lds"
    if b == "STS":
        return "sts"
    if b in ("LDG", "LD"):
        return "ldg"
    if b in ("STG", "ST"):
        return "stg"
    if b in ("LDL", "STL"):
        return "local"
    if b in ("RED", "REDG", "ATOM", "ATOMG", "ATOMS"):
        return "atomic"
    if b in ("SHFL", "VOTE", "VOTEU", "REDUX", "MATCH"):
        return "warp"
    if b in ("BAR", "MEMBAR", "FENCE", "ERRBAR", "CCTL"):
        return "sync"
    if b in ("BRA", "BSSY", "BSYNC", "EXIT", "CALL", "RET", "WARPSYNC", "BREAK", "JMP", "NOP"):
        return "ctrl"
    if b in ("LDC", "ULDC"):
        return "const"
    if b.startswith("U") or b in ("R2UR", "S2UR"):
        return "uniform"
    return "int"


CLASSES = ["fp32", "fcmp", "fp64", "mufu", "cvt", "int", "uniform", "const", "lds", "sts", "ldg",
           "stg", "local", "atomic", "warp", "sync", "ctrl"]

INSN = re.compile(r"^\s+/\*([0-9a-f]{4,})\*/\s+(.*?);")


def parse_sass(text):
    """{function name: [(address, guard, opcode, operands)]} from cuobjdump -sass."""
    funcs, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^\s+Function : (\S+)", line)
        if m:
            cur = funcs.setdefault(m.group(1), [])
            continue
        m = INSN.match(line)
        if m and cur is not None:
            body = m.group(2).strip()
            guard = ""
            if body.startswith("@"):
                guard, body = body.split(None, 1)
            parts = body.split(None, 1)
            cur.append((int(m.group(1), 16), guard, parts[0], parts[1] if len(parts) > 1 else ""))
    return funcs


def target_of(ops):
    m = re.search(r"0x([0-9a-f]+)\s*$", ops.strip())
    return int(m.group(1), 16) if m else None


def cfg(insns):
    """Basic blocks [(start index, end index)], successors, block of each address."""
    addr_idx = {a: i for i, (a, _, _, _) in enumerate(insns)}
    leaders = {0}
    for i, (a, g, op, ops) in enumerate(insns):
        b = op.split(".")[0]
        if b in ("BRA", "EXIT", "RET", "JMP", "BREAK"):
            if i + 1 < len(insns):
                leaders.add(i + 1)
            if b in ("BRA", "JMP"):
                t = target_of(ops)
                if t is not None and t in addr_idx:
                    leaders.add(addr_idx[t])
    starts = sorted(leaders)
    blocks = [(s, (starts[k + 1] if k + 1 < len(starts) else len(insns)) - 1)
              for k, s in enumerate(starts)]
    blk_of = {}
    for k, (s, e) in enumerate(blocks):
        for i in range(s, e + 1):
            blk_of[i] = k
    succ = []
    for k, (s, e) in enumerate(blocks):
        a, g, op, ops = insns[e]
        b = op.split(".")[0]
        uncond = g in ("", "@PT")
        out = []
        if b in ("BRA", "JMP"):
            t = target_of(ops)
            if t is not None and t in addr_idx:
                out.append(blk_of[addr_idx[t]])
            if not uncond or "DIV" in op:
                out.append(k + 1)
        elif b in ("EXIT", "RET", "BREAK"):
            if not uncond:
                out.append(k + 1)
        else:
            out.append(k + 1)
        succ.append([x for x in out if x < len(blocks)])
    return blocks, succ


def dominators(n, succ):
    pred = [[] for _ in range(n)]
    for u in range(n):
        for v in succ[u]:
            pred[v].append(u)
    full = set(range(n))
    dom = [full.copy() for _ in range(n)]
    dom[0] = {0}
    changed = True
    while changed:
        changed = False
        for v in range(1, n):
            ps = [dom[p] for p in pred[v]]
            new = (set.intersection(*ps) if ps else set()) | {v}
            if new != dom[v]:
                dom[v], changed = new, True
    return dom, pred


def loops(blocks, succ):
    """Natural loops {header: set of blocks}, from back-edges u -> h with h dominating u."""
    dom, pred = dominators(len(blocks), succ)
    found = {}
    for u in range(len(blocks)):
        for h in succ[u]:
            if h in dom[u]:
                body, stack = {h, u}, ([u] if u != h else [])
                while stack:
                    x = stack.pop()
                    for p in pred[x]:
                        if p not in body and p != h:
                            body.add(p)
                            stack.append(p)
                found.setdefault(h, set()).update(body)
    return found


def mix(insns, idx):
    c = {k: 0 for k in CLASSES}
    for i in idx:
        c[classify(insns[i][2])] += 1
    return c


def fmt_mix(c):
    return " ".join("%s %d" % (k, c[k]) for k in CLASSES if c[k])


def occupancy(regs, smem_static, smem_dyn, threads):
    warps = (threads + 31) // 32
    rw = ((regs * 32 + REG_ALLOC_WARP - 1) // REG_ALLOC_WARP) * REG_ALLOC_WARP
    by_regs = SM_REGS // (rw * warps) if regs else SM_BLOCKS
    smem = smem_static + smem_dyn + BLOCK_SMEM_RESERVE
    by_smem = SM_SMEM // smem
    by_warps = SM_WARPS // warps
    blocks = min(by_regs, by_smem, by_warps, SM_BLOCKS)
    return blocks, blocks * warps, by_regs, by_smem


def ptxas_info(log):
    """{mangled name: (regs, spill stores, spill loads, stack, smem)} from ptxas -v."""
    info, name = {}, None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\S+)'", line)
        if m:
            name = m.group(1)
            info[name] = [0, 0, 0, 0, 0]
            continue
        if name is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads",
                      line)
        if m:
            info[name][3], info[name][1], info[name][2] = (int(m.group(1)), int(m.group(2)),
                                                           int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            info[name][0] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            info[name][4] = int(s.group(1)) if s else 0
    return info


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--blocks", action="store_true", help="list the innermost loops' blocks")
    ap.add_argument("--only", default="", help="regular expression on the kernel's short name")
    ap.add_argument("cubins", nargs="+", help="cubin files, each with FILE.ptxas.log beside it")
    a = ap.parse_args()
    funcs, info = {}, {}
    for c in a.cubins:
        out = subprocess.run([a.cuobjdump, "-sass", c], check=True, capture_output=True,
                             text=True).stdout
        funcs.update(parse_sass(out))
        log = c + ".ptxas.log"
        if os.path.exists(log):
            with open(log) as fh:
                info.update(ptxas_info(fh.read()))
    print("sm_90: %d registers, %d warps, %d blocks, %d B shared memory per multiprocessor"
          % (SM_REGS, SM_WARPS, SM_BLOCKS, SM_SMEM))
    print("%-18s %4s %5s %6s %7s %6s %7s %6s  %s" % ("kernel", "regs", "spill", "stack", "smem",
                                                 "block", "blk/SM", "warps", "what"))
    rows = []
    for short, pat, threads, dyn, what in KERNELS:
        if a.only and not re.search(a.only, short):
            continue
        names = [n for n in funcs if re.match(pat, n)]
        if not names:
            print("%-18s (not in the cubins)" % short)
            continue
        n = names[0]
        regs, sst, sld, stack, smem = info.get(n, [0, 0, 0, 0, 0])
        blocks, warps, _, _ = occupancy(regs, smem, dyn, threads)
        print("%-18s %4d %2d/%-2d %6d %7d %6d %7d %3d %2.0f%%  %s" % (
            short, regs, sst, sld, stack, smem, threads, blocks, warps, 100.0 * warps / SM_WARPS,
            what))
        rows.append((short, n))
    for short, n in rows:
        insns = funcs[n]
        blocks, succ = cfg(insns)
        lp = loops(blocks, succ)
        print("\n== %s: %d instructions, %d basic blocks, %d loops" % (short, len(insns),
                                                                     len(blocks), len(lp)))
        allidx = range(len(insns))
        print("   whole kernel: %s" % fmt_mix(mix(insns, allidx)))
        for h in sorted(lp):
            body = lp[h]
            inner = not any(h2 != h and h2 in body for h2 in lp)
            idx = [i for b in sorted(body) for i in range(blocks[b][0], blocks[b][1] + 1)]
            lo = insns[blocks[min(body)][0]][0]
            hi = insns[blocks[max(body)][1]][0]
            print("   loop at 0x%04x (0x%04x-0x%04x, %d blocks%s): %d instructions: %s" % (
                insns[blocks[h][0]][0], lo, hi, len(body), ", innermost" if inner else "",
                len(idx), fmt_mix(mix(insns, idx))))
            pair = [b for b in sorted(body)
                    if any(insns[i][2].startswith("MUFU.RSQ")
                           for i in range(blocks[b][0], blocks[b][1] + 1))]
            if pair and inner:
                sizes = [blocks[b][1] - blocks[b][0] + 1 for b in pair]
                pidx = [i for b in pair for i in range(blocks[b][0], blocks[b][1] + 1)]
                print("     pair bodies (blocks with MUFU.RSQ): %d, %d-%d instructions, "
                      "mean %.1f: %s" % (len(pair), min(sizes), max(sizes),
                                         sum(sizes) / len(sizes), fmt_mix(mix(insns, pidx))))
                rest = [i for i in idx if i not in set(pidx)]
                print("     the rest of the loop: %d instructions: %s" % (
                    len(rest), fmt_mix(mix(insns, rest))))
            if a.blocks and inner:
                for b in sorted(body):
                    s, e = blocks[b]
                    c = mix(insns, range(s, e + 1))
                    last = insns[e]
                    print("     0x%04x %3d  %-60s -> %s" % (
                        insns[s][0], e - s + 1, fmt_mix(c),
                        ",".join("0x%04x" % insns[blocks[x][0]][0] for x in succ[b])))
                    del last
    return 0


if __name__ == "__main__":
    sys.exit(main())
