/* vmath.h - libtyc's exp and tanh for the CPU kernels: straight-line float arithmetic (no libm
 * call, no branch), so a loop over them vectorizes at every vector width, and the scalar code
 * and every vector width give the same bits (libtyc is built with -ffp-contract=off: no FMA
 * contraction). Owns nothing.
 *
 * vmath_exp: Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, a degree-7 Taylor polynomial,
 * scaled by 2^n through the exponent bits; the argument is clamped to [-87, 88] (no denormal,
 * no overflow). vmath_tanh: for |x| < 0.625 the odd polynomial x + x^3 P(x^2) (P fitted, weighted
 * least squares, to tanh on that interval), above it 1 - 2 / (exp(2|x|) + 1) (no cancellation:
 * the quotient is <= 0.54), |x| clamped to 10 (tanh rounds to 1 there). Both within 2 ulp of
 * the double-precision functions over every float (test_vmath in test_tyc.c).
 */
#ifndef TY_COMPILER_VMATH_H
#define TY_COMPILER_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float vmath_exp(float x)
{
    const float log2e = 1.44269504f, ln2hi = 0.693145751953125f, ln2lo = 1.42860677e-6f;
    const float round = 12582912.0f; /* 1.5 * 2^23: adding it rounds to an integer */
    float n, r, p, s;
    uint32_t e;
    x = x < -87.0f ? -87.0f : x;
    x = x > 88.0f ? 88.0f : x;
    n = (x * log2e + round) - round;
    r = (x - n * ln2hi) - n * ln2lo;
    p = 1.0f / 5040.0f;
    p = p * r + 1.0f / 720.0f;
    p = p * r + 1.0f / 120.0f;
    p = p * r + 1.0f / 24.0f;
    p = p * r + 1.0f / 6.0f;
    p = p * r + 0.5f;
    p = p * r + 1.0f;
    p = p * r + 1.0f;
    /* unsigned: a NaN input (n converts to INT_MIN on x86) must stay NaN, without a signed
       shift of a negative value (UB) */
    e = ((uint32_t)(int32_t)n + 127u) << 23;
    memcpy(&s, &e, sizeof(s));
    return p * s;
}

static inline float vmath_tanh(float x)
{
    float a = fabsf(x), s, p, small, large;
    a = a > 10.0f ? 10.0f : a;
    s = a * a;
    p = -0.005704978480935097f;
    p = p * s + 0.020639078691601753f;
    p = p * s - 0.05373971164226532f;
    p = p * s + 0.13331441581249237f;
    p = p * s - 0.3333328068256378f;
    small = a + (a * s) * p;
    large = 1.0f - 2.0f / (vmath_exp(a + a) + 1.0f);
    return copysignf(a < 0.625f ? small : large, x);
}

#endif
