/* Request length distributions (lengths.h, issue 26) against hand arithmetic: family parsing and
 * its error text, the quantile points of fixed, uniform and lognormal families, the standard
 * normal quantile, a hand-written CSV's means and quantiles, raw requests merged, every CSV error
 * with its exact `path:line:col` text, binning beyond LENGTHS_MAX_CLASSES, and the shipped
 * workloads/ CSVs against the means their sources publish, and a mix's outputs scaled to a mean
 * (--osl-mean) on hand cases and on MLPerf's Llama 2 70B.
 *
 * Every expected number is worked out beside its check; none is pasted from a run. */
#include "lengths.h"
#include "queueing.h"
#include "tap.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first diagnostic of reading `text` as "t.csv", formatted as printed. */
static const char *first_error(const char *text, enum lengths_status *status)
{
    static char line[512];
    struct diags d;
    diags_init(&d);
    struct length_mix m = {.count = 7};
    *status = length_mix_read_buffer("t.csv", text, strlen(text), &m, &d);
    line[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], line, sizeof line);
    if (*status != LENGTHS_OK && m.count != 7)
        printf("# *out was written on failure\n");
    if (*status == LENGTHS_OK)
        length_mix_release(&m);
    diags_release(&d);
    return line;
}

static void read_ok(const char *text, struct length_mix *m)
{
    struct diags d;
    diags_init(&d);
    if (length_mix_read_buffer("t.csv", text, strlen(text), m, &d) != LENGTHS_OK) {
        diags_print(&d, stdout);
        printf("Bail out! cannot read a test CSV\n");
        exit(1);
    }
    diags_release(&d);
}

/* ---- 1. families ---- */

static void check_parse_error(const char *text, const char *expected)
{
    struct length_family f = {.kind = LENGTH_UNIFORM, .a = -1, .b = -2};
    char error[256] = "";
    bool ok = length_family_parse(text, &f, error, sizeof error);
    CHECK(!ok && f.a == -1 && f.b == -2, "'%s' refused, *out untouched", text);
    CHECK_STR(error, expected, text);
}

static void families(void)
{
    struct length_family f;
    char error[256];
    CHECK(length_family_parse("fixed:128", &f, error, sizeof error) && f.kind == LENGTH_FIXED && f.a == 128,
          "fixed:128 is N = 128");
    CHECK(length_family_parse("uniform:1:4", &f, error, sizeof error) && f.kind == LENGTH_UNIFORM && f.a == 1 &&
              f.b == 4, "uniform:1:4 is [1, 4]");
    CHECK(length_family_parse("lognormal:1000:0.5", &f, error, sizeof error) && f.kind == LENGTH_LOGNORMAL &&
              f.a == 1000 && f.b == 0.5, "lognormal:1000:0.5 is mean 1000, CV 0.5");
    check_parse_error("fixed:0", "length family 'fixed:0': N must be at least 1 token");
    check_parse_error("fixed:1.5", "length family 'fixed:1.5': N must be a whole number of tokens, not '1.5'");
    check_parse_error("fixed:200000000", "length family 'fixed:200000000': N is above 10^8 tokens");
    check_parse_error("uniform:5:2", "length family 'uniform:5:2': A must not exceed B");
    check_parse_error("uniform:3", "length family 'uniform:3': expected uniform:A:B");
    check_parse_error("lognormal:0:1", "length family 'lognormal:0:1': MEAN must be a number of tokens above 0 and "
                                       "at most 10^8, not '0'");
    check_parse_error("lognormal:1000:-1", "length family 'lognormal:1000:-1': CV must be a number from 0 to 100, "
                                           "not '-1'");
    check_parse_error("gamma:3:4", "unknown length family 'gamma:3:4': expected fixed:N, uniform:A:B or "
                                   "lognormal:MEAN:CV");
}

/* ---- 2. the standard normal quantile ---- */

