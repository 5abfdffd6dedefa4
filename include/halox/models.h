/* halox: molecule models (rigid water, Lennard-Jones atoms).
 *
 * Parameters in GROMACS units. Water models are rigid three-site models; their geometry is
 * given by the O-H and H-H distances that SETTLE keeps. LJ acts between oxygens only (and between
 * single-site atoms); hydrogens carry charge only. */
#ifndef HALOX_MODELS_H
#define HALOX_MODELS_H

#include "halox/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hx_water_model {
    const char *name;  /* "spce", "spc", "tip3p" */
    double sigma_o;    /* nm */
    double epsilon_o;  /* kJ/mol */
    double q_o, q_h;   /* e */
    double r_oh, r_hh; /* nm, constrained distances */
    double m_o, m_h;   /* amu */
    double density;    /* g/cm^3 of the liquid at 300 K and 1 bar, the builder's target */
} hx_water_model;

typedef struct hx_lj_model {
    const char *name;      /* "argon" */
    double sigma;          /* nm */
    double epsilon;        /* kJ/mol */
    double mass;           /* amu */
    double number_density; /* atoms/nm^3 of the builder's default liquid state */
} hx_lj_model;

/* Look up a water model by name (case-insensitive). HX_ERR_INVALID_ARG listing the known names
 * when unknown. */
hx_status hx_water_model_find(const char *name, const hx_water_model **out);
/* Names of the known water models, NULL-terminated. */
const char *const *hx_water_model_names(void);
const hx_lj_model *hx_argon_model(void);

/* Number of water molecules per nm^3 at the model's density. */
double hx_water_number_density(const hx_water_model *m);

#ifdef __cplusplus
}
#endif
#endif
