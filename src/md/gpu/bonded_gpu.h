/* GPU bonded interactions of whole molecules (private to halox; C-callable): harmonic bonds and
 * angles, Ryckaert-Bellemans dihedrals and 1-4 pairs in the forms and conventions of the CPU
 * path (src/md/bonded.c; the arithmetic of each term is shared with it, src/md/bonded_terms.h).
 *
 * - The interaction list is built on the host from a list of molecules (hx_mol_list: the home
 *   molecules of a domain after a repartition) and uploaded once: one entry (first atom of the
 *   molecule, term of its type) per interaction, grouped by kind; the parameters of every
 *   molecule type are uploaded once at creation.
 * - One thread per interaction, forces added to f with atomics. Positions are the update's
 *   double positions (hx_gpu_update_positions): difference vectors are formed in double, so a
 *   0.1 nm bond keeps its digits at any distance from the origin. Normal steps compute in float
 *   from those differences; energy steps compute forces and energies in double (the energy
 *   kernel, as the pair kernels have one) and sum the five energies in double per block.
 * - A non-finite force is recorded on the device (the first molecule's first atom) and reported
 *   by hx_gpu_bonded_read_energies / hx_gpu_bonded_check after the host synchronised.
 *
 * hx_gpu_bonded_compute never synchronises or allocates (graph-capturable). */
#ifndef HX_GPU_BONDED_GPU_H
#define HX_GPU_BONDED_GPU_H

#include "halox/md.h"
#include "halox/status.h"
#include "gpu/stream.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hx_gpu_bonded hx_gpu_bonded;

/* epsfac = 138.935458 / eps_r: the 1-4 Coulomb factor (plain Coulomb, as hx_bonded_compute). */
hx_status hx_gpu_bonded_create(const hx_forcefield *ff, double epsfac, hx_gpu_bonded **out);
void hx_gpu_bonded_destroy(hx_gpu_bonded **b);

/* The molecules whose terms are computed (whole; start = first atom in the position array,
 * type = molecule type of the force field, gid for messages). Molecule types without bonded
 * terms contribute nothing. Builds and uploads the interaction list; synchronous. */
hx_status hx_gpu_bonded_set_molecules(hx_gpu_bonded *b, const hx_mol_list *ml);
/* The same from device lists (the device search step): nmol molecules with their first atom,
 * molecule type and global index, and per molecule (off, [4 nmol]) its first interaction of
 * each kind within the kind; count: the interactions of each kind. The list is built by a
 * kernel on the stream (no synchronisation); the lists must stay valid until the next call
 * (a failure message reads them back). */
hx_status hx_gpu_bonded_set_molecules_device(hx_gpu_bonded *b, int nmol, const int *start,
                                             const int *type, const int *gid, const int *off,
                                             const int count[4], hx_stream stream);
/* Interactions in the list (bonds + angles + dihedrals + pairs). */
long long hx_gpu_bonded_count(const hx_gpu_bonded *b);

enum { HX_GPU_BONDED_ENERGY = 1 /* energies of this call; fetch them with the calls below */ };

/* Forces of every interaction added to f (device float [3n]) from the positions x (device
 * double [3n], the molecules whole). */
hx_status hx_gpu_bonded_compute(hx_gpu_bonded *b, const double *x, float *f, int flags,
                                hx_stream stream);

/* Energies of the latest call with HX_GPU_BONDED_ENERGY and the non-finite flag: fetch copies
 * them to host memory on the stream (capturable); read/check after synchronising it. */
hx_status hx_gpu_bonded_fetch(hx_gpu_bonded *b, hx_stream stream);
void hx_gpu_bonded_read_energies(const hx_gpu_bonded *b, hx_bonded_energies *e);
/* HX_ERR_PHYSICS naming the step and the molecule when a fetched result had a non-finite bonded
 * force, HX_OK otherwise. */
hx_status hx_gpu_bonded_check(const hx_gpu_bonded *b, long long step);

#ifdef __cplusplus
}
#endif
#endif
