// safetensors.c: find the attention weights of a checkpoint by name (its family: BERT,
// GPT-2, LLaMA, nanoGPT, timm ViT, nn.MultiheadAttention, Grassmann), read only those
// tensors (safetensors_file.h: the container) and lay them out as W[h, d_k, d_model, 3]
// and the output projections as [d_model, width], with the tensors of what each layer
// reads through. See safetensors.h for the names, the layout and what is checked.
#define _POSIX_C_SOURCE 200809L
#include "io/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "circuits/circuits.h"
#include "common/util.h"
#include "io/safetensors_file.h"

// ---- finding the attention weights by name

// nanoGPT has GPT-2's names with nn.Linear weights: its c_attn is [3·width, d_model].
enum { FAM_BERT, FAM_GPT2, FAM_LLAMA, FAM_NANOGPT, FAM_TIMM, FAM_MHA, FAM_GRASSMANN, N_FAMILIES };
enum { ROLE_Q, ROLE_K, ROLE_V, ROLE_QKV, ROLE_O, N_ROLES };
static const char *const FAMILY[N_FAMILIES] = {"BERT",   "GPT-2", "LLaMA", "nanoGPT",
                                               "timm ViT", "nn.MultiheadAttention", "Grassmann"};
static const char *const ROLE_WORD[3][3] = {{"query", "key", "value"}, {"", "", ""}, {"q_proj", "k_proj", "v_proj"}};
// Q, K and V fused in one weight, rows (nn.Linear) or columns (GPT-2's Conv1D) Q | K | V.
static int fused(int family) { return family == FAM_GPT2 || family == FAM_NANOGPT || family == FAM_TIMM || family == FAM_MHA; }

static const struct {
    int family, role;
    const char *suffix;
} PATTERNS[] = {
    {FAM_BERT, ROLE_Q, ".attention.self.query.weight"}, {FAM_BERT, ROLE_K, ".attention.self.key.weight"},
    {FAM_BERT, ROLE_V, ".attention.self.value.weight"}, {FAM_GPT2, ROLE_QKV, ".attn.c_attn.weight"},
    {FAM_LLAMA, ROLE_Q, ".self_attn.q_proj.weight"},    {FAM_LLAMA, ROLE_K, ".self_attn.k_proj.weight"},
    {FAM_LLAMA, ROLE_V, ".self_attn.v_proj.weight"},    {FAM_BERT, ROLE_O, ".attention.output.dense.weight"},
    {FAM_GPT2, ROLE_O, ".attn.c_proj.weight"},          {FAM_LLAMA, ROLE_O, ".self_attn.o_proj.weight"},
    {FAM_TIMM, ROLE_QKV, ".attn.qkv.weight"},           {FAM_TIMM, ROLE_O, ".attn.proj.weight"},
    {FAM_MHA, ROLE_QKV, ".in_proj_weight"},             {FAM_MHA, ROLE_O, ".out_proj.weight"},
    {FAM_GRASSMANN, ROLE_Q, ".grassmann.w_red.weight"}, {FAM_GRASSMANN, ROLE_O, ".grassmann.w_plu.weight"},
};
enum { N_PATTERNS = sizeof PATTERNS / sizeof PATTERNS[0] };
#define PATTERN_LIST                                                                              \
    ".attention.self.{query,key,value}.weight (BERT), .attn.c_attn.weight (GPT-2, nanoGPT), "       \
    ".self_attn.{q,k,v}_proj.weight (LLaMA), .attn.qkv.weight (timm ViT), .in_proj_weight "         \
    "(nn.MultiheadAttention) or .grassmann.w_red.weight (attnsweep's Grassmann mixing)"

typedef struct {
    const char *name;
    size_t plen;  // the layer prefix is name[0, plen)
    int family, role;
    size_t tensor;
} Match;

typedef struct {
    const char *prefix;
    size_t plen;
    int family;
    long t[N_ROLES];  // tensor index per role, -1: absent
} Layer;

// Natural order: digit runs compare as numbers, so "layer.2" < "layer.10".
static int natcmp(const char *a, size_t na, const char *b, size_t nb) {
    size_t i = 0, j = 0;
    while (i < na && j < nb) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[j];
        if (x >= '0' && x <= '9' && y >= '0' && y <= '9') {
            size_t ie = i, je = j;
            while (ie < na && a[ie] >= '0' && a[ie] <= '9') ie++;
            while (je < nb && b[je] >= '0' && b[je] <= '9') je++;
            while (i < ie && a[i] == '0') i++;
            while (j < je && b[j] == '0') j++;
            if (ie - i != je - j) return ie - i < je - j ? -1 : 1;
            int r = memcmp(a + i, b + j, ie - i);
            if (r) return r;
            i = ie;
            j = je;
        } else {
            if (x != y) return x < y ? -1 : 1;
            i++;
            j++;
        }
    }
    return (i < na) - (j < nb);
}

