/* plot.c: see plot.h. */
#include "plot.h"

#include "diag.h"
#include "document.h"

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
    document_escape_xml(out, title);
    fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">",
            p->left + PANEL_W / 2.0, p->top + PANEL_H + 36);
    document_escape_xml(out, x_label);
    fprintf(out, "</text>\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" "
                 "transform=\"rotate(-90 %.1f %.1f)\">",
            p->left - 52, p->top + PANEL_H / 2.0, p->left - 52, p->top + PANEL_H / 2.0);
    document_escape_xml(out, y_label);
    fprintf(out, "</text>\n");
}

/* A polyline through the points with positive coordinates; a gap at any other (log scale). */
static void polyline(FILE *out, const struct panel *p, const double *x, const double *y,
                     int64_t count, const char *colour, double width, const char *dash)
{
    bool open = false;
    for (int64_t i = 0; i < count; i++) {
        if (!(x[i] > 0 && y[i] > 0 && isfinite(x[i]) && isfinite(y[i]))) {
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
        fprintf(out, "%.1f,%.1f ", px(p, x[i]), py(p, y[i]));
    }
    if (open)
        fprintf(out, "\"/>\n");
}

static void svg_begin(FILE *out, int width, int height, const char *title, const char *subtitle)
{
    fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                 "viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, sans-serif\">\n",
            width, height, width, height);
    fprintf(out, "<rect width=\"%d\" height=\"%d\" fill=\"#fafafa\"/>\n", width, height);
    fprintf(out, "<text x=\"%d\" y=\"28\" font-size=\"18\" font-weight=\"bold\" text-anchor=\"middle\">",
            width / 2);
    document_escape_xml(out, title);
    fprintf(out, "</text>\n");
    if (subtitle) {
        fprintf(out, "<text x=\"%d\" y=\"48\" font-size=\"13\" text-anchor=\"middle\" fill=\"#555555\">",
                width / 2);
        document_escape_xml(out, subtitle);
        fprintf(out, "</text>\n");
    }
}

static void legend(FILE *out, double x, double y, const char *const *names,
                   const char *const *colours, int n)
{
    for (int i = 0; i < n; i++) {
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" stroke-width=\"3\"/>\n",
                x, y + i * 18, x + 22, y + i * 18, colours[i]);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", x + 28, y + i * 18 + 4);
        document_escape_xml(out, names[i]);
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

    char title[400];
    snprintf(title, sizeof title, "%s on %s: %s, %lld devices (TP %lld x DP %lld x PP %lld)", model, topology,
             prefill ? "prefill" : "decode", (long long)layout->devices, (long long)layout->tp,
             (long long)layout->dp, (long long)layout->pp);
    svg_begin(out, WIDTH, HEIGHT, title,
              estimate ? "calibrated estimate (efficiency below peak)"
                       : "roofline bound: peak FLOP/s, HBM and link bandwidth; terms overlap");

    struct panel time = {.left = 90, .top = TOP, .x = axis_for(batches, count), .y = axis_for(all_times, n)};
    frame(out, &time, prefill ? "Time to first token" : "Time per decode step",
          prefill ? "batch (prompts)" : "batch (sequences)", "milliseconds");
    static const char *const colours[] = {"#000000", "#d62728", "#1f77b4", "#2ca02c", "#9467bd"};
    polyline(out, &time, batches, weights, count, colours[2], 2, NULL);
    polyline(out, &time, batches, kv, count, colours[3], 2, NULL);
    polyline(out, &time, batches, network, count, colours[4], 2, NULL);
    polyline(out, &time, batches, compute, count, colours[1], 2, "5,3"); /* on top: often beside KV */
    polyline(out, &time, batches, step, count, colours[0], 3.5, "7,4");
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
    polyline(out, &cost, batches, right, count, "#ff7f0e", 3, NULL);
    const char *label = priced ? "USD / Mtok (price x devices / throughput)" : "tokens/s per device";
    const char *orange[] = {"#ff7f0e"};
    legend(out, cost.left + 14, cost.top + 26, &label, orange, 1);
    fprintf(out, "</svg>\n");
    free(values);
}

