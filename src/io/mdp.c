/* GROMACS .mdp run-parameter files (the subset halox supports; see include/halox/io.h).
 *
 * Why a strict reader: a run-parameter file that halox read only in part would run other
 * physics than the user wrote down, with no sign of it. So every key is either understood, or
 * accepted only with the one value that halox implements, or refused by name with its line.
 * Names are matched the way GROMACS matches them (case, '-' and '_' do not count), so a file
 * that grompp accepts reads the same here. */
#include "halox/io.h"
#include "halox/log.h"
#include "halox/md.h"
#include "core/error.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Key identifiers, in the order of the table below. */
enum {
    K_INTEGRATOR,
    K_DT,
    K_NSTEPS,
    K_CONTINUATION,
    K_CUTOFF_SCHEME,
    K_NSTLIST,
    K_RLIST,
    K_VBT,
    K_COULOMBTYPE,
    K_RCOULOMB,
    K_RVDW,
    K_EPS_R,
    K_EPS_RF,
    K_VDW_MODIFIER,
    K_TCOUPL,
    K_TC_GRPS,
    K_TAU_T,
    K_REF_T,
    K_GEN_VEL,
    K_GEN_TEMP,
    K_GEN_SEED,
    K_NSTENERGY,
    K_NSTXOUT,
    K_NSTLOG,
    /* accepted with halox's value only */
    K_VDWTYPE,
    K_COULOMB_MODIFIER,
    K_PBC,
    K_DISPCORR,
    K_PCOUPL,
    K_COMM_MODE,
    K_CONSTRAINTS,
    K_NSTTCOUPLE,
    K_FREE_ENERGY,
    K_PULL,
    K_AWH,
    K_ANNEALING,
    K_NWALL,
    K_COS_ACCELERATION,
    K_PERIODIC_MOLECULES,
    K_COUNT
};

static const char *const key_names[K_COUNT] = {"integrator",
                                               "dt",
                                               "nsteps",
                                               "continuation",
                                               "cutoff-scheme",
                                               "nstlist",
                                               "rlist",
                                               "verlet-buffer-tolerance",
                                               "coulombtype",
                                               "rcoulomb",
                                               "rvdw",
                                               "epsilon-r",
                                               "epsilon-rf",
                                               "vdw-modifier",
                                               "tcoupl",
                                               "tc-grps",
                                               "tau-t",
                                               "ref-t",
                                               "gen-vel",
                                               "gen-temp",
                                               "gen-seed",
                                               "nstenergy",
                                               "nstxout",
                                               "nstlog",
                                               "vdwtype",
                                               "coulomb-modifier",
                                               "pbc",
                                               "DispCorr",
                                               "pcoupl",
                                               "comm-mode",
                                               "constraints",
                                               "nsttcouple",
                                               "free-energy",
                                               "pull",
                                               "awh",
                                               "annealing",
                                               "nwall",
                                               "cos-acceleration",
                                               "periodic-molecules"};

/* Keys that do not change what halox computes, so a file written for GROMACS need not be edited:
 * they are read, not checked, and listed as ignored (hx_mdp.ignored). Each group says why it
 * cannot matter here. Keys that would change the physics (define, energygrp-excl, freezegrps
 * with a group, ...) are not among them: they are refused. */
typedef struct ignored_group {
    const char *why;
    const char *keys[12];
} ignored_group;
static const ignored_group ignored_groups[] = {
    {"output halox does not write (energies are computed on the steps they are written)",
     {"nstcalcenergy", "nstvout", "nstfout", "nstxout-compressed", "compressed-x-grps",
      "compressed-x-precision", "nstxtcout", "xtc-grps", "xtc-precision", "energygrps", NULL}},
    {"preprocessing of a topology, which halox does not read (its models are built in)",
     {"title", "cpp", "include", NULL}},
    {"the centre-of-mass motion, which halox removes once at the start", {"nstcomm", "comm-grps"}},
    {"the sd and bd integrators (halox integrates with md)", {"ld-seed", "bd-fric", NULL}},
    {"pressure coupling (halox: pcoupl = no, constant volume)",
     {"pcoupltype", "nstpcouple", "tau-p", "ref-p", "compressibility", "refcoord-scaling",
      "verlet-buffer-pressure-tolerance", NULL}},
    {"PME and Ewald (halox: reaction field)",
     {"fourierspacing", "fourier-nx", "fourier-ny", "fourier-nz", "pme-order", "ewald-rtol",
      "ewald-rtol-lj", "ewald-geometry", "epsilon-surface", "lj-pme-comb-rule", NULL}},
    {"the constraint solver (halox keeps its constraints with SETTLE and SHAKE to its own "
     "tolerance)",
     {"constraint-algorithm", "lincs-order", "lincs-iter", "lincs-warnangle", "shake-tol",
      "continuation-pme", NULL}},
    {"the old group scheme's neighbour search (halox: Verlet lists on a grid)",
     {"ns-type", "ns_type", NULL}},
};

