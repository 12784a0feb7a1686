/* textfmt.c — not written yet. */
