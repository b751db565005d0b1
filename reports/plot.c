/* plot.c: see plot.h. */
#include "plot.h"

#include "diag.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define WIDTH 1100
#define HEIGHT 560
#define PANEL_W 420
#define PANEL_H 380
#define TOP 80

struct axis {
    double low, high; /* decades: 10^low .. 10^high */
};

struct panel {
    double left, top;
    struct axis x, y;
};

static struct axis axis_for(const double *values, int64_t count)
{
    double low = INFINITY, high = -INFINITY;
    for (int64_t i = 0; i < count; i++) {
        if (values[i] > 0 && isfinite(values[i])) {
            low = fmin(low, values[i]);
            high = fmax(high, values[i]);
        }
    }
    if (!isfinite(low))
        return (struct axis){0, 1};
    struct axis a = {floor(log10(low)), ceil(log10(high))};
    if (a.high <= a.low)
        a.high = a.low + 1;
    return a;
}

static double px(const struct panel *p, double x)
{
    return p->left + (log10(x) - p->x.low) / (p->x.high - p->x.low) * PANEL_W;
}

static double py(const struct panel *p, double y)
{
    return p->top + PANEL_H - (log10(y) - p->y.low) / (p->y.high - p->y.low) * PANEL_H;
}

static void escape(FILE *out, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '<')
            fputs("&lt;", out);
        else if (*c == '>')
            fputs("&gt;", out);
        else if (*c == '&')
            fputs("&amp;", out);
        else if (*c == '"')
            fputs("&quot;", out);
        else
            fputc(*c, out);
    }
}

static void decade_label(double exponent, char *buffer, size_t size)
{
    static const char *const suffix[] = {"", "k", "M", "G", "T"};
    int e = (int)exponent;
    if (e >= 0 && e < 15)
        snprintf(buffer, size, "%d%s", e % 3 == 0 ? 1 : e % 3 == 1 ? 10 : 100, suffix[e / 3]);
    else
        snprintf(buffer, size, "1e%d", e);
}

static void frame(FILE *out, const struct panel *p, const char *title, const char *x_label,
                  const char *y_label)
{
    fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" stroke=\"#333333\"/>\n",
            p->left, p->top, PANEL_W, PANEL_H);
    for (double e = p->x.low; e <= p->x.high + 1e-9; e++) {
        double x = p->left + (e - p->x.low) / (p->x.high - p->x.low) * PANEL_W;
        char label[16];
        decade_label(e, label, sizeof label);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n", x,
                p->top, x, p->top + PANEL_H);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">%s</text>\n", x,
                p->top + PANEL_H + 16, label);
    }
    for (double e = p->y.low; e <= p->y.high + 1e-9; e++) {
        double y = p->top + PANEL_H - (e - p->y.low) / (p->y.high - p->y.low) * PANEL_H;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#dddddd\"/>\n",
                p->left, y, p->left + PANEL_W, y);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">%g</text>\n",
                p->left - 6, y + 4, pow(10, e));
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"15\" font-weight=\"bold\" text-anchor=\"middle\">",
            p->left + PANEL_W / 2.0, p->top - 12);
    escape(out, title);
    fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">",
            p->left + PANEL_W / 2.0, p->top + PANEL_H + 36);
    escape(out, x_label);
    fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" "
                 "transform=\"rotate(-90 %.1f %.1f)\">",
            p->left - 52, p->top + PANEL_H / 2.0, p->left - 52, p->top + PANEL_H / 2.0);
    escape(out, y_label);
    fprintf(out, "</text>\n");
}

/* A polyline through the positive points; a gap where a value is 0 (log scale). */
static void series(FILE *out, const struct panel *p, const struct roof_point *points,
                   int64_t count, const double *values, const char *colour, double width,
                   const char *dash)
{
    bool open = false;
    for (int64_t i = 0; i < count; i++) {
        if (!(values[i] > 0)) {
            if (open)
                fprintf(out, "\"/>\n");
            open = false;
            continue;
        }
        if (!open)
            fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s%s%s points=\"",
                    colour, width, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
                    dash ? "\"" : "");
        open = true;
        fprintf(out, "%.1f,%.1f ", px(p, (double)points[i].batch), py(p, values[i]));
    }
    if (open)
        fprintf(out, "\"/>\n");
}

static void legend(FILE *out, double x, double y, const char *const *names,
                   const char *const *colours, int n)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
                x, y + i * 18, x + 22, y + i * 18, colours[i]);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", x + 28, y + i * 18 + 4);
        escape(out, names[i]);
        fprintf(out, "</text>\n");
    }
}

