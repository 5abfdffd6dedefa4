/* Builds without CUDA: the GPU MD backend's calls answer "not compiled" (the device API's
 * stubs are src/gpu/nocuda.c). */
#include "core/error.h"

/* ---- GPU non-bonded (nb_gpu.h) and update (update_gpu.h) ----------------------------------
 * Present so that code outside src/md/gpu links in every build; each fallible call says that
 * CUDA was not compiled in. */
#include "md/gpu/nb_gpu.h"
#include "md/gpu/update_gpu.h"

#include <string.h>

#define HX_NOGPU_FAIL                                                                              \
    HX_FAIL(HX_ERR_NOT_COMPILED, "halox was built without CUDA: rebuild with nvcc available")

hx_status hx_gpu_nb_create(const hx_forcefield *ff, const hx_gpu_nb_params *p, hx_gpu_nb **out)
{
    (void)ff;
    (void)p;
    if (out)
        *out = NULL;
    HX_NOGPU_FAIL;
}
void hx_gpu_nb_destroy(hx_gpu_nb **nb)
{
    if (nb)
        *nb = NULL;
}
hx_status hx_gpu_nb_set_atoms(hx_gpu_nb *nb, const hx_local_set *set, const uint32_t *excl,
                              hx_stream stream)
{
    (void)nb;
    (void)set;
    (void)excl;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_nb_search(hx_gpu_nb *nb, const float *x, hx_stream stream)
{
    (void)nb;
    (void)x;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_nb_local(hx_gpu_nb *nb, const float *x, float *f, int flags, hx_stream stream)
{
    (void)nb;
    (void)x;
    (void)f;
    (void)flags;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_nb_nonlocal(hx_gpu_nb *nb, const float *x, float *f, int flags, hx_stream stream)
{
    (void)nb;
    (void)x;
    (void)f;
    (void)flags;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_nb_reduce_home(hx_gpu_nb *nb, float *f, hx_stream stream)
{
    (void)nb;
    (void)f;
    (void)stream;
    HX_NOGPU_FAIL;
}
int hx_gpu_nb_fuse_update(void)
{
    return 0;
}
hx_status hx_gpu_nb_update_link(hx_gpu_nb *nb, int commit, hx_gpu_update_link *link)
{
    (void)nb;
    (void)commit;
    (void)link;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_nb_time_kernels(hx_gpu_nb *nb, int list, int flags, int reps, hx_stream stream,
                                 double *pair_ms, double *prune_ms)
{
    (void)nb;
    (void)list;
    (void)flags;
    (void)reps;
    (void)stream;
    (void)pair_ms;
    (void)prune_ms;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_nb_fetch_energies(hx_gpu_nb *nb, hx_stream stream)
{
    (void)nb;
    (void)stream;
    HX_NOGPU_FAIL;
}
void hx_gpu_nb_read_energies(const hx_gpu_nb *nb, hx_nb_energies *e, long long *npairs)
{
    (void)nb;
    if (e)
        e->lj = e->coulomb = 0.0;
    if (npairs)
        *npairs = 0;
}
hx_status hx_gpu_nb_set_kernel(hx_gpu_nb *nb, int kernel)
{
    (void)nb;
    (void)kernel;
    HX_NOGPU_FAIL;
}
void hx_gpu_nb_get_stats(const hx_gpu_nb *nb, hx_gpu_nb_stats *s)
{
    (void)nb;
    memset(s, 0, sizeof *s);
}
hx_status hx_gpu_nb_list_download(const hx_gpu_nb *nb, hx_gpu_nb_list_host *out)
{
    (void)nb;
    if (out)
        memset(out, 0, sizeof *out);
    HX_NOGPU_FAIL;
}
void hx_gpu_nb_list_host_free(hx_gpu_nb_list_host *l)
{
    (void)l;
}

hx_status hx_gpu_update_create(const hx_gpu_update_params *p, hx_gpu_update **out)
{
    (void)p;
    if (out)
        *out = NULL;
    HX_NOGPU_FAIL;
}
void hx_gpu_update_destroy(hx_gpu_update **u)
{
    if (u)
        *u = NULL;
}
hx_status hx_gpu_update_reset(hx_gpu_update **u, const hx_gpu_update_params *p)
{
    (void)p;
    if (u)
        *u = NULL;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_update_upload(hx_gpu_update *u, const double *x, const double *v, float *xf,
                               hx_stream stream)
{
    (void)u;
    (void)x;
    (void)v;
    (void)xf;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_update_download(hx_gpu_update *u, double *x, double *v, hx_stream stream)
{
    (void)u;
    (void)x;
    (void)v;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_update_step(hx_gpu_update *u, float *xf, float *f, double lambda, int flags,
                             const hx_gpu_update_link *link, hx_stream stream)
{
    (void)u;
    (void)xf;
    (void)f;
    (void)lambda;
    (void)flags;
    (void)link;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_update_wrap(hx_gpu_update *u, float *xf, hx_stream stream)
{
    (void)u;
    (void)xf;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_update_fetch(hx_gpu_update *u, hx_stream stream)
{
    (void)u;
    (void)stream;
    HX_NOGPU_FAIL;
}
void hx_gpu_update_read(const hx_gpu_update *u, hx_gpu_update_result *r)
{
    (void)u;
    memset(r, 0, sizeof *r);
}
const double *hx_gpu_update_positions(const hx_gpu_update *u)
{
    (void)u;
    return NULL;
}

/* ---- GPU bonded interactions (bonded_gpu.h) ----------------------------------------------- */
#include "md/gpu/bonded_gpu.h"

hx_status hx_gpu_bonded_create(const hx_forcefield *ff, double epsfac, hx_gpu_bonded **out)
{
    (void)ff;
    (void)epsfac;
    if (out)
        *out = NULL;
    HX_NOGPU_FAIL;
}
void hx_gpu_bonded_destroy(hx_gpu_bonded **b)
{
    (void)b;
}
hx_status hx_gpu_bonded_set_molecules(hx_gpu_bonded *b, const hx_mol_list *ml)
{
    (void)b;
    (void)ml;
    HX_NOGPU_FAIL;
}
long long hx_gpu_bonded_count(const hx_gpu_bonded *b)
{
    (void)b;
    return 0;
}
hx_status hx_gpu_bonded_compute(hx_gpu_bonded *b, const double *x, float *f, int flags,
                                hx_stream stream)
{
    (void)b;
    (void)x;
    (void)f;
    (void)flags;
    (void)stream;
    HX_NOGPU_FAIL;
}
hx_status hx_gpu_bonded_fetch(hx_gpu_bonded *b, hx_stream stream)
{
    (void)b;
    (void)stream;
    HX_NOGPU_FAIL;
}
void hx_gpu_bonded_read_energies(const hx_gpu_bonded *b, hx_bonded_energies *e)
{
    (void)b;
    memset(e, 0, sizeof *e);
}
hx_status hx_gpu_bonded_check(const hx_gpu_bonded *b, long long step)
{
    (void)b;
    (void)step;
    HX_NOGPU_FAIL;
}
