/* status_line.c — not written yet. */
