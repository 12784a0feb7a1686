/* tokenizer.c — not written yet. */
