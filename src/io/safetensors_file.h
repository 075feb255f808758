// safetensors_file.h: the safetensors container, for io/'s own files: a header
// validated completely (safetensors.h lists what is checked), where its bytes come from
// (a regular file, a buffer in memory, or the shards beside a sharded checkpoint's
// index), and one tensor read as float32. safetensors.c finds the attention weights
// among its tensors by name (the checkpoint name families). The st_ functions report a
// failure as one line "LABEL: message" in the Ctx's buffer and return -1.
#ifndef ATTN_SAFETENSORS_FILE_H
#define ATTN_SAFETENSORS_FILE_H

#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum { SHAPE_KEPT = 8 };              // dims kept per tensor (for messages and 2-D reads)
#define MAX_CONFIG_BYTES (16u << 20)  // a config.json or an index larger than this is not one

// ---- errors: one line "LABEL: message" in the caller's buffer

typedef struct {
    const char *label;  // the file, as messages name it
    char *err;
    size_t errlen;
} Ctx;

// The message in c's buffer (newlines of the label made spaces); returns -1.
int st_fail(const Ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

// A name from the file, quoted, with '"', '\\', control and non-ASCII bytes escaped,
// cut after 100 bytes. Used as st_quote(...).s inside one printf call (C11 temporaries).
typedef struct {
    char s[2 + 4 * 100 + 8];
} Quoted;

Quoted st_quote_n(const char *name, size_t len);
Quoted st_quote(const char *name);

// ---- where the bytes come from: a file (fseeko + fread) or a buffer in memory

typedef struct {
    FILE *f;
    const unsigned char *mem;
    uint64_t size;
} Source;

// PATH for reading if it is a regular file (its size in *size), else NULL with errno set
// (EINVAL: not a regular file). The open itself never blocks (O_NONBLOCK): a trial program
// may leave a FIFO at a checkpoint's, config's or shard's name, whose plain open would
// hang the worker past the trial's time limit.
FILE *st_open_regular(const char *path, uint64_t *size);

// A regular file opened for reading as a Source; -1 with the reason in c.
int st_open_source(const Ctx *c, const char *path, Source *s);

// PATH's directory + name ("config.json" beside the checkpoint); the caller frees it.
char *st_beside(const char *path, const char *name);

// ---- the header

typedef struct {
    const char *name;  // owned by the cJSON tree
    int dtype;         // the dtype's index in safetensors_file.c's table
    int ndim;
    uint64_t shape[SHAPE_KEPT];
    uint64_t begin, end;  // relative to the data buffer
    int file;             // the file (a shard of a sharded checkpoint) it is in
    uint64_t data_start;  //   and where that file's data buffer starts
} Tensor;

// The tensors of a file; of a sharded checkpoint, every shard's (each a part).
typedef struct Header {
    char *text;
    cJSON *root;
    Tensor *t;
    size_t n;
    uint64_t data_start, data_size;
    struct Header *parts;
    int n_parts;
} Header;

// The header of the file (number `file` of the checkpoint) from s, into h, validated.
int st_read_header(const Ctx *c, const Source *s, int file, Header *h);

// A sharded checkpoint's index (model.safetensors.index.json: {"weight_map": {TENSOR:
// SHARD, ...}}, the shards beside it): every shard's header, read into a part of h, and
// their tensors together in h. The shards are opened into *srcs (*n_src of them; the
// caller closes and frees them, on failure too).
int st_read_sharded(const Ctx *c, const char *index, Source **srcs, int *n_src, Header *h);

// Free what a read allocated and zero *h; safe on a zeroed Header.
void st_header_free(Header *h);

// The dtype's name ("F32", ...), and whether it is one read as float32 (F32, F16, BF16, F64).
const char *st_dtype_name(const Tensor *t);
int st_float_dtype(const Tensor *t);

// "[a, b, c]" (first SHAPE_KEPT dims, then "...").
typedef struct {
    char s[SHAPE_KEPT * 22 + 16];
} ShapeText;

ShapeText st_shape_text(const Tensor *t);

// A JSON number that is an integer in [0, 2^53] into *v and NULL; else why not.
const char *st_json_uint(const cJSON *x, uint64_t *v);

// ---- reading and converting one tensor

// Buffers reused from one tensor to the next (zeroed to start; the caller frees raw and val).
typedef struct {
    unsigned char *raw;
    size_t raw_cap;
    float *val;
    size_t val_cap;
} Scratch;

// The tensor (1-D or 2-D, of a float dtype) as float32 in sc->val (its values, row-major),
// from its file's source (srcs[t->file]); NaN, Inf or an F64 beyond float32's range fails.
int st_load_tensor(const Ctx *c, const Source *srcs, const Tensor *t, Scratch *sc);

#endif