/* Lower case without '-' and '_': GROMACS compares parameter names and choices this way. */
static void normalize(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    for (size_t i = 0; i < n && k + 1 < cap; i++) {
        if (s[i] == '-' || s[i] == '_')
            continue;
        out[k++] = (char)tolower((unsigned char)s[i]);
    }
    out[k] = '\0';
}

static int find_key(const char *norm)
{
    char buf[64];
    for (int k = 0; k < K_COUNT; k++) {
        normalize(key_names[k], strlen(key_names[k]), buf, sizeof buf);
        if (strcmp(buf, norm) == 0)
            return k;
    }
    return -1;
}

/* The reason a key is ignored, or NULL when it is not one of those. */
static const char *ignored_why(const char *norm)
{
    char buf[64];
    for (size_t g = 0; g < sizeof ignored_groups / sizeof ignored_groups[0]; g++)
        for (int k = 0; k < 12 && ignored_groups[g].keys[k]; k++) {
            normalize(ignored_groups[g].keys[k], strlen(ignored_groups[g].keys[k]), buf,
                      sizeof buf);
            if (strcmp(buf, norm) == 0)
                return ignored_groups[g].why;
        }
    return NULL;
}

typedef struct mdp_ctx {
    const char *name;
    long line;
    const char *key; /* as written */
    char val[256];   /* trimmed value */
    hx_mdp *out;
    long lines[K_COUNT]; /* where each key was given (0: not given) */
    double rcoulomb, rvdw, vbt, rlist;
} mdp_ctx;

#define MDP_FAIL(c, ...)                                                                           \
    do {                                                                                           \
        char mdp_msg_[512];                                                                        \
        snprintf(mdp_msg_, sizeof mdp_msg_, __VA_ARGS__);                                          \
        HX_FAIL(HX_ERR_INPUT, "%s:%ld: %s = %s: %s", (c)->name, (c)->line, (c)->key, (c)->val,     \
                mdp_msg_);                                                                         \
    } while (0)

static hx_status get_real(mdp_ctx *c, double *v)
{
    char *end = NULL;
    errno = 0;
    double d = strtod(c->val, &end);
    if (end == c->val || *end != '\0' || errno || !isfinite(d))
        MDP_FAIL(c, "expected one number");
    *v = d;
    return HX_OK;
}

static hx_status get_ll(mdp_ctx *c, long long *v)
{
    char *end = NULL;
    errno = 0;
    long long d = strtoll(c->val, &end, 10);
    if (end == c->val || *end != '\0' || errno)
        MDP_FAIL(c, "expected one integer");
    *v = d;
    return HX_OK;
}

static hx_status get_int(mdp_ctx *c, int *v, int min)
{
    long long d;
    HX_TRY(get_ll(c, &d));
    if (d < min || d > 2147483647LL)
        MDP_FAIL(c, "must be an integer from %d to 2147483647", min);
    *v = (int)d;
    return HX_OK;
}

/* The value is one of the NULL-terminated choices (compared like GROMACS); returns its index. */
static hx_status get_choice(mdp_ctx *c, const char *const *choices, const char *what, int *idx)
{
    char nv[256], nc[64];
    normalize(c->val, strlen(c->val), nv, sizeof nv);
    for (int i = 0; choices[i]; i++) {
        normalize(choices[i], strlen(choices[i]), nc, sizeof nc);
        if (strcmp(nv, nc) == 0) {
            *idx = i;
            return HX_OK;
        }
    }
    MDP_FAIL(c, "%s", what);
}