static void normal_quantile(void)
{
    CHECK(fabs(queue_normal_quantile(0.5)) < 1e-15, "z(0.5) = 0");
    /* Phi(1) = 0.8413447460685429 (the normal CDF at 1, to 16 digits) */
    CHECK_REL(queue_normal_quantile(0.8413447460685429), 1.0, 1e-12, "z(Phi(1)) = 1");
    /* the two-sided 95% point of every statistics table: 1.959963984540054 */
    CHECK_REL(queue_normal_quantile(0.975), 1.959963984540054, 1e-12, "z(0.975) = 1.959963984540054");
    CHECK_REL(queue_normal_quantile(0.025), -1.959963984540054, 1e-12, "z(0.025) = -1.959963984540054 (symmetry)");
    /* the lower tail (AS 241's outer branch, queueing.h, which the lognormal family cuts at): z(10^-6) = -4.753424308822899 */
    CHECK_REL(queue_normal_quantile(1e-6), -4.753424308822899, 1e-12, "z(1e-6) = -4.753424308822899");
}

/* ---- 3. mixes from families ---- */

static void from_families(void)
{
    struct length_family fixed100 = {LENGTH_FIXED, 100, 0}, fixed20 = {LENGTH_FIXED, 20, 0};
    struct length_mix m;
    length_mix_from_families(&fixed100, &fixed20, 16, &m);
    CHECK(m.count == 1 && m.classes[0].isl == 100 && m.classes[0].osl == 20 && m.classes[0].weight == 1,
          "fixed:100 x fixed:20 at 16 points: one class (100, 20), weight 1");
    length_mix_release(&m);

    length_mix_fixed(1000, 250, &m);
    CHECK(m.count == 1 && m.classes[0].isl == 1000 && m.classes[0].osl == 250 && m.classes[0].weight == 1,
          "length_mix_fixed(1000, 250): one class");
    CHECK_STR(m.description, "every request 1000 prompt and 250 output tokens", "its description");
    length_mix_release(&m);

    /* uniform:1:4, 4 points: q = 1/8, 3/8, 5/8, 7/8; 1 + 3q = 1.375, 2.125, 2.875, 3.625,
     * rounded 1, 2, 3, 4, each 1/4; mean (1 + 4) / 2 = 2.5 */
    struct length_family u14 = {LENGTH_UNIFORM, 1, 4};
    length_mix_from_families(&u14, &fixed20, 4, &m);
    CHECK_EQ(m.count, 4, "uniform:1:4 x fixed:20, 4 points: 4 classes");
    for (int i = 0; i < 4 && i < m.count; i++)
        CHECK(m.classes[i].isl == i + 1 && m.classes[i].osl == 20 && m.classes[i].weight == 0.25,
              "class %d: isl %d (1 + 3 x %d/8 rounded), osl 20, weight 1/4", i, i + 1, 2 * i + 1);
    CHECK_EQ(length_mix_mean_isl(&m), 2.5, "mean isl (1 + 2 + 3 + 4) / 4 = 2.5");
    CHECK_EQ(length_mix_isl_quantile(&m, 0.5), 2, "isl median: cumulative 1/4, 1/2 >= 0.5 at isl 2");
    CHECK_STR(m.description, "isl uniform:1:4 x osl fixed:20, independent, each cut into 4 equal-probability "
                             "classes", "its description");
    length_mix_release(&m);

    /* uniform:1:4 on both sides, 2 points: 1 + 3/4 = 1.75 -> 2, 1 + 9/4 = 3.25 -> 3;
     * 2 x 2 = 4 classes of 1/4: (2,2) (2,3) (3,2) (3,3), mean 2.5 a side */
    length_mix_from_families(&u14, &u14, 2, &m);
    CHECK(m.count == 4 && m.classes[0].isl == 2 && m.classes[0].osl == 2 && m.classes[1].isl == 2 &&
              m.classes[1].osl == 3 && m.classes[2].isl == 3 && m.classes[2].osl == 2 && m.classes[3].isl == 3 &&
              m.classes[3].osl == 3,
          "uniform:1:4 x uniform:1:4, 2 points: (2,2) (2,3) (3,2) (3,3), sorted by (isl, osl)");
    CHECK_EQ(length_mix_mean_osl(&m), 2.5, "mean osl (2 + 3) / 2 = 2.5");
    length_mix_release(&m);

    /* equal points merge: uniform:1:2, 4 points: 1 + q = 1.125, 1.375 -> 1 and 1.625, 1.875 -> 2:
     * two classes of 1/2 */
    struct length_family u12 = {LENGTH_UNIFORM, 1, 2};
    length_mix_from_families(&u12, &fixed20, 4, &m);
    CHECK(m.count == 2 && m.classes[0].isl == 1 && m.classes[0].weight == 0.5 && m.classes[1].isl == 2 &&
              m.classes[1].weight == 0.5, "uniform:1:2, 4 points: 1, 1, 2, 2 merge to two classes of 1/2");
    length_mix_release(&m);

    /* lognormal:1000:0.5: sigma^2 = ln 1.25 = 0.22314355, sigma = 0.47238073,
     * mu = ln 1000 - sigma^2 / 2, so the median exp(mu) = 1000 / sqrt(1.25) = 894.427191 -> 894.
     * 3 points at q = 1/6, 1/2, 5/6, z(5/6) = -z(1/6) = 0.9674215661017014 (from Phi^-1):
     * exp(0.47238073 x 0.96742157) = exp(0.45699) = 1.57930, 894.427 x 1.57930 = 1412.58 -> 1413,
     * 894.427 / 1.57930 = 566.34 -> 566 */
    struct length_family ln = {LENGTH_LOGNORMAL, 1000, 0.5};
    CHECK_REL(length_family_quantile(&ln, 0.5), 1000 / sqrt(1.25), 1e-12, "lognormal median exp(mu) = 1000 / sqrt(1.25)");
    CHECK_REL(length_family_quantile(&ln, 5.0 / 6), 1000 / sqrt(1.25) * exp(sqrt(log(1.25)) * 0.9674215661017014),
              1e-11, "lognormal q(5/6) = exp(mu + sigma z(5/6))");
    length_mix_from_families(&ln, &fixed20, 1, &m);
    CHECK(m.count == 1 && m.classes[0].isl == 894, "lognormal:1000:0.5 at 1 point: the median, 894");
    length_mix_release(&m);
    length_mix_from_families(&ln, &fixed20, 3, &m);
    CHECK(m.count == 3 && m.classes[0].isl == 566 && m.classes[1].isl == 894 && m.classes[2].isl == 1413,
          "lognormal:1000:0.5 at 3 points: 566, 894, 1413");
    length_mix_release(&m);
    /* CV 0: every point the mean (sigma 0, mu = ln M) */
    struct length_family ln0 = {LENGTH_LOGNORMAL, 300, 0};
    length_mix_from_families(&ln0, &fixed20, 8, &m);
    CHECK(m.count == 1 && m.classes[0].isl == 300 && m.classes[0].weight == 1, "lognormal:300:0: one class at 300");
    length_mix_release(&m);
    /* 16 x 16 lognormal points: the mean of the midpoints is near the family's (within 2%) */
    struct length_family lo = {LENGTH_LOGNORMAL, 200, 1};
    length_mix_from_families(&ln, &lo, 16, &m);
    CHECK(m.count == 256, "lognormal x lognormal at 16 points: 256 classes");
    CHECK_REL(length_mix_mean_isl(&m), 1000, 0.02, "mean isl within 2% of MEAN 1000");
    length_mix_release(&m);
}

