/* halox: checkpoints — the complete state of a run, to continue it bit for bit.
 *
 * A checkpoint holds the system (names, molecules, box, positions, velocities), the step, the
 * thermostat's random stream, the run's parameters (and their hash), the sizes of the output
 * files when it was written (a restart cuts them back to those sizes before appending), and the
 * rank and thread counts. Files are written atomically and the previous checkpoint is kept as
 * FILE.prev. Format: a text header ("HALOX-CHECKPOINT 2", key value lines, "data"), the binary
 * arrays, and an FNV-1a checksum of everything before it; see src/io/checkpoint.c. */
#ifndef HALOX_CHECKPOINT_H
#define HALOX_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "halox/md.h"
#include "halox/status.h"
#include "halox/system.h"

#ifdef __cplusplus
extern "C" {
#endif

#define HX_CKPT_MAX_PARAMS 32
#define HX_CKPT_KEY_LEN 32
#define HX_CKPT_VALUE_LEN 64
#define HX_CKPT_PATH_LEN 1024

typedef struct hx_ckpt_params {
    int n;
    char key[HX_CKPT_MAX_PARAMS][HX_CKPT_KEY_LEN];
    char value[HX_CKPT_MAX_PARAMS][HX_CKPT_VALUE_LEN];
} hx_ckpt_params;

typedef struct hx_checkpoint {
    int format; /* of the file read: 2, or 1 (before thermostat_work was recorded) */
    long long step;
    hx_system *sys;
    uint64_t rng_state[4];
    double rlist; /* the resolved pair-list radius of the run */
    int nranks, nthreads;
    /* The energy the thermostat has added to the system up to this step (kJ/mol; 0 without a
     * thermostat and in format-1 files): the conserved energy is the total minus it. */
    double thermostat_work;
    hx_ckpt_params params;
    uint64_t params_hash;
    /* output files and their sizes in bytes when the checkpoint was written (-1: none) */
    long long energy_bytes, traj_bytes;
    char energy_path[HX_CKPT_PATH_LEN], traj_path[HX_CKPT_PATH_LEN];
} hx_checkpoint;

/* The parameters that must be equal for a run to continue another: model, dt, cut-offs,
 * pair-list settings, electrostatics, thermostat and seed. rlist_option is the user's --rlist
 * (0: from the buffer tolerance). */
void hx_ckpt_params_from_md(const hx_md_params *p, double rlist_option, int natoms,
                            hx_ckpt_params *out);
uint64_t hx_ckpt_params_hash(const hx_ckpt_params *p);
/* HX_OK when equal; otherwise HX_ERR_INVALID_ARG naming every parameter that differs, with the
 * checkpoint's value and this run's value. */
hx_status hx_ckpt_params_compare(const hx_ckpt_params *saved, const hx_ckpt_params *now,
                                 const char *ckpt_path);

/* Write atomically: FILE.tmp.<pid>, flushed to disk, then the existing FILE becomes FILE.prev
 * and the new one FILE. On failure an existing FILE is untouched. (Names too long for the
 * directory are shortened, see hx_checkpoint_prev_name.) */
hx_status hx_checkpoint_write(const char *path, const hx_checkpoint *c);
/* The name FILE.prev of the previous checkpoint (shortened as src/io/files.h's
 * hx_path_sibling shortens names that would exceed the directory's limit). */
hx_status hx_checkpoint_prev_name(const char *path, char *out, size_t cap);
/* Read and validate (header, sizes, checksum). Errors name the file and what is wrong; for a
 * damaged file also whether FILE.prev is there to continue from. */
hx_status hx_checkpoint_read(const char *path, hx_checkpoint **out);
hx_status hx_checkpoint_read_buffer(const unsigned char *data, size_t len, const char *name,
                                    hx_checkpoint **out);
void hx_checkpoint_destroy(hx_checkpoint **c);

#ifdef __cplusplus
}
#endif
#endif