static hx_status get_bool(mdp_ctx *c, int *v)
{
    static const char *const yn[] = {"no", "yes", NULL};
    int i = 0;
    HX_TRY(get_choice(c, yn, "expected yes or no", &i));
    *v = i;
    return HX_OK;
}

/* One value for the single coupling group halox has. */
static hx_status one_group(mdp_ctx *c)
{
    if (strpbrk(c->val, " \t"))
        MDP_FAIL(c, "halox couples the whole system as one group (tc-grps = System): give one "
                    "value");
    return HX_OK;
}

static hx_status apply_key(mdp_ctx *c, int k)
{
    hx_mdp *o = c->out;
    int idx = 0;
    switch (k) {
    case K_INTEGRATOR: {
        static const char *const v[] = {"md", NULL};
        return get_choice(c, v, "halox integrates with leap-frog only: use integrator = md", &idx);
    }
    case K_DT:
        HX_TRY(get_real(c, &o->dt));
        if (!(o->dt > 0))
            MDP_FAIL(c, "the time step must be positive (typically 0.002 ps)");
        o->has_dt = 1;
        return HX_OK;
    case K_NSTEPS:
        HX_TRY(get_ll(c, &o->nsteps));
        if (o->nsteps < 0)
            MDP_FAIL(c, "give a step count >= 0 (halox has no endless runs; -1 is not "
                        "supported)");
        o->has_nsteps = 1;
        return HX_OK;
    case K_CONTINUATION:
        HX_TRY(get_bool(c, &o->continuation));
        o->has_continuation = 1;
        return HX_OK;
    case K_CUTOFF_SCHEME: {
        static const char *const v[] = {"Verlet", NULL};
        return get_choice(c, v, "halox has the Verlet scheme only: use cutoff-scheme = Verlet",
                          &idx);
    }
    case K_NSTLIST:
        HX_TRY(get_int(c, &o->nstlist, 1));
        o->has_nstlist = 1;
        return HX_OK;
    case K_RLIST:
        HX_TRY(get_real(c, &c->rlist));
        if (!(c->rlist > 0))
            MDP_FAIL(c, "the pair-list radius must be positive");
        return HX_OK;
    case K_VBT:
        HX_TRY(get_real(c, &c->vbt));
        if (!(c->vbt > 0) && c->vbt != -1)
            MDP_FAIL(c, "give a tolerance > 0 (kJ/mol/ps per atom, typically 0.005), or -1 for "
                        "the fixed pair-list radius rlist");
        return HX_OK;
    case K_COULOMBTYPE: {
        static const char *const v[] = {"reaction-field", NULL};
        return get_choice(c, v,
                          "halox has reaction-field electrostatics only: use coulombtype = "
                          "reaction-field",
                          &idx);
    }
    case K_RCOULOMB:
    case K_RVDW: {
        double r;
        HX_TRY(get_real(c, &r));
        if (!(r > 0))
            MDP_FAIL(c, "the cut-off must be positive");
        *(k == K_RCOULOMB ? &c->rcoulomb : &c->rvdw) = r;
        return HX_OK;
    }
    case K_EPS_R:
        HX_TRY(get_real(c, &o->eps_r));
        if (!(o->eps_r > 0))
            MDP_FAIL(c, "the relative dielectric constant must be positive");
        o->has_eps_r = 1;
        return HX_OK;
    case K_EPS_RF:
        HX_TRY(get_real(c, &o->eps_rf));
        if (!(o->eps_rf == 0 || o->eps_rf >= 1))
            MDP_FAIL(c, "use 0 (infinity, a conducting boundary) or a value >= 1");
        o->has_eps_rf = 1;
        return HX_OK;
    case K_VDW_MODIFIER: {
        static const char *const v[] = {"potential-shift", "potential-shift-verlet", NULL};
        return get_choice(c, v,
                          "halox shifts the Lennard-Jones potential to zero at the cut-off: use "
                          "vdw-modifier = potential-shift",
                          &idx);
    }
    case K_TCOUPL: {
        static const char *const v[] = {"no", "v-rescale", NULL};
        HX_TRY(get_choice(c, v, "halox has tcoupl = no or v-rescale", &idx));
        o->thermostat = idx == 1 ? HX_THERMOSTAT_VRESCALE : HX_THERMOSTAT_NONE;
        o->has_thermostat = 1;
        return HX_OK;
    }
    case K_TC_GRPS: {
        static const char *const v[] = {"System", NULL};
        return get_choice(c, v, "halox couples the whole system as one group: use tc-grps = System",
                          &idx);
    }
    case K_TAU_T:
        HX_TRY(one_group(c));
        HX_TRY(get_real(c, &o->tau_t));
        if (!(o->tau_t > 0))
            MDP_FAIL(c, "the coupling time must be positive (ps; -1, no coupling, is not "
                        "supported: use tcoupl = no)");
        o->has_tau_t = 1;
        return HX_OK;
    case K_REF_T:
        HX_TRY(one_group(c));
        HX_TRY(get_real(c, &o->ref_t));
        if (!(o->ref_t >= 0))
            MDP_FAIL(c, "the reference temperature must be >= 0 K");
        o->has_ref_t = 1;
        return HX_OK;
    case K_GEN_VEL:
        HX_TRY(get_bool(c, &o->gen_vel));
        o->has_gen_vel = 1;
        return HX_OK;
    case K_GEN_TEMP:
        HX_TRY(get_real(c, &o->gen_temp));
        if (!(o->gen_temp >= 0))
            MDP_FAIL(c, "the temperature must be >= 0 K");
        o->has_gen_temp = 1;
        return HX_OK;
    case K_GEN_SEED:
        HX_TRY(get_ll(c, &o->gen_seed));
        if (o->gen_seed < 0 || o->gen_seed > 2147483647LL)
            MDP_FAIL(c, "give a seed from 0 to 2147483647 (-1, a random seed, is not supported: "
                        "halox runs are reproducible from their inputs)");
        o->has_gen_seed = 1;
        return HX_OK;
    case K_NSTENERGY:
        HX_TRY(get_int(c, &o->nstenergy, 0));
        o->has_nstenergy = 1;
        return HX_OK;
    case K_NSTXOUT:
        HX_TRY(get_int(c, &o->nstxout, 0));
        o->has_nstxout = 1;
        return HX_OK;
    case K_NSTLOG:
        HX_TRY(get_int(c, &o->nstlog, 0));
        o->has_nstlog = 1;
        return HX_OK;
    case K_NSTTCOUPLE: {
        int v = 0;
        HX_TRY(get_int(c, &v, -1));
        if (v != 10)
            MDP_FAIL(c, "halox's v-rescale couples every 10 steps: use nsttcouple = 10 (or "
                        "leave it out)");
        return HX_OK;
    }
    case K_FREE_ENERGY:
    case K_PULL:
    case K_AWH:
    case K_ANNEALING:
    case K_PERIODIC_MOLECULES: {
        static const char *const v[] = {"no", NULL};
        static const char *const what[] = {
            [K_FREE_ENERGY] = "halox has no free-energy perturbation: use free-energy = no",
            [K_PULL] = "halox has no pulling: use pull = no",
            [K_AWH] = "halox has no AWH: use awh = no",
            [K_ANNEALING] = "halox has no simulated annealing: use annealing = no",
            [K_PERIODIC_MOLECULES] = "halox keeps molecules whole within the box's periodic "
                                     "images: use periodic-molecules = no"};
        return get_choice(c, v, what[k], &idx);
    }
    case K_NWALL:
    case K_COS_ACCELERATION: {
        double v = 0;
        HX_TRY(get_real(c, &v));
        if (v != 0)
            MDP_FAIL(c, "%s",
                     k == K_NWALL ? "halox has no walls: use nwall = 0"
                                  : "halox applies no acceleration: use "
                                    "cos-acceleration = 0");
        return HX_OK;
    }
    case K_VDWTYPE: {
        static const char *const v[] = {"cut-off", NULL};
        return get_choice(c, v, "halox's Lennard-Jones is a plain cut-off: use vdwtype = cut-off",
                          &idx);
    }
    case K_COULOMB_MODIFIER: {
        static const char *const v[] = {"potential-shift", "potential-shift-verlet", NULL};
        return get_choice(c, v,
                          "halox's reaction field is shifted to zero at the cut-off: use "
                          "coulomb-modifier = potential-shift",
                          &idx);
    }
    case K_PBC: {
        static const char *const v[] = {"xyz", NULL};
        return get_choice(c, v, "halox has full periodic boundaries only: use pbc = xyz", &idx);
    }
    case K_DISPCORR: {
        static const char *const v[] = {"no", NULL};
        return get_choice(c, v, "halox has no dispersion correction: use DispCorr = no", &idx);
    }
    case K_PCOUPL: {
        static const char *const v[] = {"no", NULL};
        return get_choice(c, v, "halox has no pressure coupling: use pcoupl = no", &idx);
    }
    case K_COMM_MODE: {
        static const char *const v[] = {"none", NULL};
        return get_choice(c, v,
                          "halox removes the centre-of-mass motion once, at the start, not "
                          "during the run: use comm-mode = none",
                          &idx);
    }
    case K_CONSTRAINTS: {
        static const char *const v[] = {"none", "h-bonds", NULL};
        return get_choice(c, v,
                          "halox constrains rigid water (SETTLE) and the bonds to hydrogen of "
                          "ethanol (SHAKE; [ constraints ] in the topology halox writes): use "
                          "constraints = none (or h-bonds, which means the same for halox's "
                          "models)",
                          &idx);
    }
    default:
        break;
    }
    HX_FAIL(HX_ERR_INTERNAL, "mdp key %d has no handler", k);
}

