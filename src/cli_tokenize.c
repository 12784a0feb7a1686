/* cli_tokenize.c — not written yet. */
