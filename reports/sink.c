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
}

bool sink_open(struct sink *s, const char *path)
{
    s->path = path;
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

bool sink_write(const char *path, void (*write)(FILE *out, const void *data), const void *data)
{
    struct sink s;
    if (!sink_open(&s, path))
        return false;
    write(s.out, data);
    return sink_commit(&s);
}