/* ---- 4. CSVs ---- */

static void csv_classes(void)
{
    struct length_mix m;
    /* weights 3 and 1 normalise to 3/4 and 1/4: mean isl 0.75 x 100 + 0.25 x 300 = 150,
     * mean osl 0.75 x 10 + 0.25 x 50 = 20 */
    read_ok("# description: two classes\n# a note\nisl,osl,weight\n100,10,3\n 300 , 50 , 1 \n", &m);
    CHECK(m.count == 2 && m.classes[0].weight == 0.75 && m.classes[1].weight == 0.25, "weights 3, 1 -> 3/4, 1/4");
    CHECK_EQ(length_mix_mean_isl(&m), 150, "mean isl 0.75 x 100 + 0.25 x 300 = 150");
    CHECK_EQ(length_mix_mean_osl(&m), 20, "mean osl 0.75 x 10 + 0.25 x 50 = 20");
    CHECK_EQ(length_mix_isl_quantile(&m, 0.75), 100, "isl p75: the cumulative 3/4 at 100 reaches 0.75");
    CHECK_EQ(length_mix_isl_quantile(&m, 0.8), 300, "isl p80: past 3/4, 300");
    CHECK_EQ(length_mix_osl_quantile(&m, 0.9), 50, "osl p90: 50");
    CHECK_EQ(length_mix_osl_quantile(&m, 0), 10, "osl p0: the smallest, 10");
    CHECK_STR(m.description, "two classes", "the description from '# description:'");
    length_mix_release(&m);

    /* raw requests: (100,10) three times, (200,20) once -> 2 classes of 3/4 and 1/4; mean isl
     * (3 x 100 + 200) / 4 = 125 */
    read_ok("isl,osl\n100,10\n200,20\n100,10\r\n\n100,10\n", &m);
    CHECK(m.count == 2 && m.classes[0].isl == 100 && m.classes[0].weight == 0.75 && m.classes[1].isl == 200 &&
              m.classes[1].weight == 0.25, "raw pairs: (100,10) x 3 and (200,20) merge to 3/4 and 1/4");
    CHECK_EQ(length_mix_mean_isl(&m), 125, "mean isl (3 x 100 + 200) / 4 = 125");
    CHECK_STR(m.description, "lengths from t.csv", "no description line: 'lengths from PATH'");
    length_mix_release(&m);

    /* weight-0 rows drop; equal classes merge: (5,5) 1 + 1, (7,7) 2 -> 1/2 each */
    read_ok("5,5,1\n6,6,0\n5,5,1\n7,7,2\n", &m);
    CHECK(m.count == 2 && m.classes[0].weight == 0.5 && m.classes[1].isl == 7, "weight 0 dropped, (5,5) merged");
    length_mix_release(&m);
}