static int cmp_match(const void *pa, const void *pb) {
    const Match *a = pa, *b = pb;
    int r = natcmp(a->name, a->plen, b->name, b->plen);
    if (r) return r;
    size_t m = a->plen < b->plen ? a->plen : b->plen;
    r = memcmp(a->name, b->name, m);
    if (r) return r;
    if (a->plen != b->plen) return a->plen < b->plen ? -1 : 1;
    if (a->family != b->family) return a->family < b->family ? -1 : 1;
    return (a->role > b->role) - (a->role < b->role);
}

// The name a member of the layer has (prefix + suffix), for messages.
typedef struct {
    char s[sizeof(Quoted)];
} NameText;

static NameText member_name(const Layer *l, int role) {
    NameText nt;
    const char *suffix = NULL;
    const int family = l->family == FAM_NANOGPT ? FAM_GPT2 : l->family;  // the same names
    for (int i = 0; i < N_PATTERNS; i++)
        if (PATTERNS[i].family == family && PATTERNS[i].role == role) suffix = PATTERNS[i].suffix;
    if (!suffix) suffix = ".?";
    if (l->plen == 0) suffix++;  // a top-level name has no leading dot
    size_t sl = strlen(suffix), pl = l->plen < 200 ? l->plen : 200;
    char buf[256 + 64];
    memcpy(buf, l->prefix, pl);
    memcpy(buf + pl, suffix, sl + 1);
    Quoted q = st_quote_n(buf, strlen(buf) + (l->plen - pl));  // keep the "..." if the prefix was cut
    memcpy(nt.s, q.s, sizeof nt.s);
    return nt;
}

// The first role the layer has: its query weight when there is one.
static int first_role(const Layer *l) {
    int r = 0;
    while (r < N_ROLES - 1 && l->t[r] < 0) r++;
    return r;
}

static int find_layers(const Ctx *c, const Header *h, Layer **out, size_t *n_out) {
    Match *m = xmalloc((h->n ? h->n : 1) * sizeof *m);
    size_t nm = 0;
    for (size_t i = 0; i < h->n; i++) {
        const char *name = h->t[i].name;
        size_t len = strlen(name);
        for (int p = 0; p < N_PATTERNS; p++) {
            const char *suf = PATTERNS[p].suffix;
            size_t sl = strlen(suf);
            size_t plen;
            if (len >= sl && memcmp(name + len - sl, suf, sl) == 0) plen = len - sl;
            else if (len == sl - 1 && memcmp(name, suf + 1, sl - 1) == 0) plen = 0;
            else continue;
            m[nm++] = (Match){name, plen, PATTERNS[p].family, PATTERNS[p].role, i};
            break;
        }
    }
    if (nm == 0) {
        free(m);
        return st_fail(c, "no attention weights among its %zu tensors (looked for names ending in " PATTERN_LIST ")",
                       h->n);
    }
    qsort(m, nm, sizeof *m, cmp_match);
    Layer *l = xmalloc(nm * sizeof *l);
    size_t nl = 0;
    for (size_t i = 0; i < nm; i++) {
        if (i == 0 || m[i].family != m[i - 1].family || m[i].plen != m[i - 1].plen ||
            memcmp(m[i].name, m[i - 1].name, m[i].plen) != 0) {
            l[nl] = (Layer){m[i].name, m[i].plen, m[i].family, {-1, -1, -1, -1, -1}};
            nl++;
        }
        l[nl - 1].t[m[i].role] = (long)m[i].tensor;
    }
    // An out_proj without in_proj_weight is another model's (BART's self_attn.out_proj
    // beside its q_proj, k_proj, v_proj), not an nn.MultiheadAttention.
    size_t kept = 0;
    for (size_t i = 0; i < nl; i++)
        if (l[i].family != FAM_MHA || l[i].t[ROLE_QKV] >= 0) l[kept++] = l[i];
    nl = kept;
    if (nl == 0) {
        free(m);
        free(l);
        return st_fail(c, "no attention weights among its %zu tensors (looked for names ending in " PATTERN_LIST ")",
                       h->n);
    }
    int rc = 0;
    for (size_t i = 1; i < nl && !rc; i++)
        if (l[i].family != l[0].family)
            rc = st_fail(c, "attention weights of two kinds, %s (%s) and %s (%s); cannot tell which to score",
                         FAMILY[l[0].family], st_quote(h->t[l[0].t[first_role(&l[0])]].name).s, FAMILY[l[i].family],
                         st_quote(h->t[l[i].t[first_role(&l[i])]].name).s);
    free(m);
    if (rc) {
        free(l);
        return -1;
    }
    *out = l;
    *n_out = nl;
    return 0;
}

