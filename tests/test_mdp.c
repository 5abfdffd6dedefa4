/* GROMACS .mdp files (hx_mdp_read_buffer, hx_mdp_read): a file written the way GROMACS users
 * write them (comments, '-' or '_', any case, empty values) gives every supported value; every
 * unsupported key or value, duplicate, inconsistent cut-off, incomplete thermostat and
 * malformed line is refused with file:line and what halox accepts, all of a file's problems in
 * one message; keys that cannot change what halox computes are ignored and listed. */
#include "testutil.h"

#include "halox/io.h"
#include "halox/md.h"

#include <math.h>
#include <string.h>

static const char good[] = "; a GROMACS-style parameter file\n"
                           "integrator               = md\n"
                           "dt                       = 0.001\n"
                           "nsteps=5000 ; trailing comment\n"
                           "continuation             = YES\n"
                           "cutoff_scheme            = verlet\n"
                           "nstlist                  = 20\n"
                           "verlet-buffer-tolerance  = -1\n"
                           "rlist                    = 1.1\n"
                           "coulombtype              = Reaction-Field\n"
                           "rcoulomb                 = 1.0\n"
                           "rvdw                     = 1.0\n"
                           "epsilon_r                = 1\n"
                           "epsilon-rf               = 78.5\n"
                           "vdw_modifier             = Potential-shift-Verlet\n"
                           "Tcoupl                   = V-rescale\n"
                           "tc-grps                  = System\n"
                           "tau_t                    = 0.2\n"
                           "ref_t                    = 310\n"
                           "gen_vel                  = no\n"
                           "gen-temp                 = 250\n"
                           "gen_seed                 = 7\n"
                           "nstenergy                = 50\n"
                           "nstxout                  = 100\n"
                           "DispCorr                 = no\n"
                           "pbc                      = xyz\n"
                           "define                   =\n"
                           "\n"
                           "   ; indented comment\n"
                           "constraints = h-bonds\r\n";

static void test_good(int *ncases)
{
    (*ncases)++;
    hx_mdp m;
    T_OK(hx_mdp_read_buffer(good, sizeof good - 1, "good.mdp", &m));
    T_CHECK(m.has_dt && m.dt == 0.001, "dt %d %g", m.has_dt, m.dt);
    T_CHECK(m.has_nsteps && m.nsteps == 5000, "nsteps %d %lld", m.has_nsteps, m.nsteps);
    T_CHECK(m.has_continuation && m.continuation == 1, "continuation %d", m.continuation);
    T_CHECK(m.has_nstlist && m.nstlist == 20, "nstlist %d", m.nstlist);
    T_CHECK(m.has_rlist && m.rlist == 1.1 && !m.has_buffer_tolerance, "rlist %d %g, tolerance %d",
            m.has_rlist, m.rlist, m.has_buffer_tolerance);
    T_CHECK(m.has_rc && m.rc == 1.0, "rc %d %g", m.has_rc, m.rc);
    T_CHECK(m.has_eps_r && m.eps_r == 1 && m.has_eps_rf && m.eps_rf == 78.5, "eps %g %g", m.eps_r,
            m.eps_rf);
    T_CHECK(m.has_thermostat && m.thermostat == HX_THERMOSTAT_VRESCALE && m.tau_t == 0.2 &&
                m.ref_t == 310,
            "thermostat %d tau %g ref %g", m.thermostat, m.tau_t, m.ref_t);
    T_CHECK(m.has_gen_vel && m.gen_vel == 0 && m.has_gen_temp && m.gen_temp == 250 &&
                m.has_gen_seed && m.gen_seed == 7,
            "gen-vel %d %g seed %lld", m.gen_vel, m.gen_temp, m.gen_seed);
    T_CHECK(m.has_nstenergy && m.nstenergy == 50 && m.has_nstxout && m.nstxout == 100,
            "nstenergy %d nstxout %d", m.nstenergy, m.nstxout);

    /* a tolerance: rlist is ignored (as in GROMACS), the tolerance is taken */
    (*ncases)++;
    static const char tol[] = "verlet-buffer-tolerance = 0.01\nrlist = 1.2\n";
    T_OK(hx_mdp_read_buffer(tol, sizeof tol - 1, "tol.mdp", &m));
    T_CHECK(m.has_buffer_tolerance && m.buffer_tolerance == 0.01 && !m.has_rlist,
            "tolerance %d %g, rlist %d", m.has_buffer_tolerance, m.buffer_tolerance, m.has_rlist);
    /* an empty file sets nothing */
    (*ncases)++;
    T_OK(hx_mdp_read_buffer("", 0, "empty.mdp", &m));
    T_CHECK(!m.has_dt && !m.has_nsteps && !m.has_rc, "an empty file set values");
}

typedef struct bad_case {
    const char *text;
    int line;
    const char *frag;
} bad_case;

