/* tokenizer_bpe.h — the BPE half of the tokenizer (GGUF tokenizer.ggml.model "gpt2",
 * byte-level: Llama 3.x, Qwen2/2.5/3/3.5, Phi-4-mini, SmolLM2, GPT-2; and "gemma4",
 * Gemma 4's BPE over SentencePiece's pieces), used by tokenizer.c behind tokenizer.h's
 * one interface; nothing else includes it.
 *
 * Encoding is llama.cpp's: the text is split into words by the pre-tokenizer's regular
 * expressions (tokenizer.ggml.pre: "llama-bpe" and its aliases, "qwen2" (Qwen2, Qwen2.5,
 * Qwen3), "qwen35", "gpt-4o" (o200k: Phi-4-mini), "smollm", "gpt-2", "default",
 * and "gemma4", which tokenizer.c names for that model; run with PCRE2),
 * then each word's bytes are merged pairwise, lowest merge rank first (leftmost on
 * ties), and each final piece becomes its token.
 * Pieces are handled as the raw bytes they stand for: GGUF stores them through GPT-2's
 * byte-to-character mapping ("Ġ" for a space), which bpe_unmap undoes once at load. */
#ifndef LLMCHAT_TOKENIZER_BPE_H
#define LLMCHAT_TOKENIZER_BPE_H

#include <stdbool.h>
#include <stddef.h>

#include "gguf.h"
#include "status.h"

typedef struct tokenizer_bpe tokenizer_bpe;

/* Looks a normal piece up by its raw bytes: its id or -1 (tokenizer.c's hash table). */
typedef int (*bpe_lookup_fn)(const void *vocab, const char *s, size_t len);

/* Gemma 4's pieces and merges are SentencePiece's instead: a space is "▁", stored and
 * merged as a space, and merging starts from UTF-8 characters, not bytes. */

/* Copies s (len bytes) into out with each "▁" (U+2581, SentencePiece's space) written
 * as a space; returns the length (at most len; out may be s). */
size_t spaces_unescaped(char *out, const char *s, size_t len);

/* Copies GPT-2-mapped text s (len bytes) as the raw bytes it stands for into out (room
 * for len bytes); returns the length, or -1 when s has a character outside the
 * mapping (or is not UTF-8). */
int bpe_unmap(char *out, const char *s, size_t len);

/* Whether pre names a pre-tokenizer llmchat runs; *add_bos receives its BOS default,
 * *spm_pieces whether its pieces are SentencePiece's (gemma4: "▁" for a space, not
 * GPT-2 byte-mapped, "<0xNN>" byte tokens); either may be NULL. */
bool bpe_pre_known(const char *pre, bool *add_bos, bool *spm_pieces);

/* Builds the merges table and the pre-tokenizer: merges is tokenizer.ggml.merges
 * ("a b" strings, rank = index), both halves of each must be normal pieces (lookup
 * on vocab, which must outlive the result). name is used in messages. */
llm_status tokenizer_bpe_new(const char *name, const char *pre, const gguf_array *merges,
                             bpe_lookup_fn lookup, const void *vocab, tokenizer_bpe **out,
                             llm_err *err);
void tokenizer_bpe_free(tokenizer_bpe *b); /* NULL does nothing */

/* Encodes text (len bytes) as tokenizer_encode does; byte_id[b] is the token of the
 * one-byte piece b (every byte has one). Returns the number of ids needed, -1 when
 * out of memory. */
int tokenizer_bpe_encode(const tokenizer_bpe *b, const int *byte_id, const char *text,
                         size_t len, int *ids, int max);

#endif