static void csv_errors(void)
{
    enum lengths_status s;
    CHECK_STR(first_error("isl,osl\n100,abc\n", &s), "t.csv:2:5: error: expected a whole number of tokens for osl, not 'abc'",
              "osl not a number: line 2, column 5");
    CHECK_EQ(s, LENGTHS_INVALID, "and LENGTHS_INVALID");
    CHECK_STR(first_error("1.5,10\n", &s), "t.csv:1:1: error: expected a whole number of tokens for isl, not '1.5'",
              "isl not whole");
    CHECK_STR(first_error("100,0\n", &s), "t.csv:1:5: error: osl 0 is not a positive number of tokens", "osl 0");
    /* "100, -3": the field's text starts at column 6, after the comma (4) and a space (5) */
    CHECK_STR(first_error("100, -3\n", &s), "t.csv:1:6: error: osl -3 is not a positive number of tokens",
              "negative osl at its text's column");
    CHECK_STR(first_error("100000001,1\n", &s), "t.csv:1:1: error: isl 100000001 is above 10^8 tokens", "isl too long");
    /* "20,20,-0.5": the weight at column 7 */
    CHECK_STR(first_error("10,10,1\n20,20,-0.5\n", &s), "t.csv:2:7: error: weight -0.5 is negative", "negative weight");
    CHECK_STR(first_error("10,10,x\n", &s), "t.csv:1:7: error: expected a weight (a number >= 0), not 'x'",
              "weight not a number");
    CHECK_STR(first_error("# c\n10,10,0\n20,20,0\n", &s), "t.csv:2:7: error: every weight is 0",
              "all-zero weights: at the first row's weight");
    /* "20,20,1" after a 2-field first row: the extra field at column 7 */
    CHECK_STR(first_error("10,10\n20,20,1\n", &s), "t.csv:2:7: error: 3 fields here; the first row has 2",
              "mixed column counts: at the extra field");
    /* "20,20" short of the header's 3: one past its end, column 6 */
    CHECK_STR(first_error("isl,osl,weight\n10,10,1\n20,20\n", &s), "t.csv:3:6: error: 2 fields here; the header has 3",
              "a short row: one past its end");
    CHECK_STR(first_error("100\n", &s), "t.csv:1:4: error: expected isl,osl (a request) or isl,osl,weight (a class), "
                                        "not 1 field", "one field");
    CHECK_STR(first_error("isl,out\n", &s), "t.csv:1:5: error: header: expected 'osl', not 'out'", "bad header");
    CHECK_STR(first_error("", &s), "t.csv: error: no request lengths: the file has no data rows", "empty file");
    CHECK_STR(first_error("# only a comment\n\nisl,osl\n", &s), "t.csv: error: no request lengths: the file has no data rows",
              "comments and a header only");

    /* a buffer one byte over 64 MiB: refused before it is parsed */
    size_t size = (size_t)LENGTHS_MAX_BYTES + 1;
    char *big = xcalloc(size, 1);
    struct diags d;
    diags_init(&d);
    struct length_mix m = {.count = 7};
    s = length_mix_read_buffer("big.csv", big, size, &m, &d);
    char line[256] = "";
    if (d.count)
        diag_format(&d.entries[0], line, sizeof line);
    CHECK(s == LENGTHS_INVALID && m.count == 7, "a file over 64 MiB: LENGTHS_INVALID, *out untouched");
    CHECK_STR(line, "big.csv: error: file is larger than 64 MiB", "its message");
    diags_release(&d);
    free(big);

    diags_init(&d);
    s = length_mix_read_csv("no/such/lengths.csv", &m, &d);
    if (d.count)
        diag_format(&d.entries[0], line, sizeof line);
    CHECK_EQ(s, LENGTHS_IO_ERROR, "a missing file: LENGTHS_IO_ERROR");
    CHECK_STR(line, "no/such/lengths.csv: error: unable to open: No such file or directory", "its message");
    diags_release(&d);
    length_mix_release(NULL);
    length_mix_release(&(struct length_mix){0});
}

