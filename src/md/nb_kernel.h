/* The 4x4 cluster-pair kernel, written once and instantiated by src/md/nb_kernels.c for each
 * precision (float, double) and instruction set (portable, AVX2+FMA). Not a public header.
 *
 * The including file defines:
 *   NBK_NAME   function name
 *   NBK_REAL   float or double
 *   NBK_V      vector of NBK_W reals (8 floats or 4 doubles: 32 bytes, one AVX register)
 *   NBK_VI     integer vector of the same shape (lane masks, bit tricks)
 *   NBK_V4     vector of 4 reals (one j cluster)
 *   NBK_VE     vector of NBK_W doubles (energy accumulators)
 *   NBK_W      lanes; a vector holds NBK_W/4 i atoms x the 4 j atoms of one cluster
 *   NBK_ENERGY 1: also pair energies; 0: forces only (energies untouched). Left undefined,
 *              this header includes itself once for each, giving name_e1 and name_e0, and then
 *              undefines the variant's macros (NBK_NAME, NBK_ATTR, NBK_RSQRT and, unless
 *              NBK_KEEP_SHAPE is defined for a next variant of the same vector shape, the
 *              shape macros NBK_V ... NBK_WIDE, NBK_LANES, NBK_CAT) for the next instantiation.
 *   NBK_GOUTER 1: loop over i-atom vectors outside the j loop (for double), 0: inside
 *   NBK_LANES(b)  optional, NBK_W == 4 only: lane mask vector of 4 exclusion bits b
 *   NBK_RSQRT(y, r2)  y = 1/sqrt(r2) for a vector
 *   NBK_ATTR   function attributes (target, ...)
 *   NBK_DUP(v4)        NBK_V4 -> NBK_V, the 4 j lanes repeated for every i atom of a vector
 *   NBK_CAT(a, b)      two NBK_V4 -> NBK_V (only when NBK_W == 8)
 *   NBK_FOLD(v)        NBK_V -> NBK_V4, sum over the i atoms of a vector (j force)
 *   NBK_WIDE(v)        NBK_V -> NBK_VE
 *
 * Why it looks like this: GCC vector extensions give explicit SIMD without intrinsics, so the
 * same source compiles for SSE2 (vectors split in halves) and AVX2. Lanes outside the cut-off
 * or masked off by the pair's exclusion bits get 1/r = 0 before any power of it is taken (no
 * overflow, no denormals from padding atoms far away), and their forces and energies are zeroed
 * with bitwise ANDs, so nothing of a masked lane can leak into a sum. */

#ifndef NBK_ENERGY
#define NBK_ENERGY 1
#include "nb_kernel.h"
#undef NBK_ENERGY
#define NBK_ENERGY 0
#include "nb_kernel.h"
#undef NBK_ENERGY
#undef NBK_NAME
#undef NBK_ATTR
#undef NBK_RSQRT
#ifndef NBK_KEEP_SHAPE
#undef NBK_V
#undef NBK_VI
#undef NBK_V4
#undef NBK_VE
#undef NBK_W
#undef NBK_GOUTER
#undef NBK_LANES
#undef NBK_DUP
#undef NBK_CAT
#undef NBK_FOLD
#undef NBK_WIDE
#endif
#else

#define NBK_NG (4 * 4 / NBK_W) /* vectors per cluster pair */
#define NBK_FN(name, e) NBK_FN2(name, e)
#define NBK_FN2(name, e) name##_e##e
#define NBK_IPV (NBK_W / 4) /* i atoms per vector */

