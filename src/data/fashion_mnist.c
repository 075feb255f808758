// fashion_mnist.c: Fashion-MNIST from the gzip'd IDX files of the Debian package
// dataset-fashion-mnist. Pixels stay uint8 in memory (47 MB train + 7.8 MB test)
// and become normalised floats one batch at a time.
//
// Splits: training is the train-images file but its last VAL_IMAGES images (in file
// order), which are the validation set; test is the t10k file.
//
// IDX format: big-endian u32 magic (0x00000803 images, 0x00000801 labels), then one
// big-endian u32 per dimension (images: n, 28, 28; labels: n), then the bytes.
#include "data/tasks.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <zlib.h>

#include "common/util.h"

#define FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
// Mean and standard deviation of the pixels of the whole train-images file (validation
// images included) scaled to [0, 1]: a fixed normalisation, fitted to nothing per trial.
#define PIXEL_MEAN 0.2860f
#define PIXEL_STD 0.3530f

enum { IDX_IMAGES = 0x00000803, IDX_LABELS = 0x00000801, N_CLASSES = 10, PATH_LEN = 4096, VAL_IMAGES = 5000 };

typedef struct {
    uint8_t *pixels;  // (n, 784)
    uint8_t *labels;  // (n), each < 10
    long n;
} Split;

struct FashionMnist {
    Split train, val;   // the train-images file, cut in two: val is its last VAL_IMAGES
    Split test;         // the t10k file
    int *perm;          // (train.n) this epoch's order of the training images
    long cursor;        // next position in perm; train.n means "start a new epoch"
    float lut[256];     // pixel byte -> normalised value
};

static gzFile open_gz(const char *path) {
    errno = 0;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            die(EXIT_BADINPUT, "%s: No such file or directory (install the Debian package "
                "dataset-fashion-mnist or pass --data-dir)", path);
        die(EXIT_BADINPUT, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    }
    gzbuffer(f, 1 << 17);
    return f;
}

