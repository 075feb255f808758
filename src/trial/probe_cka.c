// probe_cka.c: linear CKA between heads' and layers' outputs (probe.h), from one Gram
// matrix of every token's activations, accumulated over the validation batches.
#include <cblas.h>
#include <math.h>
#include <stdlib.h>

#include "common/util.h"
#include "trial/probe.h"

// The rows whose Gram matrix the CKA needs, one per token: [x0 | block outputs 0..L−1 |
// heads' outputs of layers 0..L−1] (D = (L + 1)·C + L·C columns, the last L·C absent
// for grassmann).
static int cka_width(const Model *m, int heads) { return (m->L + 1) * m->C + (heads ? m->L * m->C : 0); }

static void cka_rows(const Model *m, int rows, int heads, double *Z) {
    const int C = m->C, L = m->L, D = cka_width(m, heads);
    const long n = (long)rows * m->T;
    for (long i = 0; i < n; i++) {
        double *z = Z + i * D;
        for (int c = 0; c < C; c++) z[c] = m->acts.x0[i * C + c];
        for (int l = 0; l < L; l++) {
            const float *y = m->acts.blocks[l].res2 + i * C;
            for (int c = 0; c < C; c++) z[(l + 1) * C + c] = y[c];
            if (!heads) continue;
            const float *a = m->acts.blocks[l].atty + i * C;
            for (int c = 0; c < C; c++) z[(L + 1 + l) * C + c] = a[c];
        }
    }
}

// CKA of column blocks [a, a + p) and [b, b + q) of the centred Gram G (D × D, full).
static double cka_blocks(const double *G, int D, int a, int p, int b, int q) {
    double xy = 0.0, xx = 0.0, yy = 0.0;
    for (int i = 0; i < p; i++)
        for (int j = 0; j < q; j++) xy += G[(long)(a + i) * D + b + j] * G[(long)(a + i) * D + b + j];
    for (int i = 0; i < p; i++)
        for (int j = 0; j < p; j++) xx += G[(long)(a + i) * D + a + j] * G[(long)(a + i) * D + a + j];
    for (int i = 0; i < q; i++)
        for (int j = 0; j < q; j++) yy += G[(long)(b + i) * D + b + j] * G[(long)(b + i) * D + b + j];
    return xy / sqrt(xx * yy);
}

void probe_cka(Probe *p, Model *m, const Dataset *d, Batch *batch, int examples) {
    const int heads = p->heads, D = cka_width(m, heads), C = m->C, L = m->L;
    double *G = xcalloc((size_t)D * D, sizeof(double)), *sum = xcalloc((size_t)D, sizeof(double));
    double *Z = xmalloc((size_t)m->B * m->T * D * sizeof(double));
    long n = 0;
    for (long start = 0; start < examples; start += m->B) {
        long count, correct;
        int rows = dataset_eval_batch(d, SPLIT_VAL, batch, start);
        if (rows > examples - start) rows = (int)(examples - start);
        model_forward(m, batch, &count, &correct);
        cka_rows(m, rows, heads, Z);
        const int k = rows * m->T;
        cblas_dsyrk(CblasRowMajor, CblasUpper, CblasTrans, D, k, 1.0, Z, D, 1.0, G, D);
        for (long i = 0; i < k; i++)
            for (int j = 0; j < D; j++) sum[j] += Z[i * D + j];
        n += k;
    }
    for (int i = 0; i < D; i++)  // centre, and fill the lower triangle
        for (int j = i; j < D; j++) G[(long)j * D + i] = G[(long)i * D + j] -= sum[i] * sum[j] / (double)n;
    p->n_rows = n;
    p->cka_layers = xmalloc((size_t)(L + 1) * (L + 1) * sizeof(double));
    for (int a = 0; a <= L; a++)
        for (int b = 0; b <= L; b++) p->cka_layers[a * (L + 1) + b] = cka_blocks(G, D, a * C, C, b * C, C);
    if (heads) {
        const int hs = C / heads;
        p->cka_heads = xmalloc((size_t)L * heads * heads * sizeof(double));
        for (int l = 0; l < L; l++)
            for (int g = 0; g < heads; g++)
                for (int h = 0; h < heads; h++) {
                    const int base = (L + 1 + l) * C;
                    p->cka_heads[((size_t)l * heads + g) * heads + h] =
                        cka_blocks(G, D, base + g * hs, hs, base + h * hs, hs);
                }
    }
    free(G);
    free(sum);
    free(Z);
}