// ---- shapes of one layer: width (= h·d_k, rows of Q), d_model and the K/V width

typedef struct {
    uint64_t width, d_model, kv_width;
} LayerShape;

static int same_shape(const Tensor *a, const Tensor *b) {
    return a->shape[0] == b->shape[0] && a->shape[1] == b->shape[1];
}

// The shape a weight of this role is stored in (nn.Linear is [out, in], Conv1D [in, out]).
static const char *stored_shape(int family, int role) {
    if (family == FAM_GRASSMANN) return role == ROLE_O ? "[d_model, r*(r-1)/2]" : "[r, d_model]";
    if (role == ROLE_QKV) return family == FAM_GPT2 ? "[d_model, 3*width]" : "[3*width, d_model]";
    if (role == ROLE_O && family != FAM_GPT2) return "[d_model, width]";
    return "[width, d_model]";
}

// The output projection, when the layer has one, must be [d_model, width] (Linear) or
// [width, d_model] (GPT-2's Conv1D) for the width and d_model of its Q/K/V weights.
static int out_shape(const Ctx *c, const Header *h, const Layer *l, const LayerShape *s) {
    if (l->t[ROLE_O] < 0) return 0;
    const Tensor *o = &h->t[l->t[ROLE_O]];
    int conv1d = l->family == FAM_GPT2;
    uint64_t rows = conv1d ? s->width : s->d_model, cols = conv1d ? s->d_model : s->width;
    if (l->family == FAM_GRASSMANN) cols = s->width * (s->width - 1) / 2;  // W_plu reads the pairs of z
    if (o->shape[0] == rows && o->shape[1] == cols) return 0;
    return st_fail(c, "tensor %s has shape %s; expected %s = [%llu, %llu]", st_quote(o->name).s, st_shape_text(o).s,
                   stored_shape(l->family, ROLE_O), (unsigned long long)rows, (unsigned long long)cols);
}

// A GPT-2 layer whose c_attn is [3·width, d_model] is nanoGPT's: l->family says so after.
static int layer_shape(const Ctx *c, const Header *h, Layer *l, LayerShape *s) {
    Quoted lq = st_quote_n(l->prefix, l->plen);
    for (int r = 0; r < ROLE_O; r++) {  // the Q/K/V weights of the family
        int needed = fused(l->family) ? r == ROLE_QKV : l->family == FAM_GRASSMANN ? r == ROLE_Q : r != ROLE_QKV;
        if (needed && l->t[r] < 0)
            return st_fail(c, "layer %s has %s but no %s", lq.s, member_name(l, first_role(l)).s, member_name(l, r).s);
    }
    for (int r = 0; r < N_ROLES; r++) {
        if (l->t[r] < 0) continue;
        const Tensor *t = &h->t[l->t[r]];
        Quoted q = st_quote(t->name);
        if (!st_float_dtype(t))
            return st_fail(c, "tensor %s has dtype %s; attention weights must be F32, F16, BF16 or F64", q.s,
                           st_dtype_name(t));
        if (t->ndim != 2)
            return st_fail(c, "tensor %s has shape %s; expected a 2-D weight %s", q.s, st_shape_text(t).s,
                           stored_shape(l->family, r));
        if (t->shape[0] == 0 || t->shape[1] == 0)
            return st_fail(c, "tensor %s has shape %s; an attention weight cannot be empty", q.s, st_shape_text(t).s);
        if (t->shape[0] > INT_MAX || t->shape[1] > INT_MAX)
            return st_fail(c, "tensor %s: shape %s is too large", q.s, st_shape_text(t).s);
    }
    if (l->family == FAM_GRASSMANN) {  // W_red [r, d_model]: r rows play the heads
        const Tensor *t = &h->t[l->t[ROLE_Q]];
        if (t->shape[0] < 2)
            return st_fail(c, "tensor %s has shape %s; Grassmann mixing needs r >= 2", st_quote(t->name).s, st_shape_text(t).s);
        s->width = s->kv_width = t->shape[0];
        s->d_model = t->shape[1];
        return out_shape(c, h, l, s);
    }
    if (fused(l->family)) {
        const Tensor *t = &h->t[l->t[ROLE_QKV]];
        if (l->family == FAM_GPT2 && t->shape[0] == 3 * t->shape[1]) l->family = FAM_NANOGPT;
        const int conv1d = l->family == FAM_GPT2;
        if (t->shape[conv1d] % 3)
            return st_fail(c, "tensor %s has shape %s; a fused Q, K, V weight %s needs a %s count divisible by 3",
                           st_quote(t->name).s, st_shape_text(t).s, stored_shape(l->family, ROLE_QKV), conv1d ? "column" : "row");
        s->d_model = t->shape[!conv1d];
        s->width = s->kv_width = t->shape[conv1d] / 3;
        return out_shape(c, h, l, s);
    }
    const Tensor *q = &h->t[l->t[ROLE_Q]], *k = &h->t[l->t[ROLE_K]], *v = &h->t[l->t[ROLE_V]];
    const char *const *w = ROLE_WORD[l->family];
    if (l->family == FAM_BERT ? !same_shape(q, k) || !same_shape(q, v)
                              : !same_shape(k, v) || k->shape[1] != q->shape[1])
        return st_fail(c, "layer %s: %s %s, %s %s and %s %s weights do not fit together (%s)", lq.s, w[0],
                       st_shape_text(q).s, w[1], st_shape_text(k).s, w[2], st_shape_text(v).s,
                       l->family == FAM_BERT ? "all three must be [width, d_model]"
                                          : "k_proj and v_proj must have the same shape and all three the same "
                                            "input size d_model");
    s->width = q->shape[0];
    s->d_model = q->shape[1];
    s->kv_width = k->shape[0];
    return out_shape(c, h, l, s);
}

