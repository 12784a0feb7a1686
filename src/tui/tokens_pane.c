/* tokens_pane.c — not written yet. */
