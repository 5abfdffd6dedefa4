/* The random numbers of halox: xoshiro256** seeded through splitmix64 (Blackman & Vigna).
 * Small, fast, reproducible on every platform; each user seeds its own stream, so that, e.g.,
 * velocity generation and the thermostat never share a sequence. */
#ifndef HX_CORE_RNG_H
#define HX_CORE_RNG_H

#include <math.h>
#include <stdint.h>

typedef struct hx_rng {
    uint64_t s[4];
} hx_rng;

static inline uint64_t hx_splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Stream 0 is the plain seed; other streams decorrelate users of the same seed. */
static inline void hx_rng_seed(hx_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);
    for (int i = 0; i < 4; i++)
        r->s[i] = hx_splitmix64(&x);
}

static inline uint64_t hx_rotl64(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t hx_rng_next(hx_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = hx_rotl64(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = hx_rotl64(s[3], 45);
    return out;
}

/* [0, 1) */
static inline double hx_rng_uniform(hx_rng *r)
{
    return (double)(hx_rng_next(r) >> 11) * 0x1.0p-53;
}

/* (0, 1): safe to take the logarithm of */
static inline double hx_rng_uniform_open(hx_rng *r)
{
    return ((double)(hx_rng_next(r) >> 11) + 0.5) * 0x1.0p-53;
}

/* Standard normal (Box-Muller, one of the pair). */
static inline double hx_rng_normal(hx_rng *r)
{
    double u1 = hx_rng_uniform_open(r), u2 = hx_rng_uniform_open(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

#endif