// ---- the number of heads

static int config_int(const cJSON *cfg, const char *key, const cJSON **found) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(cfg, key);
    if (!x) {
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
        if (cJSON_IsObject(text)) x = cJSON_GetObjectItemCaseSensitive(text, key);
    }
    *found = x;
    uint64_t v;
    if (!x || st_json_uint(x, &v) || v == 0 || v > INT_MAX) return 0;
    return (int)v;
}

static int heads_from_config(const Ctx *c, const char *path, int *heads) {
    if (!path) return st_fail(c, "number of heads unknown; pass --heads N");
    uint64_t size = 0;
    FILE *f = st_open_regular(path, &size);
    if (!f && errno != EINVAL)
        return st_fail(c, "number of heads unknown: cannot open %s (%s); pass --heads N", path, strerror(errno));
    char *text = NULL;
    int rc = -1;
    if (!f || size > MAX_CONFIG_BYTES) {
        rc = st_fail(c, "number of heads unknown: %s is not a regular file of at most %u bytes; pass --heads N", path,
                     MAX_CONFIG_BYTES);
    } else {
        size_t n = (size_t)size;
        text = xmalloc(n + 1);
        if (n && fread(text, 1, n, f) != n) {
            rc = st_fail(c, "number of heads unknown: cannot read %s; pass --heads N", path);
        } else {
            text[n] = '\0';
            cJSON *cfg = cJSON_ParseWithLength(text, n);
            const cJSON *x1 = NULL, *x2 = NULL;
            int h1 = cJSON_IsObject(cfg) ? config_int(cfg, "num_attention_heads", &x1) : 0;
            int h2 = cJSON_IsObject(cfg) ? config_int(cfg, "n_head", &x2) : 0;
            if (!h2 && !x2 && cJSON_IsObject(cfg)) h2 = config_int(cfg, "num_heads", &x2);  // timm, nanoGPT's own
            if (!h2 && !x2 && cJSON_IsObject(cfg)) h2 = config_int(cfg, "n_heads", &x2);
            if (!cJSON_IsObject(cfg)) {
                rc = st_fail(c, "number of heads unknown: %s is %s; pass --heads N", path,
                             cfg ? "not a JSON object" : "not valid JSON");
            } else if (h1 || h2) {
                *heads = h1 ? h1 : h2;
                rc = 0;
            } else if (x1 || x2) {
                rc = st_fail(c, "number of heads unknown: %s in %s is not a positive integer; pass --heads N",
                             x1 ? "num_attention_heads" : x2->string, path);
            } else {
                rc = st_fail(c, "number of heads unknown: %s has none of num_attention_heads, n_head, num_heads, "
                             "n_heads; pass --heads N", path);
            }
            cJSON_Delete(cfg);
        }
    }
    free(text);
    if (f) fclose(f);
    return rc;
}

// W[((h·dk + k)·D + m)·3 + role] = src[base + row·rs + m·cs], row = (h / rep)·dk + k.
static void scatter(float *W, const float *src, int role, int heads, int dk, int D, int rep, size_t base,
                    size_t rs, size_t cs) {
    for (int hh = 0; hh < heads; hh++)
        for (int k = 0; k < dk; k++) {
            size_t row = (size_t)(hh / rep) * (size_t)dk + (size_t)k;
            float *dst = W + ((size_t)hh * (size_t)dk + (size_t)k) * (size_t)D * 3 + (size_t)role;
            const float *sp = src + base + row * rs;
            for (int m = 0; m < D; m++) dst[(size_t)m * 3] = sp[(size_t)m * cs];
        }
}

// O[i·width + j] = src[i·rs + j·cs]: output feature i reads input j = h·d_k + k.
static void gather_out(float *O, const float *src, size_t D, size_t width, size_t rs, size_t cs) {
    for (size_t i = 0; i < D; i++)
        for (size_t j = 0; j < width; j++) O[i * width + j] = src[i * rs + j * cs];
}

