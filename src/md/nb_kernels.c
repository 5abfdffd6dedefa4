/* The LJ + reaction-field cluster-pair kernels: src/md/nb_kernel.h instantiated in float and
 * double, each for portable SSE2 and for AVX2+FMA, and the run-time choice between them.
 *
 * AVX2 code is compiled with a target attribute (HX_AVX2_ATTR), not with -mavx2 for the file:
 * the library runs on any x86-64 and picks the AVX2 kernels and search only where the CPU has
 * them (hx_nbi_select_kernel, __builtin_cpu_supports). */
#include "md/nb_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Lane masks of 4 exclusion bits (lane l all ones when bit l is set): a load instead of a
 * 64-bit integer compare, which SSE2 does not have. */
#define HX_LM(b)                                                                                   \
    {                                                                                              \
        -((b)&1), -(((b) >> 1) & 1), -(((b) >> 2) & 1), -(((b) >> 3) & 1)                          \
    }
#define HX_LM16                                                                                    \
    {                                                                                              \
        HX_LM(0), HX_LM(1), HX_LM(2), HX_LM(3), HX_LM(4), HX_LM(5), HX_LM(6), HX_LM(7), HX_LM(8),  \
            HX_LM(9), HX_LM(10), HX_LM(11), HX_LM(12), HX_LM(13), HX_LM(14), HX_LM(15)             \
    }
static const vi4 lanes_i4[16] = HX_LM16;
static const vl4 lanes_l4[16] = HX_LM16;
#undef HX_LM
#undef HX_LM16

/* 1/sqrt by a correctly rounded sqrt and division. In float, Newton steps from a bit-level guess
 * are a few ulp off with a systematic bias (about -2e-8 relative), which the Coulomb sum of
 * water (pair terms and the self term cancel to a small total) amplifies; rounded sqrt and
 * division leave an unbiased per-pair error and were also faster on the AVX2 machine measured
 * (AMD EPYC, 37 vs 47 ms per 45k-atom force call on one thread). Explicit sqrt instructions
 * (builtins) rather than sqrt(): no errno branch, no dependence on -ffast-math. */
static inline void rsqrt_f4_portable(const vf4 *r2p, vf4 *out)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    *out = 1.0f / __builtin_ia32_sqrtps(*r2p);
#else
    for (int l = 0; l < 4; l++)
        (*out)[l] = 1.0f / sqrtf((*r2p)[l]);
#endif
}

/* The same in double (the AVX2 kernel uses vsqrtpd directly): correctly rounded, and faster
 * than four Newton steps from a bit-level guess (69 -> 56 ms per 45k call on one thread). */
static inline void rsqrt_d4_portable(const vd4 *r2p, vd4 *out)
{
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__)
    typedef double vd2 __attribute__((vector_size(16)));
    vd2 lo = {(*r2p)[0], (*r2p)[1]}, hi = {(*r2p)[2], (*r2p)[3]};
    lo = 1.0 / __builtin_ia32_sqrtpd(lo);
    hi = 1.0 / __builtin_ia32_sqrtpd(hi);
    vd4 y = {lo[0], lo[1], hi[0], hi[1]};
    *out = y;
#else
    for (int l = 0; l < 4; l++)
        (*out)[l] = 1.0 / sqrt((*r2p)[l]);
#endif
}

/* Float kernels. Pair energies are summed per lane in float over one entry's j clusters (at
 * most a few hundred terms) and then in double: double accumulators per pair cost two registers
 * more and spilled, 25% slower, for no measurable gain in accuracy (45k SPC/E: LJ 5.4e-7,
 * Coulomb 1.0e-7 relative to the double path either way). */
#define NBK_REAL float
#define NBK_NAME kernel_f_generic
#define NBK_ATTR
/* portable (SSE2): 1 i atom x 4 j atoms per 16-byte vector, i atom outermost. 8-wide vectors
 * split into SSE halves spilled and stalled on store forwarding: 7x slower than AVX2. */
