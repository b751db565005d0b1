/* prefill_chain.h: the prompt tokens an aggregated instance's steps carry when requests arrive at
 * random, followed as a Markov chain, for the tails of TTFT and TPOT (issue 26).
 *
 * Why. A step carries every decoding sequence and, from the prompts waiting, at most a budget B
 * of prompt tokens (chunked prefill). Prompts that arrive during a step join the next, so a long
 * step gathers more; when what waits passes B, the next steps are full and the queue drains by
 * B - (what arrives) a step. With heavy-tailed prompt lengths such runs of full steps make the
 * tails: in the simulation of Llama 3.1 70B on an H200 node with the Azure conversation mix, a
 * run of full steps lasts 2 or more steps in 40% of cases, 3 or more in 21%, 5 or more in 7%, and
 * a short prompt that lands in one waits out all of it. A law fitted to the step's mean and
 * variance misses them; the chain follows them.
 *
 * The model. X, the prompt tokens waiting at a step's start, on a grid of g tokens, a whole
 * number K of them to the budget (B taken as K g, at most one unit less): g = c / m, c the mean
 * prompt, m the most whole number that keeps K <= CHAIN_UNITS_FINE (K > CHAIN_UNITS_FINE / 2),
 * or 1 where B holds more than CHAIN_UNITS_FINE prompts (K up to CHAIN_UNITS), so that alike
 * prompts land on the grid and a mix's are split between the two points about them (keeping
 * their mean) as finely as the grid allows; where B >= (CHAIN_UNITS + 1) c, more prompts a step
 * than the grid follows, the chain is not built (CHAIN_UNSUPPORTED: a budget that large hardly
 * ever fills). X runs from 0 to CHAIN_STATES - 1 units, more lumped at the top; where the top holds
 * more than CHAIN_MOST_TOP, K is halved (g doubled, the states reaching twice as far) down to 4,
 * past that the chain is refused as unstable. The step carries s = min(X, B) and takes
 * T(s), the caller's step time; where the budget is several ranks' (B > C) and the mean prompt
 * is longer than a rank's chunk C, a prompt is served at most C a step, so s = min(X, B, C
 * max(1, ceil(X / the mean prompt))) (the prompts X holds, each on a rank of its own: a lone
 * prompt of two chunks takes two steps of a chunk each, where one queue of B would take it in
 * one); during it prompts arrive as a Poisson process of rate lambda, each
 * of a size drawn from the classes given (each size split between the two grid points about it,
 * keeping its mean), so the tokens arriving are a compound Poisson sum of mean lambda T(s) prompts
 * (Panjer's recursion); X' = X - s + that. The stationary law pi solves pi = pi P exactly
 * (Gaussian elimination without pivoting, banded: the queue falls by at most K a step).
 *
 * TTFT of a prompt of c tokens arriving at random (Poisson arrivals see time averages): the step
 * in progress started at X with probability pi(X) T(s(X)) / E[T] (length-biased), the prompt
 * lands at a share v of it (CHAIN_SHARES midpoints); the prompts that came before it in that step
 * (compound Poisson over v T) and what waited beyond the step's budget are ahead of it. It then
 * waits out the rest of the step, (1 - v) T, and the steps that serve, first come first served, what
 * is ahead, then its own tokens (at most C of them a step, a data-parallel rank's chunk budget),
 * then, in the step its last token is in, those that came behind it before that step began, within
 * B: a Poisson count of mean-size prompts, as none and CHAIN_BEHIND_ATOMS - 1 runs of counts of
 * about equal chance, each at its mean count (at its mean past CHAIN_BEHIND_MOST prompts, where the
 * count hardly varies; taken at their mean everywhere, a prompt's last step always carried a
 * share of one, which put TTFT's median 10-16% above the simulation's for long prompts at low
 * load, where most have none behind them and a few a whole one); its first token comes at the end
 * of that step. The times of all these cases, below CHAIN_CASE_LEAST
 * of chance left out, are gathered on a geometric grid (CHAIN_TIME_RATIO apart), each bin given
 * at its weighted mean time.
 *
 * TPOT: the steps after a prompt's first token start from the state after the step that served
 * it: sigma = the law of X' after a step started at X with probability proportional to pi(X)
 * s(X) (prompts finish in proportion to the tokens served). The sum S_n of the next n steps' times
 * has its mean, variance and third central moment from the chain exactly for n up to
 * CHAIN_WINDOW (backward recursions over the states); beyond it the mean grows by the stationary
 * step and the variance and third moment at the rate of their last step (cumulants of a Markov
 * additive sum are asymptotically linear in n).
 *
 * Not modelled here: the decode batch's own variation (the caller's), the ranks of a
 * data-parallel instance as separate queues (one budget B; a prompt takes at most C of it a step,
 * and the steps serve at most C a prompt where the mean prompt is longer than C, above, but TTFT
 * takes what is ahead of a prompt as served at up to B a step, not at that cap: short there
 * behind prompts longer than C), a prompt's own chunks waiting on others' (first come first
 * served over the whole budget).
 * Deterministic: no random numbers, fixed iteration order. */
