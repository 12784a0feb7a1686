/* tui.c — not written yet. */
