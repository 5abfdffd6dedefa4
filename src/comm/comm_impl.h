/* Transport interface behind hx_comm. A transport moves bytes between domains; every algorithm
 * (plan building, the halo exchange, migration, reductions) is written once on top of it and is
 * shared by the serial and MPI transports. */
#ifndef HX_COMM_IMPL_H
#define HX_COMM_IMPL_H

#include "halox/halo.h"

typedef struct hx_comm_ops {
    const char *name;
    hx_status (*sendrecv)(hx_comm *c, const int *dest, const void *const *send,
                          const size_t *send_bytes, const int *src, void *const *recv,
                          const size_t *recv_bytes);
    hx_status (*sum_f64)(hx_comm *c, const double *in, double *out, int n);
    hx_status (*max_i64)(hx_comm *c, const long long *in, long long *out, int n);
    hx_status (*agree)(hx_comm *c, hx_status local_status);
    hx_status (*gather_bytes)(hx_comm *c, const void *const *in, const size_t *in_bytes, void **out,
                              size_t *counts);
    hx_status (*bcast_bytes)(hx_comm *c, void *buf, size_t bytes);
    hx_status (*abort)(hx_comm *c, int code);
    void (*destroy)(hx_comm *c);
} hx_comm_ops;

struct hx_comm {
    const hx_comm_ops *ops;
    int ndomains;       /* domains in the job */
    int nlocal;         /* domains in this process */
    int *local_domains; /* [nlocal] */
    int rank, nranks;
    void *impl; /* transport private data */
};

#endif
