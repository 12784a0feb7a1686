/* conversation.c — not written yet. */
