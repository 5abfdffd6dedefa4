/* The device-ready plan (src/dd/plan_image.h) on random systems and grids:
 *
 *  1. the image's view holds exactly the fields of the host plan (every pulse, every map entry);
 *  2. peer_atom_offset of a pulse is the receiver's atom_offset, and the receiver expects as
 *     many atoms as we send;
 *  3. rdeps is the reverse of deps, and means what the force pass needs: an atom received in
 *     pulse p and forwarded in pulse q > p implies bit q of rdeps[p], and nothing else is set;
 *  4. capacities are the same on every domain, hold every domain's n_local and per-pulse send
 *     count, are multiples of 32, and staging slots (buf_offset) are the prefix sums;
 *  5. rebuilding from moved atoms keeps capacities grow-only and bumps the generation;
 *  6. a view rebased to another address points at the same offsets there.
 * Usage: test_plan_image [ncases] [first_seed]. */
#include "halox/halox.h"
#include "dd/plan_image.h"
#include "plan_fixture.h"

#include <stdlib.h>
#include <string.h>

/* whole molecules to the domain of their centre; returns per-domain home arrays */
static void assign(const hx_dd *dd, const sysgen *s, int nd, int *nhome, double **xh)
{
    int *owner = malloc(sizeof(int) * (size_t)s->nmol);
    for (int m = 0; m < s->nmol; m++)
        owner[m] = hx_dd_domain_of_point(dd, &s->cen[3 * m]);
    for (int d = 0; d < nd; d++) {
        nhome[d] = 0;
        xh[d] = malloc(sizeof(double) * 3 * ((size_t)s->natoms + 1));
    }
    for (int a = 0; a < s->natoms; a++) {
        int d = owner[s->mol[a]];
        memcpy(&xh[d][3 * nhome[d]++], &s->x[3 * a], 3 * sizeof(double));
    }
    free(owner);
}

static void check_view(unsigned long long seed, const hx_plan *plan, int d)
{
    const hx_domain_plan *p = hx_plan_domain(plan, d);
    size_t bytes = 0;
    const void *img = hx_plan_image(plan, d, &bytes);
    const hx_plan_image_header *h = img;
    T_CHECK(h->magic == HX_PLAN_IMAGE_MAGIC && h->version == HX_PLAN_IMAGE_VERSION &&
                (size_t)h->bytes == bytes && h->generation == p->generation,
            "seed %llu domain %d: image header (magic %x version %u bytes %lld/%zu)", seed, d,
            h->magic, h->version, (long long)h->bytes, bytes);
    hx_plan_view v;
    hx_plan_view_init(img, &v);
    T_CHECK(v.npulses == p->npulses && v.n_home == p->n_home && v.n_local == p->n_local &&
                v.map_len == p->index_map_len && v.cap_local == p->cap_local &&
                v.cap_buf == p->cap_buf,
            "seed %llu domain %d: image sizes differ from the plan", seed, d);
    for (int q = 0; q < p->npulses; q++) {
        const hx_pulse *P = &p->pulses[q];
        int ok = v.map_offset[q] == P->map_offset && v.send_count[q] == P->send_count &&
                 v.dep_offset[q] == P->dep_offset && v.recv_count[q] == P->recv_count &&
                 v.atom_offset[q] == P->atom_offset &&
                 v.peer_atom_offset[q] == P->peer_atom_offset && v.buf_offset[q] == P->buf_offset &&
                 v.cap_pulse[q] == p->cap_pulse[q] && v.send_pe[q] == P->send_pe &&
                 v.recv_pe[q] == P->recv_pe && v.deps[q] == P->deps && v.rdeps[q] == P->rdeps;
        for (int c = 0; c < 3; c++)
            ok = ok && v.shift_f64[3 * q + c] == P->shift[c] &&
                 v.shift_f32[3 * q + c] == (float)P->shift[c];
        T_CHECK(ok, "seed %llu domain %d pulse %d: image fields differ from the plan", seed, d, q);
    }
    T_CHECK(p->index_map_len == 0 ||
                memcmp(v.index_map, p->index_map, sizeof(int) * (size_t)p->index_map_len) == 0,
            "seed %llu domain %d: image index map differs", seed, d);
    /* 6: rebase to a copy: same contents through the rebased pointers */
    void *copy = malloc(bytes);
    memcpy(copy, img, bytes);
    hx_plan_view w = v;
    hx_plan_view_rebase(&w, img, copy);
    T_CHECK((const char *)w.index_map - (const char *)copy ==
                    (const char *)v.index_map - (const char *)img &&
                (const char *)w.rdeps - (const char *)copy ==
                    (const char *)v.rdeps - (const char *)img,
            "seed %llu domain %d: rebased view points elsewhere", seed, d);
    free(copy);
}

