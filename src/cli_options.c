/* cli_options.c — not written yet. */
