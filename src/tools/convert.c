/* convert.c — llmchat-convert: writes any model llmchat reads as a GGUF file (Q8_0 or
 * F32, tokenizer and chat template embedded) or as a llama2.c checkpoint (v2 int8 or
 * v1 fp32, with a tokenizer.bin beside it). A front end over model_open and
 * model_write.h: it parses options, finds the tokenizer, prints and exits.
 *
 * The input is opened in fp32 when its matrices are fp32, F16 or BF16 (quantized once,
 * when written), else in Q8_0 (a quantized input is decoded to Q8_0 as llmchat loads it,
 * then written again: exact for Q8_0 written as Q8_0, up to the scales' half
 * precision). */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "progress.h"
#include "config.h"
#include "ggml_type.h"
#include "gguf.h"
#include "input_file.h"
#include "llama2c.h"
#include "model.h"
#include "model_write.h"
#include "openmp_wait.h"
#include "parse_number.h"
#include "std_streams.h"
#include "template.h"
#include "tokenizer.h"

typedef struct {
    const char *in, *out;
    model_write_type type;
    int gguf;                  /* 1 gguf, 0 llama2c, -1 from OUT's name */
    const char *tokenizer;     /* -z */
    const char *template_name; /* --template */
    const char *tokenizer_out; /* --tokenizer-out */
    int threads;
} options;

static const char synopsis[] = "usage: llmchat-convert [OPTIONS] IN OUT\n";

static void usage(FILE *f)
{
    fputs(synopsis, f);
    fputs("Writes the model IN (a file of the llama architecture that llmchat reads) as\n"
          "OUT.\n"
          "\n"
          "  -t, --type TYPE         q8_0 (default) or f32\n"
          "  -F, --format FORMAT     gguf or llama2c (default: gguf when OUT ends in .gguf,\n"
          "                          else llama2c)\n"
          "  -z, --tokenizer FILE    IN's tokenizer (default: IN's own, else tokenizer.bin\n"
          "                          or tokN.bin beside IN)\n"
          "      --template NAME     a GGUF OUT's chat template: llama2, mistral, zephyr,\n"
          "                          chatml, llama3, llama3.1, qwen3, qwen35, gemma,\n"
          "                          gemma4, phi3, phi4-mini or harmony\n"
          "                          (default: IN's own, if it has one)\n"
          "      --tokenizer-out F   llama2c: write the tokenizer to F (default: tokN.bin\n"
          "                          beside OUT, N the vocabulary size)\n"
          "  -T, --threads N         OpenMP threads (default: all cores)\n"
          "  -h, --help              show this help\n"
          "  -V, --version           show the version\n"
          "\n"
          "GGUF: version 3, llama architecture, Q8_0 tensors (F32 for rows that are not a\n"
          "multiple of 32), the tokenizer embedded. llama2c: version 2 (int8, groups of 32)\n"
          "or 1 (fp32). Exit status: 0 success, 1 runtime failure, 2 usage error.\n"
          "See llmchat-convert(1).\n",
          f);
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "llmchat-convert: %s%s%s\n%sTry 'llmchat-convert --help' for more information.\n",
            msg, arg ? " " : "", arg ? arg : "", synopsis);
    return 2;
}

/* The usage error for the wrong count of operands: which are missing, or the first extra. */
static int operands_error(int argc, char **argv, int first)
{
    int n = argc - first;
    if (n == 0)
        return usage_error("missing operands IN and OUT (the model to read, the file to write)",
                           NULL);
    if (n == 1)
        return usage_error("missing operand OUT (the file to write) after IN", argv[first]);
    return usage_error("too many operands: IN and OUT are all it takes, not also", argv[first + 2]);
}

