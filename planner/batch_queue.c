/* batch_queue.c: the wait at a round-robin prefill pool (batch_queue.h has the model). */
#include "batch_queue.h"

#include "arith.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Poisson(mean) chances of 0 .. most into p, from the mode outwards (no underflow at large means
 * before the tails do); what lies above `most` is left out (the caller lumps it). */
static void poisson_law(double mean, int64_t most, double *p)
{
    if (mean <= 0) {
        p[0] = 1;
        for (int64_t n = 1; n <= most; n++)
            p[n] = 0;
        return;
    }
    int64_t mode = (int64_t)floor(mean);
    if (mode > most)
        mode = most;
    p[mode] = exp(-mean + (double)mode * log(mean) - arith_log_factorial((double)mode));
    /* each ratio apart from the running product, so that the divisions do not wait on it */
    for (int64_t n = mode; n > 0; n--)
        p[n - 1] = p[n] * ((double)n / mean);
    for (int64_t n = mode; n < most; n++)
        p[n + 1] = p[n] * (mean / (double)(n + 1));
}

/* The most events worth following in a window of `mean` events: mean + 9 sd + 6 (the chance
 * beyond is below 1e-13 at every mean). */
static int64_t events_most(double mean)
{
    return (int64_t)ceil(mean + 9 * sqrt(mean) + 6);
}

struct batch_law {
    int64_t most;    /* events followed in a batch of this time */
    double *events;  /* Poisson(nu t) chances of 0 .. most, the rest lumped into most */
    double *beyond;  /* P(N(t) >= n) */
    /* P(N(s t / BATCH_QUEUE_SHARES) < n <= N((s + 1) t / BATCH_QUEUE_SHARES)): the n-th event in
     * share s, [n BATCH_QUEUE_SHARES + s] */
    double *in_share;
};

struct work {
    const struct batch_queue_input *in;
    int64_t x, m, b;
    /* the take: K ~ take[0 .. kmax] (without a law, K = b alone: `count`); a level q <= exhausted
     * (b - 1 for the count, kmax with a law) is exhausted with chance at_least[q] = P(K >= q) */
    bool count;
    int64_t kmax, least_take, exhausted;
    double *take, *at_least;
    double take_mean, take_var;
    const double *full_s, *full_weight;
    /* at the chain solved: the exhausted rows it takes, 1 .. sizes = min(levels, exhausted), and
     * whether any batch is full (a level above exhausted, or with a law a K below the level) */
    int64_t sizes;
    bool full_used;
    int64_t most_phases;
    int64_t most_up; /* laws_most at the chain solved */
    double nu, per_instance, full_mean_s, full_sd_s;
    double *ahead; /* with a law: P(K_1 + .. + K_i <= s), s = 0 .. ahead_places - 1, at [i ahead_places + s]
                    * (ahead_make): P(e >= i) at place s + 2 */
    int64_t ahead_rows, ahead_places;
};

static double batch_s(const struct work *w, int64_t k, int r)
{
    return w->in->batch_s[(k - 1) * w->in->atoms + r];
}

static double batch_weight(const struct work *w, int64_t k, int r)
{
    return w->in->batch_weight[(k - 1) * w->in->atoms + r];
}

/* Whether a level-q batch that finishes j (K = j) is a full one: for the count, the level b and
 * above (level b's batch, all b, is the full batch's time); with a law, j short of q. */
static bool full_at(const struct work *w, int64_t q, int64_t j)
{
    return w->count ? q >= w->b && j == w->b : j < q;
}

static double longest_s(const struct work *w, int64_t k)
{
    double longest = 0;
    for (int r = 0; r < w->in->atoms; r++)
        if (batch_weight(w, k, r) > 0)
            longest = fmax(longest, batch_s(w, k, r));
    return longest;
}

/* The most arrivals an instance sees in a batch of t seconds, mean + 8 sd (at least 1). */
static int64_t arrivals_most(const struct work *w, double t)
{
    double mean = w->per_instance * t;
    return (int64_t)ceil(mean + 8 * sqrt(mean) + 1);
}

/* A batch's time atom r: an exhausted batch of k, or (k = 0) a full one. */
static double kind_s(const struct work *w, int64_t k, int r)
{
    return k > 0 ? batch_s(w, k, r) : w->full_s[r];
}

static double kind_weight(const struct work *w, int64_t k, int r)
{
    return k > 0 ? batch_weight(w, k, r) : w->full_weight[r];
}

/* The events a batch of kind k (kind_s) at time atom r is followed to. */
static int64_t law_most(const struct work *w, int64_t k, int r)
{
    return events_most(w->nu * kind_s(w, k, r)) + w->m;
}

/* The most events any batch the chain takes is followed to. */
static int64_t laws_most(const struct work *w)
{
    int64_t most = 0;
    for (int64_t k = w->full_used ? 0 : 1; k <= w->sizes; k++)
        for (int r = 0; r < w->in->atoms; r++) {
            int64_t one = law_most(w, k, r);
            most = one > most ? one : most;
        }
    return most;
}

/* Room for the laws of one batch size's time atoms, each up to `most` events: a batch size's laws
 * are made when it is reached and dropped for the next, since a rack-wide pool's hundreds of sizes
 * held at once ran to hundreds of MB (batch_queue.h). */
struct laws {
    struct batch_law atom[BATCH_QUEUE_ATOMS];
    double *room;
};

static bool laws_alloc(struct laws *l, int64_t most)
{
    size_t each = (size_t)(most + 1) * (2 + BATCH_QUEUE_SHARES);
    l->room = malloc(each * BATCH_QUEUE_ATOMS * sizeof *l->room);
    if (!l->room)
        return false;
    for (int r = 0; r < BATCH_QUEUE_ATOMS; r++) {
        l->atom[r].events = l->room + each * (size_t)r;
        l->atom[r].beyond = l->atom[r].events + most + 1;
        l->atom[r].in_share = l->atom[r].beyond + most + 1;
    }
    return true;
}

/* What a law of 0 .. most events leaves out above most, lumped into its top. */
static void tail_lumped(double *events, int64_t most)
{
    double sum = 0;
    for (int64_t n = 0; n < most; n++)
        sum += events[n];
    events[most] = fmax(1 - sum, 0);
}

/* The events of a batch of kind k at time atom r alone, its tail lumped at the top: the chain's law. */
static int64_t law_events(const struct work *w, int64_t k, int r, double *events)
{
    int64_t most = law_most(w, k, r);
    poisson_law(w->nu * kind_s(w, k, r), most, events);
    tail_lumped(events, most);
    return most;
}