// n floats for layer l, or NULL with the message in c.
static float *layer_floats(const Ctx *c, const Layer *l, size_t n) {
    float *p = malloc(n * sizeof *p);
    if (!p) st_fail(c, "out of memory for layer %s (%zu bytes)", st_quote_n(l->prefix, l->plen).s, n * sizeof *p);
    return p;
}

// ---- what the layer reads through and its biases (circuits/circuits.h LayerForm)
//
// Optional tensors beside a layer's weights, by family (PREFIX as above); an absent one
// counts as none (gain 1, bias 0):
//   GPT-2, nanoGPT  PREFIX.ln_1.{weight,bias} (pre-LN), PREFIX.attn.c_attn.bias [3·width]
//   timm ViT        PREFIX.norm1.{weight,bias} (pre-LN), PREFIX.attn.qkv.bias [3·width]
//   LLaMA           PREFIX.input_layernorm.weight (RMSNorm: a gain, no mean taken),
//                   PREFIX.self_attn.{q,k,v}_proj.bias (Qwen-style; [width], k/v [kv width])
//   BERT            PREFIX.attention.self.{query,key,value}.bias; post-LN: the layer reads
//                   the residual stream itself, so nothing is folded or centred on its side
//   nn.MultiheadAttention  PREFIX.in_proj_bias [3·width]; what it reads is unknown
// Writes are centred for the LayerNorm families (GPT-2, nanoGPT, timm ViT, BERT: every
// reader of the residual stream subtracts its mean), not for LLaMA (RMSNorm keeps the
// mean) nor nn.MultiheadAttention (unknown readers).
typedef struct {
    NormKind norm;
    const char *gain, *bias;      // suffixes of the norm's tensors (NULL: none)
    const char *qkv_bias[3];      // fused: [0] the Q | K | V bias; else one per role
    int centre_writes;
    const char *text;             // what was done, for AttentionLayers.form
} FamilyForm;

static const FamilyForm FORMS[N_FAMILIES] = {
    [FAM_BERT] = {NORM_NONE, NULL, NULL,
                  {".attention.self.query.bias", ".attention.self.key.bias", ".attention.self.value.bias"}, 1,
                  "post-LN: query bias in the QK form, writes centred"},
    [FAM_GPT2] = {NORM_LAYER, ".ln_1.weight", ".ln_1.bias", {".attn.c_attn.bias"}, 1,
                  "pre-LN: ln_1 folded and reads centred (where the file has ln_1), writes centred, query bias in the QK form"},
    [FAM_LLAMA] = {NORM_RMS, ".input_layernorm.weight", NULL,
                   {".self_attn.q_proj.bias", ".self_attn.k_proj.bias", ".self_attn.v_proj.bias"}, 0,
                   "RMSNorm gain folded (where the file has it), query bias in the QK form; writes not centred (RMSNorm keeps the mean)"},
    [FAM_NANOGPT] = {NORM_LAYER, ".ln_1.weight", ".ln_1.bias", {".attn.c_attn.bias"}, 1,
                     "pre-LN: ln_1 folded and reads centred (where the file has ln_1), writes centred, query bias in the QK form"},
    [FAM_TIMM] = {NORM_LAYER, ".norm1.weight", ".norm1.bias", {".attn.qkv.bias"}, 1,
                  "pre-LN: norm1 folded and reads centred (where the file has norm1), writes centred, query bias in the QK form"},
    [FAM_MHA] = {NORM_NONE, NULL, NULL, {".in_proj_bias"}, 0, "query bias in the QK form"},
};

// The tensor named prefix + suffix, or NULL.
static const Tensor *find_member(const Header *h, const Layer *l, const char *suffix) {
    const size_t sl = strlen(suffix) - (l->plen == 0);  // a top-level name has no leading dot
    if (l->plen == 0) suffix++;
    for (size_t i = 0; i < h->n; i++) {
        const char *name = h->t[i].name;
        if (strlen(name) == l->plen + sl && !memcmp(name, l->prefix, l->plen) && !memcmp(name + l->plen, suffix, sl))
            return &h->t[i];
    }
    return NULL;
}

// The 1-D tensor prefix + suffix of n values into dst (n floats), or dst filled with
// `absent` when the file has no such tensor.
static int load_vector(const Ctx *c, const Source *srcs, const Header *h, const Layer *l, const char *suffix,
                       size_t n, float *dst, float absent, Scratch *sc) {
    const Tensor *t = find_member(h, l, suffix);
    if (!t) {
        for (size_t i = 0; i < n; i++) dst[i] = absent;
        return 0;
    }
    if (!st_float_dtype(t) || t->ndim != 1 || t->shape[0] != n)
        return st_fail(c, "tensor %s has %s %s; expected a float vector [%zu]", st_quote(t->name).s,
                       st_dtype_name(t), st_shape_text(t).s, n);
    if (st_load_tensor(c, srcs, t, sc)) return -1;
    memcpy(dst, sc->val, n * sizeof *dst);
    return 0;
}

