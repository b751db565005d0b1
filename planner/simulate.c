/* simulate.c: the discrete-event serving simulation (simulate.h). Open loop: requests drawn up
 * front, the prefill pool (disaggregated) run over them, then each instance alone on its own
 * arrivals. Closed loop: the classes drawn up front, then one event loop in time order. */
#include "simulate.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* isl and osl at most this: sums over 10^8 requests stay within int64. */
#define SIM_MAX_TOKENS ((int64_t)1 << 32)

/* ---- the PRNG: xoshiro256** (Blackman and Vigna, 2018) seeded through splitmix64 ---- */

struct rng {
    uint64_t s[4];
};

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void rng_seed(struct rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(struct rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* [0, 1): the top 53 bits */
static double rng_uniform(struct rng *r)
{
    return (double)(rng_next(r) >> 11) * 0x1p-53;
}

/* ---- a binary min-heap of (key, id), ties to the lower id ---- */

struct heap_entry {
    double key;
    int64_t id;
};

struct heap {
    struct heap_entry *e;
    int64_t n;
};

static bool heap_before(struct heap_entry a, struct heap_entry b)
{
    return a.key < b.key || (a.key == b.key && a.id < b.id);
}

/* The caller sized h->e for every entry it pushes. */
static void heap_push(struct heap *h, double key, int64_t id)
{
    int64_t i = h->n++;
    struct heap_entry x = {key, id};
    while (i > 0 && heap_before(x, h->e[(i - 1) / 2])) {
        h->e[i] = h->e[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->e[i] = x;
}

static struct heap_entry heap_pop(struct heap *h)
{
    assert(h->n > 0);
    struct heap_entry top = h->e[0], x = h->e[--h->n];
    int64_t i = 0;
    for (;;) {
        int64_t child = 2 * i + 1;
        if (child >= h->n)
            break;
        if (child + 1 < h->n && heap_before(h->e[child + 1], h->e[child]))
            child++;
        if (!heap_before(h->e[child], x))
            break;
        h->e[i] = h->e[child];
        i = child;
    }
    if (h->n > 0)
        h->e[i] = x;
    return top;
}

/* ---- the simulation ---- */

struct request {
    double arrival_s, ready_s; /* ready: arrival (aggregated) or joining the decode instance */
    double first_s, decode_s;  /* decode: the start of its first decode step */
    double slot_s;             /* the first step start that found it ready and had no room for it
                                * (or one ahead of it); INFINITY: none */
    double done_s;
    int64_t start_step;        /* the instance's step index of its first decode step */
    int32_t cls, instance, lane;
};

/* What every request of a class shares. */
struct class_info {
    int64_t isl, osl;
    int64_t computed;     /* prompt tokens prefilled */
    int64_t reserve;      /* KV tokens admission reserves */
    int64_t decode_steps; /* M: steps after the first token */
};

/* A rank's own queue within an instance (simulate.h: the instance's i-th request is rank i mod
 * ranks's): the queue indices of its requests are r, r + ranks, ... (disaggregated: in the order
 * they join). */
struct lane {
    int64_t next;             /* its first request not admitted */
    int64_t pf, pf_done;      /* its first admitted prompt not wholly prefilled, pf_done of its
                               * tokens done */
    int64_t finished, done;   /* the step in progress: pf and pf_done after it */
    int64_t pending;          /* admission: its admitted prompt tokens not yet prefilled */
    int64_t in_flight, kv_used; /* its requests admitted and not complete, and their KV */
    int64_t blocked_through;  /* its requests before queue[blocked_through] have their slot_s set,
                               * or were admitted */
    bool blocked;             /* admission: it had no room this step */
};

/* One instance's state between steps. Its requests, in the order they become ready, are
 * queue[i % cap] for i in [0, count); those before every lane's pf (aggregated) or next
 * (disaggregated) are no longer read, so a ring holds a closed loop's clients (of cap ranks x
 * clients: a lane's unfinished requests are each a client's, and every ranks-th entry from the
 * lowest pf or next is that lane's). */
struct inst {
    int64_t *queue;
    int64_t cap, count;
    struct lane *lane;
    int64_t lanes;            /* the ranks */
    int64_t next;             /* the first request not admitted: the lanes' lowest next */
    int64_t in_flight, k;       /* its requests admitted and not complete (its lanes' sum) */
    /* over the decoding sequences: the sum of isl + 1 and of their start steps, so that their
     * contexts sum to base + tps (n k - starts) at step k, exactly and in O(1) */
    int64_t base, starts;
    struct heap heap;         /* decoding sequences by the step index at whose end each completes */
    double now_s, end_s;      /* the step in progress starts and ends */
    bool busy, scheduled;     /* closed loop: a step in progress; an event pending */
};

struct sim {
    const struct sim_config *c;
    const struct sim_timing *t;
    struct request *req;
    struct class_info *info;
    int64_t total;
    struct heap heap;
    bool closed;
    int64_t issued;           /* closed loop: requests sent so far, in arrival order */
    struct inst *inst;        /* closed loop: every instance with a client */
    struct heap events;       /* closed loop: instances by their next event, then index */
    /* closed loop, disaggregated: each prefill server's next request (its own, j mod x = server)
     * and when it is free; `pool` holds the servers whose next request has been sent, by when
     * their next batch starts */
    int64_t *server_next, *server_carried; /* carried: the next request's tokens computed (split) */
    double *server_free_s;
    struct heap pool;
    int64_t max_decoding, steps, batches;
    int64_t slot_waits;       /* measured requests that waited for a slot (their slot_s set) */
    struct lane *lanes;   /* open loop: the instance being run's */
    int64_t *group_turn;  /* closed, dispatch groups: the requests each group has sent */
    /* open loop: the window, and its steps' time, sequence-time and squared sequence-time */
    double window_start_s, window_end_s, window_steps_s, window_n_s, window_n2_s;
};

static struct request *queued(const struct sim *s, const struct inst *in, int64_t i)
{
    return &s->req[in->queue[i % in->cap]];
}

/* Closed loop: a step of instance `id` is due at at_s, unless one is pending or running. */
static void wake(struct sim *s, int64_t id, double at_s)
{
    struct inst *in = &s->inst[id];
    if (!in->scheduled) {
        in->scheduled = true;
        heap_push(&s->events, at_s, id);
    }
}

/* Closed loop: the next request (if any is left) arrives at at_s from a client of `instance`. */
static void issue(struct sim *s, int64_t instance, double at_s)
{
    if (s->issued == s->total)
        return;
    struct request *r = &s->req[s->issued];
    r->arrival_s = r->ready_s = at_s;
    if (s->group_turn) { /* the group's instances in turn (SGLang's round-robin data-parallel controller) */
        int64_t g = s->c->dispatch_group, group = instance / g;
        instance = group * g + s->group_turn[group]++ % g;
    }
    r->instance = (int32_t)instance;
    if (s->c->mode == SIM_AGGREGATED) {
        struct inst *in = &s->inst[instance];
        in->queue[in->count++ % in->cap] = s->issued;
        wake(s, instance, at_s);
    } else {
        int64_t server = s->issued % s->c->prefill_instances;
        if (s->server_next[server] == s->issued) /* the server was waiting for it */
            heap_push(&s->pool, fmax(s->server_free_s[server], at_s), server);
    }
    s->issued++;
}

static void complete(struct sim *s, struct request *r, double at_s)
{
    r->done_s = at_s;
    if (s->closed)
        issue(s, r->instance, at_s);
}

/* An instance's lanes before its first request: lane r's first is queue index r. */
static void lanes_start(struct lane *lane, int64_t lanes)
{
    for (int64_t r = 0; r < lanes; r++)
        lane[r] = (struct lane){.next = r, .pf = r};
}

/* The instance's first request not admitted: its lanes' lowest. */
static int64_t first_not_admitted(const struct inst *in)
{
    int64_t first = INT64_MAX;
    for (int64_t r = 0; r < in->lanes; r++)
        first = in->lane[r].next < first ? in->lane[r].next : first;
    return first < in->count ? first : in->count;
}

/* Admits at in->now_s, builds the step and times it (simulate.h); inst_finish ends it. */
static enum sim_status inst_start(struct sim *s, struct inst *in, bool prefill)
{
    const struct sim_config *c = s->c;
    struct request *rq = s->req;
    const struct class_info *info = s->info;
    struct heap *h = &in->heap;
    const double tps = c->tokens_per_step;
    const int64_t lanes = in->lanes;
    const int64_t chunk = prefill && c->chunk_tokens > 0 ? c->chunk_tokens : INT64_MAX;
    /* each rank holds its own requests' KV (and slots): an equal share of the instance's */
    const int64_t most_kv = c->kv_capacity_tokens / lanes;
    const int64_t most_sequences = c->max_sequences > 0 ? (c->max_sequences / lanes > 0 ? c->max_sequences / lanes : 1) : 0;
    /* a prompt is admitted (its KV reserved) when its first chunk can be scheduled: while its
     * rank's admitted prompts not yet prefilled leave some of the rank's budget */
    for (int64_t r = 0; r < lanes; r++) {
        struct lane *l = &in->lane[r];
        l->pending = prefill ? -l->pf_done : 0;
        l->blocked = false;
        for (int64_t j = l->pf; prefill && j < l->next; j += lanes)
            l->pending += info[queued(s, in, j)->cls].computed;
    }
    for (;;) {
        /* first come, first served over the ranks with budget left */
        struct lane *l = NULL;
        for (int64_t r = 0; r < lanes; r++) {
            struct lane *x = &in->lane[r];
            if (x->next < in->count && x->pending < chunk && !x->blocked && (!l || x->next < l->next))
                l = x;
        }
        if (!l)
            break;
        struct request *r = queued(s, in, l->next);
        const struct class_info *ci = &info[r->cls];
        if (r->ready_s > in->now_s)
            break; /* those after it are readied later */
        if ((most_sequences > 0 && l->in_flight >= most_sequences) ||
            (most_kv > 0 && l->kv_used + ci->reserve > most_kv)) {
            /* the rank's requests ready now start their wait for a slot, if they have not yet
             * (each once); the other ranks go on */
            int64_t i = l->blocked_through > l->next ? l->blocked_through : l->next;
            for (; i < in->count && queued(s, in, i)->ready_s <= in->now_s; i += lanes)
                queued(s, in, i)->slot_s = in->now_s;
            l->blocked_through = i;
            l->blocked = true;
            continue;
        }
        /* it waited for a slot if a step start found it ready and no room (slot_s) */
        s->slot_waits += isfinite(r->slot_s) && r - rq >= c->warmup;
        in->in_flight++;
        l->in_flight++;
        l->kv_used += ci->reserve;
        r->lane = (int32_t)(l - in->lane);
        l->next += lanes;
        l->pending += prefill ? ci->computed : 0;
        if (!prefill) {
            r->start_step = in->k;
            r->decode_s = in->now_s;
            heap_push(h, (double)(in->k + ci->decode_steps - 1), r - rq);
            in->base += ci->isl + 1;
            in->starts += in->k;
        }
    }
    in->next = first_not_admitted(in);
    struct sim_step step = {.sequences = h->n};
    if (h->n > 0)
        step.context_tokens = ((double)in->base + tps * (double)(h->n * in->k - in->starts)) / (double)h->n;
    double weighted = 0;
    for (int64_t r = 0; r < lanes; r++) {
        /* each rank's chunk from its own prompts in order, a prompt's remainder continuing next
         * step */
        struct lane *l = &in->lane[r];
        int64_t finished = l->pf, done = l->pf_done, tokens = 0; /* its queue [pf, finished) end their prompts */
        while (prefill && finished < l->next && tokens < chunk) {
            const struct class_info *ci = &info[queued(s, in, finished)->cls];
            int64_t left = ci->computed - done, room = chunk - tokens, take = left < room ? left : room;
            weighted += (double)take * ((double)(ci->isl - ci->computed + done) + (double)take / 2);
            tokens += take;
            if (take < left) {
                done += take;
                break; /* its rank's budget is spent */
            }
            finished += lanes;
            done = 0;
        }
        l->finished = finished;
        l->done = done;
        step.prefill_tokens += tokens;
        if (tokens > step.prefill_busiest_tokens)
            step.prefill_busiest_tokens = tokens;
    }
    if (step.prefill_tokens > 0)
        step.prefill_context_tokens = weighted / (double)step.prefill_tokens;
    assert(step.sequences > 0 || step.prefill_tokens > 0);
    double d_s = s->t->step_s(s->t->context, &step);
    if (!isfinite(d_s) || d_s < 0)
        return SIM_BAD_TIME;
    in->end_s = in->now_s + d_s;
    if (in->now_s > s->window_start_s && in->now_s <= s->window_end_s) {
        double n = (double)h->n;
        s->window_steps_s += d_s;
        s->window_n_s += n * d_s;
        s->window_n2_s += n * n * d_s;
    }
    if (h->n > s->max_decoding)
        s->max_decoding = h->n;
    s->steps++;
    return SIM_OK;
}

/* A request's end at at_s: its slot and KV back to its rank. */
static void release(struct sim *s, struct inst *in, struct request *r, double at_s)
{
    struct lane *l = &in->lane[r->lane];
    in->in_flight--;
    l->in_flight--;
    l->kv_used -= s->info[r->cls].reserve;
    complete(s, r, at_s);
}

/* The step's end: completions, then first tokens (rank by rank, each in its order). */
static void inst_finish(struct sim *s, struct inst *in)
{
    struct heap *h = &in->heap;
    const double end_s = in->end_s;
    const int64_t k = in->k;
    while (h->n > 0 && h->e[0].key == (double)k) {
        struct request *r = &s->req[heap_pop(h).id];
        const struct class_info *ci = &s->info[r->cls];
        in->base -= ci->isl + 1;
        in->starts -= r->start_step;
        release(s, in, r, end_s);
    }
    assert(h->n == 0 || h->e[0].key > (double)k);
    for (int64_t lane = 0; lane < in->lanes; lane++) {
        struct lane *l = &in->lane[lane];
        while (l->pf < l->finished) {
            struct request *r = queued(s, in, l->pf); /* its slot freed before a client reuses it */
            l->pf += in->lanes;
            const struct class_info *ci = &s->info[r->cls];
            r->first_s = end_s;
            if (ci->decode_steps == 0) {
                release(s, in, r, end_s);
            } else {
                r->start_step = k + 1;
                r->decode_s = end_s;
                heap_push(h, (double)(k + ci->decode_steps), r - s->req);
                in->base += ci->isl + 1;
                in->starts += k + 1;
            }
        }
        l->pf_done = l->done;
    }
    in->now_s = end_s;
    in->k++;
}

/* Open loop: one instance over all its requests, steps back to back while it has work. */
static enum sim_status run_instance(struct sim *s, struct inst *in, bool prefill)
{
    while (in->next < in->count || in->in_flight > 0) {
        if (in->in_flight == 0 && queued(s, in, in->next)->ready_s > in->now_s)
            in->now_s = queued(s, in, in->next)->ready_s;
        enum sim_status status = inst_start(s, in, prefill);
        if (status != SIM_OK)
            return status;
        inst_finish(s, in);
    }
    return SIM_OK;
}

/* A prefill batch of one server's requests, q, q + stride, ... (round-robin: the server's own
 * queue), those before `limit` that have arrived by `by_s`, in order, up to prefill_batch_tokens
 * computed tokens: the prompt that passes them is split there, its first part in this batch and
 * the rest heading the next (chunked prefill, simulate.h). The head q has `carried` of its tokens
 * computed already. Returns the prompts the batch finishes; *tokens the tokens it computes,
 * *touched its prompts (a split one too) and *carried_next what the next batch's head (q + the
 * finished ones) has computed. */
static int64_t prefill_batch(const struct sim *s, int64_t q, int64_t stride, int64_t limit, double by_s,
                             int64_t carried, int64_t *tokens, int64_t *touched, int64_t *carried_next)
{
    int64_t finished = 0, room = s->c->prefill_batch_tokens;
    *tokens = *touched = *carried_next = 0;
    for (int64_t j = q; j < limit && s->req[j].arrival_s <= by_s; j += stride) {
        int64_t done = j == q ? carried : 0, left = s->info[s->req[j].cls].computed - done;
        if (left <= room) {
            *tokens += left;
            room -= left;
            ++*touched;
            finished++;
            continue;
        }
        if (room > 0) {
            *tokens += room;
            ++*touched;
        }
        *carried_next = done + room;
        break;
    }
    return finished;
}

/* Ends a batch of `prompts` of a server's requests from q (stride apart) at end_s: each prompt's
 * first token and its KV's arrival at the decode side. */
static void prefill_done(struct sim *s, int64_t q, int64_t stride, int64_t prompts, double end_s)
{
    s->batches++;
    for (int64_t i = 0, j = q; i < prompts; i++, j += stride) {
        struct request *r = &s->req[j];
        r->ready_s = r->first_s = end_s + s->c->kv_transfer_s;
        if (!s->closed && s->info[r->cls].decode_steps == 0)
            complete(s, r, r->first_s);
    }
}

/* The prefill pool, open loop: request j to server j mod x, each server its own queue in batches
 * (simulate.h); the servers never interact, so each runs alone. */
static enum sim_status run_prefill(struct sim *s)
{
    const int64_t x = s->c->prefill_instances;
    for (int64_t server = 0; server < x && server < s->total; server++) {
        double free_s = 0;
        int64_t carried = 0;
        for (int64_t q = server; q < s->total;) {
            double start_s = fmax(free_s, s->req[q].arrival_s);
            int64_t tokens, touched,
                finished = prefill_batch(s, q, x, s->total, start_s, carried, &tokens, &touched, &carried);
            double d_s = s->t->prefill_s(s->t->context, touched, tokens);
            if (!isfinite(d_s) || d_s < 0)
                return SIM_BAD_TIME;
            free_s = start_s + d_s;
            prefill_done(s, q, x, finished, free_s);
            q += finished * x;
        }
    }
    return SIM_OK;
}

/* Closed loop (simulate.h): one event loop over the instances, the prefill pool and the joins,
 * in time order; at one time joins first, then instance steps by index, then a prefill batch. */
static enum sim_status run_closed(struct sim *s)
{
    const struct sim_config *c = s->c;
    const bool prefill = c->mode == SIM_AGGREGATED;
    const int64_t d = c->decode_instances; /* concurrency x d <= 10^8 x 2^20: no overflow */
    const int64_t g = prefill && c->dispatch_group > 1 ? c->dispatch_group : 1, groups = d / g;
    const int64_t clients = c->concurrency * groups < s->total ? c->concurrency * groups : s->total;
    const int64_t active = g > 1 ? d : d < clients ? d : clients;
    size_t servers = prefill ? 0 : (size_t)c->prefill_instances;
    s->inst = calloc((size_t)active, sizeof *s->inst);
    const int64_t lanes = c->ranks;
    /* the decode heaps' entries: a group's clients at each of its g instances; the rings' (struct
     * inst) each of those the instance's ranks times */
    const int64_t slots = g * clients;
    /* a ring's entries can pass what a size_t counts (2^20 ranks of 10^8 clients): none then */
    bool countable = (uint64_t)slots <= SIZE_MAX / sizeof(int64_t) / (uint64_t)lanes;
    int64_t *queues = countable ? malloc((size_t)slots * (size_t)lanes * sizeof *queues) : NULL;
    struct heap_entry *decode = malloc((size_t)slots * sizeof *decode);
    struct lane *lane = malloc((size_t)active * (size_t)lanes * sizeof *lane);
    struct heap joins = {malloc((size_t)clients * sizeof *joins.e), 0};
    s->events = (struct heap){malloc((size_t)active * sizeof *s->events.e), 0};
    if (g > 1)
        s->group_turn = calloc((size_t)groups, sizeof *s->group_turn);
    if (servers) {
        s->pool.e = malloc(servers * sizeof *s->pool.e);
        s->server_next = malloc(servers * sizeof *s->server_next);
        s->server_free_s = calloc(servers, sizeof *s->server_free_s);
        s->server_carried = calloc(servers, sizeof *s->server_carried);
    }
    enum sim_status status = SIM_NO_MEMORY;
    if (!s->inst || !queues || !decode || !lane || !joins.e || !s->events.e || (g > 1 && !s->group_turn) ||
        (servers && (!s->pool.e || !s->server_next || !s->server_free_s || !s->server_carried)))
        goto done;
    status = SIM_OK;
    /* group j / g's clients: those of the first `clients` requests with i mod groups = j / g (with
     * g = 1, instance j's own); any of them may be queued at any of the group's instances */
    for (int64_t j = 0, offset = 0; j < active; j++) {
        int64_t n = (clients - j / g + groups - 1) / groups;
        s->inst[j] = (struct inst){.queue = queues + offset * lanes,
                                   .cap = n * lanes,
                                   .lane = lane + j * lanes,
                                   .lanes = lanes,
                                   .heap = {decode + offset, 0}};
        lanes_start(s->inst[j].lane, lanes);
        offset += n;
    }
    for (size_t i = 0; i < servers; i++)
        s->server_next[i] = (int64_t)i;
    for (int64_t i = 0; i < clients; i++)
        issue(s, i % groups * g, 0);
    const int64_t x = (int64_t)servers;
    for (;;) {
        double join_s = joins.n > 0 ? joins.e[0].key : INFINITY;
        double step_s = s->events.n > 0 ? s->events.e[0].key : INFINITY;
        double batch_s = s->pool.n > 0 ? s->pool.e[0].key : INFINITY;
        if (join_s == INFINITY && step_s == INFINITY && batch_s == INFINITY)
            break;
        if (join_s <= step_s && join_s <= batch_s) {
            struct heap_entry e = heap_pop(&joins);
            struct request *r = &s->req[e.id];
            if (s->info[r->cls].decode_steps == 0) {
                complete(s, r, e.key);
            } else {
                struct inst *in = &s->inst[r->instance];
                in->queue[in->count++ % in->cap] = e.id;
                wake(s, r->instance, e.key);
            }
        } else if (step_s <= batch_s) {
            struct heap_entry e = heap_pop(&s->events);
            struct inst *in = &s->inst[e.id];
            if (in->busy)
                inst_finish(s, in); /* may issue into its own queue: `scheduled` keeps it out */
            else
                in->now_s = e.key;
            in->busy = in->in_flight > 0 || in->next < in->count; /* what is queued is ready */
            if (in->busy) {
                if ((status = inst_start(s, in, prefill)) != SIM_OK)
                    goto done;
                heap_push(&s->events, in->end_s, e.id);
            } else {
                in->scheduled = false;
            }
        } else {
            struct heap_entry server = heap_pop(&s->pool);
            int64_t q = s->server_next[server.id];
            /* every request sent so far has arrived */
            int64_t tokens, touched, finished = prefill_batch(s, q, x, s->issued, INFINITY, s->server_carried[server.id],
                                                              &tokens, &touched, &s->server_carried[server.id]);
            double d_s = s->t->prefill_s(s->t->context, touched, tokens);
            if (!isfinite(d_s) || d_s < 0) {
                status = SIM_BAD_TIME;
                goto done;
            }
            double end_s = batch_s + d_s;
            prefill_done(s, q, x, finished, end_s);
            for (int64_t i = 0, j = q; i < finished; i++, j += x)
                heap_push(&joins, s->req[j].ready_s, j);
            s->server_free_s[server.id] = end_s;
            s->server_next[server.id] = q + finished * x;
            if (s->server_next[server.id] < s->issued)
                heap_push(&s->pool, fmax(end_s, s->req[s->server_next[server.id]].arrival_s), server.id);
        }
    }
    assert(s->issued == s->total);
done:
    free(s->inst);
    free(s->group_turn);
    free(queues);
    free(decode);
    free(lane);
    free(joins.e);
    free(s->events.e);
    free(s->pool.e);
    free(s->server_next);
    free(s->server_free_s);
    free(s->server_carried);
    return status;
}

struct ready {
    double ready_s;
    int64_t id;
};

static int by_ready(const void *a, const void *b)
{
    const struct ready *x = a, *y = b;
    if (x->ready_s != y->ready_s)
        return x->ready_s < y->ready_s ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v[0, n) and takes its nearest-rank percentiles and mean; all 0 when n is 0. */
static struct sim_percentiles percentiles(double *v, int64_t n)
{
    struct sim_percentiles p = {0, 0, 0, 0};
    if (n == 0)
        return p;
    qsort(v, (size_t)n, sizeof *v, by_value);
    double sum = 0;
    for (int64_t i = 0; i < n; i++)
        sum += v[i];
    p.mean = sum / (double)n;
    p.p50 = v[(50 * n + 99) / 100 - 1];
    p.p90 = v[(90 * n + 99) / 100 - 1];
    p.p99 = v[(99 * n + 99) / 100 - 1];
    return p;
}

void sim_config_init(struct sim_config *c)
{
    *c = (struct sim_config){.mode = SIM_AGGREGATED, .arrivals = SIM_POISSON, .seed = 1, .tokens_per_step = 1,
                             .decode_instances = 1, .kv_block_tokens = 16, .ranks = 1, .chunk_tokens = 8192,
                             .prefill_instances = 1, .prefill_batch_tokens = 16384};
}

static int64_t reservation(const struct sim_config *c, int64_t i)
{
    int64_t block = c->kv_block_tokens > 0 ? c->kv_block_tokens : 1,
            tokens = c->isl[i] + (c->reserve_output_tokens > 0 ? c->reserve_output_tokens : c->osl[i]);
    return (tokens + block - 1) / block * block;
}

const char *sim_config_problem(const struct sim_config *c)
{
    if (!c)
        return "no config";
    if (c->mode != SIM_AGGREGATED && c->mode != SIM_DISAGGREGATED)
        return "mode must be SIM_AGGREGATED or SIM_DISAGGREGATED";
    if (c->requests < 1)
        return "requests must be >= 1";
    if (c->warmup < 0)
        return "warmup must be >= 0";
    if (c->requests > SIM_MAX_REQUESTS - c->warmup)
        return "requests + warmup must be at most SIM_MAX_REQUESTS";
    if (c->arrivals != SIM_POISSON && c->arrivals != SIM_CONSTANT && c->arrivals != SIM_CLOSED)
        return "arrivals must be SIM_POISSON, SIM_CONSTANT or SIM_CLOSED";
    if (c->arrivals != SIM_CLOSED && (!(c->arrivals_per_s > 0) || !isfinite(c->arrivals_per_s)))
        return "arrivals_per_s must be > 0 and finite";
    if (c->arrivals == SIM_CLOSED && (c->concurrency < 1 || c->concurrency > SIM_MAX_REQUESTS))
        return "concurrency must be in [1, SIM_MAX_REQUESTS] for SIM_CLOSED";
    if (c->classes < 1 || c->classes > INT32_MAX || !c->isl || !c->osl || !c->weight)
        return "classes must be >= 1, with isl, osl and weight";
    double total = 0;
    for (int64_t i = 0; i < c->classes; i++) {
        if (c->isl[i] < 1 || c->isl[i] > SIM_MAX_TOKENS || c->osl[i] < 1 || c->osl[i] > SIM_MAX_TOKENS)
            return "a class's isl and osl must be in [1, 2^32]";
        if (!(c->weight[i] >= 0) || !isfinite(c->weight[i]))
            return "a class's weight must be >= 0 and finite";
        total += c->weight[i];
    }
    if (!(total > 0) || !isfinite(total))
        return "the weights must sum to a finite value > 0";
    if (!(c->prefix_hit >= 0 && c->prefix_hit < 1))
        return "prefix_hit must be in [0, 1)";
    if (!(c->tokens_per_step >= 1) || !isfinite(c->tokens_per_step))
        return "tokens_per_step must be >= 1 and finite";
    if (c->decode_instances < 1 || c->decode_instances > SIM_MAX_INSTANCES)
        return "decode_instances must be in [1, SIM_MAX_INSTANCES]";
    if (c->max_sequences < 0 || c->kv_capacity_tokens < 0 || c->kv_block_tokens < 0 || c->chunk_tokens < 0)
        return "max_sequences, kv_capacity_tokens, kv_block_tokens and chunk_tokens must be >= 0";
    if (c->reserve_output_tokens < 0 || c->reserve_output_tokens > SIM_MAX_TOKENS)
        return "reserve_output_tokens must be in [0, 2^32]";
    if (c->reserve_output_tokens > 0)
        for (int64_t i = 0; i < c->classes; i++)
            if (c->osl[i] > c->reserve_output_tokens)
                return "a class's osl exceeds reserve_output_tokens";
    if (c->ranks < 1 || c->ranks > SIM_MAX_INSTANCES)
        return "ranks must be in [1, SIM_MAX_INSTANCES]";
    if (c->dispatch_group < 0 || (c->dispatch_group > 1 && c->decode_instances % c->dispatch_group != 0))
        return "dispatch_group must be >= 0 and divide decode_instances";
    if (c->kv_capacity_tokens > 0)
        for (int64_t i = 0; i < c->classes; i++)
            if (reservation(c, i) > c->kv_capacity_tokens / c->ranks)
                return "a class's reservation (isl + osl or reserve_output_tokens), rounded up to "
                       "kv_block_tokens, exceeds a rank's share of kv_capacity_tokens";
    if (c->mode == SIM_DISAGGREGATED) {
        if (c->prefill_instances < 1 || c->prefill_instances > SIM_MAX_INSTANCES)
            return "prefill_instances must be in [1, SIM_MAX_INSTANCES]";
        if (c->prefill_batch_tokens < 1)
            return "prefill_batch_tokens must be >= 1";
        if (!(c->kv_transfer_s >= 0) || !isfinite(c->kv_transfer_s))
            return "kv_transfer_s must be >= 0 and finite";
    }
    return NULL;
}

/* Draws every request: arrival, class, instance (simulate.h); closed, the class alone. */
static void draw(struct sim *s, const double *cumulative)
{
    const struct sim_config *c = s->c;
    struct rng rng;
    rng_seed(&rng, c->seed);
    double at_s = 0, total = cumulative[c->classes - 1];
    for (int64_t i = 0; i < s->total; i++) {
        struct request *r = &s->req[i];
        if (c->arrivals != SIM_CLOSED) {
            double u = rng_uniform(&rng); /* drawn when constant too: a seed's classes are then
                                           * those of the Poisson stream */
            at_s = c->arrivals == SIM_POISSON ? at_s - log1p(-u) / c->arrivals_per_s
                                              : (double)(i + 1) / c->arrivals_per_s;
        }
        double x = rng_uniform(&rng) * total;
        int64_t lo = 0, hi = c->classes - 1; /* the first class whose cumulative weight exceeds x */
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            if (x < cumulative[mid])
                hi = mid;
            else
                lo = mid + 1;
        }
        int64_t instance = 0; /* closed: issue() sets it */
        if (c->arrivals != SIM_CLOSED) {
            instance = (int64_t)(rng_uniform(&rng) * (double)c->decode_instances);
            instance = instance < c->decode_instances ? instance : c->decode_instances - 1;
            if (c->arrivals == SIM_CONSTANT) /* in turn: each instance's arrivals evenly spaced too */
                instance = i % c->decode_instances;
        }
        *r = (struct request){.arrival_s = at_s, .ready_s = at_s, .slot_s = INFINITY, .cls = (int32_t)lo,
                              .instance = (int32_t)instance};
    }
}

/* Each instance's requests (those that reach it: osl > 1 when disaggregated) in the order they
 * become ready, then each instance run. `order` and `list` hold s->total entries, `first`
 * decode_instances + 1. */
static enum sim_status run_instances(struct sim *s, struct ready *order, int64_t *list, int64_t *first)
{
    const struct sim_config *c = s->c;
    bool prefill = c->mode == SIM_AGGREGATED;
    const int64_t lanes = c->ranks;
    memset(first, 0, (size_t)(c->decode_instances + 1) * sizeof *first);
    for (int64_t i = 0; i < s->total; i++)
        if (prefill || s->info[s->req[i].cls].decode_steps > 0)
            first[s->req[i].instance + 1]++;
    for (int64_t j = 0; j < c->decode_instances; j++)
        first[j + 1] += first[j];
    for (int64_t i = 0; i < s->total; i++) /* first[j] as instance j's cursor */
        if (prefill || s->info[s->req[i].cls].decode_steps > 0)
            order[first[s->req[i].instance]++] = (struct ready){s->req[i].ready_s, i};
    for (int64_t j = c->decode_instances; j > 0; j--) /* undo the cursors */
        first[j] = first[j - 1];
    first[0] = 0;
    for (int64_t j = 0; j < c->decode_instances; j++) {
        int64_t n = first[j + 1] - first[j];
        if (!prefill) /* joins are not in arrival order when batches end out of order */
            qsort(order + first[j], (size_t)n, sizeof *order, by_ready);
        for (int64_t i = first[j]; i < first[j + 1]; i++)
            list[i] = order[i].id;
        struct inst in = {.queue = list + first[j],
                          .cap = n > 0 ? n : 1,
                          .count = n,
                          .lane = s->lanes,
                          .lanes = lanes,
                          .heap = {s->heap.e, 0}};
        lanes_start(s->lanes, lanes);
        enum sim_status status = run_instance(s, &in, prefill);
        if (status != SIM_OK)
            return status;
    }
    return SIM_OK;
}

/* The measured requests' percentiles, overall and by class. */
static enum sim_status measure(struct sim *s, struct sim_result *out, struct sim_class_result *classes)
{
    const struct sim_config *c = s->c;
    int64_t n = c->requests, k = c->classes;
    double *ttft = malloc((size_t)n * sizeof *ttft), *tpot = malloc((size_t)n * sizeof *tpot);
    int64_t *first = calloc((size_t)k + 1, sizeof *first), *tpot_first = calloc((size_t)k + 1, sizeof *tpot_first);
    enum sim_status status = SIM_NO_MEMORY;
    if (!ttft || !tpot || !first || !tpot_first)
        goto done;
    /* by class: counts, then each class's values in its own run of the arrays */
    for (int64_t i = c->warmup; i < s->total; i++) {
        int32_t cls = s->req[i].cls;
        first[cls + 1]++;
        if (s->info[cls].osl > 1)
            tpot_first[cls + 1]++;
    }
    for (int64_t j = 0; j < k; j++) {
        first[j + 1] += first[j];
        tpot_first[j + 1] += tpot_first[j];
    }
    int64_t tpot_n = tpot_first[k];
    for (int64_t i = c->warmup; i < s->total; i++) {
        const struct request *r = &s->req[i];
        const struct class_info *ci = &s->info[r->cls];
        /* disaggregated, the wait for a decode slot is TTFT's (the engine reserves the KV there
         * before prefill starts), not TPOT's */
        double slot = c->mode == SIM_DISAGGREGATED && isfinite(r->slot_s) ? r->decode_s - r->slot_s : 0;
        ttft[first[r->cls]++] = r->first_s - r->arrival_s + slot;
        if (ci->osl > 1)
            tpot[tpot_first[r->cls]++] = (r->done_s - r->first_s - slot) / (double)(ci->osl - 1);
    }
    for (int64_t j = k; j > 0; j--) { /* back from cursors to starts */
        first[j] = first[j - 1];
        tpot_first[j] = tpot_first[j - 1];
    }
    first[0] = tpot_first[0] = 0;
    if (classes)
        for (int64_t j = 0; j < k; j++) {
            struct sim_class_result *cr = &classes[j];
            cr->measured = first[j + 1] - first[j];
            cr->tpot_measured = tpot_first[j + 1] - tpot_first[j];
            cr->share = (double)cr->measured / (double)n;
            cr->ttft_s = percentiles(ttft + first[j], cr->measured);
            cr->tpot_s = percentiles(tpot + tpot_first[j], cr->tpot_measured);
        }
    out->ttft_s = percentiles(ttft, n);
    out->tpot_s = percentiles(tpot, tpot_n);
    out->measured = n;
    out->tpot_measured = tpot_n;
    out->slot_wait_share = (double)s->slot_waits / (double)n;
    status = SIM_OK;
done:
    free(ttft);
    free(tpot);
    free(first);
    free(tpot_first);
    return status;
}

enum sim_status simulate(const struct sim_config *c, const struct sim_timing *t, struct sim_result *out,
                         struct sim_class_result *classes)
{
    if (sim_config_problem(c) || !t || !t->step_s || (c->mode == SIM_DISAGGREGATED && !t->prefill_s) || !out)
        return SIM_INVALID;
    struct sim s = {.c = c, .t = t, .total = c->requests + c->warmup, .closed = c->arrivals == SIM_CLOSED};
    size_t total = (size_t)s.total, instances = (size_t)c->decode_instances, k = (size_t)c->classes;
    s.req = malloc(total * sizeof *s.req);
    s.info = malloc(k * sizeof *s.info);
    s.heap.e = malloc(total * sizeof *s.heap.e);
    double *cumulative = malloc(k * sizeof *cumulative);
    struct ready *order = malloc(total * sizeof *order);
    int64_t *list = malloc(total * sizeof *list), *first = malloc((instances + 1) * sizeof *first);
    struct sim_class_result *by_class = classes ? malloc(k * sizeof *by_class) : NULL;
    if (!s.closed)
        s.lanes = malloc((size_t)c->ranks * sizeof *s.lanes);
    enum sim_status status = SIM_NO_MEMORY;
    if (!s.req || !s.info || !s.heap.e || !cumulative || !order || !list || !first || (classes && !by_class) ||
        (!s.closed && !s.lanes))
        goto done;

    double sum = 0;
    for (size_t i = 0; i < k; i++) {
        struct class_info *ci = &s.info[i];
        ci->isl = c->isl[i];
        ci->osl = c->osl[i];
        int64_t computed = (int64_t)llround((double)ci->isl * (1 - c->prefix_hit));
        ci->computed = computed > 1 ? computed : 1;
        ci->reserve = reservation(c, (int64_t)i);
        double steps = (double)(ci->osl - 1) / c->tokens_per_step;
        ci->decode_steps = (int64_t)ceil(steps * (1 - 1e-12));
        sum += c->weight[i];
        cumulative[i] = sum;
    }
    draw(&s, cumulative);
    if (!s.closed) { /* the window (simulate.h): the measured requests' arrivals */
        s.window_start_s = s.req[c->warmup].arrival_s;
        s.window_end_s = s.req[s.total - 1].arrival_s;
    }
    if (s.closed)
        status = run_closed(&s);
    else if (c->mode == SIM_DISAGGREGATED && (status = run_prefill(&s)) != SIM_OK)
        goto done;
    else
        status = run_instances(&s, order, list, first);
    if (status != SIM_OK)
        goto done;

    struct sim_result r = {0};
    if ((status = measure(&s, &r, by_class)) != SIM_OK)
        goto done;
    /* the window (first, last] of the measured arrivals: requests are numbered in arrival order */
    double start_s = s.req[c->warmup].arrival_s, end_s = s.req[s.total - 1].arrival_s, window_s = end_s - start_s;
    double tokens = 0, integral = 0; /* osl completing in it; decoding sequences x seconds in it */
    for (int64_t i = 0; i < s.total; i++) {
        const struct request *q = &s.req[i];
        const struct class_info *ci = &s.info[q->cls];
        r.simulated_s = fmax(r.simulated_s, q->done_s);
        if (q->done_s > start_s && q->done_s <= end_s)
            tokens += (double)ci->osl;
        double overlap_s = fmin(q->done_s, end_s) - fmax(q->decode_s, start_s); /* decoding [decode, done) */
        if (ci->decode_steps > 0 && overlap_s > 0)
            integral += overlap_s;
    }
    if (window_s > 0) {
        r.output_tokens_per_s = tokens / window_s;
        r.mean_decoding_sequences = integral / window_s;
    }
    if (!s.closed && window_s > 0) { /* idle time at 0 sequences */
        double time_s = fmax(window_s * (double)c->decode_instances, s.window_steps_s);
        double mean = s.window_n_s / time_s;
        r.decoding_sequences_sd = sqrt(fmax(s.window_n2_s / time_s - mean * mean, 0));
    }
    r.max_decoding_sequences = s.max_decoding;
    r.steps = s.steps;
    r.prefill_batches = s.batches;
    *out = r;
    if (classes)
        memcpy(classes, by_class, k * sizeof *by_class);
done:
    free(s.req);
    free(s.info);
    free(s.heap.e);
    free(cumulative);
    free(order);
    free(list);
    free(first);
    free(by_class);
    free(s.lanes);
    return status;
}
