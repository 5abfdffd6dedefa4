/* Force field: maps a model (include/halox/models.h) onto the atoms of a system.
 *
 * Types: water uses type 0 = oxygen (the only LJ site) and type 1 = hydrogen (charge only);
 * argon uses type 0. The c6/c12 tables are full ntypes x ntypes so that kernels never special-case
 * a model. */
#include "halox/md.h"
#include "halox/models.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct hx_forcefield {
    char model[16];
    int is_water;
    const hx_water_model *water;
    const hx_lj_model *lj;
    int ntypes;
    double c6[4], c12[4];
    double q[2], m[2];
};

hx_status hx_forcefield_create(const char *model, hx_forcefield **out)
{
    HX_CHECK(model && out, HX_ERR_INVALID_ARG, "hx_forcefield_create: NULL argument");
    *out = NULL;
    hx_forcefield *ff = calloc(1, sizeof *ff);
    HX_CHECK(ff, HX_ERR_NOMEM, "out of memory for a force field");
    if (strcasecmp(model, "argon") == 0 || strcasecmp(model, "ar") == 0) {
        ff->lj = hx_argon_model();
        ff->ntypes = 1;
        double s6 = ff->lj->sigma * ff->lj->sigma * ff->lj->sigma;
        s6 *= s6;
        ff->c6[0] = 4.0 * ff->lj->epsilon * s6;
        ff->c12[0] = 4.0 * ff->lj->epsilon * s6 * s6;
        ff->q[0] = 0.0;
        ff->m[0] = ff->lj->mass;
        snprintf(ff->model, sizeof ff->model, "argon");
    } else {
        hx_status st = hx_water_model_find(model, &ff->water);
        if (st != HX_OK) {
            free(ff);
            HX_FAIL(HX_ERR_INVALID_ARG, "unknown model '%s': use spce, spc, tip3p or argon", model);
        }
        ff->is_water = 1;
        ff->ntypes = 2;
        double s6 = ff->water->sigma_o * ff->water->sigma_o * ff->water->sigma_o;
        s6 *= s6;
        ff->c6[0] = 4.0 * ff->water->epsilon_o * s6;
        ff->c12[0] = 4.0 * ff->water->epsilon_o * s6 * s6;
        /* hydrogens: no LJ with anything */
        ff->q[0] = ff->water->q_o;
        ff->q[1] = ff->water->q_h;
        ff->m[0] = ff->water->m_o;
        ff->m[1] = ff->water->m_h;
        snprintf(ff->model, sizeof ff->model, "%s", ff->water->name);
    }
    *out = ff;
    return HX_OK;
}

void hx_forcefield_destroy(hx_forcefield **ff)
{
    if (!ff || !*ff)
        return;
    free(*ff);
    *ff = NULL;
}

const char *hx_forcefield_model(const hx_forcefield *ff)
{
    return ff->model;
}
int hx_forcefield_is_water(const hx_forcefield *ff)
{
    return ff->is_water;
}
int hx_forcefield_ntypes(const hx_forcefield *ff)
{
    return ff->ntypes;
}
const double *hx_forcefield_c6(const hx_forcefield *ff)
{
    return ff->c6;
}
const double *hx_forcefield_c12(const hx_forcefield *ff)
{
    return ff->c12;
}

/* Trim the blanks a .gro name field may carry. */
static void trimmed(const char *in, char *out, size_t len)
{
    while (*in == ' ')
        in++;
    snprintf(out, len, "%s", in);
    size_t n = strlen(out);
    while (n > 0 && out[n - 1] == ' ')
        out[--n] = '\0';
}

static int in_list(const char *name, const char *const *list)
{
    for (; *list; list++)
        if (strcasecmp(name, *list) == 0)
            return 1;
    return 0;
}