// Layer l's normalisation gain and bias (NULL: none in the file or the family) and its
// Q | K | V bias (3·width, K and V repeated for the query heads sharing them under
// grouped-query attention; NULL: none of the three in the file) into out's arrays of layer i.
static int read_form(const Ctx *c, const Source *srcs, const Header *h, const Layer *l, int heads, int dk, int D,
                     int kv_heads, AttentionLayers *out, size_t i, Scratch *sc) {
    const FamilyForm *ff = &FORMS[l->family];
    const size_t width = (size_t)heads * (size_t)dk, kvw = (size_t)kv_heads * (size_t)dk;
    if (ff->gain && find_member(h, l, ff->gain)) {
        if (!(out->ln_w[i] = layer_floats(c, l, (size_t)D)) ||
            load_vector(c, srcs, h, l, ff->gain, (size_t)D, out->ln_w[i], 1.0f, sc))
            return -1;
        if (ff->bias && (!(out->ln_b[i] = layer_floats(c, l, (size_t)D)) ||
                         load_vector(c, srcs, h, l, ff->bias, (size_t)D, out->ln_b[i], 0.0f, sc)))
            return -1;
    }
    int any = 0;
    for (int r = 0; r < 3 && ff->qkv_bias[r]; r++) any |= find_member(h, l, ff->qkv_bias[r]) != NULL;
    if (!any) return 0;
    float *bq = out->bias_qkv[i] = layer_floats(c, l, 3 * width), *raw = layer_floats(c, l, 3 * width);
    int rc = -1;
    if (!bq || !raw) goto done;
    if (!ff->qkv_bias[1]) {  // fused Q | K | V
        rc = load_vector(c, srcs, h, l, ff->qkv_bias[0], 3 * width, bq, 0.0f, sc);
        goto done;
    }
    const size_t rep = (size_t)(heads / kv_heads);
    for (int r = 0; r < 3; r++) {
        if (load_vector(c, srcs, h, l, ff->qkv_bias[r], r ? kvw : width, raw, 0.0f, sc)) goto done;
        for (size_t j = 0; j < width; j++)
            bq[(size_t)r * width + j] = r ? raw[(j / (size_t)dk / rep) * (size_t)dk + j % (size_t)dk] : raw[j];
    }
    rc = 0;
done:
    free(raw);
    return rc;
}

void attention_layers_whole_network(AttentionLayers *l) {
    if (l->n_layers == 0 || l->dims[3] != 3) return;  // Grassmann: as stored
    const int H = l->dims[0], dk = l->dims[1], D = l->dims[2];
    const size_t width = (size_t)H * (size_t)dk;
    for (int i = 0; i < l->n_layers; i++) {
        const LayerForm form = {.norm = l->ln_w[i] ? l->norm : NORM_NONE, .ln_w = l->ln_w[i], .ln_b = l->ln_b[i],
                                .bias_qkv = l->bias_qkv[i], .centre_writes = l->centre_writes};
        float *W = xmalloc(width * (size_t)(D + 1) * 3 * sizeof(float));
        float *O = l->out ? xmalloc(width * (size_t)(D + 1) * sizeof(float)) : NULL;
        circuits_whole_network(W, O, l->weights[i], l->out ? l->out[i] : NULL, &form, H, dk, D);
        free(l->weights[i]);
        l->weights[i] = W;
        if (O) free(l->out[i]), l->out[i] = O;
    }
    l->dims[2] = D + 1;
    if (l->out) l->out_dims[0] = D + 1;
}

// ---- the whole reader