static const char *supported_list(void)
{
    static char buf[1024];
    if (!buf[0]) {
        size_t n = 0;
        for (int k = 0; k < K_COUNT && n < sizeof buf; k++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", k ? ", " : "", key_names[k]);
    }
    return buf;
}

/* Checks that need several keys, once the whole file is read. */
static hx_status finish(mdp_ctx *c)
{
    hx_mdp *o = c->out;
    long lc = c->lines[K_RCOULOMB], lv = c->lines[K_RVDW];
    /* GROMACS's default for both cut-offs is 1 nm; halox has one cut-off for both */
    double rcoul = lc ? c->rcoulomb : 1.0, rvdw = lv ? c->rvdw : 1.0;
    if (rcoul != rvdw && lc && lv)
        HX_FAIL(HX_ERR_INPUT,
                "%s:%ld: rcoulomb = %g nm (line %ld) and rvdw = %g nm differ: halox has one "
                "cut-off for Lennard-Jones and reaction field; give both the same value",
                c->name, lv, rcoul, lc, rvdw);
    if (rcoul != rvdw)
        HX_FAIL(HX_ERR_INPUT,
                "%s:%ld: %s = %g nm, but %s is not given, and its default (as in GROMACS) is "
                "1 nm: halox has one cut-off for Lennard-Jones and reaction field; give %s = %g "
                "too",
                c->name, lc ? lc : lv, lc ? "rcoulomb" : "rvdw", lc ? rcoul : rvdw,
                lc ? "rvdw" : "rcoulomb", lc ? "rvdw" : "rcoulomb", lc ? rcoul : rvdw);
    if (lc || lv) {
        o->rc = rcoul;
        o->has_rc = 1;
    }
    long lt = c->lines[K_VBT], ll = c->lines[K_RLIST];
    if (lt && c->vbt == -1) {
        if (!ll)
            HX_FAIL(HX_ERR_INPUT,
                    "%s:%ld: verlet-buffer-tolerance = -1 asks for a fixed pair-list radius, but "
                    "rlist is not given: add rlist (nm, >= the cut-off), or give a tolerance",
                    c->name, lt);
        o->rlist = c->rlist;
        o->has_rlist = 1;
    } else {
        if (lt) {
            o->buffer_tolerance = c->vbt;
            o->has_buffer_tolerance = 1;
        }
        if (ll)
            hx_log(HX_LOG_WARN,
                   "%s:%ld: rlist = %g is ignored: with a Verlet buffer tolerance the pair-list "
                   "radius is chosen from it (as in GROMACS); set verlet-buffer-tolerance = -1 "
                   "to use rlist",
                   c->name, ll, c->rlist);
    }
    if (o->has_thermostat && o->thermostat == HX_THERMOSTAT_VRESCALE) {
        long l = c->lines[K_TCOUPL];
        HX_CHECK(o->has_tau_t && o->has_ref_t, HX_ERR_INPUT,
                 "%s:%ld: tcoupl = v-rescale needs tau-t and ref-t (one value each)", c->name, l);
    }
    return HX_OK;
}

/* Every problem of a file is reported at once (a GROMACS file used to fail one key per
 * attempt): the keys halox does not know in one list, then each other problem with its line. */
typedef struct mdp_errors {
    int n, nunknown;
    char unknown[512]; /* "'define' (line 3), 'nstdisreout' (line 9)" */
    long first_unknown_line;
    char first_unknown[64];
    char rest[1024]; /* "; "-separated messages of the other problems */
    char first[1024];
} mdp_errors;

static void errors_add(mdp_errors *e, const char *msg)
{
    if (e->n - e->nunknown == 0)
        snprintf(e->first, sizeof e->first, "%s", msg);
    size_t len = strlen(e->rest);
    if (len < sizeof e->rest - 1)
        snprintf(e->rest + len, sizeof e->rest - len, "%s%s", len ? "; " : "", msg);
    e->n++;
}

static void errors_add_unknown(mdp_errors *e, const char *key, long line)
{
    if (e->nunknown == 0) {
        e->first_unknown_line = line;
        snprintf(e->first_unknown, sizeof e->first_unknown, "%s", key);
    }
    size_t len = strlen(e->unknown);
    if (len < sizeof e->unknown - 1)
        snprintf(e->unknown + len, sizeof e->unknown - len, "%s'%s' (line %ld)", len ? ", " : "",
                 key, line);
    e->nunknown++;
    e->n++;
}

static hx_status errors_report(const mdp_errors *e, const char *name)
{
    if (e->n == 0)
        return HX_OK;
    if (e->n == 1 && e->nunknown == 1)
        HX_FAIL(HX_ERR_INPUT,
                "%s:%ld: '%s' is not a parameter halox supports; remove the line "
                "(halox reads: %s; see docs/mdp.md for the keys it ignores)",
                name, e->first_unknown_line, e->first_unknown, supported_list());
    if (e->n == 1)
        HX_FAIL(HX_ERR_INPUT, "%s", e->first);
    char unknown[700] = "";
    if (e->nunknown > 0)
        snprintf(unknown, sizeof unknown,
                 "%s %s not %s halox supports, remove %s (docs/mdp.md lists what halox reads "
                 "and what it ignores)%s",
                 e->unknown, e->nunknown == 1 ? "is" : "are",
                 e->nunknown == 1 ? "a parameter" : "parameters",
                 e->nunknown == 1 ? "the line" : "the lines", e->n > e->nunknown ? "; " : "");
    HX_FAIL(HX_ERR_INPUT, "%s: %d problems: %s%s", name, e->n, unknown,
            e->n > e->nunknown ? e->rest : "");
}

hx_status hx_mdp_read_buffer(const char *data, size_t len, const char *name, hx_mdp *out)
{
    HX_CHECK(out && (data || len == 0), HX_ERR_INVALID_ARG, "hx_mdp_read_buffer: NULL argument");
    memset(out, 0, sizeof *out);
    mdp_ctx c;
    memset(&c, 0, sizeof c);
    c.name = name ? name : "<buffer>";
    c.out = out;
    mdp_errors errs;
    memset(&errs, 0, sizeof errs);
    size_t pos = 0;
    while (pos < len) {
        const char *s = data + pos;
        const char *nl = memchr(s, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - s) : len - pos;
        pos += n + (nl ? 1 : 0);
        c.line++;
        const char *semi = memchr(s, ';', n);
        if (semi)
            n = (size_t)(semi - s);
        while (n > 0 && isspace((unsigned char)s[n - 1]))
            n--;
        while (n > 0 && isspace((unsigned char)*s))
            s++, n--;
        if (n == 0)
            continue;
        /* a file that is not text is not read on */
        for (size_t i = 0; i < n; i++)
            HX_CHECK(s[i] != '\0', HX_ERR_INPUT,
                     "%s:%ld: the line contains a NUL byte: this is not a text .mdp file", c.name,
                     c.line);
        char msg[512];
        const char *eq = memchr(s, '=', n);
        if (!eq) {
            snprintf(msg, sizeof msg, "%s:%ld: '%.*s' is not a 'key = value' line", c.name, c.line,
                     (int)(n > 80 ? 80 : n), s);
            errors_add(&errs, msg);
            continue;
        }
        size_t kn = (size_t)(eq - s);
        while (kn > 0 && isspace((unsigned char)s[kn - 1]))
            kn--;
        const char *v = eq + 1;
        size_t vn = n - (size_t)(v - s);
        while (vn > 0 && isspace((unsigned char)*v))
            v++, vn--;
        char key[64], norm[64];
        if (kn == 0 || kn >= sizeof key) {
            if (kn == 0)
                snprintf(msg, sizeof msg, "%s:%ld: a value without a key: '%.*s'", c.name, c.line,
                         (int)(n > 80 ? 80 : n), s);
            else
                snprintf(msg, sizeof msg, "%s:%ld: key '%.40s...' is too long", c.name, c.line, s);
            errors_add(&errs, msg);
            continue;
        }
        memcpy(key, s, kn);
        key[kn] = '\0';
        int name_ok = 1;
        for (size_t i = 0; i < kn; i++)
            name_ok &= isalnum((unsigned char)key[i]) || key[i] == '-' || key[i] == '_';
        if (!name_ok) {
            snprintf(msg, sizeof msg,
                     "%s:%ld: '%s' is not a parameter name (letters, digits, '-' and '_')", c.name,
                     c.line, key);
            errors_add(&errs, msg);
            continue;
        }
        if (vn == 0)
            continue; /* "key =" leaves the default, as in GROMACS */
        if (vn >= sizeof c.val) {
            snprintf(msg, sizeof msg, "%s:%ld: the value of %s is too long", c.name, c.line, key);
            errors_add(&errs, msg);
            continue;
        }
        normalize(key, kn, norm, sizeof norm);
        int k = find_key(norm);
        if (k < 0 && ignored_why(norm)) {
            size_t il = strlen(out->ignored);
            if (il < sizeof out->ignored - 1)
                snprintf(out->ignored + il, sizeof out->ignored - il, "%s%s (line %ld)",
                         il ? ", " : "", key, c.line);
            out->nignored++;
            continue;
        }
        if (k < 0) {
            errors_add_unknown(&errs, key, c.line);
            continue;
        }
        if (c.lines[k]) {
            snprintf(msg, sizeof msg, "%s:%ld: %s is given a second time (first on line %ld)",
                     c.name, c.line, key, c.lines[k]);
            errors_add(&errs, msg);
            continue;
        }
        c.lines[k] = c.line;
        c.key = key;
        memcpy(c.val, v, vn);
        c.val[vn] = '\0';
        if (apply_key(&c, k) != HX_OK)
            errors_add(&errs, hx_last_error_message());
    }
    HX_TRY(errors_report(&errs, c.name));
    return finish(&c);
}

hx_status hx_mdp_read(const char *path, hx_mdp *out)
{
    HX_CHECK(path && out, HX_ERR_INVALID_ARG, "hx_mdp_read: NULL argument");
    struct stat sb;
    HX_CHECK(stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode), HX_ERR_IO,
             "the parameter file '%s' is a directory: give the .mdp file (e.g. %s/run.mdp)", path,
             path);
    FILE *f = fopen(path, "rb");
    HX_CHECK(f, HX_ERR_IO, "cannot open the parameter file '%s': %s", path, strerror(errno));
    size_t cap = 1 << 14, n = 0;
    char *buf = malloc(cap);
    hx_status st = HX_OK;
    while (buf) {
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (r == 0)
            break;
        if (n == cap) {
            if (cap >= (1u << 24)) {
                st = hx_error_set(HX_ERR_INPUT, __FILE__, __LINE__, __func__,
                                  "%s is larger than 16 MB: not an .mdp file", path);
                break;
            }
            char *nb = realloc(buf, cap *= 2);
            if (!nb) {
                free(buf);
                buf = NULL;
            } else {
                buf = nb;
            }
        }
    }
    int err = ferror(f);
    fclose(f);
    if (!buf)
        HX_FAIL(HX_ERR_NOMEM, "out of memory reading %s", path);
    if (st == HX_OK && err)
        st = hx_error_set(HX_ERR_IO, __FILE__, __LINE__, __func__,
                          "error reading the parameter file %s", path);
    if (st == HX_OK)
        st = hx_mdp_read_buffer(buf, n, path, out);
    free(buf);
    return st;
}