void plot_roofline(FILE *out, const struct layout *layout, const char *model, const char *topology,
                   const struct roof_point *points, int64_t count, double floor_s,
                   int64_t crossover, bool estimate, bool prefill)
{
    size_t slots = (size_t)(count > 0 ? count : 1);
    double *values = xcalloc(12 * slots + 1, sizeof *values);
    double *step = values, *compute = step + slots, *weights = compute + slots,
           *kv = weights + slots, *network = kv + slots, *right = network + slots,
           *batches = right + slots, *all_times = batches + slots;
    bool priced = count > 0 && points[0].cost_per_mtok > 0;
    for (int64_t i = 0; i < count; i++) {
        step[i] = points[i].step_s * 1e3;
        compute[i] = points[i].compute_s * 1e3;
        weights[i] = points[i].weights_s * 1e3;
        kv[i] = points[i].kv_s * 1e3;
        network[i] = points[i].comm_s * 1e3;
        right[i] = priced ? points[i].cost_per_mtok : points[i].tokens_per_s_per_device;
        batches[i] = (double)points[i].batch;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < count; i++) {
        all_times[n++] = step[i];
        all_times[n++] = compute[i];
        all_times[n++] = weights[i];
        all_times[n++] = kv[i];
        all_times[n++] = network[i];
    }
    all_times[n++] = floor_s * 1e3;

    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            WIDTH, HEIGHT, WIDTH, HEIGHT);
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n", WIDTH, HEIGHT);
    fprintf(out, "<text x=\"%d\" y=\"28\" font-size=\"18\" font-weight=\"bold\" text-anchor=\"middle\">",
            WIDTH / 2);
    escape(out, model);
    fprintf(out, " on ");
    escape(out, topology);
    fprintf(out, ": %s, %lld devices (TP %lld x DP %lld x PP %lld)</text>\n",
            prefill ? "prefill" : "decode", (long long)layout->devices, (long long)layout->tp,
            (long long)layout->dp, (long long)layout->pp);
    fprintf(out, "<text x=\"%d\" y=\"48\" font-size=\"13\" text-anchor=\"middle\" fill=\"#555555\">%s</text>\n",
            WIDTH / 2,
            estimate ? "calibrated estimate (efficiency below peak)"
                     : "roofline bound: peak FLOP/s, HBM and link bandwidth; terms overlap");

    struct panel time = {.left = 90, .top = TOP, .x = axis_for(batches, count), .y = axis_for(all_times, n)};
    frame(out, &time, prefill ? "Time to first token" : "Time per decode step",
          prefill ? "batch (prompts)" : "batch (sequences)", "milliseconds");
    static const char *const colours[] = {"#000000", "#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
    series(out, &time, points, count, weights, colours[2], 2, NULL);
    series(out, &time, points, count, kv, colours[3], 2, NULL);
    series(out, &time, points, count, network, colours[4], 2, NULL);
    series(out, &time, points, count, compute, colours[1], 2, "5,3"); /* on top: often beside KV */
    series(out, &time, points, count, step, colours[0], 3.5, "7,4");
    if (floor_s > 0 && !prefill) {
        double y = py(&time, floor_s * 1e3);
        if (y >= time.top && y <= time.top + PANEL_H) {
            fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888888\" stroke-dasharray=\"2,3\"/>\n",
                    time.left, y, time.left + PANEL_W, y);
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#555555\">floor %.3g ms</text>\n",
                    time.left + 6, y - 5, floor_s * 1e3);
        }
    }
    if (crossover > 0 && count > 0 && crossover >= points[0].batch &&
        crossover <= points[count - 1].batch) {
        double x = px(&time, (double)crossover);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" stroke-dasharray=\"4,4\"/>\n",
                x, time.top, x, time.top + PANEL_H);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#d62728\" text-anchor=\"end\">crossover %lld</text>\n",
                x - 4, time.top + 16, (long long)crossover);
    }
    static const char *const names[] = {"step (the largest term)", "compute", "weights read",
                                        "KV read", "network (EP + TP + PP)"};
    legend(out, time.left + 14, time.top + 26, names, colours, 5);

    struct panel cost = {.left = 90 + PANEL_W + 150, .top = TOP, .x = time.x, .y = axis_for(right, count)};
    frame(out, &cost, priced ? "Cost per million tokens" : "Throughput per device",
          prefill ? "batch (prompts)" : "batch (sequences)",
          priced ? "USD per million tokens" : "tokens per second per device");
    series(out, &cost, points, count, right, "#ff7f0e", 3, NULL);
    const char *label = priced ? "USD / Mtok (price x devices / throughput)" : "tokens/s per device";
    const char *orange[] = {"#ff7f0e"};
    legend(out, cost.left + 14, cost.top + 26, &label, orange, 1);
    fprintf(out, "</svg>\n");
    free(values);
}