// The layers of header h (already read, from srcs; freed here) as out.
static int attention_from(const Ctx *c, const Source *srcs, Header *h, int heads, const char *config_path,
                          AttentionLayers *out) {
    Layer *layers = NULL;
    size_t nl = 0;
    Scratch sc = {0};
    int rc = -1;
    LayerShape s0 = {0};

    if (find_layers(c, h, &layers, &nl)) goto done;
    for (size_t i = 0; i < nl; i++) {
        LayerShape si = {0};
        if (layer_shape(c, h, &layers[i], &si)) goto done;
        if (i == 0) {
            s0 = si;
        } else if (layers[i].family != layers[0].family) {  // GPT-2 and nanoGPT differ by shape only
            st_fail(c, "attention weights of two kinds, %s (layer %s) and %s (layer %s); cannot tell which to score",
                    FAMILY[layers[0].family], st_quote_n(layers[0].prefix, layers[0].plen).s, FAMILY[layers[i].family],
                    st_quote_n(layers[i].prefix, layers[i].plen).s);
            goto done;
        } else if (si.width != s0.width || si.d_model != s0.d_model || si.kv_width != s0.kv_width) {
            st_fail(c, "layer %s: width %llu, d_model %llu, key/value width %llu differ from layer %s (%llu, %llu, %llu); "
                    "all layers must agree", st_quote_n(layers[i].prefix, layers[i].plen).s,
                    (unsigned long long)si.width, (unsigned long long)si.d_model, (unsigned long long)si.kv_width,
                    st_quote_n(layers[0].prefix, layers[0].plen).s, (unsigned long long)s0.width,
                    (unsigned long long)s0.d_model, (unsigned long long)s0.kv_width);
            goto done;
        } else if ((layers[i].t[ROLE_O] < 0) != (layers[0].t[ROLE_O] < 0)) {
            const Layer *lacks = layers[i].t[ROLE_O] < 0 ? &layers[i] : &layers[0];
            const Layer *has = lacks == &layers[0] ? &layers[i] : &layers[0];
            st_fail(c, "layer %s has no output projection %s but layer %s has one; all layers or none must have it",
                    st_quote_n(lacks->prefix, lacks->plen).s, member_name(lacks, ROLE_O).s,
                    st_quote_n(has->prefix, has->plen).s);
            goto done;
        }
    }

    const Layer *l0 = &layers[0];
    const int grassmann = l0->family == FAM_GRASSMANN;
    if (heads < 0) {
        st_fail(c, "number of heads must be positive (got %d)", heads);
        goto done;
    }
    if (grassmann) heads = (int)s0.width;  // the r rows of W_red, each its own "head" of one feature
    if (heads == 0 && heads_from_config(c, config_path, &heads)) goto done;
    const char *wname = h->t[l0->t[fused(l0->family) ? ROLE_QKV : ROLE_Q]].name;
    if ((uint64_t)heads > s0.width || s0.width % (uint64_t)heads) {
        st_fail(c, "%d heads do not divide the attention width %llu (of %s); pass --heads N with N dividing %llu", heads,
                (unsigned long long)s0.width, st_quote(wname).s, (unsigned long long)s0.width);
        goto done;
    }
    int dk = (int)(s0.width / (uint64_t)heads), D = (int)s0.d_model, kv_heads = heads;
    if (s0.kv_width != s0.width) {  // grouped-query attention (LLaMA names only)
        if (s0.kv_width % (uint64_t)dk || heads % (int)(s0.kv_width / (uint64_t)dk)) {
            st_fail(c, "layer %s: k_proj/v_proj have %llu rows, not a whole number of key/value heads of size "
                    "d_k = %d that divides %d heads (grouped-query attention)", st_quote_n(l0->prefix, l0->plen).s,
                    (unsigned long long)s0.kv_width, dk, heads);
            goto done;
        }
        kv_heads = (int)(s0.kv_width / (uint64_t)dk);
    }
    if (s0.width > SIZE_MAX / 3 / sizeof(float) / s0.d_model) {
        st_fail(c, "attention tensors of %llu x %llu x 3 floats do not fit in memory", (unsigned long long)s0.width,
                (unsigned long long)s0.d_model);
        goto done;
    }
    const int roles = grassmann ? 1 : 3;
    size_t width = (size_t)s0.width, wsize = width * (size_t)D * (size_t)roles;
    size_t out_width = grassmann ? width * (width - 1) / 2 : width;

    out->dims[0] = heads;
    out->dims[1] = dk;
    out->dims[2] = D;
    out->dims[3] = roles;
    out->kv_heads = kv_heads;
    out->family = FAMILY[l0->family];
    out->form = grassmann ? "as stored" : FORMS[l0->family].text;
    out->norm = grassmann ? NORM_NONE : FORMS[l0->family].norm;
    out->centre_writes = !grassmann && FORMS[l0->family].centre_writes;
    out->weights = xcalloc(nl, sizeof *out->weights);
    out->names = xcalloc(nl, sizeof *out->names);
    out->ln_w = xcalloc(nl, sizeof *out->ln_w);
    out->ln_b = xcalloc(nl, sizeof *out->ln_b);
    out->bias_qkv = xcalloc(nl, sizeof *out->bias_qkv);
    if (l0->t[ROLE_O] >= 0) {  // then every layer has one
        out->out_dims[0] = D;
        out->out_dims[1] = (int)out_width;
        out->out = xcalloc(nl, sizeof *out->out);
    }
    for (size_t i = 0; i < nl; i++) {
        const Layer *l = &layers[i];
        out->n_layers = (int)i + 1;
        out->names[i] = xmalloc(l->plen + 1);
        memcpy(out->names[i], l->prefix, l->plen);
        out->names[i][l->plen] = '\0';
        float *W = out->weights[i] = layer_floats(c, l, wsize);
        if (!W) goto done;
        if (grassmann) {  // W_red [r, d_model] is W[r, 1, d_model, 1]
            if (st_load_tensor(c, srcs, &h->t[l->t[ROLE_Q]], &sc)) goto done;
            memcpy(W, sc.val, wsize * sizeof *W);
        } else if (l->family == FAM_GPT2) {  // Conv1D [d_model, 3·width]: columns Q | K | V
            if (st_load_tensor(c, srcs, &h->t[l->t[ROLE_QKV]], &sc)) goto done;
            for (int r = 0; r < 3; r++) scatter(W, sc.val, r, heads, dk, D, 1, (size_t)r * width, 1, 3 * width);
        } else if (fused(l->family)) {  // nn.Linear [3·width, d_model]: rows Q | K | V
            if (st_load_tensor(c, srcs, &h->t[l->t[ROLE_QKV]], &sc)) goto done;
            for (int r = 0; r < 3; r++) scatter(W, sc.val, r, heads, dk, D, 1, (size_t)r * width * (size_t)D, (size_t)D, 1);
        } else {
            for (int r = 0; r < 3; r++) {
                if (st_load_tensor(c, srcs, &h->t[l->t[r]], &sc)) goto done;
                scatter(W, sc.val, r, heads, dk, D, r == ROLE_Q ? 1 : heads / kv_heads, 0, (size_t)D, 1);
            }
        }
        if (out->out) {
            float *O = out->out[i] = layer_floats(c, l, out_width * (size_t)D);
            if (!O || st_load_tensor(c, srcs, &h->t[l->t[ROLE_O]], &sc)) goto done;
            if (l->family == FAM_GPT2) gather_out(O, sc.val, (size_t)D, width, 1, (size_t)D);  // Conv1D [width, D]
            else gather_out(O, sc.val, (size_t)D, out_width, out_width, 1);                      // Linear [D, width]
        }
        if (!grassmann && read_form(c, srcs, h, l, heads, dk, D, kv_heads, out, i, &sc)) goto done;
    }
    rc = 0;
done:
    if (rc) attention_layers_free(out);
    free(sc.raw);
    free(sc.val);
    free(layers);
    st_header_free(h);
    return rc;
}

