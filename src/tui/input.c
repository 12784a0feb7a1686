/* input.c — not written yet. */
