/* loads_csv.c: fuzz target for the expert-load CSV reader. */
#include "loads.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diags d;
    diags_init(&d);
    struct loads l = {0};
    if (loads_read_buffer("fuzz.csv", (const char *)data, size, &l, &d) == LOADS_OK)
        loads_release(&l);
    diags_release(&d);
    return 0;
}
