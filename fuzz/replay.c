/* replay.c: runs a fuzz target on saved inputs, for builds without libFuzzer.
 *
 * Usage: replay PATH...; a directory stands for the regular files directly inside it. Inputs
 * run in sorted order, so a failure reproduces the same way every time. Each input is copied
 * into a buffer of exactly its size, as libFuzzer does, so that a read past the end is caught
 * by a sanitizer rather than hidden by slack. Prints one TAP check, as the other test programs
 * do: ok when every input ran, not ok (exit 1) when one could not be read. A crash in the
 * target ends the process before the check is printed, as it would under libFuzzer.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct paths {
    char **items;
    size_t count, cap;
};

static void paths_add(struct paths *p, const char *path)
{
    if (p->count == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->items = realloc(p->items, p->cap * sizeof *p->items);
        if (!p->items)
            abort();
    }
    p->items[p->count] = strdup(path);
    if (!p->items[p->count])
        abort();
    p->count++;
}

static int compare_paths(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds `path`, or the regular files inside it when it is a directory. Returns 0 or -1. */
static int collect(struct paths *p, const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: unable to open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        paths_add(p, path);
        return 0;
    }
    DIR *dir = opendir(path);
    if (!dir) {
        fprintf(stderr, "replay: unable to open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    struct dirent *entry;
    while ((entry = readdir(dir))) {
        if (entry->d_name[0] == '.')
            continue;
        size_t length = strlen(path) + 1 + strlen(entry->d_name) + 1;
        char *child = malloc(length);
        if (!child)
            abort();
        snprintf(child, length, "%s/%s", path, entry->d_name);
        if (stat(child, &st) == 0 && S_ISREG(st.st_mode))
            paths_add(p, child);
        free(child);
    }
    closedir(dir);
    return 0;
}

static int run_one(const char *path)
{
    /* Unbuffered, so that after a crash the last line names the input. */
    fprintf(stderr, "replay: %s\n", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: unable to open '%s': %s\n", path, strerror(errno));
        return -1;
    }
    size_t size = 0, cap = 4096;
    uint8_t *buffer = malloc(cap);
    if (!buffer)
        abort();
    size_t n;
    while ((n = fread(buffer + size, 1, cap - size, f)) > 0) {
        size += n;
        if (size == cap) {
            cap *= 2;
            buffer = realloc(buffer, cap);
            if (!buffer)
                abort();
        }
    }
    int failed = ferror(f);
    fclose(f);
    if (failed) {
        fprintf(stderr, "replay: unable to read '%s'\n", path);
        free(buffer);
        return -1;
    }
    uint8_t *exact = malloc(size ? size : 1);
    if (!exact)
        abort();
    memcpy(exact, buffer, size);
    free(buffer);
    LLVMFuzzerTestOneInput(exact, size);
    free(exact);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH...\n", argv[0]);
        return 2;
    }
    struct paths p = {0};
    int status = 0;
    for (int i = 1; i < argc; i++)
        if (collect(&p, argv[i]) < 0)
            status = 1;
    qsort(p.items, p.count, sizeof *p.items, compare_paths);
    for (size_t i = 0; i < p.count; i++) {
        if (run_one(p.items[i]) < 0)
            status = 1;
        free(p.items[i]);
    }
    free(p.items);
    printf("1..1\n%s 1 - %zu inputs replayed\n", status ? "not ok" : "ok", p.count);
    return status;
}
