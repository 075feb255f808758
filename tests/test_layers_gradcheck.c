// Finite-difference gradient checks of every layer of the transformer and of the
// attention cores (softmax and linear, causal and not) and the Tucker generator.
// Objective: L = Σ out ⊙ R for a fixed random R, so dout = R.
// modules: model
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "model/attention.h"
#include "model/layers.h"
#include "model/matmul.h"

static unsigned seed = 12345;

static float *rnd(long n, double scale) {
    float *x = malloc((size_t)n * sizeof(float));
    gc_fill(x, n, scale, &seed);
    return x;
}

static float *zeros(long n) { return calloc((size_t)n, sizeof(float)); }

static double dot(const float *a, const float *b, long n) {
    double s = 0.0;
    for (long i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// ---- layernorm
typedef struct { float *out, *mean, *rstd, *inp, *w, *b, *R; int N, C; } LnCtx;
static double ln_obj(void *p) {
    LnCtx *c = p;
    layernorm_forward(c->out, c->mean, c->rstd, c->inp, NULL, NULL, c->w, c->b, c->N, c->C);
    return dot(c->out, c->R, (long)c->N * c->C);
}
static void test_layernorm(void) {
    LnCtx c = {.N = 5, .C = 12};
    long n = (long)c.N * c.C;
    c.out = zeros(n), c.mean = zeros(c.N), c.rstd = zeros(c.N);
    c.inp = rnd(n, 2.0), c.w = rnd(c.C, 1.0), c.b = rnd(c.C, 1.0), c.R = rnd(n, 1.0);
    float *dinp = zeros(n), *dw = zeros(c.C), *db = zeros(c.C);
    ln_obj(&c);
    layernorm_backward(dinp, dw, db, c.R, c.inp, c.w, c.mean, c.rstd, c.N, c.C);
    gradcheck_elementwise("layernorm dinp", c.inp, dinp, n, ln_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    gradcheck_elementwise("layernorm dweight", c.w, dw, c.C, ln_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    gradcheck_elementwise("layernorm dbias", c.b, db, c.C, ln_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);

    // The fused residual: res += add + add_bias in place, then the same LayerNorm of res.
    float *res = rnd(n, 2.0), *add = rnd(n, 1.0), *add_bias = rnd(c.C, 1.0), *want = zeros(n), *got = zeros(n);
    for (long i = 0; i < n; i++) c.inp[i] = res[i] + (add[i] + add_bias[i % c.C]);
    ln_obj(&c);
    memcpy(want, c.out, (size_t)n * sizeof(float));
    layernorm_forward(got, c.mean, c.rstd, res, add, add_bias, c.w, c.b, c.N, c.C);
    CHECK_ALL_CLOSE(res, c.inp, n, 0.0, 0.0, "layernorm: res + add + add_bias in place");
    CHECK_ALL_CLOSE(got, want, n, 0.0, 0.0, "layernorm of the completed residual");
    free(c.out), free(c.mean), free(c.rstd), free(c.inp), free(c.w), free(c.b), free(c.R);
    free(dinp), free(dw), free(db), free(res), free(add), free(add_bias), free(want), free(got);
}

// ---- gelu (its input x = pre + bias; pre receives gelu'(x))
typedef struct { float *out, *x, *pre, *bias, *R; int N, F; } GeluCtx;
static double gelu_obj(void *p) {
    GeluCtx *c = p;
    memcpy(c->pre, c->x, (size_t)c->N * c->F * sizeof(float));
    gelu_forward(c->out, c->pre, c->bias, c->N, c->F);
    return dot(c->out, c->R, (long)c->N * c->F);
}
static void test_gelu(void) {
    GeluCtx c = {.N = 10, .F = 20};
    const long n = (long)c.N * c.F;
    c.out = zeros(n), c.x = rnd(n, 4.0), c.pre = zeros(n), c.bias = rnd(c.F, 1.0), c.R = rnd(n, 1.0);
    float *d = zeros(n), *dbias = zeros(c.F);
    gelu_obj(&c);
    memcpy(d, c.R, (size_t)n * sizeof(float));
    gelu_backward(d, dbias, c.pre, c.N, c.F);
    gradcheck_elementwise("gelu dinp", c.x, d, n, gelu_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    gradcheck_elementwise("gelu dbias", c.bias, dbias, c.F, gelu_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    // Reference values of the tanh approximation (PyTorch GELU(approximate='tanh')).
    float x[3] = {-1.0f, 0.5f, 2.0f}, y[3], zero[3] = {0};
    gelu_forward(y, x, zero, 1, 3);
    CHECK_CLOSE(y[0], -0.15880801, 1e-6, 1e-5, "gelu(-1)");
    CHECK_CLOSE(y[1], 0.34571401, 1e-6, 1e-5, "gelu(0.5)");
    CHECK_CLOSE(y[2], 1.95459769, 1e-6, 1e-5, "gelu(2)");
    free(c.out), free(c.x), free(c.pre), free(c.bias), free(c.R), free(d), free(dbias);
}

// ---- matmul
typedef struct { float *out, *inp, *w, *b, *R; int N, C, OC; } MmCtx;
static double mm_obj(void *p) {
    MmCtx *c = p;
    matmul_forward(c->out, c->inp, c->w, c->b, c->N, c->C, c->OC);
    return dot(c->out, c->R, (long)c->N * c->OC);
}
static void test_matmul(void) {
    MmCtx c = {.N = 7, .C = 5, .OC = 6};
    c.out = zeros((long)c.N * c.OC), c.inp = rnd((long)c.N * c.C, 1.0), c.w = rnd((long)c.OC * c.C, 1.0);
    c.b = rnd(c.OC, 1.0), c.R = rnd((long)c.N * c.OC, 1.0);
    float *dinp = zeros((long)c.N * c.C), *dw = zeros((long)c.OC * c.C), *db = zeros(c.OC);
    matmul_backward(dinp, dw, db, c.R, c.inp, c.w, c.N, c.C, c.OC);
    gradcheck_elementwise("matmul dinp", c.inp, dinp, (long)c.N * c.C, mm_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    gradcheck_elementwise("matmul dweight", c.w, dw, (long)c.OC * c.C, mm_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    gradcheck_elementwise("matmul dbias", c.b, db, c.OC, mm_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    free(c.out), free(c.inp), free(c.w), free(c.b), free(c.R), free(dinp), free(dw), free(db);
}

// ---- cross-entropy (objective: the summed loss itself)
typedef struct { float *probs, *logits; int *targets; int N, K; } CeCtx;
static double ce_obj(void *p) {
    CeCtx *c = p;
    long count, correct;
    return crossentropy_forward(c->probs, c->logits, c->targets, c->N, c->K, &count, &correct);
}
static void test_crossentropy(void) {
    CeCtx c = {.N = 6, .K = 9};
    c.probs = zeros((long)c.N * c.K), c.logits = rnd((long)c.N * c.K, 3.0);
    int targets[6] = {0, 8, -1, 3, 3, -1};
    c.targets = targets;
    long count, correct;
    ce_obj(&c);
    crossentropy_forward(c.probs, c.logits, c.targets, c.N, c.K, &count, &correct);
    CHECK(count == 4, "cross-entropy counts %ld rows with a target, want 4", count);
    float *dl = zeros((long)c.N * c.K);
    crossentropy_backward(dl, c.probs, c.targets, 1.0f, c.N, c.K);
    gradcheck_elementwise("crossentropy dlogits", c.logits, dl, (long)c.N * c.K, ce_obj, &c, 1e-2f, 1e-2, 1e-3, 1000);
    // A known value: uniform logits give log K per row.
    float flat[9] = {0}, pr[9];
    int t = 4;
    double l = crossentropy_forward(pr, flat, &t, 1, 9, &count, &correct);
    CHECK_CLOSE(l, log(9.0), 1e-6, 1e-6, "cross-entropy of uniform logits");
    free(c.probs), free(c.logits), free(dl);
}

// ---- attention cores
typedef struct { float *out, *att, *qkv, *R; int B, T, C, NH, causal, linear; } AttCtx;
static double att_obj(void *p) {
    AttCtx *c = p;
    if (c->linear)
        attn_linear_forward(c->out, c->att, c->qkv, c->B, c->T, c->C, c->NH, c->causal);
    else
        attn_softmax_forward(c->out, c->att, c->qkv, c->B, c->T, c->C, c->NH, c->causal);
    return dot(c->out, c->R, (long)c->B * c->T * c->C);
}
// Head sizes 4, 16 and 20 take the kernels' element-wise packing, their whole vectors,
// and both; T = 5 is one partial tile, T = 150 and 300 several whole tiles (of 32 and of
// 64 in the softmax core) and a partial one, with the causal diagonal in each.
static void test_attention_core(int linear, int causal, int hs, int B, int T) {
    AttCtx c = {.B = B, .T = T, .C = 2 * hs, .NH = 2, .causal = causal, .linear = linear};
    long nqkv = (long)c.B * c.T * 3 * c.C, nout = (long)c.B * c.T * c.C;
    c.out = zeros(nout), c.att = zeros((long)attn_saved_floats(c.B, c.T, c.NH)), c.qkv = rnd(nqkv, 1.5), c.R = rnd(nout, 1.0);
    float *dqkv = zeros(nqkv);
    att_obj(&c);
    if (linear)
        attn_linear_backward(dqkv, c.R, c.out, c.att, c.qkv, c.B, c.T, c.C, c.NH, c.causal);
    else
        attn_softmax_backward(dqkv, c.R, c.out, c.att, c.qkv, c.B, c.T, c.C, c.NH, c.causal);
    char name[64];
    snprintf(name, sizeof name, "%s%s hs=%d T=%d dqkv", linear ? "linear" : "softmax", causal ? " causal" : "", hs, T);
    gradcheck_elementwise(name, c.qkv, dqkv, nqkv, att_obj, &c, 1e-2f, 2e-2, 2e-3, 1000);
    gradcheck_directional(name, c.qkv, dqkv, nqkv, att_obj, &c, 1e-2f, 1e-2, 3u + (unsigned)hs);

    // Causality: changing the last token changes no earlier output.
    if (causal) {
        float *before = malloc((size_t)nout * sizeof(float));
        att_obj(&c);
        memcpy(before, c.out, (size_t)nout * sizeof(float));
        for (int i = 0; i < 3 * c.C; i++) c.qkv[(long)(c.T - 1) * 3 * c.C + i] += 1.0f;
        att_obj(&c);
        int same = 1;
        for (int t = 0; t < c.T - 1; t++)
            for (int i = 0; i < c.C; i++) same &= before[(long)t * c.C + i] == c.out[(long)t * c.C + i];
        CHECK(same, "%s: an earlier output changed when the last token changed", name);
        free(before);
    }
    free(c.out), free(c.att), free(c.qkv), free(c.R), free(dqkv);
}

// The linear core against its quadratic form, out_t = Σ_s A_ts v_s / (Σ_s A_ts + ε) with
// A_ts = φq_t·φk_s over s ≤ t or all s, in one chunk (T = 5) and in several (T = 70).
static void test_linear_matches_quadratic_form(void) {
    for (int T = 5; T <= 70; T += 65)
        for (int causal = 0; causal <= 1; causal++) {
            const int B = 1, C = 4, NH = 1;
            float *qkv = rnd((long)T * 3 * C, 1.5), *out = zeros((long)T * C), *saved = zeros(T);
            attn_linear_forward(out, saved, qkv, B, T, C, NH, causal);
            double worst = 0.0;
            for (int t = 0; t < T; t++) {
                double num[4] = {0}, den = LINEAR_ATTN_EPS;
                for (int s = 0; s < (causal ? t + 1 : T); s++) {
                    double a = 0.0;
                    for (int i = 0; i < C; i++) {
                        double q = qkv[t * 3 * C + i], k = qkv[s * 3 * C + C + i];
                        a += (q > 0 ? q + 1 : exp(q)) * (k > 0 ? k + 1 : exp(k));
                    }
                    for (int i = 0; i < C; i++) num[i] += a * qkv[s * 3 * C + 2 * C + i];
                    den += a;
                }
                for (int i = 0; i < C; i++) worst = worst_diff(worst, out[t * C + i], num[i] / den);
            }
            CHECK(worst < 1e-5, "linear attention T=%d causal=%d differs from the quadratic form by %.3g", T, causal,
                  worst);
            free(qkv), free(out), free(saved);
        }
}

// The softmax core against a direct computation in double (hs = 4, 16, 20; one partial
// tile, and several tiles with their online rescaling).
static void test_softmax_matches_direct(void) {
    for (int T = 5; T <= 300; T = T < 150 ? 150 : 300 + T)
        for (int hs = 4; hs <= 20; hs += hs == 4 ? 12 : 4)
            for (int causal = 0; causal <= 1; causal++) {
                const int B = T < 100 ? 18 : 1, NH = 2, C = NH * hs, C3 = 3 * C;
                float *qkv = rnd((long)B * T * C3, 1.5), *out = zeros((long)B * T * C);
                float *saved = zeros((long)attn_saved_floats(B, T, NH));
                attn_softmax_forward(out, saved, qkv, B, T, C, NH, causal);
                double worst = 0.0;
                for (int b = 0; b < B; b++)
                    for (int h = 0; h < NH; h++)
                        for (int t = 0; t < T; t++) {
                            const float *q = qkv + ((long)b * T + t) * C3 + h * hs;
                            double w[300], sum = 0.0, mx = -1e300;
                            int send = causal ? t + 1 : T;
                            for (int s2 = 0; s2 < send; s2++) {
                                const float *k = qkv + ((long)b * T + s2) * C3 + C + h * hs;
                                double d = 0.0;
                                for (int i = 0; i < hs; i++) d += (double)q[i] * k[i];
                                w[s2] = d / sqrt((double)hs);
                                mx = fmax(mx, w[s2]);
                            }
                            for (int s2 = 0; s2 < send; s2++) sum += (w[s2] = exp(w[s2] - mx));
                            for (int i = 0; i < hs; i++) {
                                double o = 0.0;
                                for (int s2 = 0; s2 < send; s2++)
                                    o += w[s2] / sum * qkv[((long)b * T + s2) * C3 + 2 * C + h * hs + i];
                                worst = worst_diff(worst, out[((long)b * T + t) * C + h * hs + i], o);
                            }
                        }
                CHECK(worst < 1e-5, "softmax attention T=%d hs=%d causal=%d differs from the direct form by %.3g", T, hs,
                      causal, worst);
                free(qkv), free(out), free(saved);
            }
}

// ---- tucker generator
typedef struct { float *w, *core, *factor, *R; int NH, Rk, hs, C; } TkCtx;
static double tk_obj(void *p) {
    TkCtx *c = p;
    tucker_generate_forward(c->w, c->core, c->factor, c->NH, c->Rk, c->hs, c->C);
    return dot(c->w, c->R, 3L * c->C * c->C);
}
static void test_tucker(void) {
    TkCtx c = {.NH = 4, .Rk = 2, .hs = 3, .C = 12};
    long nw = 3L * c.C * c.C, ng = 3L * c.Rk * c.hs * c.C, nf = (long)c.NH * c.Rk;
    c.w = zeros(nw), c.core = rnd(ng, 1.0), c.factor = rnd(nf, 1.0), c.R = rnd(nw, 1.0);
    float *dg = zeros(ng), *df = zeros(nf);
    tucker_generate_backward(dg, df, c.R, c.core, c.factor, c.NH, c.Rk, c.hs, c.C);
    gradcheck_elementwise("tucker dcore", c.core, dg, ng, tk_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    gradcheck_elementwise("tucker dfactor", c.factor, df, nf, tk_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    // W[h,k,m,ρ] = Σ_r U[h,r] G[r,k,m,ρ] at one entry, by hand.
    int h = 3, k = 2, m = 7, rho = 1;
    double want = 0.0;
    for (int r = 0; r < c.Rk; r++)
        want += c.factor[h * c.Rk + r] * c.core[((long)rho * c.Rk + r) * c.hs * c.C + k * c.C + m];
    tk_obj(&c);
    CHECK_CLOSE(c.w[((long)rho * c.C + h * c.hs + k) * c.C + m], want, 1e-6, 1e-5, "tucker W entry");
    free(c.w), free(c.core), free(c.factor), free(c.R), free(dg), free(df);
}

// ---- embeddings
typedef struct { float *out, *patches, *pemb, *images, *pw, *pb, *cls, *wpe, *R; int B, C; } PeCtx;
static double pe_obj(void *p) {
    PeCtx *c = p;
    patch_embed_forward(c->out, c->patches, c->pemb, c->images, c->pw, c->pb, c->cls, c->wpe, c->B, c->C);
    return dot(c->out, c->R, (long)c->B * 17 * c->C);
}
static void test_patch_embed(void) {
    PeCtx c = {.B = 2, .C = 5};
    long nout = (long)c.B * 17 * c.C;
    c.out = zeros(nout), c.patches = zeros((long)c.B * 16 * 49), c.pemb = zeros((long)c.B * 16 * c.C);
    c.images = rnd((long)c.B * 784, 1.0), c.pw = rnd((long)c.C * 49, 0.3), c.pb = rnd(c.C, 1.0);
    c.cls = rnd(c.C, 1.0), c.wpe = rnd(17L * c.C, 1.0), c.R = rnd(nout, 1.0);
    float *dpw = zeros((long)c.C * 49), *dpb = zeros(c.C), *dcls = zeros(c.C), *dwpe = zeros(17L * c.C);
    float *dpemb = zeros((long)c.B * 16 * c.C);
    pe_obj(&c);
    // Patch 5 is row 1, column 1 of the 4×4 grid: its pixel (2,3) is image pixel (9,10).
    CHECK(c.patches[(0 * 16 + 5) * 49 + 2 * 7 + 3] == c.images[9 * 28 + 10], "patch extraction order");
    patch_embed_backward(dpw, dpb, dcls, dwpe, dpemb, c.R, c.patches, c.B, c.C);
    gradcheck_elementwise("patch_embed dpatch_w", c.pw, dpw, (long)c.C * 49, pe_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    gradcheck_elementwise("patch_embed dpatch_b", c.pb, dpb, c.C, pe_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    gradcheck_elementwise("patch_embed dcls", c.cls, dcls, c.C, pe_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    gradcheck_elementwise("patch_embed dwpe", c.wpe, dwpe, 17L * c.C, pe_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    free(c.out), free(c.patches), free(c.pemb), free(c.images), free(c.pw), free(c.pb), free(c.cls);
    free(c.wpe), free(c.R), free(dpw), free(dpb), free(dcls), free(dwpe), free(dpemb);
}

typedef struct { float *out, *wte, *wpe, *R; int *tokens; int B, T, C; } TeCtx;
static double te_obj(void *p) {
    TeCtx *c = p;
    token_embed_forward(c->out, c->tokens, c->wte, c->wpe, c->B, c->T, c->C);
    return dot(c->out, c->R, (long)c->B * c->T * c->C);
}
static void test_token_embed(void) {
    TeCtx c = {.B = 2, .T = 4, .C = 3};
    int tokens[8] = {1, 4, 4, 0, 2, 2, 3, 1};
    c.tokens = tokens;
    long nout = (long)c.B * c.T * c.C;
    c.out = zeros(nout), c.wte = rnd(5L * c.C, 1.0), c.wpe = rnd((long)c.T * c.C, 1.0), c.R = rnd(nout, 1.0);
    float *dwte = zeros(5L * c.C), *dwpe = zeros((long)c.T * c.C);
    token_embed_backward(dwte, dwpe, c.R, c.tokens, c.B, c.T, c.C);
    gradcheck_elementwise("token_embed dwte", c.wte, dwte, 5L * c.C, te_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    gradcheck_elementwise("token_embed dwpe", c.wpe, dwpe, (long)c.T * c.C, te_obj, &c, 1e-2f, 1e-2, 1e-3, 500);
    free(c.out), free(c.wte), free(c.wpe), free(c.R), free(dwte), free(dwpe);
}

int main(void) {
    test_layernorm();
    test_gelu();
    test_matmul();
    test_crossentropy();
    for (int linear = 0; linear <= 1; linear++)
        for (int causal = 0; causal <= 1; causal++) {
            for (int hs = 4; hs <= 20; hs += hs == 4 ? 12 : 4) test_attention_core(linear, causal, hs, 18, 5);
            test_attention_core(linear, causal, 16, 1, 150);
            test_attention_core(linear, causal, 16, 1, 300);
        }
    test_linear_matches_quadratic_form();
    test_softmax_matches_direct();
    test_tucker();
    test_patch_embed();
    test_token_embed();
    return check_report("test_layers_gradcheck");
}
