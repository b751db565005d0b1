/* trace_csv.c: fuzz target for the routing trace reader (CSV, plain or gzip'd).
 *
 * trace_read takes only a path, so each input is written to an anonymous memory file, created
 * once, and read back through /proc/self/fd: no file is left behind when the fuzzer dies.
 */
#define _GNU_SOURCE /* memfd_create */
#include "trace.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* DeepSeek-V3's routed experts: the ids in the shipped traces. */
#define FUZZ_EXPERTS 256

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int input_fd = -1;
static char input_path[64];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (input_fd < 0) {
        input_fd = memfd_create("trace_csv", 0);
        if (input_fd < 0) {
            perror("memfd_create");
            abort();
        }
        snprintf(input_path, sizeof input_path, "/proc/self/fd/%d", input_fd);
    }
    /* A harness failure is not a finding in the reader: stop loudly rather than fuzz nothing. */
    if (ftruncate(input_fd, 0) != 0 || (size && pwrite(input_fd, data, size, 0) != (ssize_t)size)) {
        perror("trace_csv: writing the input");
        abort();
    }
    struct diags d;
    diags_init(&d);
    struct trace t = {0};
    if (trace_read(input_path, FUZZ_EXPERTS, &t, &d) == TRACE_OK)
        trace_release(&t);
    diags_release(&d);
    return 0;
}