#ifndef RACKPLAN_PREFILL_CHAIN_H
#define RACKPLAN_PREFILL_CHAIN_H

#include <stdbool.h>

#define CHAIN_UNITS 64      /* K at most */
#define CHAIN_UNITS_FINE 32 /* K that a mean prompt split into parts reaches at most */
#define CHAIN_STATES 65
#define CHAIN_SHARES 4
#define CHAIN_WINDOW 32
#define CHAIN_MOST_TOP 1e-6
#define CHAIN_TIME_RATIO 1.01
#define CHAIN_CASE_LEAST 1e-9 /* far below what p99.9 reads */
#define CHAIN_TIME_BINS 1200
#define CHAIN_BEHIND_MOST 30 /* prompts behind on average past which their count is taken at its mean */
#define CHAIN_BEHIND_TERMS 96 /* counts followed at most */
#define CHAIN_BEHIND_ATOMS 4  /* none behind, and runs of counts of about equal chance */

struct chain_input {
    double arrivals_per_s; /* lambda: prompts a second into this queue */
    double budget_tokens;  /* B: prompt tokens a step carries at most */
    double rank_tokens;    /* C: of one prompt, a step carries at most this many */
    int sizes;             /* prompt classes, at least 1 */
    const double *size_tokens, *size_weight; /* the tokens a prompt computes, and the class's share */
    double (*step_s)(void *context, double tokens); /* T: a step's time carrying `tokens` prompt
                                                     * tokens, non-decreasing, finite, > 0 */
    void *context;
};

struct prefill_chain {
    double unit_tokens, rank_units, arrivals_per_s, mean_size_units;
    int budget;                                       /* K: B in units, at most CHAIN_UNITS */
    double step_s[CHAIN_UNITS + 1];                   /* T(s) at s = 0 .. K units */
    int serve[CHAIN_STATES];                          /* s(X): the units a step that starts with X
                                                       * waiting carries */
    double size_pmf[CHAIN_STATES];                    /* a prompt's size, in units */
    int size_units[CHAIN_STATES], size_count;         /* the sizes (> 0) with mass, increasing */
    double arrive[CHAIN_UNITS + 1][CHAIN_STATES];     /* units arriving during a step of s units */
    int arrive_top[CHAIN_UNITS + 1];                  /* the last unit with mass */
    double ahead[CHAIN_SHARES][CHAIN_UNITS + 2][CHAIN_STATES]; /* the units ahead of a prompt
                                                      * arriving at share v of a step of class s
                                                      * (K + 1: a full step with more waiting),
                                                      * weighted by that case's chance */
    int ahead_top[CHAIN_SHARES][CHAIN_UNITS + 2];     /* the last unit with mass */
    double stationary[CHAIN_STATES];
    double top_mass; /* pi at the top state, where the queue's longer stays are lumped */
    double step_mean_s, step_variance_s2;             /* of a step, over pi */
    bool windows; /* whether the sums' moments below are worked out (prefill_chain_window) */
    double start[CHAIN_STATES];                       /* sigma */
    double window_mean_s[CHAIN_WINDOW + 1], window_variance_s2[CHAIN_WINDOW + 1],
        window_third_s3[CHAIN_WINDOW + 1];
};

enum chain_status {
    CHAIN_OK,
    CHAIN_UNSTABLE,   /* the queue does not keep up: the mean prompt tokens arriving in a full step
                       * at least B, or the top state's mass above CHAIN_MOST_TOP */
    CHAIN_UNSUPPORTED /* invalid input, a step time that falls as it carries more, or more prompts
                       * a step than the grid follows (exp(-lambda T) underflows) */
};

/* The chain and its stationary law into *out (large: allocate it). */
enum chain_status prefill_chain_build(const struct chain_input *in, struct prefill_chain *out);

/* TTFT of a prompt of `tokens[i]` computed tokens with probability weights[i] / their sum (i <
 * sizes): `add(context, weight, time_s)` for each bin of the geometric grid that holds mass; the
 * weights sum to 1. */
void prefill_chain_ttft(const struct prefill_chain *c, int sizes, const double *tokens, const double *weights,
                        void (*add)(void *context, double weight, double time_s), void *context);

/* The mean, variance and third central moment of the sum of the `steps` steps (>= 1; fractional
 * counts between the whole ones) after a prompt's first token. */
void prefill_chain_window(struct prefill_chain *c, double steps, double *mean_s, double *variance_s2,
                          double *third_s3);

#endif