static int run_case(unsigned long long seed)
{
    t_rng r;
    caseparams c;
    sysgen s;
    pf_draw(seed, NULL, &c, &s, &r);
    hx_dd_params dp = {
        {c.box[0], c.box[1], c.box[2]}, {c.grid[0], c.grid[1], c.grid[2]}, c.r_comm, c.rc};
    hx_dd *dd = NULL;
    hx_comm *comm = NULL;
    hx_plan *plan = NULL;
    T_OK(hx_dd_create(&dp, &dd));
    if (!dd) {
        pf_free(&s);
        return 0;
    }
    int nd = hx_dd_ndomains(dd);
    T_OK(hx_comm_create_serial(nd, &comm));
    T_OK(hx_plan_create(dd, comm, &plan));
    int *nhome = malloc(sizeof(int) * (size_t)nd);
    double **xh = malloc(sizeof(double *) * (size_t)nd);
    assign(dd, &s, nd, nhome, xh);
    T_OK(hx_plan_build(plan, nhome, (const double *const *)xh));

    const hx_domain_plan *p0 = hx_plan_domain(plan, 0);
    const int np = p0->npulses;
    /* 4: capacities */
    int sum = 0;
    for (int q = 0; q < np; q++) {
        T_CHECK(p0->cap_pulse[q] % 32 == 0 && p0->pulses[q].buf_offset == sum,
                "seed %llu pulse %d: slot capacity %d, offset %d (expected %d)", seed, q,
                p0->cap_pulse[q], p0->pulses[q].buf_offset, sum);
        sum += p0->cap_pulse[q];
    }
    T_CHECK(p0->cap_buf == sum && p0->cap_local % 32 == 0,
            "seed %llu: cap_buf %d (sum %d), cap_local %d", seed, p0->cap_buf, sum, p0->cap_local);
    for (int d = 0; d < nd; d++) {
        const hx_domain_plan *p = hx_plan_domain(plan, d);
        T_CHECK(p->cap_local == p0->cap_local && p->cap_buf == p0->cap_buf &&
                    memcmp(p->cap_pulse, p0->cap_pulse, sizeof(int) * (size_t)np) == 0 &&
                    p->generation == 1,
                "seed %llu domain %d: capacities or generation differ from domain 0", seed, d);
        T_CHECK(p->n_local <= p->cap_local, "seed %llu domain %d: n_local %d > capacity %d", seed,
                d, p->n_local, p->cap_local);
        for (int q = 0; q < np; q++) {
            const hx_pulse *P = &p->pulses[q];
            T_CHECK(P->send_count <= p->cap_pulse[q],
                    "seed %llu domain %d pulse %d: %d entries > slot of %d", seed, d, q,
                    P->send_count, p->cap_pulse[q]);
            /* 2: where our atoms land on the receiver */
            const hx_domain_plan *peer = hx_plan_domain(plan, P->send_rank);
            T_CHECK(P->peer_atom_offset == peer->pulses[q].atom_offset &&
                        peer->pulses[q].recv_count == P->send_count &&
                        P->send_pe == hx_comm_rank_of_domain(comm, P->send_rank),
                    "seed %llu domain %d pulse %d: peer offset %d, receiver %d has %d (recv "
                    "%d, sent %d)",
                    seed, d, q, P->peer_atom_offset, P->send_rank, peer->pulses[q].atom_offset,
                    peer->pulses[q].recv_count, P->send_count);
            /* 3: rdeps from what is actually forwarded */
            uint64_t want = 0;
            for (int q2 = q + 1; q2 < np; q2++) {
                const hx_pulse *Q = &p->pulses[q2];
                const int *map = p->index_map + Q->map_offset;
                for (int e = 0; e < Q->send_count; e++)
                    if (map[e] >= P->atom_offset && map[e] < P->atom_offset + P->recv_count)
                        want |= (uint64_t)1 << q2;
            }
            T_CHECK(P->rdeps == want,
                    "seed %llu domain %d pulse %d: rdeps %#llx, forwarding says %#llx", seed, d, q,
                    (unsigned long long)P->rdeps, (unsigned long long)want);
        }
        check_view(seed, plan, d);
    }
    /* 5: rebuild from moved atoms (a random shake of up to 5% of r_comm): grow-only */
    int cap_local = p0->cap_local, cap_pulse[HX_MAX_PULSES];
    memcpy(cap_pulse, p0->cap_pulse, sizeof cap_pulse);
    for (int d = 0; d < nd; d++)
        for (int a = 0; a < 3 * nhome[d]; a++)
            xh[d][a] += 0.05 * c.r_comm * (2.0 * t_rng_uniform(&r) - 1.0);
    T_OK(hx_plan_build(plan, nhome, (const double *const *)xh));
    p0 = hx_plan_domain(plan, 0);
    T_CHECK(p0->generation == 2 && p0->cap_local >= cap_local,
            "seed %llu: after a rebuild generation %lld, cap_local %d (was %d)", seed,
            p0->generation, p0->cap_local, cap_local);
    for (int q = 0; q < np; q++)
        T_CHECK(p0->cap_pulse[q] >= cap_pulse[q], "seed %llu pulse %d: capacity shrank %d -> %d",
                seed, q, cap_pulse[q], p0->cap_pulse[q]);
    for (int d = 0; d < nd; d++)
        check_view(seed, plan, d);

    for (int d = 0; d < nd; d++)
        free(xh[d]);
    free(xh);
    free(nhome);
    hx_plan_destroy(&plan);
    hx_comm_destroy(&comm);
    hx_dd_destroy(&dd);
    pf_free(&s);
    return 1;
}

int main(int argc, char **argv)
{
    int ncases = argc > 1 ? atoi(argv[1]) : 120;
    unsigned long long first = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
    int done = 0;
    for (int k = 0; k < ncases; k++)
        done += run_case(first + (unsigned long long)k);
    return t_finish("test_plan_image", done);
}