/* ---- 5. binning ---- */

static void binning(void)
{
    /* 100 x 100 = 10,000 distinct raw requests (i^2, 7 j), i, j = 1..100: more than 4,096, so
     * binned. Exact means: isl sum i^2 / 100 = 338,350 / 100 = 3,383.5; osl 7 x 50.5 = 353.5.
     * Rounding each cell's mean moves a mean by at most half a token. */
    size_t cap = 10000 * 20 + 16, n = 0;
    char *text = xmalloc(cap);
    n += (size_t)snprintf(text + n, cap - n, "isl,osl\n");
    for (int i = 1; i <= 100; i++)
        for (int j = 1; j <= 100; j++)
            n += (size_t)snprintf(text + n, cap - n, "%d,%d\n", i * i, 7 * j);
    struct length_mix m, again;
    read_ok(text, &m);
    CHECK(m.count <= LENGTHS_MAX_CLASSES && m.count > 1000, "10,000 distinct pairs binned to %lld <= 4096 classes",
          (long long)m.count);
    CHECK(fabs(length_mix_mean_isl(&m) - 3383.5) <= 0.5, "binned mean isl %.4f within half a token of 3383.5",
          length_mix_mean_isl(&m));
    CHECK(fabs(length_mix_mean_osl(&m) - 353.5) <= 0.5, "binned mean osl %.4f within half a token of 353.5",
          length_mix_mean_osl(&m));
    double total = 0;
    for (int64_t i = 0; i < m.count; i++)
        total += m.classes[i].weight;
    CHECK(fabs(total - 1) < 1e-12, "binned weights sum to 1");
    read_ok(text, &again);
    CHECK(again.count == m.count &&
              memcmp(again.classes, m.classes, (size_t)m.count * sizeof *m.classes) == 0,
          "binning is deterministic: the same classes bit for bit");
    length_mix_release(&m);
    length_mix_release(&again);
    free(text);
}

/* ---- 6. the shipped mixes ---- */

/* "# dataset mean: isl X osl Y" from the file's comments: the mean over the published requests,
 * written by tools/length_mixes.py. */
static bool comment_means(const char *path, double *isl, double *osl)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[1024];
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        found = sscanf(line, "# dataset mean: isl %lf osl %lf", isl, osl) == 2;
    fclose(f);
    return found;
}