static int parse(int argc, char **argv, options *o)
{
    enum { OPT_TEMPLATE = 256, OPT_TOKENIZER_OUT };
    static const struct option longs[] = {
        {"type", required_argument, NULL, 't'},       {"format", required_argument, NULL, 'F'},
        {"tokenizer", required_argument, NULL, 'z'},  {"template", required_argument, NULL, OPT_TEMPLATE},
        {"tokenizer-out", required_argument, NULL, OPT_TOKENIZER_OUT},
        {"threads", required_argument, NULL, 'T'},    {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},          {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->gguf = -1;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":t:F:z:T:hV", longs, NULL)) != -1) {
        switch (c) {
        case 't':
            if (!strcmp(optarg, "q8_0") || !strcmp(optarg, "int8")) o->type = MODEL_WRITE_Q8_0;
            else if (!strcmp(optarg, "f32") || !strcmp(optarg, "fp32")) o->type = MODEL_WRITE_F32;
            else return usage_error("--type must be q8_0 or f32, not", optarg);
            break;
        case 'F':
            if (!strcmp(optarg, "gguf")) o->gguf = 1;
            else if (!strcmp(optarg, "llama2c")) o->gguf = 0;
            else return usage_error("--format must be gguf or llama2c, not", optarg);
            break;
        case 'z': o->tokenizer = optarg; break;
        case OPT_TEMPLATE: {
            template_kind k;
            if (!template_kind_parse(optarg, &k))
                return usage_error("--template must be llama2, mistral, zephyr, chatml, llama3, "
                                   "llama3.1, qwen3, qwen35, gemma, gemma4, phi3, phi4-mini or "
                                   "harmony, not",
                                   optarg);
            o->template_name = optarg;
            break;
        }
        case OPT_TOKENIZER_OUT: o->tokenizer_out = optarg; break;
        case 'T':
            if (!parse_int(optarg, 1, 1024, &o->threads))
                return usage_error("--threads must be an integer in 1..1024, not", optarg);
            break;
        case 'h': usage(stdout); return -1;
        case 'V': printf("llmchat-convert %s\n", PACKAGE_VERSION); return -1;
        case ':': return usage_error("this option needs a value:", argv[optind - 1]);
        default: return usage_error("unknown option", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        return operands_error(argc, argv, optind);
    o->in = argv[optind];
    o->out = argv[optind + 1];
    if (!strcmp(o->in, o->out))
        return usage_error("IN and OUT are the same file:", o->in);
    if (o->gguf < 0) {
        size_t n = strlen(o->out);
        o->gguf = n > 5 && !strcmp(o->out + n - 5, ".gguf");
    }
    if (o->template_name && !o->gguf)
        return usage_error("--template needs a GGUF OUT", NULL);
    if (o->tokenizer_out && o->gguf)
        return usage_error("--tokenizer-out is for a llama2c OUT", NULL);
    return 0;
}

/* Whether IN's matrices are stored in fp32, F16 or BF16 (then it is opened in fp32). */
static bool input_is_float(const char *path)
{
    int fd = input_file_open(path, NULL);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < 8) {
        if (fd >= 0)
            close(fd);
        return false; /* model_open will say what is wrong */
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return false;
    bool fp = false;
    const unsigned char *p = map;
    if (!memcmp(p, "GGUF", 4)) {
        gguf *g;
        if (gguf_parse(map, (size_t)st.st_size, path, &g, NULL) == LLM_OK) {
            const gguf_tensor *t = gguf_find_tensor(g, "token_embd.weight");
            fp = t && (t->type == GGML_TYPE_F32 || t->type == GGML_TYPE_F16 || t->type == GGML_TYPE_BF16);
            gguf_free(g);
        }
    } else {
        llama2c_header h;
        fp = llama2c_header_decode(p, (size_t)st.st_size, &h) && h.version != 2;
    }
    munmap(map, (size_t)st.st_size);
    return fp;
}

/* The directory part of path, with a trailing '/' ("./" when none). */
static void dir_of(const char *path, char *out, size_t size)
{
    snprintf(out, size, "%s", path);
    char *slash = strrchr(out, '/');
    if (slash)
        slash[1] = '\0';
    else
        snprintf(out, size, "./");
}

/* IN's tokenizer: -z, else the GGUF's own, else tokenizer.bin or tok<N>.bin beside IN. */
static int open_tokenizer(const options *o, const model *m, tokenizer **out)
{
    llm_err err;
    int vocab = m->config.vocab_size;
    if (o->tokenizer) {
        if (tokenizer_open(o->tokenizer, vocab, out, &err) == LLM_OK)
            return 0;
        fprintf(stderr, "llmchat-convert: %s\n", err.text);
        return 1;
    }
    if (m->meta && gguf_find_key(m->meta, "tokenizer.ggml.model") >= 0) {
        if (tokenizer_from_gguf(m->meta, o->in, vocab, out, &err) == LLM_OK)
            return 0;
        fprintf(stderr, "llmchat-convert: %s\n", err.text);
        return 1;
    }
    char dir[4096], path[4200];
    dir_of(o->in, dir, sizeof dir);
    const char *names[2] = {"tokenizer.bin", NULL};
    char tok_n[32];
    snprintf(tok_n, sizeof tok_n, "tok%d.bin", vocab);
    names[1] = tok_n;
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s%s", dir, names[i]);
        if (access(path, R_OK) == 0 && tokenizer_open(path, vocab, out, &err) == LLM_OK)
            return 0;
    }
    fprintf(stderr, "llmchat-convert: no tokenizer with %d tokens beside %s (tokenizer.bin, %s); "
            "give one with -z FILE\n", vocab, o->in, tok_n);
    return 1;
}

/* Where a llama2c OUT's tokenizer goes: --tokenizer-out, else tok<N>.bin beside OUT
 * (into path). 0, with *write false when a tok<N>.bin with the same pieces and scores
 * is there already; 1 (said) when one with others is. */
static int tokenizer_place(const options *o, const tokenizer *tok, char *path, size_t size,
                           bool *write)
{
    int n = tokenizer_vocab_size(tok);
    *write = true;
    if (o->tokenizer_out) {
        snprintf(path, size, "%s", o->tokenizer_out);
        return 0;
    }
    struct stat st;
    if (stat(o->out, &st) == 0 && !S_ISREG(st.st_mode)) { /* /dev/stdout: no place beside it */
        fprintf(stderr, "llmchat-convert: %s is not a regular file, so the tokenizer has no "
                "place beside it; give --tokenizer-out FILE\n", o->out);
        return 1;
    }
    char dir[4096];
    dir_of(o->out, dir, sizeof dir);
    snprintf(path, size, "%stok%d.bin", dir, n);
    if (access(path, F_OK) != 0)
        return 0;
    llm_err err;
    tokenizer *there;
    bool same = tokenizer_open(path, n, &there, &err) == LLM_OK;
    for (int id = 0; same && id < n; id++)
        same = !strcmp(tokenizer_piece(there, id), tokenizer_piece(tok, id)) &&
               tokenizer_score(there, id) == tokenizer_score(tok, id);
    if (same) {
        tokenizer_close(there);
        *write = false;
        return 0;
    }
    fprintf(stderr, "llmchat-convert: %s exists and holds another tokenizer; give "
            "--tokenizer-out FILE\n", path);
    return 1;
}

/* Whether two names are one place: the same file, or the same name in the same
 * directory. */
static bool same_place(const char *a, const char *b)
{
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char da[4096], db[4096];
    dir_of(a, da, sizeof da);
    dir_of(b, db, sizeof db);
    char *ra = realpath(da, NULL), *rb = realpath(db, NULL);
    const char *na = strrchr(a, '/'), *nb = strrchr(b, '/');
    bool same = ra && rb && !strcmp(ra, rb) && !strcmp(na ? na + 1 : a, nb ? nb + 1 : b);
    free(ra);
    free(rb);
    return same;
}

/* The progress line while OUT is written (stderr a terminal). */
static void show_writing(void *user, uint64_t done, uint64_t total)
{
    progress_show_verb("writing", user, done, total);
}

/* Writes the model and, for a llama2c OUT, its tokenizer: both into temporary files,
 * renamed into place only when both are whole. 0, or 1 with a message. */
static int write_outputs(const options *o, const model *m, const tokenizer *tok)
{
    char tok_path[4200];
    bool with_tok = false;
    if (!o->gguf && tokenizer_place(o, tok, tok_path, sizeof tok_path, &with_tok) != 0)
        return 1;
    if (with_tok && same_place(tok_path, o->out)) {
        fprintf(stderr, "llmchat-convert: the tokenizer would be written over OUT (%s); give "
                "--tokenizer-out another FILE\n", o->out);
        return 1;
    }
    llm_err err;
    output_file *out = NULL, *tok_out = NULL;
    llm_status st = output_file_open(o->out, "the model", OUTPUT_FILE_MODE, &out, &err);
    if (st == LLM_OK && with_tok)
        st = output_file_open(tok_path, "the tokenizer", OUTPUT_FILE_MODE, &tok_out, &err);
    struct stat in;
    bool big = stat(o->in, &in) == 0 && (uint64_t)in.st_size >= MODEL_PROGRESS_MIN_BYTES;
    model_write_progress progress = {big && isatty(STDERR_FILENO) ? show_writing : NULL,
                                     (void *)o->out};
    if (st == LLM_OK && o->gguf) {
        const char *jinja = m->meta ? gguf_get_string(m->meta, "tokenizer.chat_template", NULL) : NULL;
        template_kind k;
        if (o->template_name && template_kind_parse(o->template_name, &k))
            jinja = template_kind_jinja(k);
        st = model_write_gguf(m, tok, jinja, o->type, out, &progress, &err);
    } else if (st == LLM_OK) {
        st = model_write_llama2c(m, o->type, out, &progress, &err);
    }
    if (st == LLM_OK && tok_out)
        st = model_write_tokenizer_bin(tok, tok_out, &err);
    if (st != LLM_OK) {
        output_file_abandon(tok_out);
        output_file_abandon(out);
        fprintf(stderr, "llmchat-convert: %s (nothing was written)\n", err.text);
        return 1;
    }
    st = output_file_commit(tok_out, &err);
    if (st != LLM_OK) {
        output_file_abandon(out);
        fprintf(stderr, "llmchat-convert: %s (nothing was written)\n", err.text);
        return 1;
    }
    if (output_file_commit(out, &err) != LLM_OK) {
        fprintf(stderr, "llmchat-convert: %s\n", err.text);
        return 1;
    }
    fprintf(stderr, "llmchat-convert: wrote %s (%s, %s) from %s (%s)\n", o->out,
            o->gguf ? "GGUF" : "llama2.c", o->type == MODEL_WRITE_Q8_0 ? "Q8_0" : "F32", o->in,
            m->format_name);
    if (with_tok)
        fprintf(stderr, "llmchat-convert: wrote the tokenizer to %s\n", tok_path);
    else if (!o->gguf)
        fprintf(stderr, "llmchat-convert: %s already holds this tokenizer\n", tok_path);
    return 0;
}

static int convert(const options *o)
{
#ifdef _OPENMP
    if (o->threads > 0)
        omp_set_num_threads(o->threads);
#endif
    model_options mo;
    model_options_default(&mo);
    mo.weights = o->type == MODEL_WRITE_F32 || input_is_float(o->in) ? TENSOR_F32 : TENSOR_Q8_0;
    mo.no_panels = true; /* converting reads the blocks once */
    mo.huge_pages = MODEL_HUGE_PAGES_OFF;
    if (isatty(STDERR_FILENO)) {
        mo.progress = progress_show;
        mo.progress_user = (void *)o->in;
    }
    model *m;
    llm_err err;
    if (model_open(o->in, &mo, &m, &err) != LLM_OK) {
        fprintf(stderr, "llmchat-convert: %s\n", err.text);
        return 1;
    }
    tokenizer *tok;
    int rc = open_tokenizer(o, m, &tok);
    if (rc == 0) {
        rc = write_outputs(o, m, tok);
        tokenizer_close(tok);
    }
    model_close(m);
    return rc;
}

int main(int argc, char **argv)
{
    std_streams_open();
    openmp_wait_apply(argv);
    progress_program("llmchat-convert");
    options o;
    int rc = parse(argc, argv, &o);
    if (rc == 0)
        rc = convert(&o);
    return std_streams_close("llmchat-convert", rc < 0 ? 0 : rc);
}
