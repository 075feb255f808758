// safetensors.h: the attention weights of a pretrained checkpoint (.safetensors) as the
// four-mode tensors the invariants score (score.h), one per layer, and each layer's
// output projection (W_O of the OV maps, circuits/circuits.h):
//
//     W[h, d_k, d_model(+1), 3]   float32, row-major, last mode fastest; roles Q, K, V
//     W[h, k, m, ρ] = weight of role ρ from input feature m to output h·d_k + k
//     O[d_model, width]       float32, row-major; O[i, h·d_k + k] = weight from feature
//                             k of query head h's output to output feature i
//
// Recognised names (any prefix; the layers are the distinct prefixes, ordered by
// natural sort so "layer.2" comes before "layer.10"):
//   BERT   PREFIX.attention.self.{query,key,value}.weight   nn.Linear [width, d_model]
//          PREFIX.attention.output.dense.weight             nn.Linear [d_model, width]
//   GPT-2  PREFIX.attn.c_attn.weight                        Conv1D [d_model, 3·width]
//                                                           (columns Q | K | V)
//          PREFIX.attn.c_proj.weight                        Conv1D [width, d_model]
//   LLaMA  PREFIX.self_attn.{q,k,v}_proj.weight             nn.Linear [width, d_model];
//          k/v may have fewer rows (grouped-query attention): each of the kv_heads
//          K/V heads is then repeated for the heads/kv_heads query heads that share it,
//          exactly as the model computes attention (HF repeat_kv), so W keeps h heads.
//          PREFIX.self_attn.o_proj.weight                   nn.Linear [d_model, width]
//   nanoGPT  GPT-2's names as nn.Linear: c_attn [3·width, d_model] (rows Q | K | V; its
//          shape tells it from GPT-2's Conv1D), c_proj [d_model, width]
//   timm ViT PREFIX.attn.qkv.weight [3·width, d_model], PREFIX.attn.proj.weight [d_model, width]
//   nn.MultiheadAttention  PREFIX.in_proj_weight [3·width, d_model] (rows Q | K | V),
//          PREFIX.out_proj.weight [d_model, width]; an out_proj without in_proj_weight (BART's,
//          beside q_proj, k_proj, v_proj) is not one
//   Grassmann (attnsweep's mixing, model.h)  PREFIX.grassmann.w_red.weight [r, d_model]: W is
//          [r, 1, d_model, 1] (one role; no heads needed); PREFIX.grassmann.w_plu.weight
//          [d_model, r(r−1)/2] (pairs i < j in row-major order) the output side
// width = h·d_k (for grouped-query attention too: o_proj reads the query heads). Names
// match by their whole ending, so the MLP's PREFIX.output.dense.weight (BERT) and
// PREFIX.mlp.c_proj.weight (GPT-2) are not output projections.
//
// Besides, for every family but Grassmann, what the whole network makes of each layer
// (circuits/circuits.h LayerForm): the normalisation it reads through (GPT-2, nanoGPT,
// timm ViT: the pre-LN LayerNorm; LLaMA: the RMSNorm gain), its Q, K, V biases, and
// whether every reader of its output subtracts the mean; safetensors.c lists the tensors
// read for each family. attention_layers_whole_network turns the weights into the view
// the scores read.
// The output projections are optional, but all or nothing: a file with none gives
// out = NULL (W alone can still be scored), one where some layers lack it is an error
// naming such a layer. A layer with an output projection and no Q/K/V is an error.
//
// The number of heads h comes from the caller (--heads) or, when that is 0, from
// config.json beside the file (num_attention_heads, or n_head for GPT-2, num_heads,
// n_heads; also looked for under "text_config").
//
// A sharded checkpoint is read through its index, PATH = model.safetensors.index.json
// ({"weight_map": {TENSOR: SHARD}}, the shards in the index's directory): every shard's
// header is checked as below, each tensor the map names must be in the shard it names,
// no name may be in two shards, and the layers are found among all their tensors.
//
// Tensors of dtype F32, F16, BF16 and F64 are converted to float32 (halfs exactly,
// including subnormals); NaN, Inf or an F64 value beyond the float32 range is an
// error naming the tensor.
//
// The whole header is validated before any tensor byte is read (header length at most
// 100 000 000 bytes and inside the file, UTF-8 without NUL bytes or escaped NULs, at
// most 4 million JSON values (so cJSON's tree stays well under a gigabyte), a JSON object of
// {dtype, shape, data_offsets} entries with known dtypes, integral non-negative shapes
// whose byte size fits 64 bits and equals end − begin, offsets inside the data
// buffer, no two tensors overlapping, no name twice). Gaps between tensors and bytes
// after the last one are tolerated. Only the attention tensors are read, with fseeko
// and fread, so memory use is the W tensors and output projections plus one tensor
// (raw and as float32).
//
// Every failure returns -1 with one line "FILE: what is wrong" in err (no newline;
// names from the file are quoted with control and non-ASCII bytes escaped) and leaves
// *out empty; nothing leaks. Running out of memory for W or O is reported the same way.
//
// Two files: safetensors_file.c reads the container (the header's checks above, sharded
// checkpoints, one tensor as float32; safetensors_file.h), safetensors.c the name
// families, the shapes, the number of heads and the layout of W and O.
#ifndef ATTN_SAFETENSORS_H
#define ATTN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "circuits/circuits.h"

