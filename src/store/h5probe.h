// h5probe.h: the probes of a trial (trial/probe.h) in its results file, the group
// /trials/NNNNNN/probe (replaced when the trial was probed before):
//
//   attributes   examples (validation examples the CKA read), token_rows
//   cka_layers   [L + 1, L + 1] float64: linear CKA between the embeddings (index 0) and
//                each block's output (index l + 1)
//   cka_heads    [L, heads, heads] float64: between the heads' outputs of each layer
//                (absent for grassmann)
//   noise        table: sigma, val_accuracy, val_loss
//   attention    [maps, L, heads, T, T] float32: validation examples 0..maps−1 (absent
//                for grassmann)
//   transform/   attributes kind (patch, pixels), seed, tolerance; matrix [dim, dim]
//                float32 (the orthogonal Q); invariants (table: name, layer (−1: the
//                model), original, transformed, change, stays, control, control_change);
//                transformed/ and control/ (the seed control, when run): attributes
//                config, status, the validation and test metrics, rank_deviation,
//                correlation, correlation_chance, reward, seconds, steps, and their
//                weights/layerK and weights_out/layerK
//
// Written into a copy, PATH.partial, renamed over PATH when complete: a crash leaves
// PATH as it was.
#ifndef ATTN_H5PROBE_H
#define ATTN_H5PROBE_H

#include "trial/probe.h"

void h5store_write_probe(const char *path, int id, const Probe *p);

#endif
