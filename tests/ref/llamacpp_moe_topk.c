/* llamacpp_moe_topk.c — what llama.cpp (0.4.0, through llama.h) computes on a
 * mixture-of-experts model: its greedy ids and the experts each layer chose
 * (the graph's "ffn_moe_topk-N" tensors, caught with llama_context_params.cb_eval) for
 * every position it evaluated. A tool for making goldens by hand
 * (make_llamacpp_goldens.py moe); not built by make check.
 *
 *     llamacpp_moe_topk MODEL PROMPT N_PREDICT [CTX]
 *
 * Tokenizes PROMPT as llama-completion does (the vocabulary's BOS, special tokens parsed),
 * evaluates it as one batch with every position's output asked for (so that the last layer
 * routes every position, not only the last one: llama.cpp otherwise drops the other rows
 * before that layer's feed-forward), then appends the argmax of the logits N_PREDICT times,
 * evaluating each new id but the last, and stopping after an end-of-generation id (not
 * evaluated). An f32 KV cache, no flash attention (llama-completion -fa off), 1 thread, CTX (default 4096) of context. Prints JSON Lines
 * on stdout:
 *     {"prompt_ids": [...], "ids": [...], "eog": false}
 *     {"layer": L, "pos": P, "topk": [e0, e1, ...]}      one a layer and position
 * ids are all the chosen ids (eog: the last is an end-of-generation id); topk the chosen
 * experts in llama.cpp's order (ggml_argsort_top_k: descending probability). Positions
 * 0 .. len(prompt_ids) + len(ids) - 2 are routed. With LLAMACPP_DUMP=NAME set, the F32
 * tensors named NAME-N (a graph name: ffn_moe_logits, ffn_moe_probs, ffn_inp, ...) are
 * printed too, {"name", "layer", "pos", "values"} a line (a diagnosis aid).
 *
 * Build (the npm package's prebuilt libraries and the same release's headers):
 *     B=/work/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
 *     S=/work/npm/llama.cpp-0.4.0-src
 *     gcc -O1 -o /tmp/llamacpp_moe_topk tests/ref/llamacpp_moe_topk.c -I$S/include \
 *         -I$S/ggml/include -L$B -l:libllama.v0.4.0.so -l:libggml.v0.4.0.so \
 *         -l:libggml-base.so -Wl,-rpath,$B
 *     LD_LIBRARY_PATH=$B GGML_BACKEND_DIR=$B /tmp/llamacpp_moe_topk MODEL 'Once upon a time' 41
 * GGML_BACKEND_DIR names the directory of the CPU backends (libggml-cpu-*.so), loaded at
 * run time; default: the libraries' directory given by the build line above. */
#define _GNU_SOURCE /* open_memstream */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "ggml.h"
#include "llama.h"

#ifndef BACKEND_DIR
#define BACKEND_DIR "/work/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64"
#endif
#define TOPK_NAME "ffn_moe_topk-"

/* Where the batch being evaluated starts (its first position), and where its routes go. */
typedef struct {
    int pos0;
    FILE *out;
} route_state;

/* The F32 tensors named $LLAMACPP_DUMP-N (a diagnosis aid): one line a position,
 * {"name", "layer", "pos", "values"}. */
static void dump(const struct ggml_tensor *t, const route_state *st)
{
    const char *dash = strrchr(t->name, '-');
    for (int64_t j = 0; j < t->ne[1]; j++) {
        fprintf(st->out, "{\"name\": \"%.*s\", \"layer\": %s, \"pos\": %d, \"values\": [",
                (int)(dash - t->name), t->name, dash + 1, st->pos0 + (int)j);
        for (int64_t i = 0; i < t->ne[0]; i++) {
            float v;
            ggml_backend_tensor_get(t, &v, i * t->nb[0] + j * t->nb[1], sizeof v);
            fprintf(st->out, "%s%.9g", i ? ", " : "", v);
        }
        fprintf(st->out, "]}\n");
    }
}

