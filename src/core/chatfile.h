/* chatfile.h — the saved-chat file: one JSON object holding a whole conversation and
 * what is needed to carry it on (model, tokenizer, template, system prompt, sampler
 * settings). Autosave, --resume, /resume, /save and /load all use it; the format is
 * documented in the man page (SAVED CHATS) and docs/formats.md:
 *
 *   {"llmchat_chat": 1,
 *    "model": "/abs/chat260K.bin", "tokenizer": "/abs/tok512.bin", "template": "llama2",
 *    "system": "…", "vocab_size": 512, "vocab_hash": "98d2a016b088e6fd",
 *    "settings": {"temperature": 1, "top-p": 0.9, "top-k": 0, "min-p": 0,
 *                 "repeat-penalty": 1, "repeat-last-n": 64, "seed": 42,
 *                 "steps": 256, "ctx": 512},
 *    "turns": [{"user": "…", "reply": "…", "reply_tokens": [31, 5, …], "end_token": 2,
 *               "complete": true, "cut": false, "in_context": true}, …]}
 *
 * "reply_tokens" are the reply's ids in the context without the token that closed it;
 * "end_token" is that token (EOS, <|eot_id|>, or another stop such as <|im_start|>),
 * absent when nothing closed the reply. Both mean something only in the vocabulary of
 * "vocab_size" tokens whose fingerprint is "vocab_hash" (16 hex digits: chat_save.c).
 * Files from before "end_token" and "vocab_hash" lack them; their readers ignore them
 * and close a reply with the template's end token, as they always did.
 *
 * A chat saved with its branches (/save --all, autosave) is version 2: a turn whose
 * reply has other branches adds
 *
 *      "branch": 2, "branches": [{"reply": "…", "reply_tokens": […],
 *                                 "complete": true, "cut": false}, …]
 *
 * "reply" and "reply_tokens" above are the branch in the context, number "branch"
 * (from 1) of the n_branches + 1; "branches" holds the others in order. A file
 * without branches is written as version 1, so that older readers read it; they
 * refuse a version 2 file rather than drop its branches unseen.
 *
 * A chat saved while interventions were in force (control vectors, knocked-out heads or
 * experts, forced experts) is version 3 and holds them as they were when it was saved:
 *
 *    "steer": {"vectors": [{"name": "happy", "path": "/v/happy.gguf", "scale": 2,
 *              "fnv1a64": "…"}], "layers": null, "heads_out": [[4, 4]]}
 *
 * (intervention_json.h, as a trace's "steer"). Loading the chat sets them again;
 * older readers refuse such a file rather than read its replies under the plain model
 * unsaid. A turn whose positions did not all run with those is version 4 and adds what
 * they ran with, by segment (ran_with.h: "from" counted from the reply's first token,
 * negative in the prompt; the first segment also covers what is before it):
 *
 *      "ran_with": [{"from": -36, "steer": {"vectors": [], "layers": null,
 *                                           "heads_out": []}}, {"from": 12, …}]
 *
 * so that the context is read back, turn by turn, as it ran; a branch (in "branches")
 * may hold its own the same way, read when it is switched to. A version 3 reader would
 * read such turns under "steer" and refuses the file instead.
 *
 * A chat with a served model (llmchat --server) names the server instead of a model
 * file, and its replies carry no ids (the server's vocabulary is not known here):
 *
 *    "server": {"url": "http://gpu-box:8080", "api": "llama-server",
 *               "model": "qwen3-8b-q4_k_m.gguf"}
 *
 * Extensible: readers ignore members they do not know, so later additions (a
 * template's own text) need no new version; "llmchat_chat" grows only when an old
 * reader would misread or lose part of a new file, and a reader refuses versions
 * newer than its own. Strings are UTF-8; a byte that is not valid UTF-8 is written as the
 * lone surrogate \udcXX, and the file says so with "raw_bytes": "\\udcXX" after its
 * version (json.h), so any text round-trips, through other JSON tools too. A file
 * without that member (llmchat before it) wrote such a byte as \u00XX and is read so;
 * old readers refuse a \udcXX rather than misread it.
 *
 * This module reads and writes the file; it does not touch a chat (chat_to_file and
 * chat_restore in chat.h do). Writing is crash-safe: a temporary file beside the
 * target, fsync, rename, fsync of the directory. */
#ifndef LLMCHAT_CHATFILE_H
#define LLMCHAT_CHATFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "ran_with.h"
#include "sampler.h"
#include "settings.h"
#include "status.h"

enum { CHATFILE_VERSION = 4 };  /* the newest this reader reads; 1 = no branches, 2 = no
                                   interventions, 3 = those of the save for every turn */

typedef struct {
    char *reply;          /* the branch's text (owned) */
    int *reply_tokens;    /* (n_reply_tokens) its ids, without the token that closed it;
                             NULL when not known (owned) */
    int n_reply_tokens;
    int end_token;        /* the stop token that closed it; -1: none or not known */
    bool complete;        /* closed with a stop token (else it was left open) */
    bool cut;             /* stopped short */
    ran_with ran;         /* what its positions ran with, when not all "steer" (owned) */
} chatfile_branch;

