// attn_tiles.h: the one small-matrix product of the attention cores (attn_softmax.c,
// attn_linear.c), on packed tiles.
//
// A head is hs = 16 floats wide in the default models and a tile is tens of tokens, so a
// cblas_sgemm call per tile would spend more in its set-up and packing than in its
// arithmetic. tile_gemm is instead a register-blocked kernel on vectors of TILE_VL floats
// (GCC's vector extension: one zmm register under AVX-512, two ymm under AVX2, four xmm
// otherwise). The cores pack their vector operands into scratch where every row is a
// whole number of vectors (zero-padded) and 64-byte aligned, and call tile_gemm from
// functions compiled for several instruction sets (KERNEL_TARGETS, targets.h), into each
// of which the kernel is inlined.
#ifndef ATTN_TILES_H
#define ATTN_TILES_H

#include <stddef.h>
#include <string.h>

#include "model/targets.h"

#define TILE_VL 16
typedef float TileVec __attribute__((vector_size(TILE_VL * sizeof(float))));
typedef float TileVecU __attribute__((vector_size(TILE_VL * sizeof(float)), aligned(sizeof(float))));  // unaligned

#define TILES_INLINE static inline __attribute__((always_inline))

// n rounded up to a whole number of vectors.
static inline int tile_round(int n) { return (n + TILE_VL - 1) / TILE_VL * TILE_VL; }

// C[r][·] (+)= Σ_p A[r·ar + p·ak] · B[p][·] for r < R rows and W vectors of columns, the
// R × W accumulators held in registers (R, W compile-time constants after inlining).
TILES_INLINE void tile_block(float *restrict C, long ldc, const float *restrict A, long ar, long ak,
                             const float *restrict B, long ldb, int k, int R, int W, int beta) {
    TileVec acc[8][4];
    for (int r = 0; r < R; r++)
        for (int v = 0; v < W; v++) acc[r][v] = beta ? *(const TileVec *)(C + r * ldc + v * TILE_VL) : (TileVec){0};
    for (int p = 0; p < k; p++) {
        TileVec b[4];
        for (int v = 0; v < W; v++) b[v] = *(const TileVec *)(B + p * ldb + v * TILE_VL);
        for (int r = 0; r < R; r++) {
            const float a = A[r * ar + p * ak];
            for (int v = 0; v < W; v++) acc[r][v] += a * b[v];
        }
    }
    for (int r = 0; r < R; r++)
        for (int v = 0; v < W; v++) *(TileVec *)(C + r * ldc + v * TILE_VL) = acc[r][v];
}

// One row of C (W ≤ 4 vectors), the rows tile_block leaves over: its sum over p split
// into four interleaved chains, so that it does not wait on the FMA latency.
TILES_INLINE void tile_row(float *restrict C, const float *restrict A, long ak, const float *restrict B, long ldb,
                           int k, int W, int beta) {
    TileVec acc[4][4];
    for (int j = 0; j < 4; j++)
        for (int v = 0; v < W; v++) acc[j][v] = (TileVec){0};
    int p = 0;
    for (; p + 4 <= k; p += 4)
        for (int j = 0; j < 4; j++)
            for (int v = 0; v < W; v++) acc[j][v] += A[(p + j) * ak] * *(const TileVec *)(B + (p + j) * ldb + v * TILE_VL);
    for (; p < k; p++)
        for (int v = 0; v < W; v++) acc[0][v] += A[p * ak] * *(const TileVec *)(B + p * ldb + v * TILE_VL);
    for (int v = 0; v < W; v++) {
        TileVec *c = (TileVec *)(C + v * TILE_VL);
        *c = (beta ? *c : (TileVec){0}) + ((acc[0][v] + acc[1][v]) + (acc[2][v] + acc[3][v]));
    }
}

// C (m × nv·TILE_VL, row stride ldc) = beta·C + A·B, beta 0 or 1, where A is m × k with
// A[r][p] at A[r·ar + p·ak] (ar = lda, ak = 1 for A itself; ar = 1, ak = lda for the
// transpose of a stored matrix) and B is k × nv·TILE_VL (row stride ldb). C and B are
// 64-byte aligned with ldc, ldb multiples of TILE_VL; A is read a float at a time.
TILES_INLINE void tile_gemm(float *C, long ldc, const float *A, long ar, long ak, const float *B, long ldb, int m,
                            int k, int nv, int beta) {
    for (int v0 = 0; v0 < nv; v0 += 4, C += 4 * TILE_VL, B += 4 * TILE_VL) {
        const int w = nv - v0 < 4 ? nv - v0 : 4;
        // Eight independent chains hide the FMA latency; wider blocks need fewer rows.
        const int R = w <= 2 ? 8 : 4;
        int r = 0;
        for (; r + R <= m; r += R) {
            float *c = C + r * ldc;
            const float *a = A + r * ar;
            switch (w) {
            case 1: tile_block(c, ldc, a, ar, ak, B, ldb, k, 8, 1, beta); break;
            case 2: tile_block(c, ldc, a, ar, ak, B, ldb, k, 8, 2, beta); break;
            case 3: tile_block(c, ldc, a, ar, ak, B, ldb, k, 4, 3, beta); break;
            default: tile_block(c, ldc, a, ar, ak, B, ldb, k, 4, 4, beta); break;
            }
        }
        for (; r < m; r++) {
            float *c = C + r * ldc;
            const float *a = A + r * ar;
            switch (w) {
            case 1: tile_row(c, a, ak, B, ldb, k, 1, beta); break;
            case 2: tile_row(c, a, ak, B, ldb, k, 2, beta); break;
            case 3: tile_row(c, a, ak, B, ldb, k, 3, beta); break;
            default: tile_row(c, a, ak, B, ldb, k, 4, beta); break;
            }
        }
    }
}

