/* sink.c: see sink.h. */
#define _POSIX_C_SOURCE 200809L
#include "sink.h"

#include "diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void forget(struct sink *s)
{
    free(s->temp_path);
    s->temp_path = NULL;
    free(s->path);
    s->path = NULL;
}

bool sink_open(struct sink *s, const char *path)
{
    s->path = NULL;
    s->temp_path = NULL;
    if (!path) {
        s->out = stdout;
        return true;
    }
    /* rename() would refuse a directory only after the whole output was computed and written */
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", path, strerror(EISDIR));
        s->out = NULL;
        return false;
    }
    s->path = xstrdup(path);
    size_t n = strlen(path) + 16;
    s->temp_path = xmalloc(n);
    snprintf(s->temp_path, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(s->temp_path);
    if (fd < 0) {
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", path, strerror(errno));
        forget(s);
        s->out = NULL;
        return false;
    }
    /* mkstemp creates the file 0600; give it the mode a plain open would (0666 less umask). */
    mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0666 & ~mask) != 0) {
        /* the output still gets written, only with the stricter mode */
    }
    s->out = fdopen(fd, "w");
    if (!s->out) {
        int saved = errno;
        close(fd);
        unlink(s->temp_path);
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", path, strerror(saved));
        forget(s);
        return false;
    }
    return true;
}

bool sink_close(struct sink *s)
{
    if (!s->temp_path) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "rackplan: unable to write to standard output: %s\n", strerror(errno));
            return false;
        }
        return true;
    }
    if (!s->out)
        return true;
    errno = 0;
    bool ok = fflush(s->out) == 0 && !ferror(s->out) && fsync(fileno(s->out)) == 0;
    int saved = errno;
    if (fclose(s->out) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    s->out = NULL;
    if (!ok) {
        unlink(s->temp_path);
        /* a write that failed before the flush may have left no errno behind */
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", s->path, strerror(saved ? saved : EIO));
        forget(s);
    }
    return ok;
}

bool sink_commit(struct sink *s)
{
    if (!s->temp_path && s->out != stdout)
        return false; /* sink_close failed and said so */
    if (!sink_close(s))
        return false;
    if (!s->temp_path)
        return true;
    bool ok = rename(s->temp_path, s->path) == 0;
    if (!ok) {
        int saved = errno;
        unlink(s->temp_path);
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", s->path, strerror(saved));
    }
    forget(s);
    return ok;
}

void sink_abort(struct sink *s)
{
    if (!s->temp_path)
        return;
    if (s->out)
        fclose(s->out);
    s->out = NULL;
    unlink(s->temp_path);
    forget(s);
}

void sink_batch_init(struct sink_batch *b)
{
    memset(b, 0, sizeof *b);
}

bool sink_batch_add(struct sink_batch *b, struct sink *s, bool opened)
{
    if (!opened || !sink_close(s)) {
        b->failed = true;
        return false;
    }
    if (b->failed) {
        sink_abort(s);
        return false;
    }
    b->held = xrealloc(b->held, (size_t)(b->count + 1) * sizeof *b->held);
    b->held[b->count++] = *s;
    return true;
}

bool sink_batch_write(struct sink_batch *b, const char *path, void (*write)(FILE *out, const void *data),
                      const void *data)
{
    struct sink s;
    bool opened = sink_open(&s, path);
    if (opened)
        write(s.out, data);
    return sink_batch_add(b, &s, opened);
}

void sink_batch_adopt(struct sink_batch *into, struct sink_batch *from)
{
    if (from->count > 0) {
        into->held = xrealloc(into->held, (size_t)(into->count + from->count) * sizeof *into->held);
        memcpy(into->held + into->count, from->held, (size_t)from->count * sizeof *from->held);
        into->count += from->count;
    }
    into->failed |= from->failed;
    free(from->held);
    sink_batch_init(from);
}

bool sink_batch_finish(struct sink_batch *b, bool keep)
{
    bool ok = keep && !b->failed;
    int renamed = 0;
    while (ok && renamed < b->count)
        ok = sink_commit(&b->held[renamed++]);
    for (int i = renamed; i < b->count; i++)
        sink_abort(&b->held[i]);
    free(b->held);
    sink_batch_init(b);
    return ok;
}
