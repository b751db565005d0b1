/* topology.c: see topology.h. The only file that includes libxml2. */
#include "topology.h"

#include <ctype.h>
#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const char topology_xsd[];
extern const size_t topology_xsd_size;

struct collector {
    const char *path;
    const char *data; /* the file's bytes, to find the column libxml2 does not give */
    size_t size;
    struct diags *diags;
    int errors;
};

/* Where the element `element` that starts on `*line` begins in the file, or its attribute
 * `name` when that is given and present: libxml2 gives schema errors a line only. Leaves
 * *line alone and sets *col to 0 when neither is found. */
static void locate(const struct collector *c, const char *element, const char *name, int *line, int *col)
{
    *col = 0;
    const char *p = c->data, *end = c->data + c->size;
    if (!p || !element || *line < 1)
        return;
    for (int l = 1; p < end && l < *line; p++)
        l += *p == '\n';
    size_t n = strlen(element);
    const char *at = NULL, *tag_end = NULL;
    for (const char *q = p; !at && q < end; q++) {
        if (*q != '<')
            continue;
        const char *tag = q + 1, *stop = tag;
        while (stop < end && !strchr(" \t\r\n/>", *stop))
            stop++;
        /* the element's name, or a prefixed one (xi:include) */
        if ((size_t)(stop - tag) >= n && memcmp(stop - n, element, n) == 0 &&
            ((size_t)(stop - tag) == n || stop[-(ptrdiff_t)n - 1] == ':')) {
            at = q;
            tag_end = stop;
        }
    }
    if (!at)
        return;
    if (name) {
        size_t m = strlen(name);
        for (const char *q = tag_end; q + m < end && *q != '>'; q++) {
            const char *after = q + m;
            while (after < end && strchr(" \t\r\n", *after))
                after++;
            if (strchr(" \t\r\n", q[-1]) && memcmp(q, name, m) == 0 && after < end && *after == '=') {
                at = q;
                break;
            }
        }
    }
    *col = 1;
    text_position(p, at, line, col);
}

/* Adds a diagnostic at `node`, or at its attribute `name` when that is given. */
static void node_error(struct collector *c, const xmlNode *node, const char *name, const char *format, ...)
    __attribute__((format(printf, 4, 5)));

static void node_error(struct collector *c, const xmlNode *node, const char *name, const char *format, ...)
{
    char message[512];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    int line = (int)xmlGetLineNo(node), col;
    locate(c, (const char *)node->name, name, &line, &col);
    diags_add(c->diags, c->path, line, col, "%s", message);
    c->errors++;
}

static void collect_error(void *data, xmlErrorPtr error)
{
    struct collector *c = data;
    if (!error || error->level == XML_ERR_WARNING)
        return;
    char message[512];
    snprintf(message, sizeof message, "%s", error->message ? error->message : "malformed XML");
    size_t n = strlen(message);
    while (n > 0 && (message[n - 1] == '\n' || message[n - 1] == ' '))
        message[--n] = '\0';
    /* libxml2's advice (XML_PARSE_HUGE) is for programmers; a topology is never that deep. */
    if (strstr(message, "Excessive depth in document"))
        snprintf(message, sizeof message, "elements nested more than 256 deep: a topology nests 4");
    /* libxml2 prefixes schema errors with "Element 'x': "; keep it, it names the element. */
    int line = error->line, col = error->domain == XML_FROM_PARSER ? error->int2 : 0;
    const xmlNode *node = error->node;
    if (error->domain == XML_FROM_SCHEMASV && node && node->type == XML_ELEMENT_NODE) {
        char attribute[64] = "";
        const char *named = strstr(message, "attribute '");
        if (named)
            sscanf(named + strlen("attribute '"), "%63[^']", attribute);
        locate(c, (const char *)node->name, *attribute ? attribute : NULL, &line, &col);
    }
    diags_add(c->diags, c->path, line, col, "%s", message);
    c->errors++;
}

static void ignore_generic(void *data, const char *msg, ...)
{
    (void)data;
    (void)msg;
}

static xmlSchemaPtr schema_load(void)
{
    xmlSchemaParserCtxtPtr pc = xmlSchemaNewMemParserCtxt(topology_xsd, (int)topology_xsd_size);
    if (!pc)
        return NULL;
    xmlSchemaPtr schema = xmlSchemaParse(pc);
    xmlSchemaFreeParserCtxt(pc);
    return schema;
}