// Read exactly n bytes or die naming the file and what was being read.
static void read_exact(gzFile f, const char *path, void *buf, size_t n, const char *what) {
    size_t got = 0;
    while (got < n) {
        size_t chunk = n - got < (1u << 30) ? n - got : (1u << 30);
        int r = gzread(f, (char *)buf + got, (unsigned)chunk);
        if (r < 0) {
            int err;
            const char *msg = gzerror(f, &err);
            die(EXIT_BADINPUT, "%s: corrupt gzip data while reading the %s: %s", path, what, msg);
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got < n)
        die(EXIT_BADINPUT, "%s: truncated: expected %zu bytes of %s, found %zu", path, n, what, got);
}

static void expect_end(gzFile f, const char *path) {
    unsigned char extra;
    if (gzread(f, &extra, 1) != 0) die(EXIT_BADINPUT, "%s: unexpected data after the last item", path);
}

static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

// Load "<dir>/<prefix>-images-idx3-ubyte.gz" and its labels file into s.
static void load_split(Split *s, const char *dir, const char *prefix) {
    char ipath[PATH_LEN], lpath[PATH_LEN];
    snprintf(ipath, sizeof ipath, "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    snprintf(lpath, sizeof lpath, "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    gzFile fi = open_gz(ipath), fl = open_gz(lpath);

    unsigned char h[16];
    read_exact(fi, ipath, h, 16, "IDX header");
    if (be32(h) != IDX_IMAGES)
        die(EXIT_BADINPUT, "%s: not an IDX image file (magic 0x%08x, expected 0x%08x)", ipath,
            (unsigned)be32(h), (unsigned)IDX_IMAGES);
    uint32_t n = be32(h + 4), rows = be32(h + 8), cols = be32(h + 12);
    if (rows != IMG_SIDE || cols != IMG_SIDE)
        die(EXIT_BADINPUT, "%s: images are %ux%u, expected %dx%d", ipath, (unsigned)rows,
            (unsigned)cols, IMG_SIDE, IMG_SIDE);
    if (n == 0) die(EXIT_BADINPUT, "%s: holds no images", ipath);

    read_exact(fl, lpath, h, 8, "IDX header");
    if (be32(h) != IDX_LABELS)
        die(EXIT_BADINPUT, "%s: not an IDX label file (magic 0x%08x, expected 0x%08x)", lpath,
            (unsigned)be32(h), (unsigned)IDX_LABELS);
    if (be32(h + 4) != n)
        die(EXIT_BADINPUT, "%s: holds %u labels but %s holds %u images", lpath, (unsigned)be32(h + 4),
            ipath, (unsigned)n);

    s->n = n;
    s->pixels = xmalloc((size_t)n * IMG_PIXELS);
    s->labels = xmalloc(n);
    read_exact(fi, ipath, s->pixels, (size_t)n * IMG_PIXELS, "pixels");
    read_exact(fl, lpath, s->labels, n, "labels");
    expect_end(fi, ipath);
    expect_end(fl, lpath);
    for (uint32_t i = 0; i < n; i++)
        if (s->labels[i] >= N_CLASSES)
            die(EXIT_BADINPUT, "%s: label %u of item %u is out of range (0..%d)", lpath,
                (unsigned)s->labels[i], (unsigned)i, N_CLASSES - 1);
    gzclose(fi);
    gzclose(fl);
}

void fashion_mnist_restart(FashionMnist *f) {
    for (long i = 0; i < f->train.n; i++) f->perm[i] = (int)i;
    f->cursor = f->train.n;
}

FashionMnist *fashion_mnist_open(const TrialConfig *c, DatasetInfo *info) {
    const char *dir = c->data_dir[0] ? c->data_dir : FASHION_MNIST_DIR;
    FashionMnist *f = xcalloc(1, sizeof *f);
    load_split(&f->train, dir, "train");
    if (f->train.n <= VAL_IMAGES)
        die(EXIT_BADINPUT, "%s/train-images-idx3-ubyte.gz: holds %ld images; needs more than %d (its last %d are "
            "the validation set)", dir, f->train.n, VAL_IMAGES, VAL_IMAGES);
    f->train.n -= VAL_IMAGES;
    f->val = (Split){.pixels = f->train.pixels + (size_t)f->train.n * IMG_PIXELS,
                     .labels = f->train.labels + f->train.n, .n = VAL_IMAGES};
    load_split(&f->test, dir, "t10k");
    for (int p = 0; p < 256; p++) f->lut[p] = ((float)p / 255.0f - PIXEL_MEAN) / PIXEL_STD;
    f->perm = xmalloc((size_t)f->train.n * sizeof(int));
    fashion_mnist_restart(f);

    info->seq_len = 0;
    info->vocab = 0;
    info->n_classes = N_CLASSES;
    info->n_train = f->train.n;
    info->n_val = f->val.n;
    info->n_test = f->test.n;
    return f;
}

void fashion_mnist_free(FashionMnist *f) {
    if (!f) return;
    free(f->train.pixels);  // and with them the validation images
    free(f->train.labels);
    free(f->test.pixels);
    free(f->test.labels);
    free(f->perm);
    free(f);
}

// Row `row` of the batch := example k of split s.
static void put_example(const FashionMnist *f, const Split *s, long k, Batch *b, int row) {
    const uint8_t *p = s->pixels + (size_t)k * IMG_PIXELS;
    float *x = b->images + (size_t)row * IMG_PIXELS;
    for (int i = 0; i < IMG_PIXELS; i++) x[i] = f->lut[p[i]];
    b->targets[row] = s->labels[k];
}

void fashion_mnist_train_batch(FashionMnist *f, Batch *b, gsl_rng *rng) {
    for (int row = 0; row < b->B; row++) {
        if (f->cursor == f->train.n) {  // epoch boundary, possibly inside a batch
            gsl_ran_shuffle(rng, f->perm, (size_t)f->train.n, sizeof(int));
            f->cursor = 0;
        }
        put_example(f, &f->train, f->perm[f->cursor++], b, row);
    }
}

void fashion_mnist_save_position(const FashionMnist *f, Bytes *b) {
    bytes_put_i64(b, f->cursor);
    bytes_put_array(b, f->perm, (size_t)f->train.n, 4);
}

int fashion_mnist_restore_position(FashionMnist *f, ByteReader *rd) {
    const long cursor = br_i64(rd);
    if (!rd->failed && (cursor < 0 || cursor > f->train.n)) br_fail(rd, "data position %ld of %ld", cursor, f->train.n);
    int *perm = br_new_array(rd, (size_t)f->train.n, 4);
    for (long i = 0; perm && i < f->train.n && !rd->failed; i++)
        if (perm[i] < 0 || perm[i] >= f->train.n) br_fail(rd, "epoch order entry %ld is %d", i, perm[i]);
    if (!rd->failed && perm) {
        memcpy(f->perm, perm, (size_t)f->train.n * sizeof(int));
        f->cursor = cursor;
    }
    free(perm);
    return rd->failed ? -1 : 0;
}

void fashion_mnist_eval_rows(const FashionMnist *f, EvalSplit split, Batch *b, long start, int rows) {
    const Split *s = split == SPLIT_VAL ? &f->val : &f->test;
    for (int row = 0; row < rows; row++) put_example(f, s, start + row, b, row);
}
