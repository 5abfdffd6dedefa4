/* Fault injection for tests: make one named allocation fail (or one rare path run), once, in
 * this thread.
 *
 * Some failure paths cannot be reached from outside: a collective where one rank runs out of
 * memory while the others do not. Such an allocation asks hx_fault_hit("site") first and
 * behaves as if malloc had returned NULL when the site is armed. A test arms the site on the
 * rank that should fail and checks that every rank returns an error instead of hanging. Nothing
 * arms a site outside the tests; the check is one thread-local comparison. Sites in use:
 *   "plan.grow"    hx_plan_set_counts (the device search step) takes counts one above every
 *                  capacity: the plan's capacities grow and the halo is updated collectively,
 *                  the slow path of a search step (armed on every process, which all take it)
 *   "gpu_dd.shrink" hx_gpu_decomp_create's capacities (src/md/gpu/decomp_gpu.cu) divided by
 *                  HX_GPU_DD_TEST_SHRINK: the first device search step overflows them and
 *                  takes the slow path, every process growing together (armed on every process)
 *   "md.dd_pending" a failure noted on one process before a device search step
 *                  (src/mdrun/schedule.c): agreed in the device step's one reduction
 *   "md.dd_counts" the device search step's counts on one process (src/mdrun/schedule.c): the
 *                  failure must reach the neighbours through hx_plan_set_counts's failure
 *                  markers and every process through the agreement after it
 *   "md.dd_set_home" the home atoms' set-up of the device search step on one process (before
 *                  the plan): passed on as hx_plan_set_counts's failure markers, then agreed
 *   "md.dd_pairs"  the pair search of the device search step on one process: agreed with the
 *                  list statistics' sum
 *   "mpi.create"   hx_comm_create_mpi's allocations (src/comm/mpi.c)
 *   "mpi.reserve"  growth of the MPI reduction buffers
 *   "mpi.gather"   rank 0's buffer in hx_comm_gather_bytes
 *   "system_bcast" a receiving rank's copy of the system in hx_system_bcast
 *   "migrate.recv" the receive buffers of hx_migrate
 *   "halo.pulse"   a pulse of gpu-mpi / gpu-direct fails as a CUDA call would
 * (src/halo/halo_gpu.cu: the exchange must still complete its messages) "halo.ipc"     gpu-direct's
 * IPC handle of its memory on one rank (before the handle exchange) */
#ifndef HX_CORE_FAULT_H
#define HX_CORE_FAULT_H

#ifdef __cplusplus
extern "C" { /* the CUDA sources have sites too */
#endif

/* Arm site (a string literal or other storage that outlives the hit); NULL disarms. */
void hx_fault_arm(const char *site);
/* 1 if site is armed (and disarm it), else 0. */
int hx_fault_hit(const char *site);

#ifdef __cplusplus
}
#endif

#endif
