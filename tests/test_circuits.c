// test_circuits: the function-level factors and Gram matrices of common/circuits.h
// against the slices built entry by entry from their definitions.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/circuits.h"
#include "common/util.h"

static void check_all(const double *got, const double *want, int n, double tol, const char *what) {
    for (int i = 0; i < n; i++) CHECK_CLOSE(got[i], want[i], tol, tol, what);
}

static double uniform(unsigned *state) {
    *state = *state * 1664525u + 1013904223u;
    return (*state >> 8) / 16777216.0 * 2.0 - 1.0;
}

// X_hρ[i, j] by the definition: B_h = W_Q^hᵀ W_K^h / √d_k, C_h = W_O^h W_V^h.
static double slice_entry(const float *qkv, const float *out, int H, int dk, int D, int h, int rho, int i, int j) {
    double s = 0.0;
    for (int k = 0; k < dk; k++) {
        const size_t row = (size_t)h * dk + k;
        if (rho == 0)
            s += qkv[(row * D + i) * 3 + 0] * (double)qkv[(row * D + j) * 3 + 1] / sqrt((double)dk);
        else
            s += out[(size_t)i * H * dk + row] * (double)qkv[(row * D + j) * 3 + 2];
    }
    return s;
}

static void test_head_gram(void) {
    const int H = 3, dk = 4, D = 7, n = H * dk;
    unsigned st = 7;
    float *qkv = xmalloc((size_t)n * D * 3 * sizeof(float)), *out = xmalloc((size_t)D * n * sizeof(float));
    for (int i = 0; i < n * D * 3; i++) qkv[i] = (float)uniform(&st);
    for (int i = 0; i < D * n; i++) out[i] = (float)uniform(&st);
    Circuits c;
    circuits_init(&c, qkv, out, H, dk, D);
    double gram[9], want[9] = {0};
    circuits_head_gram(gram, &c);
    for (int g = 0; g < H; g++)
        for (int h = 0; h < H; h++)
            for (int rho = 0; rho < 2; rho++)
                for (int i = 0; i < D; i++)
                    for (int j = 0; j < D; j++)
                        want[g * H + h] += slice_entry(qkv, out, H, dk, D, g, rho, i, j) *
                                           slice_entry(qkv, out, H, dk, D, h, rho, i, j);
    check_all(gram, want, H * H, 1e-12, "head Gram of the circuits");
    circuits_free(&c);
    free(out);
    free(qkv);
}

static void test_mixing_kernel(void) {
    const int r = 4, D = 5, M = r * (r - 1) / 2;
    unsigned st = 11;
    float red[4 * 5], plu[5 * 6];
    for (int i = 0; i < r * D; i++) red[i] = (float)uniform(&st);
    for (int i = 0; i < D * M; i++) plu[i] = (float)uniform(&st);
    MixingKernel k;
    mixing_kernel_init(&k, red, plu, r, D);
    double K[5 * 5 * 5], want[5 * 5 * 5] = {0};
    mixing_kernel_tensor(K, &k);
    for (int o = 0; o < D; o++)
        for (int m = 0; m < D; m++)
            for (int nn = 0; nn < D; nn++) {
                int idx = 0;
                for (int i = 0; i < r; i++)
                    for (int j = i + 1; j < r; j++, idx++)
                        want[(o * D + m) * D + nn] += plu[o * M + idx] * ((double)red[i * D + m] * red[j * D + nn] -
                                                                          (double)red[j * D + m] * red[i * D + nn]);
            }
    check_all(K, want, D * D * D, 1e-12, "mixing kernel K_o = W_redᵀ A_o W_red");
    double gram[25], gwant[25] = {0};
    mixing_kernel_gram(gram, &k);
    for (int o = 0; o < D; o++)
        for (int p = 0; p < D; p++)
            for (int e = 0; e < D * D; e++) gwant[o * D + p] += want[o * D * D + e] * want[p * D * D + e];
    check_all(gram, gwant, D * D, 1e-12, "Gram of the output features' forms");
    mixing_kernel_free(&k);
}

int main(void) {
    test_head_gram();
    test_mixing_kernel();
    return check_report("test_circuits");
}
