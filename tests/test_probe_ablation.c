// Per-head ablation (trial/probe_ablation.c): for each softmax variant (mha, tucker,
// linear) a small Fashion-MNIST model from its seed, with head 1 of layer 0 made dead on
// purpose (its d_model × d_k block of W_O zeroed): removing it changes nothing, so its
// Δloss and Δaccuracy are exactly 0, while removing head 0, or every head of the layer,
// moves the loss; the clean pass is probe_eval at σ = 0; the parameters come back as they
// were. Grassmann has no heads: no table. Then probe_spearman against hand-computed ranks
// (ties at their mean rank, as scipy.stats.spearmanr), NaN where undefined.
// modules: trial
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model/train.h"
#include "trial/probe.h"

static void check_variant(int attention) {
    const char *name = attention_names[attention];
    TrialConfig c;
    config_defaults(&c);
    c.task = TASK_FASHION_MNIST;
    c.attention = attention;
    c.d_model = 16, c.heads = 4, c.layers = 2, c.core_rank = 2, c.grassmann_rank = 4;
    c.batch = 32, c.eval_batches = 2;
    Dataset *d = dataset_open(&c);
    const DatasetInfo info = dataset_info(d);
    Model m;
    CHECK(model_init(&m, &c, &info, train_model_rows(&c, &info, NULL)) == 0, "%s: model_init", name);
    Probe p = {.layers = m.L, .heads = attention == ATTN_GRASSMANN ? 0 : m.NH};
    if (attention != ATTN_GRASSMANN) {
        float *proj_w = m.params.blocks[0].proj_w;
        for (int i = 0; i < m.C; i++) memset(proj_w + (long)i * m.C + m.hs, 0, (size_t)m.hs * sizeof(float));
    }
    const size_t bytes = m.params_arena.total * sizeof(float);
    float *before = malloc(bytes);
    memcpy(before, m.params_arena.mem, bytes);
    probe_ablate_heads(&p, &m, d);
    CHECK(!memcmp(before, m.params_arena.mem, bytes),
          "%s: the parameters changed by the ablation", name);
    if (attention == ATTN_GRASSMANN) {
        CHECK(!p.ablation_loss && !p.layer_loss, "%s: an ablation table for a model without heads", name);
    } else {
        double acc, loss;
        probe_eval(&m, d, 0.0, 0, &acc, &loss);
        CHECK(p.clean_loss == loss && p.clean_accuracy == acc,
              "%s: clean pass %.17g, %.17g against probe_eval's %.17g, %.17g", name, p.clean_loss, p.clean_accuracy, loss, acc);
        const int H = m.NH;
        CHECK(p.ablation_loss[1] == p.clean_loss && p.ablation_accuracy[1] == p.clean_accuracy,
              "%s: the dead head's ablation: dloss %.3g, daccuracy %.3g (expected exactly 0)", name,
              p.ablation_loss[1] - p.clean_loss, p.ablation_accuracy[1] - p.clean_accuracy);
        for (int l = 0; l < m.L; l++) {
            CHECK(fabs(p.ablation_loss[l * H] - p.clean_loss) > 1e-6,
                  "%s: layer %d head 0's dloss %.3g (expected not 0)", name, l, p.ablation_loss[l * H] - p.clean_loss);
            CHECK(fabs(p.layer_loss[l] - p.clean_loss) > 1e-6, "%s: layer %d, every head: dloss %.3g (expected not 0)",
                  name, l, p.layer_loss[l] - p.clean_loss);
        }
    }
    free(before);
    probe_free(&p);
    model_free(&m);
    dataset_free(d);
}

static void check_spearman(void) {
    const double x[] = {1, 2, 3, 4}, y[] = {1, 3, 2, 4}, down[] = {9, 7, 5, 1}, tied[] = {1, 2, 2, 3};
    const double flat[] = {5, 5, 5, 5};
    CHECK_CLOSE(probe_spearman(x, y, 4), 0.8, 1e-12, 0, "spearman: 1 - 6 * 2 / (4 * 15)");
    CHECK_CLOSE(probe_spearman(x, down, 4), -1.0, 1e-12, 0, "spearman of a decreasing pair");
    // ranks of tied: 1, 2.5, 2.5, 4; Pearson with 1..4: 4.5 / sqrt(5 * 4.5)
    CHECK_CLOSE(probe_spearman(tied, x, 4), 4.5 / sqrt(5 * 4.5), 1e-12, 0, "spearman with a tie");
    CHECK(isnan(probe_spearman(flat, x, 4)), "spearman of a constant side: %g (expected NaN)",
          probe_spearman(flat, x, 4));
    CHECK(isnan(probe_spearman(x, y, 1)), "spearman of one pair: %g (expected NaN)", probe_spearman(x, y, 1));
}

int main(void) {
    check_variant(ATTN_MHA);
    check_variant(ATTN_TUCKER);
    check_variant(ATTN_LINEAR);
    check_variant(ATTN_GRASSMANN);
    check_spearman();
    return check_report("test_probe_ablation");
}