typedef struct {
    char *user;           /* the user's message (owned) */
    char *reply;          /* the reply as shown (owned; "" when none) */
    int *reply_tokens;    /* (n_reply_tokens) the reply's ids as the model produced them,
                             without the token that closed it; NULL when not known (owned) */
    int n_reply_tokens;
    int end_token;        /* the stop token that closed the reply in the context (the
                             model's, or the end token a cut reply got); -1: none, or not
                             known (an older file) */
    bool complete;        /* the reply was closed with a stop token */
    bool cut;             /* the reply was stopped short (step limit, user, context) */
    bool in_context;      /* false for a turn dropped from the context to make room */
    chatfile_branch *branches; /* (n_branches) the reply's other branches, in order (owned) */
    int n_branches;
    int branch;           /* where the reply above sits among all n_branches + 1 (0-based) */
    ran_with ran;         /* the interventions its positions ran with, when they were not
                             all the file's "steer" (ran_with.h; owned); none: steer */
} chatfile_turn;

typedef struct chatfile {
    int version;          /* of the file read; CHATFILE_VERSION for one being written */
    char *model;          /* model path, or NULL (owned) */
    char *tokenizer;      /* tokenizer path, or NULL (owned) */
    char *template_name;  /* "llama2" (owned; NULL = the default) */
    char *system;         /* system prompt, "" for none (owned) */
    int vocab_size;       /* vocabulary the reply ids belong to; 0 = none stored */
    char *vocab_hash;     /* that vocabulary's fingerprint, 16 hex digits; NULL = not
                             stored (owned) */
    char *server;         /* a served chat's server URL; NULL for a local chat (owned) */
    char *server_api;     /* its API ("llama-server", "openai", "ollama"; owned) */
    char *server_model;   /* the model it served (owned) */
    sampler_config sampler; /* the file's "settings" (the defaults where it names none) */
    unsigned settings_held; /* as read: the settings its "settings" names (bit i:
                               settings_table's row i); one it leaves out stays as the
                               loading session has it (chatfile_settings_onto) */
    int steps;            /* reply step limit; 0 = until EOS */
    int ctx;              /* context length; 0 = the model's */
    chatfile_turn *turns; /* (n_turns), oldest first (owned) */
    int n_turns;
    struct intervention *steer; /* the interventions in force when saved, or NULL (owned:
                                   one block, intervention_json.h; heads numbered with
                                   the row width 4096 when read) */
} chatfile;

/* An empty chat file: no turns, default sampler settings, version CHATFILE_VERSION. */
void chatfile_init(chatfile *cf);
/* Frees what cf owns and empties it; cf itself is the caller's. */
void chatfile_clear(chatfile *cf);

/* Appends a turn (copying the texts and the ids; end_token -1, set it after);
 * LLM_ERR_NOMEM on no memory. */
llm_status chatfile_add_turn(chatfile *cf, const char *user, const char *reply,
                             const int *reply_tokens, int n_reply_tokens, bool complete,
                             bool cut, bool in_context, llm_err *err);
/* Appends a branch to turn `turn`'s others (copying; end_token -1); the turn's own reply is
 * branch number cf->turns[turn].branch. LLM_ERR_ARG for a turn out of range. */
llm_status chatfile_add_branch(chatfile *cf, int turn, const char *reply,
                               const int *reply_tokens, int n_reply_tokens, bool complete,
                               bool cut, llm_err *err);
/* Sets one of cf's owned strings (model, tokenizer, template_name, system, vocab_hash,
 * server, server_api, server_model) to a copy of s
 * (NULL allowed). */
llm_status chatfile_set(char **field, const char *s, llm_err *err);

/* Parses a saved chat from data[0..len) into cf (initialised here). name is used in
 * messages ("chat.json: turn 3: \"user\" is missing"). On failure cf is left empty. */
llm_status chatfile_parse(const char *name, const char *data, size_t len, chatfile *cf,
                          llm_err *err);
/* Reads and parses the file at path (at most CHATFILE_MAX_BYTES). */
llm_status chatfile_read(const char *path, chatfile *cf, llm_err *err);
/* Sets in s each setting cf's "settings" named (settings_held: the sampler's, the
 * seed, the step limit) but those keep marks (bit i: settings_table's row i; 0: none),
 * leaving the others as they are. Returns the settings it set (a mask as keep). */
unsigned chatfile_settings_onto(const chatfile *cf, live_settings *s, unsigned keep);
enum { CHATFILE_MAX_BYTES = 256 << 20 };

/* Writes cf as JSON to f (chatfile_write's content, without its safety net). */
void chatfile_print(FILE *f, const chatfile *cf);

/* Writes cf to path atomically: path's directory gets a temporary file that is
 * written, fsync'd and renamed over path, so a reader (or a crash) sees the old file
 * or the new one, never a mix. */
llm_status chatfile_write(const chatfile *cf, const char *path, llm_err *err);

#endif