static const bad_case bad[] = {
    {"dt = 0.002\ndefine = -DFLEXIBLE\n", 2, "'define' is not a parameter halox supports"},
    {"nsttcouple = 5\n", 1, "use nsttcouple = 10"},
    {"free-energy = yes\n", 1, "use free-energy = no"},
    {"nwall = 2\n", 1, "use nwall = 0"},
    {"integrator = sd\n", 1, "use integrator = md"},
    {"cutoff-scheme = group\n", 1, "Verlet"},
    {"coulombtype = PME\n", 1, "use coulombtype = reaction-field"},
    {"tcoupl = berendsen\n", 1, "no or v-rescale"},
    {"vdw-modifier = force-switch\n", 1, "potential-shift"},
    {"dt = abc\n", 1, "expected one number"},
    {"dt = 0\n", 1, "must be positive"},
    {"nsteps = -1\n", 1, "-1 is not supported"},
    {"nsteps = 1.5\n", 1, "expected one integer"},
    {"nstlist = 0\n", 1, "from 1 to"},
    {"dt = 0.002\n\ndt_=0.001\n", 3, "given a second time (first on line 1)"},
    {"rcoulomb = 1.0\nrvdw = 1.2\n", 2, "differ"},
    {"rcoulomb = 0.9\n", 1, "rvdw is not given"},
    {"verlet-buffer-tolerance = -1\n", 1, "rlist is not given"},
    {"verlet-buffer-tolerance = 0\n", 1, "or -1"},
    {"tau_t = 0.1 0.1\n", 1, "one group"},
    {"tcoupl = v-rescale\ntau-t = 0.1\n", 1, "needs tau-t and ref-t"},
    {"tc-grps = Protein SOL\n", 1, "tc-grps = System"},
    {"dt 0.002\n", 1, "is not a 'key = value' line"},
    {"= 5\n", 1, "a value without a key"},
    {"gen-seed = -1\n", 1, "random seed"},
    {"gen-vel = maybe\n", 1, "yes or no"},
    {"comm-mode = linear\n", 1, "comm-mode = none"},
    {"pcoupl = parrinello-rahman\n", 1, "no pressure coupling"},
    {"epsilon-rf = 0.5\n", 1, "0 (infinity"},
    {"dt.x = 1\n", 1, "is not a parameter name"},
};

static void test_bad(int *ncases)
{
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        (*ncases)++;
        hx_mdp m;
        hx_clear_error();
        hx_status st = hx_mdp_read_buffer(bad[i].text, strlen(bad[i].text), "bad.mdp", &m);
        char where[32];
        snprintf(where, sizeof where, "bad.mdp:%d:", bad[i].line);
        const char *msg = hx_last_error_message();
        T_CHECK(st == HX_ERR_INPUT && strstr(msg, where) && strstr(msg, bad[i].frag),
                "case %zu '%s': %s, message '%s' (want '%s' and '%s')", i, bad[i].text,
                hx_status_name(st), msg, where, bad[i].frag);
    }
    (*ncases)++;
    hx_mdp m;
    hx_status st = hx_mdp_read("/nonexistent/run.mdp", &m);
    T_CHECK(st == HX_ERR_IO && strstr(hx_last_error_message(), "/nonexistent/run.mdp"),
            "missing file: %s '%s'", hx_status_name(st), hx_last_error_message());
}

/* A file written for GROMACS: the keys that cannot change what halox computes are ignored and
 * listed; every problem is in one message (it failed one key per attempt). */
static void test_gromacs_file(int *ncases)
{
    (*ncases)++;
    hx_mdp m;
    static const char ign[] = "nstcalcenergy = 100\nnstvout = 0\nfourierspacing = 0.12\n"
                              "nstlog = 500\ntau-p = 2.0\nnsttcouple = 10\n";
    T_OK(hx_mdp_read_buffer(ign, sizeof ign - 1, "ign.mdp", &m));
    T_CHECK(m.nignored == 4 && strcmp(m.ignored, "nstcalcenergy (line 1), nstvout (line 2), "
                                                 "fourierspacing (line 3), tau-p (line 5)") == 0,
            "ignored %d: '%s'", m.nignored, m.ignored);
    T_CHECK(m.has_nstlog && m.nstlog == 500, "nstlog %d %d", m.has_nstlog, m.nstlog);

    (*ncases)++;
    static const char many[] = "dt = 0.002\ndefine = -DFLEXIBLE\nnstdisreout = 10\n"
                               "integrator = sd\nnstcalcenergy = 100\ntcoupl = berendsen\n";
    hx_clear_error();
    hx_status st = hx_mdp_read_buffer(many, sizeof many - 1, "many.mdp", &m);
    const char *msg = hx_last_error_message();
    T_CHECK(st == HX_ERR_INPUT &&
                strstr(msg, "many.mdp: 4 problems: 'define' (line 2), 'nstdisreout' (line 3) are "
                            "not parameters halox supports, remove the lines") &&
                strstr(msg, "many.mdp:4: integrator = sd: halox integrates with leap-frog only") &&
                strstr(msg, "many.mdp:6: tcoupl = berendsen: halox has tcoupl = no or v-rescale") &&
                !strstr(msg, "nstcalcenergy"),
            "every problem in one message: %s '%s'", hx_status_name(st), msg);
}

int main(void)
{
    int ncases = 0;
    test_good(&ncases);
    test_bad(&ncases);
    test_gromacs_file(&ncases);
    return t_finish("test_mdp", ncases);
}
