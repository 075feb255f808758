// test_grassmann: the Causal Grassmann mixing layer (model/attn_grassmann.h).
//   - forward against a direct per-pair computation in double;
//   - every gradient (input and six weights) against central differences, causal and not,
//     including tokens without partners and r = 2 (M = 1);
//   - the Plücker backward against the per-pair rule in double, including the ε branch;
//   - backward adds into its outputs and never reads its scratch before writing it;
//   - causal mode: changing token t' changes no output before t';
//   - a timing print at realistic sizes against the layer's own three dense maps.
// modules: model
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/util.h"
#include "model/attn_grassmann.h"
#include "model/matmul.h"

typedef struct {
    const char *name;
    int B, T, C, r;
    const int *offsets;
    int n_off, causal;
} Case;

// One layer instance: weights, gradients, activations, scratch, input, output, and the
// fixed random R of the objective L = Σ out ⊙ R. Each group is one allocation.
typedef struct {
    Case k;
    int M, N;
    long n_w;
    float *wmem, *dwmem, *amem, *damem;
    GrassmannWeights w, dw;
    GrassmannActs a, da;
    float *inp, *dinp, *out, *R;
} Layer;

static unsigned long long rng_state = 0x9e3779b97f4a7c15ull;

static float uniform(float lo, float hi) {  // xorshift64*
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    double u = (double)((rng_state * 0x2545f4914f6cdd1dull) >> 11) / 9007199254740992.0;
    return lo + (hi - lo) * (float)u;
}

static void fill(float *x, long n, float scale) {
    for (long i = 0; i < n; i++) x[i] = uniform(-scale, scale);
}

static long weights_size(int C, int r) {
    return (long)r * C + r + (long)C * grassmann_pairs(r) + C + 2L * C * C + C;
}
static long acts_size(int N, int C, int r) { return (long)N * (r + grassmann_pairs(r) + 4 * C); }

static void weights_point(GrassmannWeights *w, float *p, int C, int r) {
    const int M = grassmann_pairs(r);
    w->red_w = p, p += (long)r * C;
    w->red_b = p, p += r;
    w->plu_w = p, p += (long)C * M;
    w->plu_b = p, p += C;
    w->gate_w = p, p += (long)C * 2 * C;
    w->gate_b = p;
}

static void acts_point(GrassmannActs *a, float *p, int N, int C, int r) {
    const int M = grassmann_pairs(r);
    a->z = p, p += (long)N * r;
    a->pbar = p, p += (long)N * M;
    a->g = p, p += (long)N * C;
    a->alpha = p, p += (long)N * C;
    a->gate_in = p;
}

// Weights at a scale where z = O(1), so ‖p‖ ≫ ε and the normalisation is smooth.
static Layer layer_new(Case k) {
    Layer L = {.k = k, .M = grassmann_pairs(k.r), .N = k.B * k.T};
    const int C = k.C, r = k.r, N = L.N;
    L.n_w = weights_size(C, r);
    long n_a = acts_size(N, C, r);
    L.wmem = xmalloc((size_t)L.n_w * sizeof(float));
    L.dwmem = xmalloc((size_t)L.n_w * sizeof(float));
    L.amem = xmalloc((size_t)n_a * sizeof(float));
    L.damem = xmalloc((size_t)n_a * sizeof(float));
    weights_point(&L.w, L.wmem, C, r);
    weights_point(&L.dw, L.dwmem, C, r);
    acts_point(&L.a, L.amem, N, C, r);
    acts_point(&L.da, L.damem, N, C, r);
    L.inp = xmalloc((size_t)4 * N * C * sizeof(float));
    L.dinp = L.inp + (long)N * C;
    L.out = L.dinp + (long)N * C;
    L.R = L.out + (long)N * C;
    fill(L.inp, (long)N * C, 1.0f);
    fill(L.R, (long)N * C, 1.0f);
    fill(L.w.red_w, (long)r * C, 2.0f / sqrtf((float)C));
    fill(L.w.red_b, r, 0.5f);
    fill(L.w.plu_w, (long)C * L.M, 1.0f);
    fill(L.w.plu_b, C, 0.5f);
    fill(L.w.gate_w, (long)C * 2 * C, 2.0f / sqrtf((float)(2 * C)));
    fill(L.w.gate_b, C, 0.5f);
    return L;
}