static const char *const water_res[] = {"SOL", "HOH", "WAT", "H2O", "SPC", "SPCE", "TIP3", NULL};
static const char *const water_o[] = {"OW", "O", "OH2", "OW1", NULL};
static const char *const water_h[] = {"HW1", "HW2", "H1", "H2", "HW", "H", NULL};
static const char *const argon_names[] = {"AR", NULL};

hx_status hx_forcefield_apply(const hx_forcefield *ff, hx_system *sys)
{
    HX_CHECK(ff && sys, HX_ERR_INVALID_ARG, "hx_forcefield_apply: NULL argument");
    size_t n = (size_t)sys->natoms;
    if (!sys->type)
        sys->type = calloc(n + 1, sizeof *sys->type);
    if (!sys->q)
        sys->q = calloc(n + 1, sizeof *sys->q);
    if (!sys->m)
        sys->m = calloc(n + 1, sizeof *sys->m);
    HX_CHECK(sys->type && sys->q && sys->m, HX_ERR_NOMEM, "out of memory for %zu atom types", n);
    for (int k = 0; k < sys->nmol; k++) {
        int a0 = sys->mol_start[k], a1 = sys->mol_start[k + 1];
        int want = ff->is_water ? 3 : 1;
        char res[HX_NAME_LEN];
        trimmed(sys->res_name[a0], res, sizeof res);
        HX_CHECK(a1 - a0 == want, HX_ERR_INPUT,
                 "molecule %d (residue %d %s, atoms %d-%d) has %d atom%s, but model %s has %d "
                 "atom%s per molecule: check the residue numbering of the input or the --model",
                 k + 1, sys->res_id[a0], res, a0 + 1, a1, a1 - a0, a1 - a0 == 1 ? "" : "s",
                 ff->model, want, want == 1 ? "" : "s");
        int no = 0, nh = 0;
        for (int a = a0; a < a1; a++) {
            char name[HX_NAME_LEN];
            trimmed(sys->res_name[a], res, sizeof res);
            trimmed(sys->atom_name[a], name, sizeof name);
            if (ff->is_water) {
                HX_CHECK(in_list(res, water_res), HX_ERR_INPUT,
                         "atom %d (residue %d %s, name %s): residue name is not a water residue "
                         "of model %s (SOL, HOH, WAT, H2O, SPC, TIP3)",
                         a + 1, sys->res_id[a], res, name, ff->model);
                int t;
                if (in_list(name, water_o)) {
                    t = 0;
                    no++;
                } else if (in_list(name, water_h)) {
                    t = 1;
                    nh++;
                } else {
                    HX_FAIL(HX_ERR_INPUT,
                            "atom %d (residue %d %s, name %s): unknown water atom name; expected "
                            "an oxygen (OW, O, OH2) or a hydrogen (HW1, HW2, H1, H2)",
                            a + 1, sys->res_id[a], res, name);
                }
                sys->type[a] = t;
                sys->q[a] = ff->q[t];
                sys->m[a] = ff->m[t];
            } else {
                HX_CHECK(in_list(name, argon_names), HX_ERR_INPUT,
                         "atom %d (residue %d %s, name %s): not an argon atom (name AR)", a + 1,
                         sys->res_id[a], res, name);
                sys->type[a] = 0;
                sys->q[a] = 0.0;
                sys->m[a] = ff->m[0];
            }
        }
        HX_CHECK(!ff->is_water || (no == 1 && nh == 2), HX_ERR_INPUT,
                 "molecule %d (residue %d %s, atoms %d-%d) has %d oxygen and %d hydrogen names;"
                 " a water needs one of each O and two H",
                 k + 1, sys->res_id[a0], res, a0 + 1, a1, no, nh);
    }
    return HX_OK;
}

double hx_forcefield_ndf(const hx_forcefield *ff, const hx_system *sys)
{
    double per_mol = ff->is_water ? 6.0 : 3.0;
    double ndf = per_mol * sys->nmol - 3.0;
    return ndf > 0 ? ndf : 1.0;
}

const hx_water_model *hx_forcefield_water(const hx_forcefield *ff)
{
    return ff->water;
}