/* The whole law of a batch of kind k at time atom r: its events, their tail and their shares. */
static void law_make(const struct work *w, int64_t k, int r, struct batch_law *l)
{
    double mean = w->nu * kind_s(w, k, r);
    l->most = law_most(w, k, r);
    /* P(N(u) >= n) at the shares' ends, u = s t / BATCH_QUEUE_SHARES, into `beyond` */
    for (int s = 0; s <= BATCH_QUEUE_SHARES; s++) {
        double above = 1;
        poisson_law(mean * s / BATCH_QUEUE_SHARES, l->most, l->events);
        for (int64_t n = 0; n <= l->most; n++) {
            double reached = above > 0 ? above : 0;
            if (s > 0)
                l->in_share[n * BATCH_QUEUE_SHARES + s - 1] = reached - l->beyond[n];
            l->beyond[n] = reached;
            above -= l->events[n];
        }
    }
    tail_lumped(l->events, l->most); /* the last share's law is the batch's */
}

/* The chain on levels 1 .. levels, m phases each, in a band of `lower` and `upper` states. */
struct chain {
    int64_t levels, states, lower, upper, width;
    double *p;   /* states x width: P[i][j] at p[i width + j - i + lower] */
    double *out; /* the sum of row n to the states below it, as eliminated */
    double *pi;
};

static double *at(struct chain *c, int64_t i, int64_t j)
{
    return &c->p[i * c->width + (j - i + c->lower)];
}

static int64_t state_of(const struct work *w, const struct chain *c, int64_t q, int64_t phase)
{
    if (q < 1)
        return 0; /* idle: the next arrival starts a batch of one, (1, 0) */
    if (q > c->levels)
        q = c->levels;
    return (q - 1) * w->m + phase;
}

static void chain_free(struct chain *c)
{
    free(c->p);
    free(c->out);
    free(c->pi);
    *c = (struct chain){0};
}

/* row += f from over count states: unrolled so that GCC's basic-block vectorizer pairs it at -O2
 * (the elimination's time is in it) */
static void row_add(double *restrict row, const double *restrict from, double f, int64_t count)
{
    int64_t j = 0;
    for (; j + 4 <= count; j += 4) {
        row[j] += f * from[j];
        row[j + 1] += f * from[j + 1];
        row[j + 2] += f * from[j + 2];
        row[j + 3] += f * from[j + 3];
    }
    for (; j < count; j++)
        row[j] += f * from[j];
}

/* The events in a batch of kind k (kind_s) over its time atoms into events (room for most_up),
 * the same for every state it starts at; returns the most. */
static int64_t kind_events(const struct work *w, int64_t k, double *events, double *law)
{
    int64_t most = 0;
    memset(events, 0, (size_t)(w->most_up + 1) * sizeof *events);
    for (int r = 0; r < w->in->atoms; r++) {
        double weight = kind_weight(w, k, r);
        if (weight <= 0)
            continue;
        int64_t law_top = law_events(w, k, r, law);
        for (int64_t n = 0; n <= law_top; n++)
            events[n] += weight * law[n];
        most = law_top > most ? law_top : most;
    }
    return most;
}

/* Row i's batch that finishes `taken` with chance `chance`, its events' law `events` to `most`: from
 * i to i - taken m + n (below 0 the idle state 0, past the top into the top level at the same
 * phase). */
static void row_moves(const struct work *w, struct chain *c, int64_t i, int64_t taken, double chance,
                      const double *events, int64_t most)
{
    for (int64_t n = 0; n <= most; n++) {
        int64_t to = i - taken * w->m + n;
        if (to < 0)
            to = 0;
        else if (to >= c->states)
            to = c->states - w->m + to % w->m;
        *at(c, i, to) += chance * events[n];
    }
}

/* Builds and solves the chain at `levels` levels (w->sizes, w->full_used and w->most_up set for
 * them); false when out of memory. */
static bool chain_solve(struct work *w, int64_t levels, struct chain *c)
{
    const int64_t m = w->m, atoms = w->in->atoms;
    *c = (struct chain){.levels = levels, .states = levels * m};
    /* The band: an exhausted batch of k goes k m below and its most events less k m above; a full
     * one down at most kmax m, up its most events less least_take m. */
    int64_t upper = 0, down = w->sizes;
    for (int64_t k = w->full_used ? 0 : 1; k <= w->sizes; k++)
        for (int r = 0; r < atoms; r++) {
            int64_t rise = law_most(w, k, r) - (k > 0 ? k : w->least_take) * m;
            upper = rise > upper ? rise : upper;
        }
    if (w->full_used)
        down = w->kmax > down ? w->kmax : down;
    c->lower = down * m < c->states - 1 ? down * m : c->states - 1;
    c->upper = upper < c->states - 1 ? upper : c->states - 1;
    c->width = c->lower + c->upper + 1;
    c->p = calloc((size_t)(c->states * c->width), sizeof *c->p);
    c->out = malloc((size_t)c->states * sizeof *c->out);
    c->pi = malloc((size_t)c->states * sizeof *c->pi);
    double *events = malloc((size_t)(w->most_up + 1) * sizeof *events),
           *law = malloc((size_t)(w->most_up + 1) * sizeof *law);
    if (!c->p || !c->out || !c->pi || !events || !law) {
        free(events);
        free(law);
        return false;
    }
    for (int64_t k = 1; k <= w->sizes; k++) { /* the exhausted: level k, all k */
        int64_t most = kind_events(w, k, events, law);
        double chance = w->at_least[k];
        if (chance > 0)
            for (int64_t i = (k - 1) * m; i < k * m; i++)
                row_moves(w, c, i, k, chance, events, most);
    }
    if (w->full_used) {
        int64_t most = kind_events(w, 0, events, law);
        for (int64_t q = 1; q <= levels; q++)
            for (int64_t j = w->least_take; j <= w->kmax; j++)
                if (w->take[j] > 0 && full_at(w, q, j))
                    for (int64_t i = (q - 1) * m; i < q * m; i++)
                        row_moves(w, c, i, j, w->take[j], events, most);
    }
    free(events);
    free(law);
    /* Grassmann-Taksar-Heyman: states eliminated from the top, each row's mass to the states
     * below it kept as the divisor; then pi forwards from pi(0) = 1 */
    for (int64_t n = c->states - 1; n > 0; n--) {
        int64_t low = n - c->lower > 0 ? n - c->lower : 0, high = n - c->upper > 0 ? n - c->upper : 0;
        const double *from = at(c, n, low);
        double out = 0;
        for (int64_t j = 0; j < n - low; j++)
            out += from[j];
        c->out[n] = out > 0 ? out : 1e-300;
        for (int64_t i = high; i < n; i++) {
            double f = *at(c, i, n);
            if (f != 0)
                row_add(at(c, i, low), from, f / c->out[n], n - low);
        }
    }
    double sum = c->pi[0] = 1;
    for (int64_t n = 1; n < c->states; n++) {
        int64_t high = n - c->upper > 0 ? n - c->upper : 0;
        double in = 0;
        for (int64_t i = high; i < n; i++)
            in += c->pi[i] * *at(c, i, n);
        c->pi[n] = in / c->out[n];
        sum += c->pi[n];
    }
    for (int64_t n = 0; n < c->states; n++)
        c->pi[n] /= sum;
    return true;
}