static void layer_free(Layer *L) {
    free(L->wmem);
    free(L->dwmem);
    free(L->amem);
    free(L->damem);
    free(L->inp);
}

static void forward(Layer *L) {
    const Case *k = &L->k;
    grassmann_forward(L->out, L->a, L->inp, L->w, k->B, k->T, k->C, k->r, k->offsets, k->n_off,
                      k->causal);
}

// Adds dL/d(inp, weights) for dout = R into dinp and dw; fills the scratch with NaN first.
static void backward(Layer *L) {
    const Case *k = &L->k;
    long n_a = acts_size(L->N, k->C, k->r);
    for (long i = 0; i < n_a; i++) L->damem[i] = NAN;
    grassmann_backward(L->dinp, L->dw, L->da, L->R, L->inp, L->a, L->w, k->B, k->T, k->C, k->r,
                       k->offsets, k->n_off, k->causal);
}

static double objective(Layer *L) {
    forward(L);
    double s = 0.0;
    for (long i = 0; i < (long)L->N * L->k.C; i++) s += (double)L->out[i] * L->R[i];
    return s;
}

// ---- forward against the definition, pair by pair, in double

static void test_forward_matches_direct_double(Case k) {
    Layer L = layer_new(k);
    forward(&L);
    const int B = k.B, T = k.T, C = k.C, r = k.r, M = L.M;
    double *z = xmalloc(((size_t)T * r + 2 * (size_t)M + C) * sizeof(double));
    double *p = z + (long)T * r, *pbar = p + M, *g = pbar + M;
    double worst[4] = {0};  // max |float − double| for P̄, g, α, out
    for (int b = 0; b < B; b++) {
        for (int t = 0; t < T; t++)
            for (int i = 0; i < r; i++) {
                double s = L.w.red_b[i];
                for (int c = 0; c < C; c++)
                    s += (double)L.w.red_w[i * C + c] * L.inp[((long)b * T + t) * C + c];
                z[t * r + i] = s;
            }
        for (int t = 0; t < T; t++) {
            const long row = (long)b * T + t;
            int count = 0;
            for (int m = 0; m < M; m++) pbar[m] = 0.0;
            for (int o = 0; o < k.n_off; o++)
                for (int side = 0; side < (k.causal ? 1 : 2); side++) {
                    int s = side == 0 ? t - k.offsets[o] : t + k.offsets[o];
                    if (s < 0 || s >= T) continue;
                    double nn = 0.0;
                    for (int i = 0, m = 0; i < r; i++)
                        for (int j = i + 1; j < r; j++, m++) {
                            p[m] = z[t * r + i] * z[s * r + j] - z[t * r + j] * z[s * r + i];
                            nn += p[m] * p[m];
                        }
                    double n = fmax(sqrt(nn), GRASSMANN_EPS);
                    for (int m = 0; m < M; m++) pbar[m] += p[m] / n;
                    count++;
                }
            for (int m = 0; m < M; m++) {
                if (count) pbar[m] /= count;
                worst[0] = worst_diff(worst[0], L.a.pbar[row * M + m], pbar[m]);
            }
            for (int c = 0; c < C; c++) {
                double s = L.w.plu_b[c];
                for (int m = 0; m < M; m++) s += (double)L.w.plu_w[(long)c * M + m] * pbar[m];
                g[c] = s;
                worst[1] = worst_diff(worst[1], L.a.g[row * C + c], s);
            }
            for (int c = 0; c < C; c++) {
                const float *h = L.inp + row * C;
                double s = L.w.gate_b[c];
                for (int i = 0; i < C; i++)
                    s += (double)L.w.gate_w[(long)c * 2 * C + i] * h[i] +
                         (double)L.w.gate_w[(long)c * 2 * C + C + i] * g[i];
                double al = 1.0 / (1.0 + exp(-s));
                double o = al * h[c] + (1.0 - al) * g[c];
                worst[2] = worst_diff(worst[2], L.a.alpha[row * C + c], al);
                worst[3] = worst_diff(worst[3], L.out[row * C + c], o);
            }
        }
    }
    const char *names[4] = {"pbar", "g", "alpha", "out"};
    printf("forward vs direct double (%s): max |diff| pbar %.2e  g %.2e  alpha %.2e  out %.2e\n",
           k.name, worst[0], worst[1], worst[2], worst[3]);
    for (int i = 0; i < 4; i++)
        CHECK(worst[i] <= 2e-5, "%s: %s differs from the double reference by %.3g", k.name,
              names[i], worst[i]);
    free(z);
    layer_free(&L);
}