int safetensors_attention_mem(const void *data, size_t size, const char *label, int heads, AttentionLayers *out,
                              char *err, size_t errlen) {
    Ctx c = {label ? label : "(memory)", err, errlen};
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = '\0';
    Source s = {NULL, data, data ? (uint64_t)size : 0};
    if (!data) s.mem = (const unsigned char *)"";
    Header h = {0};
    if (st_read_header(&c, &s, 0, &h)) {
        st_header_free(&h);
        return -1;
    }
    return attention_from(&c, &s, &h, heads, NULL, out);
}

static int ends_with(const char *s, const char *end) {
    const size_t n = strlen(s), m = strlen(end);
    return n >= m && !strcmp(s + n - m, end);
}

int safetensors_attention(const char *path, int heads, AttentionLayers *out, char *err, size_t errlen) {
    Ctx c = {path ? path : "(null)", err, errlen};
    memset(out, 0, sizeof *out);
    if (err && errlen) err[0] = '\0';
    if (!path) return st_fail(&c, "no file name");
    Source *srcs = NULL, one;
    int n_src = 0, rc = -1;
    Header h = {0};
    if (ends_with(path, ".json")) {  // model.safetensors.index.json
        if (st_read_sharded(&c, path, &srcs, &n_src, &h) == 0) rc = 0;
    } else if (st_open_source(&c, path, &one) == 0) {
        srcs = &one, n_src = 1;
        rc = st_read_header(&c, &one, 0, &h);
    }
    char *config = heads == 0 ? st_beside(path, "config.json") : NULL;
    if (rc == 0)
        rc = attention_from(&c, srcs, &h, heads, config, out);
    else
        st_header_free(&h);
    free(config);
    for (int k = 0; k < n_src; k++) fclose(srcs[k].f);
    if (srcs != &one) free(srcs);
    return rc;
}

void attention_layers_free(AttentionLayers *l) {
    if (!l) return;
    for (int i = 0; i < l->n_layers; i++) {
        if (l->weights) free(l->weights[i]);
        if (l->names) free(l->names[i]);
        if (l->out) free(l->out[i]);
        if (l->ln_w) free(l->ln_w[i]);
        if (l->ln_b) free(l->ln_b[i]);
        if (l->bias_qkv) free(l->bias_qkv[i]);
    }
    free(l->weights);
    free(l->names);
    free(l->out);
    free(l->ln_w);
    free(l->ln_b);
    free(l->bias_qkv);
    memset(l, 0, sizeof *l);
}