static const char *const PALETTE[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                      "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
enum { PALETTE_SIZE = sizeof PALETTE / sizeof PALETTE[0] };


void plot_panels(FILE *out, const char *title, const char *subtitle,
                 const struct plot_panel *panels, int count)
{
    int width = 90 + count * (PANEL_W + 150) - 60;
    int series_most = 0;
    for (int k = 0; k < count; k++)
        series_most = panels[k].series_count > series_most ? panels[k].series_count : series_most;
    int legend_height = 18 * series_most + 16;
    svg_begin(out, width, HEIGHT + legend_height, title, subtitle);
    for (int k = 0; k < count; k++) {
        const struct plot_panel *q = &panels[k];
        int64_t n = 0;
        for (int s = 0; s < q->series_count; s++)
            n += q->series[s].count;
        double *xs = xcalloc((size_t)n + 1, sizeof *xs), *ys = xcalloc((size_t)n + 1, sizeof *ys);
        n = 0;
        for (int s = 0; s < q->series_count; s++)
            for (int64_t i = 0; i < q->series[s].count; i++) {
                xs[n] = q->series[s].x[i];
                ys[n++] = q->series[s].y[i];
            }
        struct panel p = {.left = 90 + k * (PANEL_W + 150), .top = TOP, .x = axis_for(xs, n),
                          .y = axis_for(ys, n)};
        free(xs);
        free(ys);
        frame(out, &p, q->title, q->x_label, q->y_label);
        for (int s = 0; s < q->series_count; s++) {
            const struct plot_series *line = &q->series[s];
            const char *colour = PALETTE[s % PALETTE_SIZE];
            const char *dash = s / PALETTE_SIZE % 2 ? "6,3" : NULL;
            polyline(out, &p, line->x, line->y, line->count, colour, 2.5, dash);
            for (int64_t i = 0; line->count <= 12 && i < line->count; i++)
                if (line->x[i] > 0 && line->y[i] > 0 && isfinite(line->x[i]) && isfinite(line->y[i]))
                    fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3.5\" fill=\"%s\"/>\n",
                            px(&p, line->x[i]), py(&p, line->y[i]), colour);
            double y = TOP + PANEL_H + 58 + 18 * s;
            fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                         "stroke-width=\"3\"%s/>\n",
                    p.left, y, p.left + 22, y, colour, dash ? " stroke-dasharray=\"6,3\"" : "");
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">", p.left + 28, y + 4);
            document_escape_xml(out, line->name);
            fprintf(out, "</text>\n");
        }
    }
    fprintf(out, "</svg>\n");
}

void plot_memory_bars(FILE *out, const char *title, const struct plot_memory_bar *bars, int count)
{
    static const char *const parts[] = {"weights", "KV cache", "activations", "reserve", "free"};
    static const char *const colours[] = {"#1f77b4", "#2ca02c", "#ff7f0e", "#7f7f7f", "#e8e8e8"};
    enum { LEFT = 230, BAR_W = 760, BAR_H = 26, GAP = 14 };
    double scale_gb = 0;
    for (int b = 0; b < count; b++) {
        double used = 0;
        for (int i = 0; i < 4; i++)
            used += bars[b].gb[i];
        scale_gb = fmax(scale_gb, fmax(used, bars[b].hbm_gb));
    }
    if (!(scale_gb > 0))
        scale_gb = 1;
    int height = TOP + count * (BAR_H + GAP) + 90;
    svg_begin(out, LEFT + BAR_W + 60, height, title, "per device, GB (10^9 bytes); the line is HBM");
    for (int b = 0; b < count; b++) {
        double y = TOP + b * (BAR_H + GAP), x = LEFT;
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"12\" text-anchor=\"end\">", LEFT - 8,
                y + BAR_H / 2.0 + 4);
        document_escape_xml(out, bars[b].label);
        fprintf(out, "</text>\n");
        for (int i = 0; i < 5; i++) {
            double gb = bars[b].gb[i];
            if (!(gb > 0))
                continue;
            double w = gb / scale_gb * BAR_W;
            fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\" fill=\"%s\" "
                         "stroke=\"#ffffff\"><title>%s %.3f GB</title></rect>\n",
                    x, y, w, BAR_H, colours[i], parts[i], gb);
            x += w;
        }
        double hbm = LEFT + bars[b].hbm_gb / scale_gb * BAR_W;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
                     "stroke-width=\"2\"/>\n",
                hbm, y - 3, hbm, y + BAR_H + 3);
    }
    double axis_y = TOP + count * (BAR_H + GAP);
    for (int tick = 0; tick <= 4; tick++) {
        double x = LEFT + tick / 4.0 * BAR_W;
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" text-anchor=\"middle\">%.4g</text>\n",
                x, axis_y + 4, scale_gb * tick / 4);
    }
    for (int i = 0; i < 5; i++) {
        double x = LEFT + i * 130;
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"16\" height=\"12\" fill=\"%s\" stroke=\"#999999\"/>\n",
                x, axis_y + 24, colours[i]);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%s</text>\n", x + 22, axis_y + 34,
                parts[i]);
    }
    fprintf(out, "</svg>\n");
}