// ---- the Plücker backward against the per-pair rule, in double
//
// White-box: after grassmann_backward the scratch holds dP̄ (da.pbar) and dz (da.z). The
// reference pushes dP̄ back pair by pair as the definition reads: dp̂ = dP̄_t / c,
// dp = (dp̂ − p̂(p̂·dp̂)) / n if n > ε else dp̂ / ε, then through p = z_t ∧ z_s. With
// `twin`, token 3 of sequence 0 is a copy of token 2, so that pair has p = 0: the ε branch.

static void test_pluecker_backward_matches_per_pair_rule(Case k, int twin) {
    Layer L = layer_new(k);
    const int B = k.B, T = k.T, C = k.C, r = k.r, M = L.M;
    if (twin) memcpy(L.inp + 3L * C, L.inp + 2L * C, (size_t)C * sizeof(float));
    memset(L.dwmem, 0, (size_t)L.n_w * sizeof(float));
    memset(L.dinp, 0, (size_t)L.N * C * sizeof(float));
    forward(&L);
    backward(&L);
    double *dz = xcalloc((size_t)L.N * r, sizeof(double));
    double *p = xmalloc((size_t)2 * M * sizeof(double)), *dp = p + M;
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const long rt = (long)b * T + t;
            const float *zt = L.a.z + rt * r, *G = L.da.pbar + rt * M;
            int count = 0, s_list[16];  // 2·n_off ≤ 16 here
            for (int o = 0; o < k.n_off; o++) {
                if (t - k.offsets[o] >= 0) s_list[count++] = t - k.offsets[o];
                if (!k.causal && t + k.offsets[o] < T) s_list[count++] = t + k.offsets[o];
            }
            for (int q = 0; q < count; q++) {
                const long rs = (long)b * T + s_list[q];
                const float *zs = L.a.z + rs * r;
                double nn = 0.0, pg = 0.0;
                for (int i = 0, m = 0; i < r; i++)
                    for (int j = i + 1; j < r; j++, m++) {
                        p[m] = (double)zt[i] * zs[j] - (double)zt[j] * zs[i];
                        nn += p[m] * p[m];
                    }
                const double n = sqrt(nn);
                for (int m = 0; m < M; m++) pg += p[m] * G[m] / count;  // p·dp̂
                for (int m = 0; m < M; m++)
                    dp[m] = n > GRASSMANN_EPS ? (G[m] / count - p[m] * pg / (n * n)) / n
                                              : G[m] / count / GRASSMANN_EPS;
                for (int i = 0, m = 0; i < r; i++)
                    for (int j = i + 1; j < r; j++, m++) {
                        dz[rt * r + i] += dp[m] * zs[j];
                        dz[rt * r + j] -= dp[m] * zs[i];
                        dz[rs * r + j] += dp[m] * zt[i];
                        dz[rs * r + i] -= dp[m] * zt[j];
                    }
            }
        }
    double dmax = 0.0;  // max |ref|, the tolerance's scale: fmax skips a NaN, which the check then fails
    for (long i = 0; i < (long)L.N * r; i++) dmax = fmax(dmax, fabs(dz[i]));
    const double emax = CHECK_ALL_CLOSE(L.da.z, dz, (long)L.N * r, 1e-5 * dmax, 0.0, "%s%s: dz", k.name,
                                        twin ? ", twin tokens" : "");
    printf("Plücker backward vs per-pair rule (%s%s): max |dz - ref| / max |ref| %.1e"
           " (max |ref| %.3g)\n", k.name, twin ? ", twin tokens" : "", emax / dmax, dmax);
    free(dz);
    free(p);
    layer_free(&L);
}