/* Entries [e0, e1) of list L; forces added to fb, energies to *out_vlj, *out_vc. */
NBK_ATTR static void NBK_FN(NBK_NAME, NBK_ENERGY)(const nbk_args *restrict a,
                                                  const nb_list *restrict L, int e0, int e1,
                                                  NBK_REAL *restrict fb, double *restrict out_vlj,
                                                  double *restrict out_vc)
{
    const NBK_REAL *restrict xq = (const NBK_REAL *)a->xq;
    const NBK_REAL *restrict lj6 = (const NBK_REAL *)a->lj6;
    const NBK_REAL *restrict lj12 = (const NBK_REAL *)a->lj12;
    const int *restrict ts = a->ts;
    const int nslot = a->nslot;
    const NBK_REAL rc2 = (NBK_REAL)a->rc2, irc6 = (NBK_REAL)a->irc6, irc12 = (NBK_REAL)a->irc12;
    const NBK_REAL krf = (NBK_REAL)a->krf, crf = (NBK_REAL)a->crf;
    const NBK_REAL two_krf = (NBK_REAL)(2.0 * a->krf), epsfac = (NBK_REAL)a->epsfac;
    const NBK_REAL twelve = (NBK_REAL)12.0, six = (NBK_REAL)6.0;
    const NBK_V zero = {0};
    /* lane l of vector g is the pair (i = g*IPV + l/4, j = l%4): exclusion bit g*W + l */
    NBK_VI bit = {0};
    for (int l = 0; l < NBK_W; l++)
        bit[l] = (__typeof__(bit[0]))1 << l;
    double vlj_tot = 0.0, vc_tot = 0.0;
#if !NBK_ENERGY
    (void)irc6;
    (void)irc12;
    (void)krf;
    (void)crf;
#endif

    for (int e = e0; e < e1; e++) {
        const int ci = L->ci[e];
        const double *sv = a->shiftvec[L->shift[e]];
        const NBK_REAL *xi = xq + 16 * ci;
        const NBK_REAL sx = (NBK_REAL)sv[0], sy = (NBK_REAL)sv[1], sz = (NBK_REAL)sv[2];
        NBK_V ix[NBK_NG], iy[NBK_NG], iz[NBK_NG], iq[NBK_NG];
        NBK_V fix[NBK_NG], fiy[NBK_NG], fiz[NBK_NG];
        const NBK_REAL *c6row[4], *c12row[4];
        /* vector g computes LJ only if one of its i atoms has LJ (atoms with LJ come first in
         * a cluster, so in water the second half usually has none) */
        int ljg[NBK_NG];
        for (int g = 0; g < NBK_NG; g++)
            ljg[g] = (a->ljs[ci] >> (g * NBK_IPV)) & ((1u << NBK_IPV) - 1u);
        for (int ii = 0; ii < 4; ii++) {
            c6row[ii] = lj6 + (size_t)ts[4 * ci + ii] * (size_t)nslot;
            c12row[ii] = lj12 + (size_t)ts[4 * ci + ii] * (size_t)nslot;
        }
        for (int g = 0; g < NBK_NG; g++) {
            for (int l = 0; l < NBK_W; l++) {
                const int ii = g * NBK_IPV + l / 4;
                ix[g][l] = xi[ii] - sx;
                iy[g][l] = xi[4 + ii] - sy;
                iz[g][l] = xi[8 + ii] - sz;
                iq[g][l] = epsfac * xi[12 + ii];
            }
            fix[g] = fiy[g] = fiz[g] = zero;
        }
#if NBK_ENERGY
        NBK_VE elj = {0}, ec = {0};
#endif
        const int kb = L->jbeg[e], ke = L->jbeg[e + 1];
#if NBK_GOUTER
        /* i atom outermost: its data and force stay in registers, j forces go to memory per
         * (i atom, j cluster); fewer spills where a vector holds one i atom (double) */
        for (int g = 0; g < NBK_NG; g++)
            for (int k = kb; k < ke; k++) {
#else
        for (int k = kb; k < ke; k++) {
#endif
                const int cj = L->cj[k];
                const unsigned m = L->mask[k];
                const NBK_REAL *xj = xq + 16 * cj;
                NBK_V4 jx4, jy4, jz4, jq4;
                memcpy(&jx4, xj, sizeof jx4);
                memcpy(&jy4, xj + 4, sizeof jy4);
                memcpy(&jz4, xj + 8, sizeof jz4);
                memcpy(&jq4, xj + 12, sizeof jq4);
                const NBK_V jx = NBK_DUP(jx4), jy = NBK_DUP(jy4), jz = NBK_DUP(jz4);
                const NBK_V jq = NBK_DUP(jq4);
                /* j forces summed over the i vectors, folded to 4 lanes once per cluster pair */
                NBK_V fjx = zero, fjy = zero, fjz = zero;
#if NBK_GOUTER
                {
#else
            for (int g = 0; g < NBK_NG; g++) {
#endif
                    const NBK_V dx = ix[g] - jx, dy = iy[g] - jy, dz = iz[g] - jz;
                    const NBK_V r2 = dx * dx + dy * dy + dz * dz;
#ifdef NBK_LANES
                    const NBK_VI in = NBK_LANES((m >> (4 * g)) & 15u) & (r2 < rc2);
#else
                const NBK_VI mg = (NBK_VI){0} + (__typeof__(bit[0]))(m >> (g * NBK_W));
                const NBK_VI in = ((bit & mg) != 0) & (r2 < rc2);
#endif
                    NBK_V rinv;
                    NBK_RSQRT(rinv, r2);
                    rinv = (NBK_V)((NBK_VI)rinv & in);
                    const NBK_V rinv2 = rinv * rinv;
                    const NBK_V qq = iq[g] * jq;
                    NBK_V fs = qq * (rinv * rinv2 - two_krf);
#if NBK_ENERGY
                    NBK_V vc = qq * (rinv + krf * r2 - crf);
                    NBK_V vlj = zero;
#endif
                    if (ljg[g]) {
                        NBK_V c6, c12;
#if NBK_W == 8
                        {
                            NBK_V4 a6, b6, a12, b12;
                            memcpy(&a6, c6row[2 * g] + 4 * cj, sizeof a6);
                            memcpy(&b6, c6row[2 * g + 1] + 4 * cj, sizeof b6);
                            memcpy(&a12, c12row[2 * g] + 4 * cj, sizeof a12);
                            memcpy(&b12, c12row[2 * g + 1] + 4 * cj, sizeof b12);
                            c6 = NBK_CAT(a6, b6);
                            c12 = NBK_CAT(a12, b12);
                        }
#else
                    memcpy(&c6, c6row[g] + 4 * cj, sizeof c6);
                    memcpy(&c12, c12row[g] + 4 * cj, sizeof c12);
#endif
                        const NBK_V rinv6 = rinv2 * rinv2 * rinv2;
                        const NBK_V vr6 = c6 * rinv6, vr12 = c12 * rinv6 * rinv6;
                        fs += (twelve * vr12 - six * vr6) * rinv2;
#if NBK_ENERGY
                        vlj = (vr12 - c12 * irc12) - (vr6 - c6 * irc6);
#endif
                    }
                    fs = (NBK_V)((NBK_VI)fs & in);
#if NBK_ENERGY
                    vlj = (NBK_V)((NBK_VI)vlj & in);
                    vc = (NBK_V)((NBK_VI)vc & in);
                    elj += NBK_WIDE(vlj);
                    ec += NBK_WIDE(vc);
#endif
                    const NBK_V tx = fs * dx, ty = fs * dy, tz = fs * dz;
                    fix[g] += tx;
                    fiy[g] += ty;
                    fiz[g] += tz;
                    fjx += tx;
                    fjy += ty;
                    fjz += tz;
                }
                NBK_REAL *fj = fb + 12 * cj;
                NBK_V4 t;
                memcpy(&t, fj, sizeof t);
                t -= NBK_FOLD(fjx);
                memcpy(fj, &t, sizeof t);
                memcpy(&t, fj + 4, sizeof t);
                t -= NBK_FOLD(fjy);
                memcpy(fj + 4, &t, sizeof t);
                memcpy(&t, fj + 8, sizeof t);
                t -= NBK_FOLD(fjz);
                memcpy(fj + 8, &t, sizeof t);
            }
        NBK_REAL *fi = fb + 12 * ci;
        for (int g = 0; g < NBK_NG; g++)
            for (int b = 0; b < NBK_IPV; b++) {
                const int ii = g * NBK_IPV + b;
                NBK_REAL sxv = 0, syv = 0, szv = 0;
                for (int l = 4 * b; l < 4 * b + 4; l++) {
                    sxv += fix[g][l];
                    syv += fiy[g][l];
                    szv += fiz[g][l];
                }
                fi[ii] += sxv;
                fi[4 + ii] += syv;
                fi[8 + ii] += szv;
            }
#if NBK_ENERGY
        double s1 = 0.0, s2 = 0.0;
        for (int l = 0; l < NBK_W; l++) {
            s1 += elj[l];
            s2 += ec[l];
        }
        vlj_tot += s1;
        vc_tot += s2;
#endif
    }
    *out_vlj += vlj_tot;
    *out_vc += vc_tot;
}

#undef NBK_NG
#undef NBK_FN
#undef NBK_FN2
#undef NBK_IPV

#endif /* NBK_ENERGY */
