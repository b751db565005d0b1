/* Expert-load CSVs: the shipped matrices against their documented shape, and malformed input. */
#include "fixtures.h"
#include "loads.h"
#include "tap.h"

#include <unistd.h>

static enum loads_status read_text(const char *text, struct loads *out, char *message, size_t size)
{
    struct diags d;
    diags_init(&d);
    enum loads_status status = loads_read_buffer("l.csv", text, strlen(text), out, &d);
    message[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], message, size);
    diags_release(&d);
    return status;
}

int main(int argc, char **argv)
{
    if (argc > 1 && chdir(argv[1]) != 0)
        return 1;
    struct loads l;
    struct diags d;
    diags_init(&d);
    CHECK(loads_read("loads/dsv3_load.csv", &l, &d) == LOADS_OK, "loads/dsv3_load.csv reads");
    CHECK(l.layers == 58 && l.experts == 256, "58 MoE layers x 256 experts");
    /* every row routes 8,192 tokens to 8 experts each (shared/data/moe-loads/README.md) */
    bool rows_sum = true;
    double max = 0;
    for (int64_t i = 0; i < l.layers; i++) {
        double sum = 0;
        for (int64_t e = 0; e < l.experts; e++) {
            sum += loads_at(&l, i, e);
            if (loads_at(&l, i, e) > max)
                max = loads_at(&l, i, e);
        }
        rows_sum &= sum == 8192 * 8;
    }
    CHECK(rows_sum, "each row sums to 8,192 x 8 = 65,536 dispatches");
    CHECK(max / (65536.0 / 256) > 3 && max / (65536.0 / 256) < 6,
          "the hottest expert is several times the mean (README: max/mean ~3.7 per layer)");
    struct model v3 = fixture_model("models/deepseek-v3.yaml");
    struct model kimi = fixture_model("models/kimi-k2.yaml");
    CHECK(loads_check_model(&l, &v3, "loads/dsv3_load.csv", &d) == LOADS_OK, "its shape matches DeepSeek-V3");
    CHECK(loads_check_model(&l, &kimi, "loads/dsv3_load.csv", &d) == LOADS_INVALID, "and not Kimi K2");
    char message[512];
    diag_format(&d.entries[0], message, sizeof message);
    /* 58 rows on lines 1-58: Kimi K2's 59th and 60th MoE layers are missing from line 59 on */
    CHECK_STR(message, "loads/dsv3_load.csv:59:1: error: the loads are 58 layers x 256 experts; Kimi K2 has 60 MoE layers x 384 experts",
              "the shape mismatch names both shapes, where the rows run out");
    diags_release(&d);
    loads_release(&l);

    CHECK(read_text("1,2,3\r\n4, 5 ,6\n\n", &l, message, sizeof message) == LOADS_OK &&
              l.layers == 2 && l.experts == 3 && loads_at(&l, 1, 1) == 5,
          "CRLF, spaces around values and a trailing blank line are fine");
    loads_release(&l);
    CHECK(read_text("e0,e1\n1,2\n", &l, message, sizeof message) == LOADS_INVALID, "a header is refused");
    CHECK_STR(message, "l.csv:1:1: error: expected a token count, not 'e0' (load files have no header)", "header message");
    CHECK(read_text("1,2\n3,-4\n", &l, message, sizeof message) == LOADS_INVALID, "a negative count is refused");
    CHECK_STR(message, "l.csv:2:3: error: token count -4 is negative", "negative message at its column");
    CHECK(read_text("1,2,3\n4,5\n", &l, message, sizeof message) == LOADS_INVALID, "a short row is refused");
    CHECK_STR(message, "l.csv:2:4: error: row has 2 values; the first row has 3", "ragged row message");
    CHECK(read_text("1,,3\n", &l, message, sizeof message) == LOADS_INVALID, "an empty field is refused");
    CHECK(read_text("1,nan,3\n", &l, message, sizeof message) == LOADS_INVALID, "NaN is refused");
    CHECK(read_text("1,1e999,3\n", &l, message, sizeof message) == LOADS_INVALID, "overflow is refused");
    CHECK(read_text("\n\n", &l, message, sizeof message) == LOADS_INVALID, "a file with no rows is refused");
    CHECK(loads_read_buffer("l.csv", "1,2\n3,4\0junk\n", 13, &l, &d) == LOADS_INVALID,
          "a NUL byte is refused (it would end its field silently)");
    diag_format(&d.entries[0], message, sizeof message);
    CHECK_STR(message, "l.csv:2:4: error: a NUL byte: not a CSV of token counts", "at its line and column");
    diags_release(&d);
    diags_init(&d);
    CHECK(read_text("1,2\n0,0\n", &l, message, sizeof message) == LOADS_INVALID, "a row of zeros is refused");
    CHECK_STR(message, "l.csv:2:1: error: every token count of the row is 0; every token passes every MoE layer, "
                       "so each layer routes some", "zero-row message");
    CHECK(read_text("1,2\n3,1e16\n", &l, message, sizeof message) == LOADS_INVALID, "10^16 tokens is refused");
    CHECK_STR(message, "l.csv:2:3: error: token count 1e16 is above 10^15, more than any trace holds", "and says where");
    CHECK(read_text("1,2\n3,1e15\n", &l, message, sizeof message) == LOADS_OK, "10^15 tokens is still a count");
    loads_release(&l);

    /* Three rows of two experts, a blank line among them, against a model of one MoE layer of two
     * experts: the second row (line 3) is the first too many. */
    struct model one_layer = {.name = "one", .layers = 1, .moe = {.experts = 2, .experts_per_token = 1, .interleave = 1}};
    CHECK(read_text("1,2\n\n3,4\n5,6\n", &l, message, sizeof message) == LOADS_OK, "three rows read");
    diags_init(&d);
    CHECK(loads_check_model(&l, &one_layer, "l.csv", &d) == LOADS_INVALID, "rows too many for the model");
    diag_format(&d.entries[0], message, sizeof message);
    CHECK(strncmp(message, "l.csv:3:1: error: the loads are 3 layers x 2 experts;", 53) == 0,
          "the first row too many is named by its line, blank lines counted");
    diags_release(&d);
    loads_release(&l);
    return tap_done();
}
