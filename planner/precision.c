/* precision.c: see precision.h. */
#include "precision.h"

#include <string.h>

static const struct {
    const char *name;
    double bytes;
} formats[PREC_COUNT] = {
    [PREC_FP4] = {"fp4", 0.5},
    [PREC_FP8] = {"fp8", 1.0},
    [PREC_BF16] = {"bf16", 2.0},
    [PREC_FP16] = {"fp16", 2.0},
    [PREC_FP32] = {"fp32", 4.0},
};

double precision_bytes(enum precision p) { return formats[p].bytes; }

const char *precision_name(enum precision p) { return formats[p].name; }

bool precision_parse(const char *text, enum precision *out)
{
    for (int p = 0; p < PREC_COUNT; p++) {
        if (strcmp(text, formats[p].name) == 0) {
            *out = (enum precision)p;
            return true;
        }
    }
    return false;
}
