/* Determinism and the missed-pair counter.
 *  - Two runs with the same seed and thread count (water, v-rescale, generated velocities) give
 *    bit-identical energies at every step and identical final coordinates.
 *  - Hot argon (2000 K) with rlist = rc and nstlist 40: the counter must see missed pairs; with
 *    a 0.3 nm buffer and nstlist 10 it must see none (argon at 2000 K moves ~0.03 nm per 20 fs
 *    per dimension, far below 0.15 nm for each of a pair). */
#include "test_md_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int g_nstcheck = 1; /* missed-pair check at every search unless a test changes it */

static hx_md *make(const hx_system *s, const char *model, double rlist, int nstlist, double temp,
                   int thermo, int threads, uint64_t seed)
{
    hx_md_params p;
    hx_md_params_default(&p);
    p.nstcheck = g_nstcheck;
    p.model = model;
    p.rc = 0.9;
    p.rlist = rlist;
    p.nstlist = nstlist;
    p.gen_vel = 1;
    p.gen_temp = temp;
    p.seed = seed;
    p.thermostat = thermo ? HX_THERMOSTAT_VRESCALE : HX_THERMOSTAT_NONE;
    p.ref_t = temp;
    p.nthreads = threads;
    p.dt = strcmp(model, "argon") == 0 ? 0.002 : 0.001;
    hx_md *md = NULL;
    T_OK(hx_md_create(s, &p, &md));
    return md;
}

static void determinism(int threads)
{
    hx_system *s = tmd_water_lattice("spce", 7, 0.02, 11);
    hx_md *a = make(s, "spce", 1.0, 10, 300, 1, threads, 77);
    hx_md *b = make(s, "spce", 1.0, 10, 300, 1, threads, 77);
    if (!a || !b)
        return;
    for (int i = 0; i < 150; i++) {
        T_OK(hx_md_step(a));
        T_OK(hx_md_step(b));
        hx_md_energies ea = *hx_md_last_energies(a), eb = *hx_md_last_energies(b);
        if (memcmp(&ea, &eb, sizeof ea) != 0) {
            T_FAIL("threads %d seed 77: energies differ at step %d: %.17g vs %.17g", threads, i,
                   ea.total, eb.total);
            break;
        }
    }
    const hx_system *sa = hx_md_system(a), *sb = hx_md_system(b);
    T_CHECK(memcmp(sa->x, sb->x, sizeof(double) * 3 * (size_t)sa->natoms) == 0,
            "threads %d: final coordinates differ", threads);
    /* a different seed must give a different trajectory (the seed is used) */
    hx_md *c = make(s, "spce", 1.0, 10, 300, 1, threads, 78);
    T_OK(hx_md_step(c));
    T_OK(hx_md_step(a));
    T_CHECK(hx_md_last_energies(c)->kinetic != hx_md_last_energies(a)->kinetic,
            "seeds 77 and 78 gave the same kinetic energy");
    hx_md_destroy(&a);
    hx_md_destroy(&b);
    hx_md_destroy(&c);
    hx_system_destroy(&s);
}

static long long missed(double rlist, int nstlist, long long *checked)
{
    hx_system *s = tmd_argon_lattice(8, 0.02, 5);
    hx_md *md = make(s, "argon", rlist, nstlist, 2000, 0, 2, 9);
    if (!md)
        return -1;
    for (int i = 0; i < 201; i++)
        T_OK(hx_md_step(md));
    hx_md_timings t;
    hx_md_get_timings(md, &t);
    hx_md_destroy(&md);
    hx_system_destroy(&s);
    printf("argon 2000 K rlist %.2f nstlist %d, check every %d searches: %lld missed pairs in "
           "%lld checked of %lld searches\n",
           rlist, nstlist, g_nstcheck, t.missed_pairs, t.checked_searches, t.searches);
    *checked = t.checked_searches;
    return t.missed_pairs;
}

int main(void)
{
    determinism(2);
    determinism(1);
    long long c0 = 0, c1 = 0, c2 = 0;
    long long m0 = missed(0.9, 40, &c0);
    T_CHECK(m0 > 0, "rlist = rc, nstlist 40, 2000 K: the counter saw %lld missed pairs", m0);
    /* searches at steps 0, 40, ..., 200: all but the first are checked */
    T_CHECK(c0 == 5, "nstlist 40, 201 steps, check every search: %lld checked, expected 5", c0);
    long long m1 = missed(1.2, 10, &c1);
    T_CHECK(m1 == 0, "rlist = rc + 0.3, nstlist 10: the counter saw %lld missed pairs", m1);
    /* sampled: only the searches at multiples of 2 * 40 steps (80 and 160) are checked */
    g_nstcheck = 2;
    long long m2 = missed(0.9, 40, &c2);
    T_CHECK(c2 == 2, "nstlist 40, check every 2nd search: %lld checked, expected 2", c2);
    T_CHECK(m2 > 0 && m2 < m0, "sampled check saw %lld missed pairs (all searches: %lld)", m2, m0);
    return t_finish("test_md_determinism", 7);
}