static double top_mass(const struct work *w, const struct chain *c)
{
    double top = 0;
    for (int64_t phase = 0; phase < w->m; phase++)
        top += c->pi[state_of(w, c, c->levels, phase)];
    return top;
}

/* E[min(c, A)] and E[min(c, A)^2], A = floor(n / m), n ~ Poisson(nu t) followed to `most` events
 * (the chance beyond, below 1e-13, left out), on a grid of waits t: the prompts that join a
 * waiting prompt's batch after it, c = b - its place in its batch. Kept for the c a place below
 * `places` can ask for, from first = max(1, b - places) on, and to c = most / m + 1 at most: A
 * reaches most / m, so from there both stay as they are (a rack-wide pool's b = 2,880 had made
 * each call write 6 MB for c that no place reached). */
struct joiners {
    int64_t points, first, columns;
    double step_s;
    double *mean, *second; /* [point columns + c - first] */
};

#define JOINER_POINTS 128

static bool joiners_make(const struct work *w, double longest_wait_s, int64_t places, struct joiners *j)
{
    const int64_t b = w->b, m = w->m;
    double mean_most = w->nu * longest_wait_s;
    int64_t most = events_most(mean_most);
    if (most > (b - 1) * m + m)
        most = (b - 1) * m + m;
    const int64_t last = most / m + 1 < b - 1 ? most / m + 1 : b - 1; /* the last column kept */
    j->points = JOINER_POINTS;
    j->first = b - places > 1 ? b - places : 1;
    j->first = j->first < last ? j->first : last;
    j->columns = last >= 1 ? last - j->first + 1 : 0; /* none for b = 1, where none can join */
    j->step_s = longest_wait_s / (double)(JOINER_POINTS - 1);
    const int64_t first = j->first, columns = j->columns;
    j->mean = malloc((size_t)(JOINER_POINTS * (columns > 0 ? columns : 1)) * sizeof *j->mean);
    j->second = malloc((size_t)(JOINER_POINTS * (columns > 0 ? columns : 1)) * sizeof *j->second);
    double *p = malloc((size_t)(most + 1) * sizeof *p);
    if (!j->mean || !j->second || !p) {
        free(p);
        return false;
    }
    for (int64_t g = 0; g < JOINER_POINTS; g++) {
        poisson_law(w->nu * j->step_s * (double)g, most, p);
        /* E[min(c, A)] = sum_{a < c} P(A > a), E[min(c, A)^2] = sum_{a < c} (2 a + 1) P(A > a),
         * P(A > a) = P(n >= (a + 1) m), 0 past the law */
        double below = 0, sum = 0, second = 0;
        int64_t n = 0;
        for (int64_t c = 1; c <= last; c++) {
            for (; n < c * m && n <= most; n++)
                below += p[n];
            double past = n <= most ? fmax(1 - below, 0) : 0;
            sum += past;
            second += (double)(2 * c - 1) * past;
            if (c >= first) {
                j->mean[g * columns + c - first] = sum;
                j->second[g * columns + c - first] = second;
            }
        }
    }
    free(p);
    return true;
}

/* The own batch of a prompt at place `in_batch` of its batch after a wait: its mean prompts into
 * *mean and their second moment into *second. */
static void joiners_at(const struct joiners *j, int64_t b, int64_t in_batch, double wait_s, double *mean,
                       double *second)
{
    int64_t c = b - in_batch;
    double base = (double)in_batch;
    if (c <= 0 || j->points == 0) { /* none can join, or the own batches are not asked for */
        *mean = base;
        *second = base * base;
        return;
    }
    c = c < j->first + j->columns - 1 ? c : j->first + j->columns - 1;
    double g = j->step_s > 0 ? wait_s / j->step_s : 0, f = 0;
    int64_t low = (int64_t)g, high = low + 1;
    if (g >= (double)(j->points - 1))
        low = high = j->points - 1;
    else
        f = g - (double)low;
    const int64_t columns = j->columns, at = c - j->first;
    double m1 = (1 - f) * j->mean[low * columns + at] + f * j->mean[high * columns + at];
    double m2 = (1 - f) * j->second[low * columns + at] + f * j->second[high * columns + at];
    *mean = base + m1;
    *second = base * base + 2 * base * m1 + m2;
}

/* log2 of a positive finite x, exact at powers of 2 and linear between (within 0.09 of it):
 * increasing, and cheap beside log, for the bins' index. */
static double rough_log2(double x)
{
    uint64_t bits;
    memcpy(&bits, &x, sizeof bits);
    double exponent = (double)((int64_t)((bits >> 52) & 0x7ff) - 1023);
    double fraction = (double)(bits & ((UINT64_C(1) << 52) - 1)) / 4503599627370496.0; /* 2^52 */
    return exponent + fraction;
}

/* The waits gathered: bin 0 holds waits below `least_s`, then a grid even in rough_log2 to
 * `top_s` (each bin about the same share wider than the one before). */
struct bins {
    double least_log2, step_log2;
    double weight[BATCH_QUEUE_WAIT_BINS + 1], wait[BATCH_QUEUE_WAIT_BINS + 1], own[BATCH_QUEUE_WAIT_BINS + 1],
        own2[BATCH_QUEUE_WAIT_BINS + 1];
};

static void bins_add(struct bins *s, double weight, double wait_s, double own, double own2)
{
    int64_t i = 0;
    double position = wait_s > 0 ? (rough_log2(wait_s) - s->least_log2) / s->step_log2 : -1;
    if (position >= 0)
        i = position >= BATCH_QUEUE_WAIT_BINS - 1 ? BATCH_QUEUE_WAIT_BINS : 1 + (int64_t)position;
    s->weight[i] += weight;
    s->wait[i] += weight * wait_s;
    s->own[i] += weight * own;
    s->own2[i] += weight * own2;
}

/* to += weight chance over the shares (a fixed count: GCC vectorizes it at -O2) */
static void shares_add(double *restrict to, const double *restrict chance, double weight)
{
    for (int s = 0; s < BATCH_QUEUE_SHARES; s++)
        to[s] += weight * chance[s];
}

/* The places in the queue an arrival can take: the levels and the most a batch brings. */
static int64_t gather_places(const struct work *w, int64_t levels)
{
    return levels + w->most_up / w->m + 2;
}

/* One place's chances by share (`chances`, of a batch whose rest from each share's middle is
 * rest[s]), times `factor`, into the bins: the wait is the rest and `ahead_mean` of full batches
 * (at it -+ sqrt(3) ahead_sd with weights 1/6, 2/3, 1/6 when ahead_sd > 0), its own batch from
 * place in_batch on. */