// ---- gradients against central differences

typedef struct {
    const char *name;
    float *x, *dx;
    long n;
} Tensor;

static void test_gradients_match_finite_differences(Case k) {
    Layer L = layer_new(k);
    const int C = k.C, r = k.r, N = L.N, M = L.M;
    memset(L.dwmem, 0, (size_t)L.n_w * sizeof(float));
    memset(L.dinp, 0, (size_t)N * C * sizeof(float));
    forward(&L);
    backward(&L);
    Tensor ts[7] = {
        {"inp", L.inp, L.dinp, (long)N * C},
        {"red_w", L.w.red_w, L.dw.red_w, (long)r * C},
        {"red_b", L.w.red_b, L.dw.red_b, r},
        {"plu_w", L.w.plu_w, L.dw.plu_w, (long)C * M},
        {"plu_b", L.w.plu_b, L.dw.plu_b, C},
        {"gate_w", L.w.gate_w, L.dw.gate_w, (long)C * 2 * C},
        {"gate_b", L.w.gate_b, L.dw.gate_b, C},
    };
    // Central differences of a float forward carry an absolute round-off set by the size
    // of L, the same for every tensor; the case's largest gradient stands for that size.
    // (fmax skips a NaN in this scale and in amax below; the checks of each tensor fail it.)
    double scale = 0.0;
    for (int q = 0; q < 7; q++)
        for (long i = 0; i < ts[q].n; i++) scale = fmax(scale, fabs(ts[q].dx[i]));
    const float h = 1e-3f;
    printf("gradients (%s), max |fd - an| / max |an|:", k.name);
    for (int q = 0; q < 7; q++) {
        const Tensor *te = &ts[q];
        // For r = 2 each p̂ is ±1: P̄, hence out, does not depend on z, and the gradients
        // of W_red and b_red vanish. There the check is |fd − an| ≪ the case's scale.
        const int vanishes = k.r == 2 && (te->x == L.w.red_w || te->x == L.w.red_b);
        if (vanishes) {  // the analytic ones too, to 1e-4 of the case's scale
            double *zero = xcalloc((size_t)te->n, sizeof(double));
            CHECK_ALL_CLOSE(te->dx, zero, te->n, 1e-4 * scale, 0.0, "%s: d%s", k.name, te->name);
            free(zero);
        }
        double *fd = xmalloc((size_t)te->n * sizeof(double)), amax = 0.0;
        for (long i = 0; i < te->n; i++) amax = fmax(amax, fabs(te->dx[i]));
        const double ref = vanishes ? scale : amax;
        for (long i = 0; i < te->n; i++) {
            const float x0 = te->x[i], xp = x0 + h, xm = x0 - h;
            te->x[i] = xp;
            double lp = objective(&L);
            te->x[i] = xm;
            double lm = objective(&L);
            te->x[i] = x0;
            fd[i] = (lp - lm) / ((double)xp - xm);
        }
        const double emax = CHECK_ALL_CLOSE(fd, te->dx, te->n, 2e-3 * ref, 2e-2, "%s: d%s", k.name, te->name);
        printf(" %s %.1e%s", te->name, emax / ref,
               vanishes ? " (vanishes; / the case's max |an|)" : "");
        free(fd);
    }
    printf("\n");
    layer_free(&L);
}

