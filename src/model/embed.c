// Input layers: patch embedding with a class token (encoder) and token embedding
// (decoder), each with learned positions.
#include <string.h>

#include "model/layers.h"
#include "model/matmul.h"

void patch_embed_forward(float *out, float *patches, float *pemb, const float *images,
                         const float *patch_w, const float *patch_b, const float *cls,
                         const float *wpe, int B, int C) {
    // patches[b][p][i·7 + j] = image[b][(7·pr + i)·28 + 7·pc + j], p = 4·pr + pc
    for (int b = 0; b < B; b++)
        for (int p = 0; p < N_PATCHES; p++) {
            int pr = p / PATCH_GRID, pc = p % PATCH_GRID;
            float *dst = patches + ((long)b * N_PATCHES + p) * PATCH_DIM;
            const float *img = images + (long)b * 784;
            for (int i = 0; i < PATCH; i++)
                memcpy(dst + i * PATCH, img + (PATCH * pr + i) * 28 + PATCH * pc, PATCH * sizeof(float));
        }
    matmul_forward(pemb, patches, patch_w, patch_b, B * N_PATCHES, PATCH_DIM, C);
    const int T = N_PATCHES + 1;
    for (int b = 0; b < B; b++) {
        float *o = out + (long)b * T * C;
        for (int c = 0; c < C; c++) o[c] = cls[c] + wpe[c];
        for (int p = 0; p < N_PATCHES; p++) {
            const float *e = pemb + ((long)b * N_PATCHES + p) * C;
            const float *pos = wpe + (long)(p + 1) * C;
            float *op = o + (long)(p + 1) * C;
            for (int c = 0; c < C; c++) op[c] = e[c] + pos[c];
        }
    }
}

void patch_embed_backward(float *dpatch_w, float *dpatch_b, float *dcls, float *dwpe,
                          float *dpemb, const float *dout, const float *patches, int B, int C) {
    const int T = N_PATCHES + 1;
    for (int b = 0; b < B; b++) {
        const float *d = dout + (long)b * T * C;
        for (int c = 0; c < C; c++) {
            dcls[c] += d[c];
            dwpe[c] += d[c];
        }
        for (int p = 0; p < N_PATCHES; p++) {
            const float *dp = d + (long)(p + 1) * C;
            float *de = dpemb + ((long)b * N_PATCHES + p) * C;
            float *dpos = dwpe + (long)(p + 1) * C;
            for (int c = 0; c < C; c++) {
                de[c] = dp[c];
                dpos[c] += dp[c];
            }
        }
    }
    // The image itself needs no gradient.
    matmul_backward(NULL, dpatch_w, dpatch_b, dpemb, patches, NULL, B * N_PATCHES, PATCH_DIM, C);
}

void token_embed_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                         int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *e = wte + (long)tokens[b * T + t] * C, *p = wpe + (long)t * C;
            float *o = out + ((long)b * T + t) * C;
            for (int c = 0; c < C; c++) o[c] = e[c] + p[c];
        }
}

void token_embed_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
                          int B, int T, int C) {
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            const float *d = dout + ((long)b * T + t) * C;
            float *de = dwte + (long)tokens[b * T + t] * C, *dp = dwpe + (long)t * C;
            for (int c = 0; c < C; c++) {
                de[c] += d[c];
                dp[c] += d[c];
            }
        }
}
