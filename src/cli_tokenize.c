/* cli_tokenize.c — `-m tokenize`: prints the token ids of the input (no BOS) on one
 * line, or with --pieces the pieces, spaces shown as SentencePiece's "▁". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "textfmt.h"

static void put_piece(const char *piece)
{
    char esc[512];
    textfmt_escape_piece(piece, strlen(piece), false, esc, sizeof esc);
    for (const char *p = esc; *p; p++) {
        if (*p == ' ')
            fputs("\u2581", stdout);
        else
            putchar(*p);
    }
}

int cli_tokenize(const cli_options *o, const tokenizer *tok)
{
    char *text = cli_read_input(o);
    if (!text)
        return 1;
    int need = tokenizer_encode(tok, text, NULL, 0);
    int *ids = need >= 0 ? malloc(sizeof(int) * (need > 0 ? need : 1)) : NULL;
    if (!ids) {
        fprintf(stderr, "llmchat: out of memory tokenizing the input\n");
        free(text);
        return 1;
    }
    int n = tokenizer_encode(tok, text, ids, need);
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
    free(text);
    return fflush(stdout) == 0 ? 0 : 1;
}