static void shipped(void)
{
    DIR *dir = opendir("workloads");
    if (!dir) {
        printf("Bail out! no workloads/ folder\n");
        exit(1);
    }
    int files = 0;
    struct dirent *e;
    char names[64][300];
    while ((e = readdir(dir)) && files < 64)
        if (path_ends_with(e->d_name, ".csv"))
            snprintf(names[files++], sizeof names[0], "workloads/%s", e->d_name);
    closedir(dir);
    CHECK(files >= 4, "at least 4 shipped mixes (%d)", files);
    for (int i = 0; i < files; i++) {
        struct length_mix m;
        struct diags d;
        diags_init(&d);
        bool ok = length_mix_read_csv(names[i], &m, &d) == LENGTHS_OK;
        diags_print(&d, stdout);
        diags_release(&d);
        if (!CHECK(ok, "%s reads", names[i]))
            continue;
        double isl, osl;
        bool means = comment_means(names[i], &isl, &osl);
        CHECK(means, "%s: its comment gives the dataset's mean", names[i]);
        if (means) {
            CHECK_REL(length_mix_mean_isl(&m), isl, 0.01, names[i]);
            CHECK_REL(length_mix_mean_osl(&m), osl, 0.01, names[i]);
        }
        CHECK(strncmp(m.description, "lengths from", 12) != 0, "%s has a description", names[i]);
        length_mix_release(&m);
    }
    /* The means published for the MLPerf datasets (token-length summaries,
     * github.com/openshift-psap/performance-dashboard mlperf-data/summaries/, quoted in
     * the project's facts, hardware-models.md): Llama 2 70B 222.3 / 218.9 (24,576 samples),
     * Llama 3.1 405B 9,428.6 / 684.7 (8,313), DeepSeek-R1 803.8 / 4,043.4 (4,388). */
    static const struct {
        const char *path;
        double isl, osl;
    } published[] = {{"workloads/mlperf-llama2-70b.csv", 222.3, 218.9},
                     {"workloads/mlperf-llama3.1-405b.csv", 9428.6, 684.7},
                     {"workloads/mlperf-deepseek-r1.csv", 803.8, 4043.4}};
    for (size_t i = 0; i < sizeof published / sizeof published[0]; i++) {
        struct length_mix m;
        struct diags d;
        diags_init(&d);
        if (!CHECK(length_mix_read_csv(published[i].path, &m, &d) == LENGTHS_OK, "%s reads", published[i].path)) {
            diags_release(&d);
            continue;
        }
        diags_release(&d);
        CHECK_REL(length_mix_mean_isl(&m), published[i].isl, 0.01, published[i].path);
        CHECK_REL(length_mix_mean_osl(&m), published[i].osl, 0.01, published[i].path);
        length_mix_release(&m);
    }
}

/* ---- 7. outputs scaled to a mean (--osl-mean) ---- */

