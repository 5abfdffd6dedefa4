"""The per-rank files of a halox trace (PREFIX.rank<R>.txt), for scripts/nvshmem_trace.py and
scripts/search_trace.py."""
import glob
import re


def rank_files(prefix, variable, fail):
    """PREFIX.rank*.txt in rank order; fail(message) when there is none (variable: the
    environment variable that sets the prefix, for the message)."""
    files = sorted(glob.glob(prefix + ".rank*.txt"),
                   key=lambda p: int(re.search(r"rank(\d+)\.txt$", p).group(1)))
    if not files:
        fail(f"no trace files {prefix}.rank*.txt (set {variable} to the prefix)")
    return files