// Moving a head between its rows in the model's arrays (hs floats at a stride ld) and
// the packed layouts. Rows are whole vectors when hs is a multiple of TILE_VL (the
// default models); other widths take the element-wise path.

// d[0, 16·nv) = scale · x[0, 16·nv). The first four vectors are unrolled: as a loop,
// gcc would make each row's copy a call to memmove.
TILES_INLINE void tile_copy_row(float *restrict d, const float *restrict x, int nv, float scale) {
    for (int v = 0; v < 4; v++)
        if (v < nv) *(TileVecU *)(d + v * TILE_VL) = scale * *(const TileVecU *)(x + v * TILE_VL);
    for (int v = 4; v < nv; v++) *(TileVecU *)(d + v * TILE_VL) = scale * *(const TileVecU *)(x + v * TILE_VL);
}

// dst (rows × HP) = scale · the n rows of src, zero in the padding columns and rows.
TILES_INLINE void tile_pack_rows(float *restrict dst, int HP, const float *restrict src, long ld, int n, int rows,
                                 int hs, float scale) {
    for (int t = 0; t < n; t++) {
        float *d = dst + (long)t * HP;
        const float *x = src + t * ld;
        if (hs == HP) {
            tile_copy_row(d, x, HP / TILE_VL, scale);
        } else {
            for (int i = 0; i < hs; i++) d[i] = scale * x[i];
            for (int i = hs; i < HP; i++) d[i] = 0.0f;
        }
    }
    memset(dst + (long)n * HP, 0, (size_t)(rows - n) * HP * sizeof(float));
}

typedef int TileIdx __attribute__((vector_size(TILE_VL * sizeof(int))));

// Rows t and t + b (t without bit b) swap their off-diagonal blocks of b: lo and hi pick
// from the pair's 32 floats (16 + i: element i of row t + b), one two-vector shuffle each.
TILES_INLINE void tile_swap_blocks(TileVec *r, int b, TileIdx lo, TileIdx hi) {
    for (int t = 0; t < 16; t++)
        if (!(t & b)) {
            const TileVec x = r[t], y = r[t + b];
            r[t] = __builtin_shuffle(x, y, lo);
            r[t + b] = __builtin_shuffle(x, y, hi);
        }
}

// dst[i·ldd + t] = scale · src[t·ld + i] for a block of 16 × 16, through registers: the
// off-diagonal blocks of 8, then 4, 2 and 1 swapped (a recursive block transpose).
TILES_INLINE void tile_transpose16(float *restrict dst, long ldd, const float *restrict src, long ld, float scale) {
    TileVec r[16];
    for (int t = 0; t < 16; t++) r[t] = scale * *(const TileVecU *)(src + t * ld);
    tile_swap_blocks(r, 8, (TileIdx){0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23},
                     (TileIdx){8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31});
    tile_swap_blocks(r, 4, (TileIdx){0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27},
                     (TileIdx){4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31});
    tile_swap_blocks(r, 2, (TileIdx){0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29},
                     (TileIdx){2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31});
    tile_swap_blocks(r, 1, (TileIdx){0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30},
                     (TileIdx){1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31});
    for (int i = 0; i < 16; i++) *(TileVec *)(dst + i * ldd) = r[i];
}

// dst (hs × ldd) = scale · the transpose of the n rows of src, zero in columns n .. ldd.
TILES_INLINE void tile_pack_cols(float *restrict dst, int ldd, const float *restrict src, long ld, int n, int hs,
                                 float scale) {
    int t = 0;
    if (hs % 16 == 0)
        for (; t + 16 <= n; t += 16)
            for (int i = 0; i < hs; i += 16) tile_transpose16(dst + (long)i * ldd + t, ldd, src + t * ld + i, ld, scale);
    for (; t < n; t++)
        for (int i = 0; i < hs; i++) dst[(long)i * ldd + t] = scale * src[t * ld + i];
    for (int i = 0; i < hs; i++)
        for (t = n; t < ldd; t++) dst[(long)i * ldd + t] = 0.0f;
}

// The n rows of dst (hs wide, stride ld) = scale · src (n × HP).
TILES_INLINE void tile_unpack_rows(float *restrict dst, long ld, const float *restrict src, int HP, int n, int hs,
                                   float scale) {
    for (int t = 0; t < n; t++) {
        float *d = dst + t * ld;
        const float *x = src + (long)t * HP;
        if (hs == HP)
            tile_copy_row(d, x, HP / TILE_VL, scale);
        else
            for (int i = 0; i < hs; i++) d[i] = scale * x[i];
    }
}

#endif
