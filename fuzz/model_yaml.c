/* model_yaml.c: fuzz target for the model spec reader (YAML). */
#include "model.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diags d;
    diags_init(&d);
    struct model m;
    /* The reader tells YAML from JSON by content; the name only appears in messages. */
    model_load_buffer("fuzz.yaml", (const char *)data, size, &m, &d);
    diags_release(&d);
    return 0;
}