static const xmlNode *child(const xmlNode *parent, const char *name)
{
    for (const xmlNode *n = parent ? parent->children : NULL; n; n = n->next)
        if (n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0)
            return n;
    return NULL;
}

static bool attribute(const xmlNode *node, const char *name, char *out, size_t size)
{
    xmlChar *value = xmlGetProp(node, (const xmlChar *)name);
    if (!value)
        return false;
    snprintf(out, size, "%s", (const char *)value);
    xmlFree(value);
    return true;
}

/* A positive finite number. The schema has checked the lexical form; NaN and infinities pass
 * xs:double, so they are refused here. */
static double number(struct collector *c, const xmlNode *node, const char *name, bool required)
{
    char text[64];
    if (!attribute(node, name, text, sizeof text)) {
        if (required)
            node_error(c, node, NULL, "element '%s' needs attribute '%s'", (const char *)node->name, name);
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (*end != '\0' || !isfinite(v) || v <= 0 || v >= 1e30) {
        node_error(c, node, name, "attribute '%s' of '%s' is '%s'; it must be a positive finite number",
                   name, (const char *)node->name, text);
        return 0;
    }
    return v;
}

static int64_t count(struct collector *c, const xmlNode *node, const char *name)
{
    double v = number(c, node, name, true);
    return (int64_t)v; /* the schema limits counts to 1..1000000 */
}

static const char *const tier_kind_names[] = {"hbm", "host", "nvme", "remote"};

/* A <memory-tier>'s quantity `what` ("bytes", "read_bytes_per_s", "write_bytes_per_s") per
 * device: as given per device, or per node over `devices_per_node` (0: not given). 0 when
 * absent (an error when `required`) or wrong. */
static double tier_quantity(struct collector *c, const xmlNode *n, const char *what, int64_t devices_per_node,
                            bool required)
{
    char device[64], node[64], text[64];
    snprintf(device, sizeof device, "%s_per_device", what);
    snprintf(node, sizeof node, "%s_per_node", what);
    bool has_device = attribute(n, device, text, sizeof text), has_node = attribute(n, node, text, sizeof text);
    if (has_device && has_node) {
        node_error(c, n, node, "<memory-tier> gives both '%s' and '%s'; give one", device, node);
        return 0;
    }
    if (has_node) {
        if (devices_per_node < 1) {
            node_error(c, n, node, "'%s' needs 'devices_per_node', the devices that share the node's tier", node);
            return 0;
        }
        return number(c, n, node, true) / (double)devices_per_node;
    }
    if (has_device)
        return number(c, n, device, true);
    if (required)
        node_error(c, n, NULL, "<memory-tier> needs '%s' or '%s'", device, node);
    return 0;
}

/* The <memory-tier> elements, in order: one of each kind at most, fastest kind first. */
static void read_tiers(struct collector *c, const xmlNode *root, struct topology *t)
{
    char text[64];
    for (const xmlNode *n = root->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, "memory-tier") != 0)
            continue;
        enum tier_kind kind = TIER_HOST;
        attribute(n, "kind", text, sizeof text);
        for (int k = TIER_HOST; k <= TIER_REMOTE; k++)
            if (strcmp(text, tier_kind_names[k]) == 0)
                kind = (enum tier_kind)k;
        if (t->tier_count > 0 && kind <= t->tiers[t->tier_count - 1].kind) {
            enum tier_kind before = t->tiers[t->tier_count - 1].kind;
            if (kind == before)
                node_error(c, n, "kind", "a second <memory-tier kind='%s'>", tier_kind_names[kind]);
            else
                node_error(c, n, "kind", "<memory-tier kind='%s'> after kind='%s': tiers are listed fastest first (host, nvme, remote)",
                           tier_kind_names[kind], tier_kind_names[before]);
            continue;
        }
        if (t->tier_count >= TOPOLOGY_MAX_TIERS - 1) /* the order above admits 3 */
            continue;
        struct memory_tier m = {.kind = kind};
        attribute(n, "name", m.name, sizeof m.name);
        int64_t devices_per_node = attribute(n, "devices_per_node", text, sizeof text) ? count(c, n, "devices_per_node") : 0;
        m.bytes_per_device = tier_quantity(c, n, "bytes", devices_per_node, true);
        m.read_bytes_per_s_per_device = tier_quantity(c, n, "read_bytes_per_s", devices_per_node, true);
        m.write_bytes_per_s_per_device = tier_quantity(c, n, "write_bytes_per_s", devices_per_node, false);
        m.link_bytes_per_s_per_device = number(c, n, "link_bytes_per_s_per_device", false);
        if (m.link_bytes_per_s_per_device > 0) {
            m.read_bytes_per_s_per_device = fmin(m.read_bytes_per_s_per_device, m.link_bytes_per_s_per_device);
            if (m.write_bytes_per_s_per_device > 0)
                m.write_bytes_per_s_per_device = fmin(m.write_bytes_per_s_per_device, m.link_bytes_per_s_per_device);
        }
        m.usd_per_gb_hour = number(c, n, "usd_per_gb_hour", false);
        t->tiers[t->tier_count++] = m;
    }
}

