/* fixtures.h: loading the shipped models and topologies in tests; a file that does not load
 * ends the test program with a TAP "Bail out!" and its diagnostics. */
#ifndef RACKPLAN_FIXTURES_H
#define RACKPLAN_FIXTURES_H

#include "model.h"
#include "topology.h"

#include <stdio.h>
#include <stdlib.h>

static inline struct model fixture_model(const char *path)
{
    struct model m;
    struct diags d;
    diags_init(&d);
    if (model_load(path, &m, &d) != MODEL_OK) {
        diags_print(&d, stdout);
        printf("Bail out! cannot load %s\n", path);
        exit(1);
    }
    diags_release(&d);
    return m;
}

static inline struct topology fixture_topology(const char *path)
{
    struct topology t;
    struct diags d;
    diags_init(&d);
    if (topology_load(path, &t, &d) != TOPOLOGY_OK) {
        diags_print(&d, stdout);
        printf("Bail out! cannot load %s\n", path);
        exit(1);
    }
    diags_release(&d);
    return t;
}

#endif
