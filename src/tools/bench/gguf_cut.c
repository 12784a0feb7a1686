/* bench/gguf_cut.c — a GGUF file cut to its first layers (see bench/gguf_cut.h). The
 * tensors come from the core's parser (gguf.h); the metadata is copied as the bytes it
 * is, walked here by the format's rules only to find where each key-value pair ends and
 * to set the block count. */
#define _GNU_SOURCE
#include "gguf_cut.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"

/* Bytes of one value of type t at p (within end), or 0 when it does not fit. */
static size_t value_bytes(uint32_t t, const unsigned char *p, const unsigned char *end)
{
    static const size_t fixed[GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
    if (t >= GGUF_TYPE_COUNT)
        return 0;
    if (t == GGUF_TYPE_STRING) {
        uint64_t n;
        if (end - p < 8)
            return 0;
        memcpy(&n, p, 8);
        return n <= (uint64_t)(end - p - 8) ? 8 + (size_t)n : 0;
    }
    if (t == GGUF_TYPE_ARRAY) {
        uint32_t et;
        uint64_t n;
        if (end - p < 12)
            return 0;
        memcpy(&et, p, 4);
        memcpy(&n, p + 4, 8);
        size_t at = 12;
        for (uint64_t i = 0; i < n; i++) {
            size_t b = value_bytes(et, p + at, end);
            if (!b)
                return 0;
            at += b;
        }
        return at;
    }
    return (size_t)(end - p) >= fixed[t] ? fixed[t] : 0;
}

/* The layer of a tensor named blk.N.*, or -1. */
static long layer_of(const char *name)
{
    if (strncmp(name, "blk.", 4) != 0)
        return -1;
    char *end;
    long n = strtol(name + 4, &end, 10);
    return end != name + 4 && *end == '.' ? n : -1;
}

static void put_u32(FILE *f, uint32_t v) { fwrite(&v, 4, 1, f); }
static void put_u64(FILE *f, uint64_t v) { fwrite(&v, 8, 1, f); }

static void pad_to(FILE *f, uint64_t at, uint32_t align)
{
    static const char zeros[256];
    uint64_t pad = (align - at % align) % align;
    fwrite(zeros, 1, (size_t)pad, f);
}

/* Writes the cut of the parsed file (buf, g) to f. */
static int write_cut(FILE *f, const unsigned char *buf, size_t size, const gguf *g, int layers,
                     char *err, size_t err_size)
{
    const unsigned char *end = buf + size;
    const char *arch = gguf_get_string(g, "general.architecture", NULL);
    char count_key[128];
    snprintf(count_key, sizeof count_key, "%s.block_count", arch ? arch : "");
    uint64_t n_kv = gguf_kv_count(g), n_tensors = gguf_tensor_count(g), keep = 0;
    for (uint64_t i = 0; i < n_tensors; i++)
        keep += layer_of(gguf_tensor_at(g, i)->name) < layers;
    fwrite("GGUF", 1, 4, f);
    put_u32(f, 3);
    put_u64(f, keep);
    put_u64(f, n_kv);
    const unsigned char *p = buf + 24; /* the key-value pairs, as the file has them */
    bool counted = false;
    for (uint64_t i = 0; i < n_kv; i++) {
        size_t key = value_bytes(GGUF_TYPE_STRING, p, end);
        if (!key || end - p < (ptrdiff_t)key + 4) {
            snprintf(err, err_size, "metadata pair %llu is cut short", (unsigned long long)i);
            return -1;
        }
        uint32_t type;
        memcpy(&type, p + key, 4);
        size_t value = value_bytes(type, p + key + 4, end);
        if (!value) {
            snprintf(err, err_size, "metadata pair %llu is cut short", (unsigned long long)i);
            return -1;
        }
        bool is_count = key - 8 == strlen(count_key) && !memcmp(p + 8, count_key, key - 8);
        if (is_count && type == GGUF_TYPE_UINT32) {
            fwrite(p, 1, key + 4, f);
            put_u32(f, (uint32_t)layers);
            counted = true;
        } else {
            fwrite(p, 1, key + 4 + value, f);
        }
        p += key + 4 + value;
    }
    if (!counted) {
        snprintf(err, err_size, "no %s (uint32) to set", count_key);
        return -1;
    }
    const uint32_t align = gguf_alignment(g);
    uint64_t offset = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (layer_of(t->name) >= layers)
            continue;
        put_u64(f, strlen(t->name));
        fwrite(t->name, 1, strlen(t->name), f);
        put_u32(f, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            put_u64(f, t->dims[d]);
        put_u32(f, t->type);
        put_u64(f, offset);
        offset += (t->bytes + align - 1) / align * align;
    }
    pad_to(f, (uint64_t)ftello(f), align);
    for (uint64_t i = 0; i < n_tensors; i++) {
        const gguf_tensor *t = gguf_tensor_at(g, i);
        if (layer_of(t->name) >= layers)
            continue;
        fwrite(t->data, 1, (size_t)t->bytes, f);
        pad_to(f, t->bytes, align);
    }
    return 0;
}

int gguf_cut_layers(const char *in, const char *out, int layers, char *err, size_t err_size)
{
    struct stat si, so;
    if (stat(in, &si) != 0) {
        snprintf(err, err_size, "%s: %s", in, strerror(errno));
        return -1;
    }
    if (stat(out, &so) == 0 && so.st_mtime >= si.st_mtime)
        return 0;
    int fd = open(in, O_RDONLY);
    void *map = fd >= 0 ? mmap(NULL, (size_t)si.st_size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
    if (fd >= 0)
        close(fd);
    if (map == MAP_FAILED) {
        snprintf(err, err_size, "%s: %s", in, strerror(errno));
        return -1;
    }
    gguf *g = NULL;
    llm_err perr;
    int rc = -1;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.part", out);
    FILE *f = NULL;
    if (gguf_parse(map, (size_t)si.st_size, in, &g, &perr) != LLM_OK) {
        snprintf(err, err_size, "%s", perr.text);
    } else if (!(f = fopen(tmp, "wb"))) {
        snprintf(err, err_size, "%s: %s", tmp, strerror(errno));
    } else {
        char why[256];
        if (write_cut(f, map, (size_t)si.st_size, g, layers, why, sizeof why) != 0)
            snprintf(err, err_size, "cutting %s to %d layers: %s", in, layers, why);
        else if (fflush(f) != 0 || ferror(f))
            snprintf(err, err_size, "%s: %s", tmp, strerror(errno));
        else
            rc = 0;
    }
    if (f && fclose(f) != 0)
        rc = -1;
    if (rc == 0 && rename(tmp, out) != 0) {
        snprintf(err, err_size, "%s: %s", out, strerror(errno));
        rc = -1;
    }
    if (rc != 0 && f)
        unlink(tmp);
    gguf_free(g);
    munmap(map, (size_t)si.st_size);
    return rc;
}
