/* cli_generate.c — not written yet. */