static void place_bin(const struct joiners *join, struct bins *bins, int64_t b, int64_t in_batch,
                      const double *chances, const double *rest, double ahead_mean, double ahead_sd, double factor)
{
    for (int64_t s = 0; s < BATCH_QUEUE_SHARES; s++) {
        double chance = chances[s] * factor;
        if (chance < BATCH_QUEUE_CASE_LEAST)
            continue;
        double own, own2;
        if (ahead_sd <= 0) {
            double wait = rest[s] + ahead_mean;
            joiners_at(join, b, in_batch, wait, &own, &own2);
            bins_add(bins, chance, wait, own, own2);
            continue;
        }
        static const double spread[3] = {-1.7320508075688772, 0, 1.7320508075688772};
        static const double share[3] = {1.0 / 6, 2.0 / 3, 1.0 / 6};
        for (int g = 0; g < 3; g++) {
            double full = ahead_mean + spread[g] * ahead_sd, wait = rest[s] + (full > 0 ? full : 0);
            joiners_at(join, b, in_batch, wait, &own, &own2);
            bins_add(bins, chance * share[g], wait, own, own2);
        }
    }
}

/* The waits of the arrivals gathered in `mass` (by time atom, place and share) during the batches
 * of kind k, places 1 .. last: the full batches ahead of each place (the count: (p - 1) / b of
 * them; with a law, e's, batch_queue.h) into the bins. */
static void places_bin(const struct work *w, int64_t k, const double *mass, int64_t places, int64_t last,
                       const struct joiners *join, struct bins *bins)
{
    const int64_t b = w->b, shares = BATCH_QUEUE_SHARES;
    for (int r = 0; r < w->in->atoms; r++) {
        double d = kind_s(w, k, r), rest[BATCH_QUEUE_SHARES];
        for (int64_t s = 0; s < shares; s++)
            rest[s] = d * (1 - ((double)s + 0.5) / (double)shares);
        for (int64_t place = 1; place <= last; place++) {
            const double *chances = mass + (r * places + place) * shares;
            if (w->count) {
                int64_t before = (place - 1) / b, in_batch = place - before * b;
                place_bin(join, bins, b, in_batch, chances, rest, (double)before * w->full_mean_s,
                          w->full_sd_s * sqrt((double)before), 1);
            } else if (place == 1) { /* at the head: its own batch next (a long one's spans are its own time) */
                place_bin(join, bins, b, 1, chances, rest, 0, 0, 1);
            } else if (place - 1 <= w->ahead_places) {
                for (int64_t i = 0; i < w->ahead_rows; i++) {
                    double from = w->ahead[i * w->ahead_places + place - 2];
                    if (from < BATCH_QUEUE_CASE_LEAST)
                        break;
                    double beyond = i + 1 < w->ahead_rows ? w->ahead[(i + 1) * w->ahead_places + place - 2] : 0;
                    /* the prompts ahead not finished by those batches share its own: its place in
                     * it up to b + 1 (a budget's worth of others, then itself) */
                    int64_t in_batch = place - i * b;
                    in_batch = in_batch < 1 ? 1 : in_batch > b + 1 ? b + 1 : in_batch;
                    if (from - beyond > 0)
                        place_bin(join, bins, b, in_batch, chances, rest, (double)i * w->full_mean_s,
                                  w->full_sd_s * sqrt((double)i), from - beyond);
                }
            } else {
                double ahead = (double)(place - 2) / w->take_mean + 0.5,
                       ahead_var = (double)(place - 2) * w->take_var / (w->take_mean * w->take_mean * w->take_mean);
                place_bin(join, bins, b, (place - 1) % b + 1, chances, rest, ahead * w->full_mean_s,
                          sqrt(ahead * w->full_sd_s * w->full_sd_s + ahead_var * w->full_mean_s * w->full_mean_s),
                          1);
            }
        }
    }
}

/* The arrivals during the batches begun at each state: their waits into the bins. A wait depends
 * on the batch's kind and time, the arrival's place in the queue and its share of the batch, not
 * on the state otherwise, so the chances are summed by (time atom, place, share) for each kind
 * (the exhausted of 1 .. sizes, then the full) first (`mass`, places to `places`), and each sum
 * binned once; a full batch's states first by (prompts left, phase) (`start`). False when out of
 * memory. */
static bool waits_gather(const struct work *w, const struct chain *c, const struct joiners *join, struct bins *bins,
                         double *busy_s, double *idle_s)
{
    const int64_t m = w->m, atoms = w->in->atoms, shares = BATCH_QUEUE_SHARES, levels = c->levels;
    const int64_t places = gather_places(w, levels);
    double *mass = calloc((size_t)(atoms * places * shares), sizeof *mass);
    double *start = calloc((size_t)((levels + 1) * m), sizeof *start);
    struct laws laws;
    if (!mass || !start || !laws_alloc(&laws, w->most_up)) {
        free(mass);
        free(start);
        return false;
    }
    *busy_s = *idle_s = 0;
    for (int64_t step = 1; step <= w->sizes + (w->full_used ? 1 : 0); step++) {
        const int64_t k = step <= w->sizes ? step : 0; /* the exhausted of 1 .. sizes, then the full */
        int64_t most_left = 0;
        if (k > 0) {
            double chance = w->at_least[k];
            for (int64_t phase = 0; phase < m; phase++)
                start[phase] = c->pi[state_of(w, c, k, phase)] * chance;
        } else {
            memset(start, 0, (size_t)((levels + 1) * m) * sizeof *start);
            for (int64_t q = 1; q <= levels; q++)
                for (int64_t j = w->least_take; j <= w->kmax && j <= q; j++)
                    if (w->take[j] > 0 && full_at(w, q, j))
                        for (int64_t phase = 0; phase < m; phase++)
                            start[(q - j) * m + phase] += c->pi[state_of(w, c, q, phase)] * w->take[j];
            most_left = levels;
        }
        int64_t last = 0; /* the last place with mass */
        bool made[BATCH_QUEUE_ATOMS] = {false}; /* a kind's laws only where its states hold mass */
        for (int64_t left = 0; left <= most_left; left++) {
            for (int64_t phase = 0; phase < m; phase++) {
                double pi = start[left * m + phase];
                if (pi < BATCH_QUEUE_CASE_LEAST)
                    continue;
                for (int r = 0; r < atoms; r++) {
                    double weight = pi * kind_weight(w, k, r);
                    if (weight < BATCH_QUEUE_CASE_LEAST)
                        continue;
                    struct batch_law *l = &laws.atom[r];
                    if (!made[r]) {
                        law_make(w, k, r, l);
                        made[r] = true;
                    }
                    *busy_s += weight * kind_s(w, k, r);
                    if (left == 0) { /* no arrival: idle until the next, which starts alone */
                        double none = 0;
                        for (int64_t n = 0; n < m - phase && n <= l->most; n++) {
                            none += l->events[n];
                            *idle_s += weight * l->events[n] * (double)(m - phase - n) / w->nu;
                        }
                        if (none * weight >= BATCH_QUEUE_CASE_LEAST)
                            bins_add(bins, weight * none, 0, 1, 1);
                    }
                    /* the j-th arrival in the batch, at event j m - phase */
                    for (int64_t j = 1, event = m - phase; event <= l->most; j++, event += m) {
                        if (weight * l->beyond[event] < BATCH_QUEUE_CASE_LEAST)
                            break;
                        shares_add(mass + (r * places + left + j) * shares, l->in_share + event * shares, weight);
                        last = left + j > last ? left + j : last;
                    }
                }
            }
        }
        places_bin(w, k, mass, places, last, join, bins);
        /* cleared for the next kind as far as this one reached (the small ones reach little) */
        for (int r = 0; r < atoms; r++)
            memset(mass + r * places * shares, 0, (size_t)((last + 1) * shares) * sizeof *mass);
    }
    free(mass);
    free(start);
    free(laws.room);
    return true;
}