#define NBK_V vf4
#define NBK_VI vi4
#define NBK_V4 vf4
#define NBK_VE vf4
#define NBK_W 4
#define NBK_GOUTER 1
#define NBK_DUP(v) (v)
#define NBK_FOLD(v) (v)
#define NBK_WIDE(v) (v)
#define NBK_RSQRT(y, r2) rsqrt_f4_portable(&(r2), &(y))
#define NBK_LANES(b4) lanes_i4[b4]
#include "nb_kernel.h"
#if HX_HAVE_AVX2_KERNELS
/* AVX2: 2 i atoms x 4 j atoms per 32-byte vector */
#define NBK_V vf8
#define NBK_VI vi8
#define NBK_V4 vf4
#define NBK_VE vf8
#define NBK_W 8
#define NBK_GOUTER 0
#define NBK_DUP(v) __builtin_shufflevector(v, v, 0, 1, 2, 3, 0, 1, 2, 3)
#define NBK_CAT(a, b) __builtin_shufflevector(a, b, 0, 1, 2, 3, 4, 5, 6, 7)
#define NBK_FOLD(v)                                                                                \
    (__builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7))
#define NBK_WIDE(v) (v)
#define NBK_NAME kernel_f_avx2
#define NBK_ATTR HX_AVX2_ATTR
#define NBK_RSQRT(y, r2) ((y) = 1.0f / __builtin_ia32_sqrtps256(r2))
#include "nb_kernel.h"
#endif
#undef NBK_REAL

/* double, 1 i atom x 4 j atoms per vector */
#define NBK_REAL double
#define NBK_V vd4
#define NBK_VI vl4
#define NBK_V4 vd4
#define NBK_VE vd4
#define NBK_W 4
#define NBK_GOUTER 1
#define NBK_DUP(v) (v)
#define NBK_FOLD(v) (v)
#define NBK_WIDE(v) (v)
#define NBK_LANES(b4) lanes_l4[b4]
#define NBK_NAME kernel_d_generic
#define NBK_ATTR
#define NBK_RSQRT(y, r2) rsqrt_d4_portable(&(r2), &(y))
#define NBK_KEEP_SHAPE /* the AVX2 double kernel below has the same vector shape */
#include "nb_kernel.h"
#undef NBK_KEEP_SHAPE
#if HX_HAVE_AVX2_KERNELS
#define NBK_NAME kernel_d_avx2
#define NBK_ATTR HX_AVX2_ATTR
#define NBK_RSQRT(y, r2) ((y) = 1.0 / __builtin_ia32_sqrtpd256(r2))
#include "nb_kernel.h"
#endif

/* Adapters with one signature for the function pointer. */
#define NBK_ADAPT(name, real)                                                                      \
    static void name##_call(const nbk_args *a, const nb_list *L, int e0, int e1, void *fb,         \
                            double *vlj, double *vc)                                               \
    {                                                                                              \
        name(a, L, e0, e1, (real *)fb, vlj, vc);                                                   \
    }
NBK_ADAPT(kernel_f_generic_e1, float)
NBK_ADAPT(kernel_f_generic_e0, float)
NBK_ADAPT(kernel_d_generic_e1, double)
NBK_ADAPT(kernel_d_generic_e0, double)
#if HX_HAVE_AVX2_KERNELS
NBK_ADAPT(kernel_f_avx2_e1, float)
NBK_ADAPT(kernel_f_avx2_e0, float)
NBK_ADAPT(kernel_d_avx2_e1, double)
NBK_ADAPT(kernel_d_avx2_e0, double)
#endif

void hx_nbi_select_kernel(hx_nb *nb, hx_nb_precision prec)
{
    int mixed = prec == HX_NB_MIXED;
    nb->precision = prec;
    nb->kernel[1] = mixed ? kernel_f_generic_e1_call : kernel_d_generic_e1_call;
    nb->kernel[0] = mixed ? kernel_f_generic_e0_call : kernel_d_generic_e0_call;
    nb->kernel_name = mixed ? "float sse2" : "double sse2";
    nb->search = hx_nbi_search_chunk_generic;
#if HX_HAVE_AVX2_KERNELS
    /* HALOX_NB_SIMD=sse2 forces the portable kernels (tests run both on AVX2 machines) */
    const char *force = getenv("HALOX_NB_SIMD");
    __builtin_cpu_init();
    if ((!force || strcmp(force, "sse2") != 0) && __builtin_cpu_supports("avx2") &&
        __builtin_cpu_supports("fma")) {
        nb->kernel[1] = mixed ? kernel_f_avx2_e1_call : kernel_d_avx2_e1_call;
        nb->kernel[0] = mixed ? kernel_f_avx2_e0_call : kernel_d_avx2_e0_call;
        nb->kernel_name = mixed ? "float avx2" : "double avx2";
        nb->search = hx_nbi_search_chunk_avx2;
    }
#endif
}