static void read_tree(struct collector *c, const xmlNode *root, struct topology *t)
{
    char text[256];
    attribute(root, "name", t->name, sizeof t->name);
    t->announced = attribute(root, "status", text, sizeof text) && strcmp(text, "announced") == 0;

    const xmlNode *accelerator = child(root, "accelerator");
    attribute(accelerator, "name", t->accelerator, sizeof t->accelerator);
    if (!attribute(accelerator, "family", t->family, sizeof t->family))
        snprintf(t->family, sizeof t->family, "%.63s", t->accelerator);
    const xmlNode *hbm = child(accelerator, "hbm");
    t->hbm_bytes = number(c, hbm, "bytes", true);
    t->hbm_bytes_per_s = number(c, hbm, "bytes_per_s", true);
    for (const xmlNode *n = accelerator->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, "peak") != 0)
            continue;
        enum precision p;
        if (attribute(n, "precision", text, sizeof text) && precision_parse(text, &p))
            t->peak_flops_per_s[p] = number(c, n, "flops_per_s", true);
    }
    if (child(accelerator, "power"))
        t->power_watts = number(c, child(accelerator, "power"), "watts", true);
    if (child(accelerator, "price"))
        t->price_usd_per_hour = number(c, child(accelerator, "price"), "usd_per_hour", true);

    const xmlNode *up = child(root, "scale-up");
    t->hop_latency_s = number(c, up, "hop_latency_s", false);
    const xmlNode *fabric;
    if ((fabric = child(up, "switched"))) {
        t->kind = DOMAIN_SWITCHED;
        t->domain_devices = count(c, fabric, "devices");
        t->links_per_device = count(c, fabric, "links_per_device");
        t->link_bytes_per_s = number(c, fabric, "link_bytes_per_s", true);
        t->switches = count(c, fabric, "switches");
    } else if ((fabric = child(up, "mesh"))) {
        t->kind = DOMAIN_MESH;
        t->domain_devices = count(c, fabric, "devices");
        t->links_per_device = t->domain_devices - 1;
        t->link_bytes_per_s = number(c, fabric, "link_bytes_per_s", true);
    } else if ((fabric = child(up, "torus"))) {
        t->kind = DOMAIN_TORUS;
        t->domain_devices = 1;
        for (const xmlNode *n = fabric->children; n; n = n->next) {
            if (n->type != XML_ELEMENT_NODE)
                continue;
            int i = t->dims++;
            t->dim_size[i] = count(c, n, "size");
            t->dim_link_bytes_per_s[i] = number(c, n, "link_bytes_per_s", true);
            t->dim_wrap[i] = attribute(n, "wrap", text, sizeof text) &&
                             (strcmp(text, "true") == 0 || strcmp(text, "1") == 0);
            t->domain_devices *= t->dim_size[i];
        }
        if (t->domain_devices > TOPOLOGY_MAX_DOMAIN_DEVICES) {
            node_error(c, fabric, NULL, "the torus has %lld devices, more than the %d rackplan accepts",
                       (long long)t->domain_devices, TOPOLOGY_MAX_DOMAIN_DEVICES);
        }
    }
    const xmlNode *out = child(root, "scale-out");
    t->nics_per_device = number(c, out, "nics_per_device", true);
    t->nic_bytes_per_s = number(c, out, "nic_bytes_per_s", true);
    t->scale_out_latency_s = number(c, out, "latency_s", false);
    t->default_domains = count(c, child(root, "cluster"), "domains");
    read_tiers(c, root, t);
    const xmlNode *latency = child(root, "latency");
    if (latency)
        t->latency = (struct step_latency){number(c, latency, "kernel_s", false), number(c, latency, "all_reduce_s", false),
                                           number(c, latency, "dispatch_s", false),
                                           number(c, latency, "combine_s", false)};
    for (const xmlNode *n = root->children; n; n = n->next) {
        if (n->type != XML_ELEMENT_NODE || strcmp((const char *)n->name, "efficiency") != 0)
            continue;
        enum precision p;
        bool specific = attribute(n, "precision", text, sizeof text) && precision_parse(text, &p);
        struct calibration *row = specific ? &t->calibrated[p] : &t->calibrated_any;
        if (row->present)
            node_error(c, n, specific ? "precision" : NULL, "a second <efficiency> row for %s weights",
                       specific ? precision_name(p) : "any other");
        row->present = true;
        row->efficiency = (struct efficiency){number(c, n, "compute", true), number(c, n, "memory", true),
                                              number(c, n, "scale_up", true), number(c, n, "scale_out", true),
                                              0, number(c, n, "experts", true), 1, 0};
        if (attribute(n, "latency", text, sizeof text))
            row->efficiency.latency = strtod(text, NULL);
        if (attribute(n, "sequence_s", text, sizeof text))
            row->efficiency.sequence_s = strtod(text, NULL);
        if (attribute(n, "step_overhead_s", text, sizeof text))
            row->efficiency.step_overhead_s = strtod(text, NULL);
        attribute(n, "fitted_to", row->fitted_to, sizeof row->fitted_to);
        xmlChar *ids = xmlGetProp(n, (const xmlChar *)"fitted_to");
        for (const char *at = ids ? (const char *)ids : ""; *at;) { /* whitespace-separated ids */
            while (*at && isspace((unsigned char)*at))
                at++;
            if (*at)
                row->fitted_count++;
            while (*at && !isspace((unsigned char)*at))
                at++;
        }
        xmlFree(ids);
        row->pooled = attribute(n, "pooled", text, sizeof text) && (strcmp(text, "true") == 0 || strcmp(text, "1") == 0);
    }

    bool any_peak = false;
    for (int p = 0; p < PREC_COUNT; p++)
        any_peak |= t->peak_flops_per_s[p] > 0;
    if (!any_peak) {
        node_error(c, accelerator, NULL, "the accelerator has no peak FLOP/s");
    }
}