/* With a law: P(K_1 + .. + K_i <= s) for s = 0 .. ahead_places - 1, ahead_places = min(places,
 * BATCH_QUEUE_EXACT_PLACES) (P(e >= i) at place s + 2, batch_queue.h), i from 0 while the chance at the last
 * place is at least BATCH_QUEUE_CASE_LEAST (at most 4 ahead_places + 8 rows): the sums' laws by
 * convolution, their mass past the places left out. False when out of memory. */
static bool ahead_make(struct work *w, int64_t places)
{
    const int64_t n = places < BATCH_QUEUE_EXACT_PLACES ? places : BATCH_QUEUE_EXACT_PLACES,
                  most_rows = 4 * n + 8;
    w->ahead_places = n;
    w->ahead_rows = 0;
    w->ahead = malloc((size_t)(most_rows * n) * sizeof *w->ahead);
    double *law = calloc((size_t)n, sizeof *law), *next = malloc((size_t)n * sizeof *next);
    if (!w->ahead || !law || !next) {
        free(law);
        free(next);
        return false;
    }
    law[0] = 1;
    for (int64_t i = 0; i < most_rows; i++) {
        double below = 0;
        for (int64_t s = 0; s < n; s++) {
            below += law[s];
            w->ahead[i * n + s] = below;
        }
        w->ahead_rows = i + 1;
        if (below < BATCH_QUEUE_CASE_LEAST)
            break;
        for (int64_t s = 0; s < n; s++) {
            double sum = 0;
            for (int64_t j = w->least_take; j <= w->kmax && j <= s; j++)
                sum += w->take[j] * law[s - j];
            next[s] = sum;
        }
        double *swap = law;
        law = next;
        next = swap;
    }
    free(law);
    free(next);
    return true;
}

/* The phases the chain follows at `levels` levels: the instances', as many as the elimination's
 * work allows (levels m states x (sizes + 1) m below x (rise + 2) m above, multiply-adds). */
static int64_t phases_within(const struct work *w, int64_t levels, int64_t rise)
{
    int64_t m = 1;
    double sizes = (double)(levels < w->kmax ? levels : w->kmax);
    while (m < w->x && m < w->most_phases) {
        double next = (double)(m + 1);
        if ((double)levels * next * (sizes + 1) * next * ((double)rise + 2) * next > BATCH_QUEUE_WORK)
            break;
        m++;
    }
    return m;
}

/* log E[exp(theta (n - K m))], n the events in a full batch: at each time atom Poisson(nu t), whose
 * E[exp(theta n)] is exp(nu t (e^theta - 1)); summed about the largest exponent, which overflows no
 * sooner than the answer does; K's part about its least (the count: b m alone). */
static double full_batch_drift(const struct work *w, double theta)
{
    double exponent[BATCH_QUEUE_ATOMS], largest = -INFINITY, grown = expm1(theta);
    for (int r = 0; r < w->in->atoms; r++) {
        exponent[r] = w->nu * w->full_s[r] * grown;
        if (w->full_weight[r] > 0)
            largest = fmax(largest, exponent[r]);
    }
    double sum = 0;
    for (int r = 0; r < w->in->atoms; r++)
        if (w->full_weight[r] > 0)
            sum += w->full_weight[r] * exp(exponent[r] - largest);
    double taken = 0;
    for (int64_t j = w->least_take; j <= w->kmax; j++)
        if (w->take[j] > 0)
            taken += w->take[j] * exp(-theta * (double)((j - w->least_take) * w->m));
    return largest + log(sum) - theta * (double)(w->least_take * w->m) + log(taken);
}

/* Above the boundary (more than b waiting) the chain is a random walk in the states, s -> s - b m
 * + n, drifting down; its stationary law falls as exp(-theta s) (Cramer-Lundberg), theta > 0 the
 * root of E[exp(theta (n - b m))] = 1. The drift's log is 0 at 0, falling there (the instance keeps
 * up) and convex, so the root is bracketed by doubling and halved to the last bit. */
static double tail_decay(const struct work *w)
{
    double low = 0, high = 1;
    for (int i = 0; i < 64 && full_batch_drift(w, high) <= 0; i++) {
        low = high;
        high *= 2;
    }
    for (;;) {
        double middle = 0.5 * (low + high);
        if (middle <= low || middle >= high)
            return low;
        if (full_batch_drift(w, middle) <= 0)
            low = middle;
        else
            high = middle;
    }
}

/* The top level's chance over what the level under it would hold without the top: it takes what
 * batches begun below it would carry past it, E[(n - K m)^+] states beyond (and its own level), and
 * keeps it until a batch takes more than it brings, P(n < K m): (1 + E[(n - K m)^+] / m) / P(n <
 * K m), a flow balance across the top. n ~ Poisson(nu t) at each time atom of a full batch,
 * E[(n - K m)^+] = E[n] - K m + E[(K m - n)^+] from the chances below K m (from the mode down: no
 * underflow). 0 when out of memory. */
static double top_gathers(const struct work *w)
{
    double *p = malloc((size_t)(w->kmax * w->m + 1) * sizeof *p), past = 0, fall = 0;
    if (!p)
        return 0;
    for (int64_t j = w->least_take; j <= w->kmax; j++) {
        double taken = w->take[j];
        if (!(taken > 0))
            continue;
        const int64_t down = j * w->m;
        for (int r = 0; r < w->in->atoms; r++) {
            double weight = taken * w->full_weight[r], mean = w->nu * w->full_s[r], below = 0, short_of = 0;
            if (weight <= 0)
                continue;
            if (down > 0)
                poisson_law(mean, down - 1, p);
            for (int64_t n = 0; n < down; n++) {
                below += p[n];
                short_of += (double)(down - n) * p[n];
            }
            past += weight * fmax(mean - (double)down + short_of, 0);
            fall += weight * below;
        }
    }
    free(p);
    return fall > 0 ? (1 + past / (double)w->m) / fall : 0;
}

