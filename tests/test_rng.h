/* test_rng.h — the kernel tests' random numbers: xorshift64, seeded by setting
 * rng_state, so that each test draws the same values on every machine. */
#ifndef LLMCHAT_TEST_RNG_H
#define LLMCHAT_TEST_RNG_H

#include <stdint.h>

static uint64_t rng_state;

static inline uint32_t rng_u32(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

/* uniform in [-1, 1) */
static inline float rng_f(void)
{
    return (float)(rng_u32() % 2000001) / 1000000.0f - 1.0f;
}

#endif
