/* fuzz_control_vector.c — libFuzzer target: the control-vector reader on arbitrary
 * bytes. A file it accepts must be what control_vector.h promises (one row per layer up
 * to the highest direction.N, row 0 zero, every value finite), and the steering built
 * from it must sum it without reading past it, at every scale and layer range; one whose
 * directions are all past the model's layers is refused (steering.c, check_vector). */
#include "fuzz.h"

#include <math.h>
#include <string.h>

#include "control_vector.h"
#include "steering.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *buf = malloc(size ? size : 1); /* exact size: an overread is caught */
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    control_vector *cv;
    llm_err err;
    if (control_vector_parse(buf, size, "fuzz.gguf", &cv, &err) != LLM_OK) {
        FUZZ_CHECK(cv == NULL && strlen(err.text) > 0);
        free(buf);
        return 0;
    }
    free(buf); /* the vector owns copies of its values */
    FUZZ_CHECK(cv->n_embd > 0 && cv->n_layers >= 2 && cv->n_layers <= CONTROL_VECTOR_MAX_LAYERS);
    for (int j = 0; j < cv->n_embd; j++)
        FUZZ_CHECK(cv->data[j] == 0.0f);
    for (size_t i = 0; i < (size_t)cv->n_layers * cv->n_embd; i++)
        FUZZ_CHECK(isfinite(cv->data[i]));
    /* applied to a model of its width and a few layers, over two ranges; refused (and
     * freed) exactly when none of its directions is for a layer after which that model
     * applies one (1 .. layers - 1) */
    int layers = cv->n_layers > 6 ? 6 : cv->n_layers;
    bool applies = false;
    for (int l = 1; l < layers; l++)
        applies = applies || control_vector_has(cv, l);
    steering *s;
    if (steering_new(layers, 2, cv->n_embd, &s, &err) == LLM_OK) {
        int n_embd = cv->n_embd;
        llm_status st = steering_add(s, "fuzz", "fuzz.gguf", cv, -2.5f, &err);
        if (!applies) {
            FUZZ_CHECK(st == LLM_ERR_MISMATCH && steering_sum(s) == NULL);
            steering_free(s);
            return 0;
        }
        FUZZ_CHECK(st == LLM_OK);
        const float *sum = steering_sum(s);
        FUZZ_CHECK(sum != NULL);
        for (int j = 0; j < n_embd; j++)
            FUZZ_CHECK(sum[j] == 0.0f);
        FUZZ_CHECK(steering_layers(s, 1, layers - 1, &err) == LLM_OK);
        FUZZ_CHECK(steering_drop(s, "fuzz", &err) == LLM_OK && steering_sum(s) == NULL);
        steering_free(s);
    } else {
        control_vector_free(cv);
    }
    return 0;
}
