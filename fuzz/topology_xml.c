/* topology_xml.c: fuzz target for the topology reader (XML, validated against the XSD). */
#include "topology.h"

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct diags d;
    diags_init(&d);
    struct topology t;
    topology_load_buffer("fuzz.xml", (const char *)data, size, &t, &d);
    diags_release(&d);
    return 0;
}