// Backward adds: a second call on the same buffers doubles every gradient.
static void test_backward_accumulates(Case k) {
    Layer L = layer_new(k);
    const long n_in = (long)L.N * k.C;
    memset(L.dwmem, 0, (size_t)L.n_w * sizeof(float));
    memset(L.dinp, 0, (size_t)n_in * sizeof(float));
    forward(&L);
    backward(&L);
    float *twice = xmalloc((size_t)(L.n_w + n_in) * sizeof(float));  // 2 × one call (exact)
    for (long i = 0; i < L.n_w; i++) twice[i] = 2.0f * L.dwmem[i];
    for (long i = 0; i < n_in; i++) twice[L.n_w + i] = 2.0f * L.dinp[i];
    backward(&L);
    // |second − 2·once| <= 1e-5·(1e-6 + |once|): atol 1e-11, rtol 5e-6 of 2·once
    CHECK_ALL_CLOSE(L.dwmem, twice, L.n_w, 1e-11, 5e-6, "%s, second backward call: dw", k.name);
    CHECK_ALL_CLOSE(L.dinp, twice + L.n_w, n_in, 1e-11, 5e-6, "%s, second backward call: dinp", k.name);
    free(twice);
    layer_free(&L);
}

// ---- causality: out_t depends on tokens s ≤ t only

static void test_causal_output_ignores_later_tokens(Case k) {
    Layer L = layer_new(k);
    const int T = k.T, C = k.C, tp = T / 2;
    forward(&L);
    float *before = xmalloc((size_t)L.N * C * sizeof(float));
    memcpy(before, L.out, (size_t)L.N * C * sizeof(float));
    for (int c = 0; c < C; c++) L.inp[(long)tp * C + c] += 0.5f;  // batch 0, token t'
    forward(&L);
    int earlier_changed = 0, other_batch_changed = 0, tp_changed = 0, partner_changed = 0;
    for (int t = 0; t < T; t++)
        for (int c = 0; c < C; c++) {
            long i = (long)t * C + c;
            int changed = L.out[i] != before[i];
            if (t < tp) earlier_changed |= changed;
            if (t == tp) tp_changed |= changed;
            if (t == tp + k.offsets[0]) partner_changed |= changed;
            for (int b = 1; b < k.B; b++)
                other_batch_changed |= L.out[(long)b * T * C + i] != before[(long)b * T * C + i];
        }
    CHECK(!earlier_changed, "%s: changing token %d changed an output at an earlier token", k.name,
          tp);
    CHECK(!other_batch_changed, "%s: changing a token of sequence 0 changed another sequence",
          k.name);
    CHECK(tp_changed && partner_changed, "%s: changing token %d did not reach out[%d] and out[%d]",
          k.name, tp, tp, tp + k.offsets[0]);
    free(before);
    layer_free(&L);
}

// Without causal order the partner t' − Δ sees t' too.
static void test_noncausal_output_sees_later_tokens(Case k) {
    Layer L = layer_new(k);
    const int C = k.C, tp = k.T / 2, t = tp - k.offsets[0];
    forward(&L);
    float before = L.out[(long)t * C];
    for (int c = 0; c < C; c++) L.inp[(long)tp * C + c] += 0.5f;
    forward(&L);
    CHECK(L.out[(long)t * C] != before, "%s: out[%d] ignores its partner %d", k.name, t, tp);
    layer_free(&L);
}

// ---- timing

