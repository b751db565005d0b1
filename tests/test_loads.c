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

/* Reads `text` as SGLang's JSON and checks it against a model of three layers of two experts,
 * the first dense; the message of the first problem lands in `message`. */
static enum loads_status read_count(const char *text, struct loads *out, char *message, size_t size)
{
    struct model three = {.name = "three", .layers = 3,
                          .moe = {.experts = 2, .experts_per_token = 1, .interleave = 1, .first_dense_layers = 1}};
    struct diags d;
    diags_init(&d);
    enum loads_status status = loads_read_buffer("c.json", text, strlen(text), out, &d);
    if (status == LOADS_OK && (status = loads_check_model(out, &three, "c.json", &d)) != LOADS_OK)
        loads_release(out);
    message[0] = '\0';
    if (d.count)
        diag_format(&d.entries[0], message, size);
    diags_release(&d);
    return status;
}

static void logical_count(void)
{
    struct loads l;
    char message[512];
    CHECK(read_count("{\"logical_count\": [[0, 0], [1, 2], [3, 4]]}", &l, message, sizeof message) == LOADS_OK &&
              l.layers == 2 && l.experts == 2 && loads_at(&l, 0, 1) == 2 && loads_at(&l, 1, 0) == 3,
          "logical_count, one row a model layer: the dense first row dropped, the MoE rows kept in order");
    loads_release(&l);
    /* two ranks: [0,0]+[0,0], [1,0]+[0,2], [1,4]+[2,0] */
    CHECK(read_count("{\"logical_count\": [[[0, 0], [1, 0], [1, 4]],\n [[0, 0], [0, 2], [2, 0]]], \"other\": 1}", &l,
                     message, sizeof message) == LOADS_OK &&
              l.layers == 2 && loads_at(&l, 0, 0) == 1 && loads_at(&l, 0, 1) == 2 && loads_at(&l, 1, 0) == 3 &&
              loads_at(&l, 1, 1) == 4,
          "a leading dimension of ranks is summed over; other keys are ignored");
    loads_release(&l);
    CHECK(read_count("{\"logical_count\": [[1, 2], [3, 4]]}", &l, message, sizeof message) == LOADS_INVALID,
          "one row a MoE layer is not SGLang's shape");
    CHECK_STR(message, "c.json:1:20: error: logical_count has 2 layers; three has 3 (one row a model layer, dense "
                       "ones all zero, as SGLang records them)", "and says what it is");
    CHECK(read_count("{\"logical_count\": [[5, 0],\n [1, 2],\n [3, 4]]}", &l, message, sizeof message) == LOADS_INVALID,
          "tokens routed in a dense layer are refused");
    CHECK_STR(message, "c.json:1:20: error: layer 0 of three is dense, yet 5 tokens are routed in it", "at its row");
    CHECK(read_count("{\"logical_count\": [[0, 0],\n [0, 0],\n [3, 4]]}", &l, message, sizeof message) == LOADS_INVALID,
          "a MoE layer that routes nothing is refused");
    CHECK(read_count("{\"logical_count\": [[0, 0],\n [1, 2, 3],\n [3, 4]]}", &l, message, sizeof message) == LOADS_INVALID,
          "a ragged layer is refused");
    CHECK_STR(message, "c.json:2:2: error: logical_count: a layer of 2 experts was expected, not a different count",
              "at the ragged layer");
    CHECK(read_count("{\"logical_count\": [[0, 0], [1, \"2\"], [3, 4]]}", &l, message, sizeof message) == LOADS_INVALID,
          "a string is not a count");
    CHECK_STR(message, "c.json:1:32: error: expected a token count, not 2", "at the string");
    CHECK(read_count("{\"logical_count\": [[0, 0], [1, -2], [3, 4]]}", &l, message, sizeof message) == LOADS_INVALID,
          "a negative count is refused");
    CHECK(read_count("{\"physical_to_logical_map\": [[0, 1]]}", &l, message, sizeof message) == LOADS_INVALID,
          "a map is not a record of loads");
    CHECK(strstr(message, "c.json:1:1: error: a JSON loads file holds logical_count") == message, "and says what is expected");
    CHECK(read_count("{\"logical_count\": [[0, 0], [1, 2]", &l, message, sizeof message) == LOADS_INVALID,
          "broken JSON is refused with its position");
    CHECK(strncmp(message, "c.json:1:", 9) == 0, "which names the file and line");
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
    logical_count();
    return tap_done();
}
