/* transformer.c — not written yet. */
