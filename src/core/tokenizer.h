/* tokenizer.h — the tokenizer: SentencePiece-compatible BPE over a llama2.c
 * tokenizer.bin or a GGUF vocabulary of model "llama" (Llama 2, TinyLlama, Phi-3, Gemma:
 * below), or byte-level BPE with ranked merges over a GGUF vocabulary of model "gpt2"
 * (Llama 3, Qwen2/2.5/3, Phi-4-mini, SmolLM2: see tokenizer_bpe.h; its pieces are the raw
 * bytes they stand for, no dummy prefix).
 *
 * Encoding first splits the text at the vocabulary's user-defined tokens (Gemma's
 * newline, tab and space runs and HTML tags, Qwen's <think>), the longest first, as
 * llama.cpp and Hugging Face's tokenizers split out added tokens (not one spelt as a
 * template marker, "<|user|>"); each stretch between them is then encoded on its own. SentencePiece BPE as configured for Llama: one space
 * is prepended to each stretch (the dummy prefix; not with add_space_prefix false, as
 * Gemma's), each UTF-8 character maps to its piece or else to its byte-fallback tokens
 * (<0xNN>), then the adjacent pair whose concatenation is a normal piece with the
 * highest score is merged, leftmost on ties, until no pair merges. Control tokens
 * (<unk>, <s>, </s>, template markers such as <|im_start|>) and byte tokens never come
 * out of merging, so user text can never produce a control token.
 * Decoding turns byte tokens into raw bytes and drops the leading space of the first
 * piece after BOS. The tokenizer owns its vocabulary; it is immutable after open,
 * so one tokenizer may be shared by several readers. */
#ifndef LLMCHAT_TOKENIZER_H
#define LLMCHAT_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"

/* The special ids of llama2.c's tokenizer.bin (and of Llama's vocabulary). */
enum { TOKEN_UNK = 0, TOKEN_BOS = 1, TOKEN_EOS = 2 };

/* The longest piece a tokenizer may hold, in bytes: longer ones are refused at load,
 * so a buffer of TOKENIZER_PIECE_MAX + 1 bytes holds any decoded token. */
enum { TOKENIZER_PIECE_MAX = 1024 };

typedef struct tokenizer tokenizer;
struct gguf;

/* Loads a llama2.c tokenizer.bin (an int32 max_token_length, then per token a float
 * score, an int32 length and the piece's bytes; every length must be within
 * max_token_length and TOKENIZER_PIECE_MAX), or the vocabulary of a GGUF file (a model
 * or a vocabulary-only file; pieces longer than TOKENIZER_PIECE_MAX are refused too).
 * When vocab_size > 0 the file must hold exactly that many tokens (the model's
 * vocab_size), else a LLM_ERR_MISMATCH names both. */
llm_status tokenizer_open(const char *path, int vocab_size, tokenizer **out, llm_err *err);

/* Builds the tokenizer from parsed GGUF metadata: tokenizer.ggml.model must be
 * "llama" (tokens, scores, token types) or "gpt2" (tokens, token types, merges and a
 * known tokenizer.ggml.pre: llama-bpe, qwen2, gpt-4o, smollm, gpt-2, default);
 * anything else is refused by name. BOS/EOS/UNK/EOT/EOM
 * ids, add_bos_token and add_space_prefix are honoured.
 * name is used in messages. */
llm_status tokenizer_from_gguf(const struct gguf *g, const char *name, int vocab_size,
                               tokenizer **out, llm_err *err);
void tokenizer_close(tokenizer *t); /* NULL does nothing */

int tokenizer_vocab_size(const tokenizer *t);
int tokenizer_bos(const tokenizer *t);   /* TOKEN_BOS for tokenizer.bin */
int tokenizer_eos(const tokenizer *t);
int tokenizer_unk(const tokenizer *t);
bool tokenizer_adds_bos(const tokenizer *t); /* the vocabulary asks for BOS before text */
/* The end-of-turn token (tokenizer.ggml.eot_token_id, else a control token spelt
 * <|eot_id|>, <|im_end|>, ...), or -1. */
int tokenizer_eot(const tokenizer *t);
/* True for a token that ends a generation: EOS, EOT, EOM and the control tokens spelt
 * as the common end-of-turn markers (llama.cpp's end-of-generation set). */
bool tokenizer_is_eog(const tokenizer *t, int id);
/* True for a byte-level BPE vocabulary (GGUF tokenizer.ggml.model "gpt2"). */
bool tokenizer_is_bpe(const tokenizer *t);

/* The id of the control or user-defined token whose piece is exactly `piece`
 * ("<|im_start|>"), or -1. */
int tokenizer_special(const tokenizer *t, const char *piece);

/* The GGUF token type of id: 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused,
 * 6 byte (0 for a bad id). */
int tokenizer_token_type(const tokenizer *t, int id);

/* Encodes text (NUL-terminated UTF-8; invalid bytes go to byte tokens) without BOS.
 * Writes at most max ids and returns the number of ids the text needs, which may be
 * larger than max (then call again with a bigger buffer). Returns -1 only when
 * memory runs out. */
int tokenizer_encode(const tokenizer *t, const char *text, int *ids, int max);

/* The stored piece of id (spaces as ' ', BOS as "\n<s>\n", ...); "" for a bad id. */
const char *tokenizer_piece(const tokenizer *t, int id);
/* The piece's score (merge priority). */
float tokenizer_score(const tokenizer *t, int id);
/* True for control tokens: <unk>, <s>, </s> and template markers. */
bool tokenizer_is_control(const tokenizer *t, int id);
/* For a byte-fallback token "<0xNN>" returns NN (0..255), else -1. */
int tokenizer_byte(const tokenizer *t, int id);

/* The bytes that `id` contributes to the text when it follows `prev`: a byte token
 * gives its raw byte, a control token gives nothing, the first piece after BOS loses
 * its leading space. Writes at most size-1 bytes plus a NUL; returns the length. */
size_t tokenizer_decode(const tokenizer *t, int prev, int id, char *buf, size_t size);

#endif