// Largest header accepted, in bytes (the limit of the reference implementation).
#define SAFETENSORS_MAX_HEADER 100000000ull

typedef struct {
    int n_layers;
    int dims[4];         // h, d_k, d_model, 3: the same for every layer
    int kv_heads;        // K/V heads in the file: dims[0], or fewer under grouped-query attention
    const char *family;  // "BERT", "GPT-2", "LLaMA", "nanoGPT", "timm ViT", "nn.MultiheadAttention",
                         // "Grassmann" (a static string; NULL when empty)
    const char *form;    // what attention_layers_whole_network does (a static string; NULL when empty)
    float **weights;     // n_layers arrays of dims[0]·dims[1]·dims[2]·3 floats
    char **names;        // n_layers layer prefixes, e.g. "bert.encoder.layer.3"
    int out_dims[2];     // d_model, h·d_k: the shape of each output projection; 0, 0 without them
    float **out;         // n_layers arrays of out_dims[0]·out_dims[1] floats, or NULL (none in the file)
    NormKind norm;       // what the family's layers read through (NORM_NONE: Grassmann, BERT, nn.MultiheadAttention)
    int centre_writes;   // every reader of a layer's output subtracts the mean
    float **ln_w, **ln_b;  // per layer: the normalisation's gain and bias (d_model), NULL where the file has none
    float **bias_qkv;    // per layer: Q | K | V biases (3·h·d_k; K, V repeated under grouped-query
                         // attention as W is), NULL where the file has none
} AttentionLayers;

// Read PATH (a .safetensors file, or a sharded checkpoint's .index.json). heads > 0: the
// number of heads; 0: from PATH's directory's config.json.
// Returns 0 and fills *out, or -1 with one line in err (errlen bytes, may be 0).
int safetensors_attention(const char *path, int heads, AttentionLayers *out, char *err, size_t errlen);

// The same for a file already in memory (size bytes); `label` stands for the file name
// in messages. heads must be given (0 is an error: there is no directory to look in).
int safetensors_attention_mem(const void *data, size_t size, const char *label, int heads,
                              AttentionLayers *out, char *err, size_t errlen);

// The weights as the whole network uses them (circuits_whole_network with each layer's
// form): W [h, d_k, d_model + 1, 3] and O [d_model + 1, width] from then on (dims and
// out_dims say so). Grassmann's are left as they are.
void attention_layers_whole_network(AttentionLayers *l);

// Free what the reader allocated and zero *l; safe on an empty or zeroed struct.
void attention_layers_free(AttentionLayers *l);

// IEEE binary16 and bfloat16 bit patterns to float32 (exact; NaN stays NaN).
float safetensors_f16_to_f32(uint16_t h);
float safetensors_bf16_to_f32(uint16_t b);

#endif
