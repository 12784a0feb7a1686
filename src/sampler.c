/* sampler.c — not written yet. */
