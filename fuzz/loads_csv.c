/* loads_csv.c: fuzz target for the expert-load readers (the CSV, and SGLang's logical_count
 * JSON, which is then fitted to a model of three layers of two experts, the first dense). */
#include "loads.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diags d;
    diags_init(&d);
    struct loads l = {0};
    struct model three = {.name = "three", .layers = 3,
                          .moe = {.experts = 2, .experts_per_token = 1, .interleave = 1, .first_dense_layers = 1}};
    if (loads_read_buffer("fuzz.csv", (const char *)data, size, &l, &d) == LOADS_OK) {
        loads_check_model(&l, &three, "fuzz.csv", &d);
        loads_release(&l);
    }
    diags_release(&d);
    return 0;
}