static const char *find_bytes(const char *data, size_t size, const char *needle)
{
    size_t n = strlen(needle);
    for (size_t i = 0; i + n <= size; i++)
        if (data[i] == needle[0] && memcmp(data + i, needle, n) == 0)
            return data + i;
    return NULL;
}

enum topology_status topology_load_buffer(const char *path, const char *data, size_t size,
                                          struct topology *out, struct diags *d)
{
    struct collector c = {.path = path, .data = data, .size = size, .diags = d};
    if (size > TOPOLOGY_MAX_BYTES) {
        diags_add(d, path, 0, 0, "file is larger than %u MiB", TOPOLOGY_MAX_BYTES >> 20);
        return TOPOLOGY_INVALID;
    }
    /* Refuse a DOCTYPE before libxml2 sees it: no entity of any kind is ever declared. */
    const char *doctype = find_bytes(data, size, "<!DOCTYPE");
    if (doctype) {
        int line = 1, col = 1;
        text_position(data, doctype, &line, &col);
        diags_add(d, path, line, col,
                  "DOCTYPE declarations are not allowed in a topology (no DTDs, no entities)");
        return TOPOLOGY_INVALID;
    }
    xmlSetGenericErrorFunc(NULL, ignore_generic);
    xmlSetStructuredErrorFunc(&c, collect_error);
    /* No NOENT (entities stay unexpanded), no DTD loading or validation, no network. */
    int options = XML_PARSE_NONET | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES;
    xmlDocPtr doc = xmlReadMemory(data, (int)size, path, NULL, options);
    enum topology_status status = TOPOLOGY_INVALID;
    xmlSchemaPtr schema = NULL;
    xmlSchemaValidCtxtPtr valid = NULL;
    if (!doc || c.errors) {
        if (!c.errors)
            diags_add(d, path, 0, 0, "malformed XML");
        goto done;
    }
    if (doc->intSubset || doc->extSubset) { /* a DOCTYPE the byte scan missed (UTF-16) */
        diags_add(d, path, 0, 0, "DOCTYPE declarations are not allowed in a topology (no DTDs, no entities)");
        goto done;
    }
    schema = schema_load();
    valid = schema ? xmlSchemaNewValidCtxt(schema) : NULL;
    if (!valid) {
        diags_add(d, path, 0, 0, "internal error: the embedded topology schema did not load");
        goto done;
    }
    xmlSchemaSetValidStructuredErrors(valid, collect_error, &c);
    if (xmlSchemaValidateDoc(valid, doc) != 0) {
        if (!c.errors)
            diags_add(d, path, 0, 0, "the file does not match schemas/topology.xsd");
        goto done;
    }
    /* The schema declares every element globally, so <cluster/> alone is valid against it. */
    const xmlNode *root = xmlDocGetRootElement(doc);
    if (!root || strcmp((const char *)root->name, "topology") != 0) {
        if (root)
            node_error(&c, root, NULL, "the root element is <%s>; a topology file's root is <topology>",
                       (const char *)root->name);
        else
            diags_add(d, path, 0, 0, "no root element");
        goto done;
    }
    struct topology t;
    memset(&t, 0, sizeof t);
    read_tree(&c, root, &t);
    if (c.errors)
        goto done;
    *out = t;
    status = TOPOLOGY_OK;
done:
    xmlSchemaFreeValidCtxt(valid);
    xmlSchemaFree(schema);
    xmlFreeDoc(doc);
    xmlSetStructuredErrorFunc(NULL, NULL);
    return status;
}

