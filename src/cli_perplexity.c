/* cli_perplexity.c — not written yet. */
