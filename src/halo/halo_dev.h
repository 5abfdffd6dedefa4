/* The halo exchange's services to the device search step (src/md/gpu/decomp_gpu.h): the plan's
 * cheap adoption at a search step, and device-to-device messages between neighbouring domains
 * through the backend's own transport (NVSHMEM puts and stores, CUDA IPC copies, MPI through
 * pinned host memory, in-process copies). Backends implement the optional ops of
 * src/halo/halo_impl.h. */
#ifndef HX_HALO_HALO_DEV_H
#define HX_HALO_HALO_DEV_H

#include <stddef.h>

#include "gpu/stream.h"
#include "halox/halo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Messages: 0 the backend has none, 1 CPU-driven (the host reads sizes and moves bytes), 2 on
 * the device only (capturable). */
int hx_halo_msg_kind(const hx_halo *h);
/* Collective: (re)allocate nchan channels of cap[c] bytes (equal on every process); send[i][c]
 * and recv[i][c] receive local domain i's device buffers. */
hx_status hx_halo_msg_setup(hx_halo *h, int nchan, const size_t *cap, void ***send, void ***recv);
/* Enqueue on stream (one of the GPU context's: library-internal, not checked again): every local
 * domain i sends its message of channel c to dest[i] and receives src[i]'s (a message is
 * [int64 bytes | payload]). */
hx_status hx_halo_msg(hx_halo *h, int chan, const int *dest, const int *src, hx_stream stream);
/* After a plan rebuild from counts (hx_plan_set_counts): when its capacities are those of the
 * last update, the backend adopts it locally (no collective, no allocation); when they grew
 * (the same on every process, a global maximum) this is hx_halo_update, collective: the rare
 * slow path, which every process enters at the same search step. *updated (unless NULL): 1 when
 * it was the update.
 * stream: where the next exchanges run (a stream of the GPU context's device). The local
 * adoption's uploads are enqueued there and the call returns without waiting for the device:
 * exchanges enqueued on that stream afterwards see the new plan. The caller guarantees that no
 * exchange of the old plan still runs on another stream (the search step starts once its device
 * is idle). NULL: the uploads are done on return, as the update's always are. */
hx_status hx_halo_refresh(hx_halo *h, hx_stream stream, int *updated);
/* 1 when the next hx_halo_refresh will be the update (its buffers, x and f included, are made
 * again): the caller first waits for any work of its own that still reads them. */
int hx_halo_refresh_grows(const hx_halo *h);

#ifdef __cplusplus
}
#endif
#endif