/* The levels at which the top holds at most BATCH_QUEUE_MOST_TOP, with theta from tail_decay: the
 * walk from the boundary (b levels) passes u states with chance at most exp(-theta u) (Lundberg's
 * inequality), a level holds 1 - exp(-theta m) of what lies at and above it, and the top
 * top_gathers times as much. Over 3,097 pools (the 700 calls of seven Poisson serves' searches;
 * 1 to 50 instances, batches of 1 to 256 prompts, fixed shares 0 to 1, one or four time atoms at
 * 0.3 to 0.995 of what full batches serve) the solved chain's top held at most 0.76 of so
 * predicted (a third at the median), and the levels were 1.01 to 1.84 times the fewest that
 * would do (1.06 at the median; above 1.3 only for batches of 8 to 256 prompts, mostly 64 and
 * more, whose queue mostly stays under b, below where the bound starts its walk). */
static int64_t levels_needed(const struct work *w, double theta)
{
    double per_level = theta * (double)w->m, gathers = top_gathers(w);
    if (!(per_level > 0) || !(gathers > 0))
        return BATCH_QUEUE_MOST_LEVELS;
    double above = (log(-expm1(-per_level) * gathers) - log(BATCH_QUEUE_MOST_TOP)) / per_level;
    if (!(above < BATCH_QUEUE_MOST_LEVELS))
        return BATCH_QUEUE_MOST_LEVELS;
    int64_t levels = w->kmax + 1 + (int64_t)ceil(fmax(above, 0));
    return levels < BATCH_QUEUE_MOST_LEVELS ? levels : BATCH_QUEUE_MOST_LEVELS;
}

/* The chain at up to most_phases phases and the waits it gives (the model, batch_queue.h); their
 * own batches only where `own_batches` (else each prompt's place in its batch alone). */
static enum batch_queue_status waits_at(const struct batch_queue_input *in, int64_t most_phases, bool own_batches,
                                        struct batch_queue_waits *out)
{
    struct work w = {.in = in, .x = in->instances, .b = in->batch, .most_phases = most_phases};
    w.per_instance = in->arrivals_per_s / (double)w.x;
    w.count = !in->take;
    w.kmax = w.count ? w.b : in->take_most;
    w.take = calloc((size_t)(w.kmax + 2), sizeof *w.take);
    w.at_least = calloc((size_t)(w.kmax + 2), sizeof *w.at_least);
    if (!w.take || !w.at_least) {
        free(w.take);
        free(w.at_least);
        return BATCH_QUEUE_INVALID;
    }
    if (w.count) { /* K = b alone; the full batch is b's */
        w.take[w.b] = 1;
        w.exhausted = w.b - 1;
        w.full_s = in->batch_s + (w.b - 1) * in->atoms;
        w.full_weight = in->batch_weight + (w.b - 1) * in->atoms;
    } else {
        memcpy(w.take, in->take, (size_t)(w.kmax + 1) * sizeof *w.take);
        w.exhausted = w.kmax;
        w.full_s = in->full_s;
        w.full_weight = in->full_weight;
    }
    while (w.least_take < w.kmax && !(w.take[w.least_take] > 0))
        w.least_take++;
    for (int64_t j = w.kmax; j >= 0; j--)
        w.at_least[j] = w.at_least[j + 1] + w.take[j];
    double second_take = 0;
    for (int64_t j = 0; j <= w.kmax; j++) {
        w.take_mean += (double)j * w.take[j];
        second_take += (double)(j * j) * w.take[j];
    }
    w.take_var = fmax(second_take - w.take_mean * w.take_mean, 0);
    double second = 0;
    for (int r = 0; r < in->atoms; r++) {
        w.full_mean_s += w.full_weight[r] * w.full_s[r];
        second += w.full_weight[r] * w.full_s[r] * w.full_s[r];
    }
    w.full_sd_s = sqrt(fmax(second - w.full_mean_s * w.full_mean_s, 0));
    enum batch_queue_status status = BATCH_QUEUE_UNSTABLE;
    struct chain c = {0};
    struct joiners join = {0};
    struct bins *bins = NULL;
    if (w.per_instance * w.full_mean_s > BATCH_QUEUE_MOST_USE * w.take_mean)
        goto done;
    /* the batch sizes the queue reaches: grow k while a batch of k brings more than k; with a law,
     * a batch may finish fewer than it brings at any level, so the walk is met above kmax */
    int64_t reach = 1, rise;
    if (w.count) {
        for (int i = 0; i < 64; i++) {
            int64_t next = arrivals_most(&w, longest_s(&w, reach));
            next = next < w.b ? next : w.b;
            if (next <= reach)
                break;
            reach = next;
        }
        rise = arrivals_most(&w, longest_s(&w, reach));
    } else {
        double longest = 0;
        for (int64_t k = 0; k <= w.kmax; k++)
            for (int r = 0; r < in->atoms; r++)
                if (kind_weight(&w, k, r) > 0)
                    longest = fmax(longest, kind_s(&w, k, r));
        reach = w.kmax;
        rise = arrivals_most(&w, longest);
    }
    /* a batch of reach brings at most reach (at mean + 8 sd), so the queue stays within it: levels
     * beyond would only lower the phases the work allows (batch_queue.h) */
    int64_t levels = reach + 8;
    /* the levels the tail needs at the phases those levels allow: fewer phases, a longer tail,
     * so the phases only fall until they hold */
    for (int64_t m = phases_within(&w, levels, rise); m != w.m;) {
        w.m = m;
        w.nu = (double)m * w.per_instance;
        if (reach >= w.kmax) { /* only a queue that reaches kmax meets the walk above it (batch_queue.h) */
            int64_t needed = levels_needed(&w, tail_decay(&w));
            levels = needed > levels ? needed : levels;
        }
        m = phases_within(&w, levels, rise);
    }
    int solves = 0;
    double top;
    for (;;) {
        w.m = phases_within(&w, levels, rise);
        w.nu = (double)w.m * w.per_instance;
        w.sizes = levels < w.exhausted ? levels : w.exhausted;
        w.full_used = !w.count || levels >= w.b;
        w.most_up = laws_most(&w);
        solves++;
        if (!chain_solve(&w, levels, &c)) {
            status = BATCH_QUEUE_INVALID;
            goto done;
        }
        if ((top = top_mass(&w, &c)) <= BATCH_QUEUE_MOST_TOP)
            break;
        chain_free(&c);
        if (levels >= BATCH_QUEUE_MOST_LEVELS)
            goto done;
        /* short of the prediction (not seen over the pools of levels_needed): a half more, at the
         * phases those allow */
        levels += levels / 2 + 1;
        levels = levels < BATCH_QUEUE_MOST_LEVELS ? levels : BATCH_QUEUE_MOST_LEVELS;
    }
    /* the longest wait: the longest batch, then every full batch before the last level's prompts */
    double longest = 0, least = INFINITY;
    for (int64_t k = w.full_used ? 0 : 1; k <= w.sizes; k++)
        for (int r = 0; r < in->atoms; r++) {
            longest = fmax(longest, kind_s(&w, k, r));
            least = fmin(least, kind_s(&w, k, r));
        }
    int64_t most_arrivals = arrivals_most(&w, longest) * 2;
    double ahead_most = (double)((levels + most_arrivals) / w.b + 1);
    if (!w.count) {
        double places = (double)(levels + most_arrivals);
        ahead_most = floor(places / w.take_mean) + 1 + 6 * sqrt(places * w.take_var / pow(w.take_mean, 3));
    }
    double longest_wait = longest + ahead_most * (w.full_mean_s + 3 * w.full_sd_s);
    bins = calloc(1, sizeof *bins);
    if (!bins || (own_batches && !joiners_make(&w, longest_wait, gather_places(&w, levels), &join)) ||
        (!w.count && !ahead_make(&w, gather_places(&w, levels)))) {
        status = BATCH_QUEUE_INVALID;
        goto done;
    }
    /* the grid's top at the power of 2 at or above the longest wait, so that it stays put as the
     * arrivals change: one that followed them moved every bin's atom, and TTFT at a percentile fell
     * by up to 0.3% as the arrivals rose (Llama 3.1 70B on two H200s a prefill instance, Azure
     * conversation mix, 18 instances at p99: 555.8 ms at 7.8514 prompts/s each, 554.3 at 7.8576
     * with batches counted; with the take, 501.4 at 7.8608 and 499.7 at 7.8639),
     * which a search that sizes pools by what it learnt of the arrivals (serve.c, prefill_verdicts)
     * read as a pool that meets a target it misses */
    bins->least_log2 = rough_log2(least * 1e-4);
    bins->step_log2 = (ceil(rough_log2(longest_wait)) - bins->least_log2) / (BATCH_QUEUE_WAIT_BINS - 1);
    double busy_s, idle_s;
    if (!waits_gather(&w, &c, &join, bins, &busy_s, &idle_s)) {
        status = BATCH_QUEUE_INVALID;
        goto done;
    }
    double total = 0;
    for (int64_t i = 0; i <= BATCH_QUEUE_WAIT_BINS; i++)
        total += bins->weight[i];
    *out = (struct batch_queue_waits){.busy = busy_s / (busy_s + idle_s),
                                      .levels = levels,
                                      .phases = w.m,
                                      .solves = solves,
                                      .top = top,
                                      .decay = tail_decay(&w)};
    for (int64_t i = 0; i <= BATCH_QUEUE_WAIT_BINS; i++) {
        if (bins->weight[i] <= 0)
            continue;
        out->weight[out->count] = bins->weight[i] / total;
        out->wait_s[out->count] = bins->wait[i] / bins->weight[i];
        double own = bins->own[i] / bins->weight[i], own2 = bins->own2[i] / bins->weight[i];
        out->own_prompts[out->count] = fmin(fmax(own, 1), (double)(w.count ? w.b : w.b + 1));
        out->own_sd[out->count] = sqrt(fmax(own2 - own * own, 0));
        out->mean_wait_s += out->weight[out->count] * out->wait_s[out->count];
        out->count++;
    }
    status = total > 0 ? BATCH_QUEUE_OK : BATCH_QUEUE_INVALID;
done:
    free(join.mean);
    free(join.second);
    free(bins);
    free(w.take);
    free(w.at_least);
    free(w.ahead);
    chain_free(&c);
    return status;
}

