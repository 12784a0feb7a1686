/* cli_chat.c — not written yet. */
