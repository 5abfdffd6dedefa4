/* GPU update of the home atoms (private to halox; C-callable): leap-frog, SETTLE for rigid
 * water, SHAKE for the constraints of flexible molecules (src/md/shake.h, shared with the CPU),
 * kinetic energy, force clearing, wrapping molecules into the box.
 *
 * The update keeps the home atoms' positions and velocities in double on the device (the
 * integration is in double, as the CPU engine's: float pair forces, double sums and update,
 * GROMACS's "mixed" precision) and publishes positions as float [cap][3] for the force kernels
 * and the halo exchange. Conventions of src/mdrun/engine.c: v(t+dt/2) = lambda v(t-dt/2) +
 * f(t)/m dt, x(t+dt) = x(t) + v dt, SETTLE, v = (x(t+dt) - x(t))/dt; the kinetic energy of step
 * t is the average of the two half steps' (both kept on the device, summed in double in a fixed
 * order: the result does not depend on timing). lambda (v-rescale) comes from the host.
 * SHAKE iterates to the CPU's tolerance with at most HX_SHAKE_MAXITER sweeps (it always ends); a
 * molecule it cannot constrain is recorded on the device and reported by the next fetch/read
 * (hx_gpu_update_result.bad_shake), as a failing SETTLE is.
 *
 * hx_gpu_update_step never synchronises or allocates (graph-capturable); upload, download and
 * create are synchronous. */
#ifndef HX_GPU_UPDATE_GPU_H
#define HX_GPU_UPDATE_GPU_H

#include "halox/md.h"
#include "halox/status.h"
#include "gpu/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hx_gpu_update hx_gpu_update;

typedef struct hx_gpu_update_params {
    int n;                /* home atoms: local indices [0, n) */
    const double *mass;   /* [n] amu */
    int nmol;             /* molecules: contiguous atom ranges, wrapped into the box whole */
    const int *mol_start; /* [nmol + 1]; NULL: every atom is its own molecule */
    int nsettle;          /* rigid waters */
    const int *settle;    /* [3 nsettle] local indices: oxygen, hydrogen, hydrogen */
    double m_o, m_h;      /* water masses (amu) and geometry (nm), when nsettle > 0 */
    double d_oh, d_hh;
    /* SHAKE molecules: whole, contiguous, of molecule types of ff with constraints (at most
     * HX_MAX_MOL_ATOMS atoms); their atoms must not be in a SETTLE group */
    const hx_forcefield *ff;
    int nshake;
    const int *shake_start; /* [nshake] first atom (local index) */
    const int *shake_type;  /* [nshake] molecule type of ff */
    double shake_tol;       /* relative tolerance; 0: HX_SHAKE_TOL (the CPU's) */
    double dt;              /* ps */
    int periodic[3];
    double box[3];
} hx_gpu_update_params;

hx_status hx_gpu_update_create(const hx_gpu_update_params *p, hx_gpu_update **out);
/* As destroy + create with new parameters (a repartition), but the device buffers and the
 * pinned result record of *u are kept where they are large enough. *u NULL: create. On failure
 * *u is destroyed (NULL). */
hx_status hx_gpu_update_reset(hx_gpu_update **u, const hx_gpu_update_params *p);
void hx_gpu_update_destroy(hx_gpu_update **u);

/* As hx_gpu_update_reset, with everything per atom and per molecule from device arrays (the
 * device search step, src/md/gpu/decomp_gpu.h) and no synchronisation: the positions and
 * velocities, masses and inverse masses (as hx_gpu_update_create derives them from p->mass),
 * the molecule starts, SETTLE groups, the atoms in neither a SETTLE nor a SHAKE group, SHAKE
 * molecules whose types are compact indices over ff's constrained molecule types in its order.
 * p gives the counts (n, nmol, nsettle, nshake), water geometry, ff, dt, box; its pointers are
 * not read. The positions go to xf as float; the kinetic energy of v becomes the current half
 * step's (as hx_gpu_update_upload). Device buffers grow only when a count exceeds them. */
typedef struct hx_gpu_update_dev_lists {
    const double *x, *v, *mass, *invm; /* [3n], [3n], [n], [n] */
    const int *mol_start;              /* [nmol + 1] */
    const int *settle;                 /* [3 nsettle] */
    const int *free_at;                /* [nfree] */
    const int *shake_start, *shake_type;
    int nfree;
    /* settle[0] when SETTLE group w is atoms settle[0] + 3 w + (0, 1, 2) with the water model's
     * masses (the kernel's fast path), else -1 */
    int settle_first;
} hx_gpu_update_dev_lists;
hx_status hx_gpu_update_reset_device(hx_gpu_update **u, const hx_gpu_update_params *p,
                                     const hx_gpu_update_dev_lists *L, float *xf, hx_stream stream);