/* The waits at m phases (`fine`) carried to the instances' x, from those at m2 < m (`coarse`):
 * each of fine's atoms at the level u its cumulative chance is at (its middle), the wait the two
 * give there, linear in 1 / phases (the gap's squared coefficient of variation) and taken on to
 * 1 / x, w1 + (1 / x - 1 / m) / (1 / m - 1 / m2) (w1 - w2), never below 0; coarse's wait at u
 * linear between its atoms' middles. */
static void waits_carried(struct batch_queue_waits *fine, const struct batch_queue_waits *coarse, int64_t x)
{
    double m = (double)fine->phases, m2 = (double)coarse->phases;
    double carry = (1 / (double)x - 1 / m) / (1 / m - 1 / m2);
    double below = 0, coarse_below = 0, coarse_level = coarse->weight[0] / 2;
    int64_t j = 0; /* coarse's atom whose middle is the last at or below u */
    fine->mean_wait_s = 0;
    for (int64_t i = 0; i < fine->count; i++) {
        double u = below + fine->weight[i] / 2;
        below += fine->weight[i];
        while (j + 1 < coarse->count && coarse_below + coarse->weight[j] + coarse->weight[j + 1] / 2 <= u) {
            coarse_below += coarse->weight[j];
            j++;
            coarse_level = coarse_below + coarse->weight[j] / 2;
        }
        double w2 = coarse->wait_s[j];
        if (j + 1 < coarse->count && u > coarse_level) {
            double next = coarse_below + coarse->weight[j] + coarse->weight[j + 1] / 2;
            w2 += (coarse->wait_s[j + 1] - coarse->wait_s[j]) * (u - coarse_level) / (next - coarse_level);
        }
        double w1 = fine->wait_s[i];
        fine->wait_s[i] = fmax(w1 + carry * (w1 - w2), 0);
        fine->mean_wait_s += fine->weight[i] * fine->wait_s[i];
    }
    fine->carried_from = coarse->phases;
}

enum batch_queue_status batch_queue_waits(const struct batch_queue_input *in, struct batch_queue_waits *out)
{
    if (!in || !out || !(in->arrivals_per_s > 0) || !isfinite(in->arrivals_per_s) || in->instances < 1 ||
        in->batch < 1 || in->atoms < 1 || in->atoms > BATCH_QUEUE_ATOMS || !in->batch_s || !in->batch_weight)
        return BATCH_QUEUE_INVALID;
    if (in->take) { /* a take law: its chances, its mean, and the full batch's time */
        if (in->take_most < 1 || in->take_most > BATCH_QUEUE_MOST_TAKE || !in->full_s || !in->full_weight)
            return BATCH_QUEUE_INVALID;
        double sum = 0, mean = 0;
        for (int64_t j = 0; j <= in->take_most; j++) {
            if (!(in->take[j] >= 0) || !isfinite(in->take[j]))
                return BATCH_QUEUE_INVALID;
            sum += in->take[j];
            mean += (double)j * in->take[j];
        }
        if (fabs(sum - 1) > 1e-9 || mean < 0.5)
            return BATCH_QUEUE_INVALID;
        for (int r = 0; r < in->atoms; r++)
            if (!(in->full_s[r] > 0) || !isfinite(in->full_s[r]) || !(in->full_weight[r] >= 0))
                return BATCH_QUEUE_INVALID;
    }
    const int64_t rows = in->take ? in->take_most : in->batch;
    for (int64_t i = 0; i < rows * in->atoms; i++)
        if (!(in->batch_s[i] > 0) || !isfinite(in->batch_s[i]) || !(in->batch_weight[i] >= 0))
            return BATCH_QUEUE_INVALID;
    enum batch_queue_status status = waits_at(in, BATCH_QUEUE_PHASES, true, out);
    if (status != BATCH_QUEUE_OK || out->phases >= in->instances || out->phases < 2)
        return status;
    struct batch_queue_waits *coarse = malloc(sizeof *coarse);
    if (!coarse)
        return BATCH_QUEUE_INVALID;
    /* a coarser chain's longer tail may not fit its levels: then the fine waits stand, pessimistic */
    if (waits_at(in, (out->phases + 1) / 2, false, coarse) == BATCH_QUEUE_OK && coarse->phases < out->phases)
        waits_carried(out, coarse, in->instances);
    free(coarse);
    return status;
}

