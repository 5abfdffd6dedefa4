/* A timeline of the decomposed search step, for diagnosis: HALOX_SEARCH_TRACE=PREFIX.
 *
 * The search step of a decomposed GPU run is a chain across processes: each process's device
 * work, its host's decisions between the device parts, and waits for the other processes
 * (messages, reductions, agreements). Per-part timings of one process cannot tell which of these
 * the chain waits for; this trace can. Every process stamps
 *   - host points of the search step (CLOCK_MONOTONIC, one clock for every process of a host),
 *   - device points: a one-thread kernel after each kernel or message of the device
 *     decomposition and after each stage of the pair search writes %globaltimer (one clock for
 *     every process on a GPU) into pinned host memory; in a replayed graph these kernels are
 *     nodes of it, so the graph's order is the stamps' order,
 * and the device clock is related to the host's by a calibration at the first search steps (a
 * stamp between two host readings, the narrowest of a few). scripts/search_trace.py lines the
 * processes up and prints and plots where each search step's time goes.
 *
 * Process-wide on purpose: the points lie in three modules (the schedule, the device
 * decomposition, the pair search) that share no handle, and a diagnosis must not change their
 * interfaces. Off (every call a no-op but the check) unless the engine opened it. The marker
 * kernels lengthen what they trace (a graph node or a launch each, ~1-2 us): compare a traced
 * run with an untraced one of the same call before reading absolute figures. */
#ifndef HX_GPU_TRACE_H
#define HX_GPU_TRACE_H

#include "halox/status.h"
#include "gpu/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Opens the trace of this process when HALOX_SEARCH_TRACE is set (the file is
 * PREFIX.rank<R>.txt, written through a temporary file at hx_gpu_trace_close); else nothing.
 * Refuses a prefix too long or a file that cannot be created. */
hx_status hx_gpu_trace_open(int rank, int nranks);
/* Writes the file (what was collected) and frees everything; a failure is logged. */
void hx_gpu_trace_close(void);
int hx_gpu_trace_on(void);

/* Inside the GPU context, before a search step's device work (not while a stream captures):
 * the first call allocates the device stamps' memory, the first few calibrate the clocks on s
 * (they wait for s). */
hx_status hx_gpu_trace_prepare(hx_stream s);
/* A search step of the engine begins at step (host stamp "begin") / ended (host stamp "end";
 * the device stamps, all done by then, are collected and cleared). */
void hx_gpu_trace_search_begin(long long step);
void hx_gpu_trace_search_end(void);
/* A host point of the current search step (label: a string that lives as long as the
 * process). */
void hx_gpu_trace_host(const char *label);
/* A device point on stream s: who (the module instance), sub (its part) and idx (the point's
 * position in that part's sequence) name the stamp's slot, so that a graph captured once and
 * replayed writes the same slots at every search; label names it in the file. */
hx_status hx_gpu_trace_mark(const void *who, int sub, int idx, const char *label, hx_stream s);

#ifdef __cplusplus
}
#endif

#endif
