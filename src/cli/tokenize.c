/* tokenize.c — `-m tokenize`: prints the token ids of the input (no BOS) on one
 * line, or with --pieces the pieces, spaces shown as "␣" (U+2423) and control
 * characters as pictures, as the TUI shows them (textfmt). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "session.h"
#include "textfmt.h"
#include "std_streams.h"

static void put_piece(const char *piece)
{
    char esc[512];
    textfmt_escape_piece(piece, strlen(piece), true, esc, sizeof esc);
    fputs(esc, stdout);
}

int cli_tokenize(const app_options *o, const tokenizer *tok)
{
    int n;
    int *ids = session_encode_input(o, tok, false, &n);
    if (!ids)
        return 1;
    for (int i = 0; i < n; i++) {
        if (i)
            putchar(' ');
        if (o->pieces)
            put_piece(tokenizer_piece(tok, ids[i]));
        else
            printf("%d", ids[i]);
    }
    putchar('\n');
    free(ids);
    return std_streams_flush() ? 0 : 1; /* a failure is said by main */
}
