/* sink.c: see sink.h. */
#define _POSIX_C_SOURCE 200809L
#include "sink.h"

#include "diag.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool sink_open(struct sink *s, const char *path)
{
    s->path = path;
    s->temp_path = NULL;
    if (!path) {
        s->out = stdout;
        return true;
    }
    size_t n = strlen(path) + 16;
    s->temp_path = xmalloc(n);
    snprintf(s->temp_path, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(s->temp_path);
    if (fd < 0) {
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", path, strerror(errno));
        free(s->temp_path);
        s->temp_path = NULL;
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
        close(fd);
        unlink(s->temp_path);
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", path, strerror(errno));
        free(s->temp_path);
        s->temp_path = NULL;
        return false;
    }
    return true;
}

bool sink_commit(struct sink *s)
{
    if (!s->temp_path) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
            fprintf(stderr, "rackplan: unable to write to standard output: %s\n", strerror(errno));
            return false;
        }
        return true;
    }
    bool ok = fflush(s->out) == 0 && !ferror(s->out) && fsync(fileno(s->out)) == 0;
    int saved = errno;
    if (fclose(s->out) != 0 && ok) {
        ok = false;
        saved = errno;
    }
    s->out = NULL;
    if (ok && rename(s->temp_path, s->path) != 0) {
        ok = false;
        saved = errno;
    }
    if (!ok) {
        unlink(s->temp_path);
        fprintf(stderr, "rackplan: unable to write '%s': %s\n", s->path, strerror(saved));
    }
    free(s->temp_path);
    s->temp_path = NULL;
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
    free(s->temp_path);
    s->temp_path = NULL;
}

bool sink_write(const char *path, void (*write)(FILE *out, const void *data), const void *data)
{
    struct sink s;
    if (!sink_open(&s, path))
        return false;
    write(s.out, data);
    return sink_commit(&s);
}