static void scaled_outputs(void)
{
    struct length_mix m;
    double factor = 0;
    /* osl 100 and 300 at 1/2 each, mean 200; to a mean of 300: x1.5 gives 150 and 450. The least
     * factor that reaches 300 is where 300 f rounds up to 450, f = 449.5 / 300 = 1.49833 (100 f
     * then 149.83 -> 150): both classes as at 1.5 */
    read_ok("# description: two\n10,100,1\n20,300,1\n", &m);
    CHECK(length_mix_scale_osl(&m, 300, 0, &factor), "two classes to a mean of 300");
    CHECK(m.count == 2 && m.classes[0].osl == 150 && m.classes[1].osl == 450 && m.classes[0].isl == 10 &&
              m.classes[1].isl == 20 && m.classes[0].weight == 0.5,
          "osl 100, 300 -> 150, 450, prompts and weights kept");
    CHECK(factor >= 449.5 / 300 - 1e-9 && factor <= 1.5, "factor %.6f in [1.49833, 1.5]", factor);
    CHECK_EQ(length_mix_mean_osl(&m), 300, "mean osl (150 + 450) / 2 = 300");
    CHECK_STR(m.description, "two; outputs scaled x1.498 to a mean of 300.0 tokens (from 200.0)",
              "the description says the factor and both means");
    length_mix_release(&m);

    /* the cap: osl 100 and 1,000, mean 550, to 700 with max_tokens 1,000: the long class stops at
     * 1,000, so the short one must give 2 x 700 - 1,000 = 400: x4 (least: 100 f >= 399.5) */
    read_ok("10,100,1\n10,1000,1\n", &m);
    CHECK(length_mix_scale_osl(&m, 700, 1000, &factor), "to 700 within max_tokens 1,000");
    CHECK(m.count == 2 && m.classes[0].osl == 400 && m.classes[1].osl == 1000, "osl 100, 1,000 -> 400, 1,000 (the cap)");
    CHECK(factor >= 3.995 - 1e-9 && factor < 4.005, "factor %.6f about 4", factor);
    CHECK(strstr(m.description, "none past max_tokens") != NULL, "the cap is said");
    /* past the cap: 1,000 < 1,001 cannot be reached; a mean below 1 is no length */
    struct length_class before[2] = {m.classes[0], m.classes[1]};
    CHECK(!length_mix_scale_osl(&m, 1001, 1000, &factor) && !length_mix_scale_osl(&m, 0.5, 0, &factor) &&
              m.count == 2 && m.classes[0].osl == before[0].osl && m.classes[1].osl == before[1].osl,
          "a mean past max_tokens, or below 1, refused, the mix untouched");
    length_mix_release(&m);

    /* classes that round to one pair merge: osl 1 and 2 at the same prompt, to a mean of 1 -> one
     * class (10, 1) of weight 1 */
    read_ok("10,1,1\n10,2,1\n", &m);
    CHECK(length_mix_scale_osl(&m, 1, 0, NULL), "to a mean of 1");
    CHECK(m.count == 1 && m.classes[0].isl == 10 && m.classes[0].osl == 1 && m.classes[0].weight == 1,
          "(10,1) and (10,2) both to (10,1): merged, weight 1");
    length_mix_release(&m);

    /* to its own mean: every class as it was (the least factor that keeps the mean is within half a
     * token of 1 on the longest output) */
    read_ok("5,7,1\n9,30,2\n40,123,1\n", &m);
    struct length_class same[3] = {m.classes[0], m.classes[1], m.classes[2]};
    CHECK(length_mix_scale_osl(&m, length_mix_mean_osl(&m), 0, &factor), "to its own mean");
    CHECK(m.count == 3 && m.classes[0].osl == same[0].osl && m.classes[1].osl == same[1].osl &&
              m.classes[2].osl == same[2].osl && fabs(factor - 1) <= 0.5 / 123,
          "classes unchanged, factor %.6f within 0.5 / 123 of 1", factor);
    length_mix_release(&m);

    /* MLPerf's Llama 2 70B: OpenOrca's reference outputs average 218.9 tokens, the results count
     * 294.45 a sample (TOKENS_PER_SAMPLE; the project's facts, hardware-models.md): scaled, the mean
     * is 294.45 within half a token (each class rounds by at most that) and no prompt moves */
    struct diags d;
    diags_init(&d);
    if (CHECK(length_mix_read_csv("workloads/mlperf-llama2-70b.csv", &m, &d) == LENGTHS_OK, "the Llama 2 mix reads")) {
        double isl = length_mix_mean_isl(&m);
        CHECK(length_mix_scale_osl(&m, 294.45, 0, &factor), "Llama 2 70B to 294.45");
        CHECK(fabs(length_mix_mean_osl(&m) - 294.45) <= 0.5, "mean osl %.3f within 0.5 of 294.45",
              length_mix_mean_osl(&m));
        CHECK_REL(factor, 294.45 / 218.88, 0.005, "factor about 294.45 / 218.88 = 1.345");
        CHECK_EQ(length_mix_mean_isl(&m), isl, "the prompts' mean unchanged");
        length_mix_release(&m);
    }
    diags_release(&d);
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    families();
    normal_quantile();
    from_families();
    csv_classes();
    csv_errors();
    binning();
    shipped();
    scaled_outputs();
    return tap_done();
}
