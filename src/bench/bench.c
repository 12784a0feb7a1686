/* bench.c — not written yet. */
