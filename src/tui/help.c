/* help.c — not written yet. */
