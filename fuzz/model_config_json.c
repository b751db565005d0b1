/* model_config_json.c: fuzz target for the Hugging Face config.json reader. */
#include "model.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diags d;
    diags_init(&d);
    struct model m;
    /* The same entry point as model_yaml (the reader goes by content); what differs is the
     * corpus and dictionary, which start from JSON. "config.json" takes the path through the
     * naming rule that falls back to model_type. */
    model_load_buffer("config.json", (const char *)data, size, &m, &d);
    diags_release(&d);
    return 0;
}
