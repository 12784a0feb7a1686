/* attention_pane.c — not written yet. */