/* cb_eval: asks for the ffn_moe_topk-N tensors and prints them, one line a position. */
static bool on_tensor(struct ggml_tensor *t, bool ask, void *user)
{
    const char *extra = getenv("LLAMACPP_DUMP");
    const char *dash = strrchr(t->name, '-');
    if (extra && dash && t->type == GGML_TYPE_F32 && strlen(extra) == (size_t)(dash - t->name) &&
        !strncmp(t->name, extra, strlen(extra)) && t->ne[2] == 1) {
        if (!ask)
            dump(t, user);
        return true;
    }
    if (strncmp(t->name, TOPK_NAME, strlen(TOPK_NAME)) != 0)
        return ask ? false : true;
    if (ask)
        return true;
    const route_state *st = user;
    int layer = atoi(t->name + strlen(TOPK_NAME));
    if (t->type != GGML_TYPE_I32) {
        fprintf(stderr, "llamacpp_moe_topk: %s is not I32\n", t->name);
        exit(1);
    }
    int64_t k = t->ne[0], n = t->ne[1];
    for (int64_t j = 0; j < n; j++) {
        fprintf(st->out, "{\"layer\": %d, \"pos\": %d, \"topk\": [", layer, st->pos0 + (int)j);
        for (int64_t i = 0; i < k; i++) {
            int32_t e;
            ggml_backend_tensor_get(t, &e, i * t->nb[0] + j * t->nb[1], sizeof e);
            fprintf(st->out, "%s%d", i ? ", " : "", e);
        }
        fprintf(st->out, "]}\n");
    }
    return true;
}

static void quiet(enum ggml_log_level level, const char *text, void *user)
{
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR)
        fputs(text, stderr);
}

static int argmax(const float *v, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best])
            best = i;
    return best;
}

static void print_ids(const char *key, const llama_token *ids, int n)
{
    printf("\"%s\": [", key);
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? ", " : "", ids[i]);
    printf("]");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: llamacpp_moe_topk MODEL PROMPT N_PREDICT [CTX]\n");
        return 2;
    }
    int n_predict = atoi(argv[3]), n_ctx = argc > 4 ? atoi(argv[4]) : 4096;
    const char *dir = getenv("GGML_BACKEND_DIR");
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(dir ? dir : BACKEND_DIR);
    llama_backend_init();

    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "llamacpp_moe_topk: cannot load %s\n", argv[1]);
        return 1;
    }
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);

    int cap = (int)strlen(argv[2]) + 8;
    llama_token *prompt = malloc(sizeof *prompt * cap);
    int n_prompt = llama_tokenize(vocab, argv[2], (int)strlen(argv[2]), prompt, cap, true, true);
    if (n_prompt <= 0 || n_prompt + n_predict > n_ctx) {
        fprintf(stderr, "llamacpp_moe_topk: cannot tokenize the prompt, or it is too long\n");
        return 1;
    }

    route_state st = {0};
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = n_ctx;
    cp.n_batch = cp.n_ubatch = n_ctx;
    cp.n_threads = cp.n_threads_batch = 1;   /* 2 threads without a threadpool: seconds a token on a busy machine */
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.cb_eval = on_tensor;
    /* flash attention (on by default, "auto") rounds q and k through half precision on the
     * CPU: 1e-4 relative on every attention output, enough to flip close routes */
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.cb_eval_user_data = &st;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) {
        fprintf(stderr, "llamacpp_moe_topk: cannot make a context\n");
        return 1;
    }

    /* the routes are written as the batches run, the ids line first: keep them aside */
    char *routes = NULL;
    size_t routes_len = 0;
    st.out = open_memstream(&routes, &routes_len);

    struct llama_batch batch = llama_batch_init(n_ctx, 0, 1);
    for (int i = 0; i < n_prompt; i++) {
        batch.token[i] = prompt[i];
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n_prompt;
    llama_token *ids = calloc(n_predict + 1, sizeof *ids);
    int n_ids = 0;
    bool eog = false;
    int pos = 0, last = n_prompt - 1;
    while (n_ids < n_predict) {
        st.pos0 = pos;
        if (llama_decode(ctx, batch) != 0) {
            fprintf(stderr, "llamacpp_moe_topk: llama_decode failed at position %d\n", pos);
            return 1;
        }
        pos += batch.n_tokens;
        llama_token id = argmax(llama_get_logits_ith(ctx, last), n_vocab);
        ids[n_ids++] = id;
        if (llama_vocab_is_eog(vocab, id)) {
            eog = true;
            break;
        }
        if (n_ids == n_predict)
            break;
        batch.token[0] = id;
        batch.pos[0] = pos;
        batch.logits[0] = 1;
        batch.n_tokens = 1;
        last = 0;
    }
    fclose(st.out);
    printf("{");
    print_ids("prompt_ids", prompt, n_prompt);
    printf(", ");
    print_ids("ids", ids, n_ids);
    printf(", \"eog\": %s}\n", eog ? "true" : "false");
    fwrite(routes, 1, routes_len, stdout);
    free(routes);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    free(ids);
    free(prompt);
    return 0;
}