// Best of reps (the machine may be shared), forward and backward, against the layer's
// own three dense maps forward and backward (the GEMMs it cannot avoid).
static void time_case(Case k, int reps) {
    Layer L = layer_new(k);
    const int N = L.N, C = k.C, r = k.r, M = L.M;
    memset(L.dwmem, 0, (size_t)L.n_w * sizeof(float));
    memset(L.dinp, 0, (size_t)N * C * sizeof(float));
    double fwd = 1e30, bwd = 1e30, dense = 1e30;
    for (int i = 0; i < reps; i++) {
        double t0 = now_seconds();
        forward(&L);
        double t1 = now_seconds();
        grassmann_backward(L.dinp, L.dw, L.da, L.R, L.inp, L.a, L.w, k.B, k.T, C, r, k.offsets,
                           k.n_off, k.causal);
        double t2 = now_seconds();
        matmul_forward(L.a.z, L.inp, L.w.red_w, L.w.red_b, N, C, r);
        matmul_forward(L.a.g, L.a.pbar, L.w.plu_w, L.w.plu_b, N, M, C);
        matmul_forward(L.a.alpha, L.a.gate_in, L.w.gate_w, L.w.gate_b, N, 2 * C, C);
        matmul_backward(L.da.gate_in, L.dw.gate_w, L.dw.gate_b, L.da.alpha, L.a.gate_in, L.w.gate_w,
                        N, 2 * C, C);
        matmul_backward(L.da.pbar, L.dw.plu_w, L.dw.plu_b, L.da.g, L.a.pbar, L.w.plu_w, N, M, C);
        matmul_backward(L.dinp, L.dw.red_w, L.dw.red_b, L.da.z, L.inp, L.w.red_w, N, C, r);
        double t3 = now_seconds();
        fwd = fmin(fwd, (t1 - t0) * 1e3);
        bwd = fmin(bwd, (t2 - t1) * 1e3);
        dense = fmin(dense, (t3 - t2) * 1e3);
    }
    printf("timing %s B=%d T=%d C=%d r=%d n_off=%d: forward %.2f ms + backward %.2f ms = %.2f ms; "
           "its GEMMs alone %.2f ms (ratio %.2f), best of %d\n",
           k.name, k.B, k.T, C, r, k.n_off, fwd, bwd, fwd + bwd, dense, (fwd + bwd) / dense, reps);
    layer_free(&L);
}

int main(void) {
    static const int off124[] = {1, 2, 4}, off_far[] = {3, 8}, off6[] = {1, 2, 4, 8, 12, 16};
    const Case cases[] = {
        {"causal", 2, 7, 6, 4, off124, 3, 1},
        {"non-causal", 2, 7, 6, 4, off124, 3, 0},
        {"causal, offsets >= T", 2, 4, 5, 3, off_far, 2, 1},
        {"non-causal, offsets >= T", 2, 4, 5, 3, off_far, 2, 0},
        {"causal, r=2", 2, 7, 6, 2, off124, 3, 1},
        {"non-causal, r=2", 2, 7, 6, 2, off124, 3, 0},
    };
    const int n_cases = (int)(sizeof cases / sizeof cases[0]);
    const Case wide = {"non-causal, r=8", 3, 9, 10, 8, off124, 3, 0};
    for (int i = 0; i < n_cases; i++) test_forward_matches_direct_double(cases[i]);
    test_forward_matches_direct_double(wide);
    for (int i = 0; i < n_cases; i++) test_gradients_match_finite_differences(cases[i]);
    for (int i = 0; i < 2; i++) {
        test_pluecker_backward_matches_per_pair_rule(cases[i], 0);
        test_pluecker_backward_matches_per_pair_rule(cases[i], 1);
    }
    test_pluecker_backward_matches_per_pair_rule(wide, 0);
    test_backward_accumulates(cases[1]);
    test_causal_output_ignores_later_tokens(cases[0]);
    test_noncausal_output_sees_later_tokens(cases[1]);

#ifdef NDEBUG
    const int reps = 20;
#else
    const int reps = 2;  // Debug/sanitizer builds: the numbers only show the code runs
#endif
    time_case((Case){"non-causal", 128, 17, 64, 32, off6, 6, 0}, reps);
    time_case((Case){"causal", 32, 64, 64, 32, off6, 6, 1}, reps);
    return check_report("test_grassmann");
}
