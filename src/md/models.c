/* Model parameters. Sources: SPC/E (Berendsen, Grigera, Straatsma 1987), SPC (Berendsen et al.
 * 1981), TIP3P (Jorgensen et al. 1983), as distributed with GROMACS; argon (Rowley et al. 1975,
 * sigma = 0.3405 nm, epsilon/kB = 119.8 K). */
#include "halox/models.h"
#include "core/error.h"

#include <stddef.h>
#include <strings.h>

#define HX_AVOGADRO 6.02214076e23

static const hx_water_model water_models[] = {
    {"spce", 0.316557, 0.650194, -0.8476, 0.4238, 0.1, 0.16330, 15.9994, 1.008, 0.997},
    {"spc", 0.316557, 0.650194, -0.82, 0.41, 0.1, 0.16330, 15.9994, 1.008, 0.977},
    {"tip3p", 0.315061, 0.636386, -0.834, 0.417, 0.09572, 0.15139, 15.9994, 1.008, 0.982},
};
static const char *const water_names[] = {"spce", "spc", "tip3p", NULL};

static const hx_lj_model argon = {"argon", 0.3405, 0.99607, 39.948, 21.04};

hx_status hx_water_model_find(const char *name, const hx_water_model **out)
{
    HX_CHECK(name && out, HX_ERR_INVALID_ARG, "hx_water_model_find: NULL argument");
    for (size_t i = 0; i < sizeof water_models / sizeof water_models[0]; i++) {
        if (strcasecmp(name, water_models[i].name) == 0) {
            *out = &water_models[i];
            return HX_OK;
        }
    }
    HX_FAIL(HX_ERR_INVALID_ARG, "unknown water model '%s': use one of spce, spc, tip3p", name);
}

const char *const *hx_water_model_names(void)
{
    return water_names;
}

const hx_lj_model *hx_argon_model(void)
{
    return &argon;
}

double hx_water_number_density(const hx_water_model *m)
{
    double mol_mass = m->m_o + 2.0 * m->m_h;              /* g/mol */
    double per_cm3 = m->density / mol_mass * HX_AVOGADRO; /* molecules per cm^3 */
    return per_cm3 * 1e-21;                               /* 1 nm^3 = 1e-21 cm^3 */
}