enum topology_status topology_load(const char *path, struct topology *out, struct diags *d)
{
    char *data;
    size_t size;
    if (file_read_all(path, TOPOLOGY_MAX_BYTES, &data, &size, d) < 0)
        return TOPOLOGY_IO_ERROR;
    enum topology_status status = topology_load_buffer(path, data, size, out, d);
    free(data);
    return status;
}

double topology_scale_up_bytes_per_s(const struct topology *t)
{
    if (t->kind != DOMAIN_TORUS)
        return (double)t->links_per_device * t->link_bytes_per_s;
    double total = 0;
    for (int i = 0; i < t->dims; i++) {
        int links = t->dim_size[i] == 1 ? 0 : t->dim_size[i] == 2 ? 1 : 2;
        total += links * t->dim_link_bytes_per_s[i];
    }
    return total;
}

double topology_scale_out_bytes_per_s(const struct topology *t)
{
    return t->nics_per_device * t->nic_bytes_per_s;
}

int topology_tier_count(const struct topology *t)
{
    return 1 + t->tier_count;
}

bool topology_tier(const struct topology *t, int i, struct memory_tier *out)
{
    if (i < 0 || i >= topology_tier_count(t))
        return false;
    if (i > 0) {
        *out = t->tiers[i - 1];
        return true;
    }
    *out = (struct memory_tier){.kind = TIER_HBM,
                                .bytes_per_device = t->hbm_bytes,
                                .read_bytes_per_s_per_device = t->hbm_bytes_per_s,
                                .write_bytes_per_s_per_device = t->hbm_bytes_per_s};
    snprintf(out->name, sizeof out->name, "HBM");
    return true;
}

double topology_tier_drain_s(const struct topology *t, int i)
{
    struct memory_tier m;
    if (!topology_tier(t, i, &m) || m.read_bytes_per_s_per_device <= 0)
        return 0;
    return m.bytes_per_device / m.read_bytes_per_s_per_device;
}

const char *topology_tier_kind_name(enum tier_kind kind)
{
    return kind >= TIER_HBM && kind <= TIER_REMOTE ? tier_kind_names[kind] : "?";
}

const char *topology_kind_name(enum domain_kind kind)
{
    switch (kind) {
    case DOMAIN_SWITCHED:
        return "switched";
    case DOMAIN_MESH:
        return "mesh";
    default:
        return "torus";
    }
}

double topology_peak_flops_per_s(const struct topology *t, enum precision p, enum precision *used)
{
    /* FP16 matmuls run at the BF16 rate on the GPUs shipped here (NVIDIA's H100 and B200
     * datasheets list one dense figure for both), and the files give BF16 only: a model that
     * ships in FP16 must not find no peak at all and take forever. */
    if (p == PREC_FP16 && t->peak_flops_per_s[PREC_FP16] <= 0 && t->peak_flops_per_s[PREC_BF16] > 0) {
        if (used)
            *used = PREC_BF16;
        return t->peak_flops_per_s[PREC_BF16];
    }
    for (int q = p; q < PREC_COUNT; q++) {
        if (t->peak_flops_per_s[q] > 0) {
            if (used)
                *used = (enum precision)q;
            return t->peak_flops_per_s[q];
        }
    }
    return 0;
}