/* Positions and velocities (double [3n], host) to the device; xf (device float [3n]) receives
 * the positions; the kinetic energy of v becomes the "current half step" one. */
hx_status hx_gpu_update_upload(hx_gpu_update *u, const double *x, const double *v, float *xf,
                               hx_stream stream);
/* Positions and velocities back to the host (x or v may be NULL). Synchronous. */
hx_status hx_gpu_update_download(hx_gpu_update *u, double *x, double *v, hx_stream stream);

enum {
    HX_GPU_UPDATE_DEVIATION = 1, /* also measure the largest relative constraint deviation */
    HX_GPU_UPDATE_NO_COMMIT = 2  /* compute the step's kinetic energy (and deviation) only:
                                    positions, velocities and forces stay as they are */
};

/* The pair module's cluster layout of the home atoms, handed to the update by the pair module
 * (src/md/gpu/nb_gpu.h, hx_gpu_nb_update_link) for one step. With it the update adds the pair
 * forces from their cluster order itself and writes the next step's positions into it: the
 * pair module's force reduction and position gather of the home atoms, two kernels that are
 * each a launch and a dependent round trip to memory on the step's critical path (4.2 and
 * ~3 us at 45k atoms on the H200), ride in the update, which loads and stores these atoms
 * anyway. Valid until the pair module's next search or set of atoms. */
typedef struct hx_gpu_update_link {
    const int *slot;  /* [n]: slot of home atom a in the cluster layout */
    float *fcl;       /* [slots][3]: pair forces by slot; read, then zeroed for the next step */
    float *xq;        /* [slots][4]: position + periodic shift, charge; written when committing */
    const float *swq; /* [slots][4]: the slot's periodic shift, charge */
    /* NULL, or a CUDA event (cudaEvent_t) of work that runs beside the update (the pair
     * module's rolling prune, HALOX_GPU_PRUNE_AT=update): the update's stream waits on it
     * after the update, so the step ends after both */
    void *join;
    /* NULL, or the graph node (cudaGraphNode_t) of the pair kernel that produced fcl, in the
     * stream capture under way (HALOX_GPU_PDL=1): the update's edge from it is made
     * programmatic, and the update waits for it in the kernel (hx_gpu_update_step) */
    void *pdl_from;
} hx_gpu_update_link;

/* One leap-frog step of the home atoms with forces f (device float [3n], zeroed afterwards),
 * writing the new positions to xf. lambda: velocity scaling (1 for NVE). link: NULL, or the
 * pair module's layout (above): the forces are then f + the pair forces there, and the
 * positions are written there too. */
hx_status hx_gpu_update_step(hx_gpu_update *u, float *xf, float *f, double lambda, int flags,
                             const hx_gpu_update_link *link, hx_stream stream);
/* Molecules whose first atom left the box are moved back by box edges (periodic dimensions),
 * in the double positions and in xf. For search steps. */
hx_status hx_gpu_update_wrap(hx_gpu_update *u, float *xf, hx_stream stream);

typedef struct hx_gpu_update_result {
    double ke_prev_half; /* kinetic energy of v(t - dt/2), kJ/mol */
    double ke_half;      /* of v(t + dt/2): after the latest step */
    double ke_eval;      /* of v(t + dt/2) of the latest HX_GPU_UPDATE_NO_COMMIT step */
    double deviation;    /* largest relative constraint deviation of the latest step measured */
    int bad_molecule;    /* first SETTLE group that could not be constrained, -1: none */
    int bad_shake;       /* first SHAKE molecule (index into shake_start) that failed, -1: none */
    int shake_noconv;    /* bad_shake did not converge in HX_SHAKE_MAXITER sweeps (else: a bond
                            turned by 90 degrees or more, or a non-finite position) */
} hx_gpu_update_result;
/* Copy the results to host memory on the stream (capturable); read them after synchronising. */
hx_status hx_gpu_update_fetch(hx_gpu_update *u, hx_stream stream);
void hx_gpu_update_read(const hx_gpu_update *u, hx_gpu_update_result *r);

/* The home atoms' positions on the device (double [3n]), as of the last committed step: the
 * bonded kernels read them (molecules whole, double differences). */
const double *hx_gpu_update_positions(const hx_gpu_update *u);
/* The home atoms' velocities v(t - dt/2) on the device (double [3n]). */
const double *hx_gpu_update_velocities(const hx_gpu_update *u);

#ifdef __cplusplus
}
#endif
#endif