void batch_queue_equal_parts(const double *value, const double *chance, int64_t count, double total,
                             double *part_mean)
{
    double part = total / BATCH_QUEUE_TAKE_ATOMS, filled = 0, weighed = 0;
    int a = 0;
    for (int64_t i = 0; i < count && a < BATCH_QUEUE_TAKE_ATOMS; i++) {
        double left = chance[i];
        while (left > 0 && a < BATCH_QUEUE_TAKE_ATOMS) {
            double put = fmin(left, part - filled);
            weighed += put * value[i];
            filled += put;
            left -= put;
            if (filled >= part * (1 - 1e-12)) {
                part_mean[a++] = weighed / filled;
                filled = weighed = 0;
            }
        }
    }
    for (; a < BATCH_QUEUE_TAKE_ATOMS; a++) /* rounding left a part short */
        part_mean[a] = filled > 0 ? weighed / filled : a > 0 ? part_mean[a - 1] : value[count - 1];
}

/* The law on cells 0 .. g (`law`, summing to `total`) cut into BATCH_QUEUE_TAKE_ATOMS parts of
 * equal chance, each part's mean cell times `cell` into tokens. */
static void take_atoms(const double *law, int64_t g, double total, double cell, double *tokens)
{
    double cells[BATCH_QUEUE_TAKE_CELLS + 1];
    for (int64_t i = 0; i <= g; i++)
        cells[i] = (double)i;
    batch_queue_equal_parts(cells, law, g + 1, total, tokens);
    for (int a = 0; a < BATCH_QUEUE_TAKE_ATOMS; a++)
        tokens[a] *= cell;
}

enum batch_queue_status batch_queue_take_law(const double *tokens, const double *weight, int64_t count, double budget,
                                             struct batch_queue_take *out)
{
    if (!tokens || !weight || !out || count < 1 || !(budget > 0) || !isfinite(budget))
        return BATCH_QUEUE_INVALID;
    double total = 0;
    for (int64_t i = 0; i < count; i++) {
        if (!(tokens[i] > 0) || !isfinite(tokens[i]) || !(weight[i] >= 0) || !isfinite(weight[i]))
            return BATCH_QUEUE_INVALID;
        total += weight[i];
    }
    if (!(total > 0))
        return BATCH_QUEUE_INVALID;
    const int64_t g = BATCH_QUEUE_TAKE_CELLS;
    const double cell = budget / (double)g;
    int64_t longest = 1;
    for (int64_t i = 0; i < count; i++) {
        double cells = fmax(round(tokens[i] / cell), 1);
        if (cells > 1e9)
            return BATCH_QUEUE_INVALID;
        longest = (int64_t)cells > longest ? (int64_t)cells : longest;
    }
    double *length = calloc((size_t)(longest + 1), sizeof *length), *law = calloc((size_t)(g + 1), sizeof *law),
           *next = malloc((size_t)(g + 1) * sizeof *next), *fresh = calloc((size_t)(g + 1), sizeof *fresh);
    if (!length || !law || !next || !fresh) {
        free(length);
        free(law);
        free(next);
        free(fresh);
        return BATCH_QUEUE_INVALID;
    }
    for (int64_t i = 0; i < count; i++)
        length[(int64_t)fmax(round(tokens[i] / cell), 1)] += weight[i] / total;
    double mean = 0;
    for (int64_t c = 1; c <= longest; c++)
        mean += (double)c * length[c];
    /* the residual: P(R = i) = P(L >= i) / E[L] */
    double from = 1;
    for (int64_t i = 1; i <= g && i <= longest; i++) {
        law[i] = fmax(from, 0) / mean;
        from -= length[i];
    }
    for (int64_t c = 1; c <= g && c <= longest; c++)
        fresh[c] = length[c];
    memset(out, 0, sizeof *out);
    double at_least[BATCH_QUEUE_MOST_TAKE + 2] = {1};
    int64_t j = 1;
    for (;; j++) { /* law: R + S_{j - 1} on 0 .. g */
        double fits = 0;
        for (int64_t i = 0; i <= g; i++)
            fits += law[i];
        at_least[j] = fits;
        if (fits < BATCH_QUEUE_CASE_LEAST) {
            at_least[j] = 0;
            j--;
            break;
        }
        /* an exhausted batch mostly follows another or an idle time, so its first prompt is whole */
        double fresh_fits = 0;
        for (int64_t i = 0; i <= g; i++)
            fresh_fits += fresh[i];
        if (fresh_fits >= BATCH_QUEUE_CASE_LEAST)
            take_atoms(fresh, g, fresh_fits, cell, out->tokens[j - 1]);
        else
            take_atoms(law, g, fits, cell, out->tokens[j - 1]);
        if (j == BATCH_QUEUE_MOST_TAKE)
            break;
        for (int round = 0; round < 2; round++) {
            double *sums = round == 0 ? law : fresh;
            for (int64_t i = 0; i <= g; i++) {
                double sum = 0;
                for (int64_t c = 1; c <= i && c <= longest; c++)
                    sum += length[c] * sums[i - c];
                next[i] = sum;
            }
            memcpy(sums, next, (size_t)(g + 1) * sizeof *next);
        }
    }
    out->most = j > 1 ? j : 1;
    if (j < 1) /* no prompt fits a budget's window: each batch a part of one */
        at_least[1] = 0;
    for (int64_t k = 0; k < out->most; k++)
        out->take[k] = fmax(at_least[k] - at_least[k + 1], 0);
    out->take[out->most] = at_least[out->most];
    if (j < 1)
        for (int a = 0; a < BATCH_QUEUE_TAKE_ATOMS; a++)
            out->tokens[0][a] = budget;
    free(length);
    free(law);
    free(next);
    free(fresh);
    return BATCH_QUEUE_OK;
}
