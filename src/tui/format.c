/* format.c — not written yet. */
