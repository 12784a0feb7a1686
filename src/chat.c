/* chat.c — not written yet. */
