/* draw.c — not written yet. */
