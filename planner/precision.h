/* precision.h: numeric formats of weights, KV cache and matmuls, and their sizes. */
#ifndef RACKPLAN_PRECISION_H
#define RACKPLAN_PRECISION_H

#include <stdbool.h>

enum precision {
    PREC_FP4,
    PREC_FP8,
    PREC_BF16,
    PREC_FP16,
    PREC_FP32,
    PREC_COUNT
};

/* Bytes per element. FP4 is half a byte; block scale factors (MXFP4, NVFP4, FP8 block
 * scales) are not counted: they add 3-6% to FP4 and under 1% to FP8. */
double precision_bytes(enum precision p);

/* "fp4", "fp8", "bf16", "fp16", "fp32". */
const char *precision_name(enum precision p);

/* Parses a name as printed by precision_name (case-sensitive). Writes *out only on success. */
bool precision_parse(const char *text, enum precision *out);

#endif
