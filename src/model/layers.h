// layers.h: the small layers of the transformer, each a forward/backward pair of free
// functions on raw float arrays (llm.c convention: outputs first, then inputs, then
// sizes; backward functions ADD into their gradient buffers, the caller zeroes once
// per step). Shapes in comments: N rows, C channels, K classes.
#ifndef ATTN_LAYERS_H
#define ATTN_LAYERS_H

#define LAYERNORM_EPS 1e-5f

// layernorm.c: out = (x − mean)·rstd·weight + bias over the last dimension, x = res.
// When add is not NULL, first res += add + add_bias (add_bias may be NULL) in place: the
// residual connection and the bias of the sublayer before it, in the same pass.
// out, res, add (N,C); mean, rstd (N) saved for backward; add_bias, weight, bias (C).
void layernorm_forward(float *out, float *mean, float *rstd, float *res, const float *add, const float *add_bias,
                       const float *weight, const float *bias, int N, int C);
// dinp (N,C) += the gradient of inp (= res after the forward pass).
void layernorm_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const float *mean,
                        const float *rstd, int N, int C);

// gelu.c: the tanh approximation, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
// (PyTorch's GELU(approximate='tanh')) of x = pre + bias, the dense layer before it
// without its bias: out = gelu(x), and pre = gelu'(x) in place, for the backward pass.
// out, pre (N,F), bias (F).
void gelu_forward(float *out, float *pre, const float *bias, int N, int F);
// d (N,F) holds dout on entry and dx = gelu'(x) ⊙ dout on exit (in place); dbias (F) +=
// the sum of dx over rows. deriv is pre as gelu_forward left it.
void gelu_backward(float *d, float *dbias, const float *deriv, int N, int F);

// crossentropy.c: softmax over K classes fused with the negative log-likelihood.
// logits, probs (N,K); targets (N), −1 = no prediction (row ignored).
// Writes probs; returns the summed loss over rows with a target (nats) and sets
// *count to their number and *correct to how many have argmax == target.
double crossentropy_forward(float *probs, const float *logits, const int *targets, int N, int K,
                            long *count, long *correct);
// dlogits (N,K) = scale · (probs − onehot(target)) on rows with a target, 0 on the others
// (written, not added).
void crossentropy_backward(float *dlogits, const float *probs, const int *targets, float scale,
                           int N, int K);

// embed.c: the input layers.
// Encoder: 28×28 image → 16 patches of 7×7 (raster order) → patch_w (C,49) + patch_b,
// prepended with the learned cls (C); plus positions wpe (17,C).
// patches (B,16,49) is filled from images (B,784) and kept for the backward pass;
// pemb (B,16,C) is scratch (the backward pass writes its gradient there); out (B,17,C).
enum { PATCH = 7, PATCH_GRID = 4, N_PATCHES = 16, PATCH_DIM = 49 };
void patch_embed_forward(float *out, float *patches, float *pemb, const float *images,
                         const float *patch_w, const float *patch_b, const float *cls,
                         const float *wpe, int B, int C);
void patch_embed_backward(float *dpatch_w, float *dpatch_b, float *dcls, float *dwpe,
                          float *dpemb, const float *dout, const float *patches, int B, int C);
// Decoder: out (B,T,C) = wte[tokens] + wpe[t]; wte (V,C), wpe (T,C).
void token_embed_forward(float *out, const int *tokens, const float *wte, const float *wpe,
                         int B, int T, int C);
void token_embed_backward(float *dwte, float *dwpe, const float *dout, const int *tokens,
                          int B, int T, int C);

#endif