/* Below the mean: white to blue; above: white to red, darkest at `high`. */
static void heat_colour(double v, double high, char *buffer, size_t size)
{
    double t;
    int r, g, b;
    if (v <= 1) {
        t = fmax(0, fmin(1, 1 - v));
        r = (int)lround(255 - t * (255 - 49));
        g = (int)lround(255 - t * (255 - 130));
        b = (int)lround(255 - t * (255 - 189));
    } else {
        t = high > 1 ? fmin(1, (v - 1) / (high - 1)) : 1;
        r = (int)lround(255 - t * (255 - 165));
        g = (int)lround(255 - t * 255);
        b = (int)lround(255 - t * (255 - 38));
    }
    snprintf(buffer, size, "#%02x%02x%02x", r, g, b);
}

void plot_heat_map(FILE *out, const char *title, const char *subtitle, const double *values,
                   int64_t rows, int64_t columns, const char *row_label, const char *column_label)
{
    enum { LEFT = 80, AREA_W = 900, AREA_H = 480 };
    double cell_w = columns > 0 ? fmin(24, (double)AREA_W / (double)columns) : 1;
    double cell_h = rows > 0 ? fmin(24, (double)AREA_H / (double)rows) : 1;
    /* darkest at 1.25 x mean or the largest value, whichever is more: a placement within a few
     * tenths of a percent of the mean looks as balanced as it is */
    double high = 1.25;
    for (int64_t i = 0; i < rows * columns; i++)
        high = fmax(high, values[i]);
    int width = LEFT + (int)ceil(cell_w * (double)columns) + 220;
    int height = TOP + (int)ceil(cell_h * (double)rows) + 70;
    svg_begin(out, width, height, title, subtitle);
    char colour[8];
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < columns; c++) {
            heat_colour(values[r * columns + c], high, colour, sizeof colour);
            fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>\n",
                    LEFT + cell_w * (double)c, TOP + cell_h * (double)r, cell_w, cell_h, colour);
        }
    double bottom = TOP + cell_h * (double)rows, right = LEFT + cell_w * (double)columns;
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#333333\"/>\n",
            LEFT, TOP, cell_w * (double)columns, cell_h * (double)rows);
    int64_t row_step = rows > 10 ? (rows + 9) / 10 : 1, column_step = columns > 12 ? (columns + 11) / 12 : 1;
    for (int64_t r = 0; r < rows; r += row_step)
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">%lld</text>\n",
                LEFT - 6, TOP + cell_h * ((double)r + 0.5) + 4, (long long)r);
    for (int64_t c = 0; c < columns; c += column_step)
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\" text-anchor=\"middle\">%lld</text>\n",
                LEFT + cell_w * ((double)c + 0.5), bottom + 14, (long long)c);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\">", (LEFT + right) / 2,
            bottom + 34);
    document_escape_xml(out, column_label);
    fprintf(out, "</text>\n<text x=\"%d\" y=\"%.1f\" font-size=\"13\" text-anchor=\"middle\" "
                 "transform=\"rotate(-90 %d %.1f)\">",
            LEFT - 44, (TOP + bottom) / 2, LEFT - 44, (TOP + bottom) / 2);
    document_escape_xml(out, row_label);
    fprintf(out, "</text>\n");
    static const double stops[] = {0, 0.5, 1, -1, -2};
    for (int i = 0; i < 5; i++) {
        double v = stops[i] >= 0 ? stops[i] : stops[i] == -1 ? (1 + high) / 2 : high;
        double y = TOP + 20 + i * 24;
        heat_colour(v, high, colour, sizeof colour);
        fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"18\" height=\"18\" fill=\"%s\" stroke=\"#999999\"/>\n",
                right + 24, y, colour);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\">%.3g x mean</text>\n", right + 48,
                y + 13, v);
    }
    fprintf(out, "</svg>\n");
}