bool topology_with_domain_size(const struct topology *t, int64_t devices, struct topology *out)
{
    if (t->kind == DOMAIN_TORUS || devices < 1)
        return false;
    *out = *t;
    if (devices == t->domain_devices)
        return true;
    out->domain_devices = devices;
    if (t->kind == DOMAIN_MESH) {
        /* a mesh of this many devices would not be built: the same links per device, through
         * one switch */
        out->kind = DOMAIN_SWITCHED;
        out->switches = 1;
    } else {
        /* as many switch chips per device as the real domain, at least one */
        int64_t switches = (t->switches * devices + t->domain_devices - 1) / t->domain_devices;
        out->switches = switches > 0 ? switches : 1;
    }
    snprintf(out->name, sizeof out->name, "%.90s, domain of %lld", t->name, (long long)devices);
    return true;
}

bool efficiency_is_bound(const struct efficiency *e)
{
    return e->compute >= 1 && e->memory >= 1 && e->scale_up >= 1 && e->scale_out >= 1 && e->step_overhead_s <= 0 &&
           e->experts >= 1 && e->latency <= 1 && e->sequence_s <= 0;
}

const struct calibration *topology_calibration(const struct topology *t, enum precision weights)
{
    if (t->calibrated[weights].present)
        return &t->calibrated[weights];
    return t->calibrated_any.present ? &t->calibrated_any : NULL;
}

/* The sub-box of a torus with `devices` chips: each side a power of two no longer than the
 * torus's side, or the whole side; among those the one with the shortest longest side (the
 * most links per chip across its middle), then the first found. False when none has that many. */
static bool torus_sub_box(const struct topology *t, int64_t devices, int64_t *sides)
{
    int64_t choice[TOPOLOGY_MAX_DIMS], best_longest = INT64_MAX;
    bool found = false;
    int64_t options[TOPOLOGY_MAX_DIMS][64];
    int counts[TOPOLOGY_MAX_DIMS];
    for (int d = 0; d < t->dims; d++) {
        counts[d] = 0;
        for (int64_t side = 1; side < t->dim_size[d] && counts[d] < 63; side *= 2)
            options[d][counts[d]++] = side;
        options[d][counts[d]++] = t->dim_size[d];
    }
    int index[TOPOLOGY_MAX_DIMS] = {0};
    for (;;) {
        int64_t product = 1, longest = 0;
        for (int d = 0; d < t->dims; d++) {
            choice[d] = options[d][index[d]];
            product *= choice[d];
            longest = choice[d] > longest ? choice[d] : longest;
        }
        if (product == devices && longest < best_longest) {
            best_longest = longest;
            for (int d = 0; d < t->dims; d++)
                sides[d] = choice[d];
            found = true;
        }
        int d = 0;
        while (d < t->dims && ++index[d] == counts[d])
            index[d++] = 0;
        if (d == t->dims)
            break;
    }
    return found;
}

bool topology_slice(const struct topology *t, int64_t devices, struct topology *out)
{
    if (devices < 1 || devices > t->domain_devices)
        return false;
    struct topology s = *t;
    s.default_domains = 1;
    if (devices == t->domain_devices) {
        *out = s;
        return true;
    }
    s.domain_devices = devices;
    if (t->kind == DOMAIN_SWITCHED) {
        int64_t switches = (t->switches * devices + t->domain_devices - 1) / t->domain_devices;
        s.switches = switches > 0 ? switches : 1;
    } else if (t->kind == DOMAIN_TORUS) {
        int64_t sides[TOPOLOGY_MAX_DIMS];
        if (!torus_sub_box(t, devices, sides))
            return false;
        for (int d = 0; d < t->dims; d++) {
            /* Optical circuit switches close a 3D slice's side into a ring when it is a
             * multiple of 4 chips (whole cubes; jax-ml.github.io/scaling-book/tpus); a 2D pod's
             * sub-slice has no wrap-around. */
            s.dim_wrap[d] = t->dim_wrap[d] && (sides[d] == t->dim_size[d] || (t->dims == 3 && sides[d] % 4 == 0));
            s.dim_size[d] = sides[d];
        }
    }
    snprintf(s.name, sizeof s.name, "%.90s, slice of %lld", t->name, (long long)devices);
    *out = s;
    return true;
}
