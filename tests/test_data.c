// test_data.c: the three tasks behind dataset.h.
//
// Fashion-MNIST and the fortunes are checked against numbers read independently with
// Python's gzip/re (hard-coded below, or computed at run time through popen); the
// finer properties (epoch permutations, the three splits and that they are disjoint,
// malformed files) are checked on small files this test writes into a temporary directory.
// modules: data
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <zlib.h>

#include "check.h"
#include "data/dataset.h"
#include "params/config.h"

static char tmpdir[64];

static TrialConfig config_for(int task, const char *dir) {
    TrialConfig c;
    config_defaults(&c);
    c.task = task;
    snprintf(c.data_dir, sizeof c.data_dir, "%s", dir);
    return c;
}

static gsl_rng *rng_seeded(unsigned long seed) {
    gsl_rng *r = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(r, seed);
    return r;
}

static int same_batch(const Batch *a, const Batch *b, const DatasetInfo *info) {
    size_t n = info->kind == TASK_FASHION_MNIST ? (size_t)a->B : (size_t)a->B * info->seq_len;
    if (memcmp(a->targets, b->targets, n * sizeof(int)) != 0) return 0;
    if (a->images) return memcmp(a->images, b->images, n * IMG_PIXELS * sizeof(float)) == 0;
    return memcmp(a->tokens, b->tokens, n * sizeof(int)) == 0;
}

// The pixel byte behind a normalised value.
static int pixel_of(float x) { return (int)lround(((double)x * 0.3530 + 0.2860) * 255.0); }

// Run dataset_open(c) in a child; return its exit status (-1 if it did not exit)
// and what it wrote to stderr.
static int open_in_child(const TrialConfig *c, char *msg, size_t len) {
    int fd[2];
    if (pipe(fd) != 0) return -1;
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fd[0]);
        dup2(fd[1], 2);
        dataset_free(dataset_open(c));
        _exit(0);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < len && (r = read(fd[0], msg + got, len - 1 - got)) > 0) got += (size_t)r;
    msg[got] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// dataset_open(c) must end with exit code 2 and one line "attnsweep: ..." containing
// `want` and `also` (unless NULL).
static void check_open_fails(const TrialConfig *c, const char *want, const char *also, const char *what) {
    char msg[4096];
    int code = open_in_child(c, msg, sizeof msg);
    char *nl = strchr(msg, '\n');
    CHECK(code == 2, "%s: exit code %d, want 2 (stderr: %s)", what, code, msg);
    CHECK(strncmp(msg, "attnsweep: ", 11) == 0 && nl && nl[1] == 0, "%s: not one 'attnsweep:' line: %s",
          what, msg);
    CHECK(strstr(msg, want) != NULL, "%s: message does not mention '%s': %s", what, want, msg);
    if (also) CHECK(strstr(msg, also) != NULL, "%s: message does not mention '%s': %s", what, also, msg);
}

// ---- Fashion-MNIST: the real files

// Over a held-out split in batches of B: the sum of its pixel bytes, its labels counted
// per class, and the first 20 labels. Returns the number of rows.
static long held_out_sums(const Dataset *d, EvalSplit split, int B, long long *sum, long count[10], int first[20]) {
    DatasetInfo info = dataset_info(d);
    const long n = split == SPLIT_VAL ? info.n_val : info.n_test;
    Batch b = batch_alloc(&info, B);
    long seen = 0;
    *sum = 0;
    memset(count, 0, 10 * sizeof *count);
    for (long start = 0; start < n + B; start += B) {
        int rows = dataset_eval_batch(d, split, &b, start);
        long left = n - start, want_rows = left < 0 ? 0 : left < B ? left : B;
        CHECK(rows == want_rows, "%s rows at %ld: %d, want %ld", split == SPLIT_VAL ? "validation" : "test", start,
              rows, want_rows);
        for (size_t i = 0; i < (size_t)rows * IMG_PIXELS; i++) *sum += pixel_of(b.images[i]);
        for (int i = 0; i < rows; i++) {
            count[b.targets[i]]++;
            if (seen + i < 20) first[seen + i] = b.targets[i];
        }
        for (int i = rows; i < b.B; i++) CHECK(b.targets[i] == -1, "padding row %d target %d", i, b.targets[i]);
        seen += rows;
    }
    batch_free(&b);
    return seen;
}

static void test_fashion_mnist_real_files(void) {
    TrialConfig c = config_for(TASK_FASHION_MNIST, "");
    Dataset *d = dataset_open(&c);
    DatasetInfo info = dataset_info(d);
    CHECK(info.n_train == 55000 && info.n_val == 5000 && info.n_test == 10000, "sizes %ld/%ld/%ld", info.n_train,
          info.n_val, info.n_test);
    CHECK(info.n_classes == 10 && info.seq_len == 0 && info.vocab == 0, "info %d %d %d", info.n_classes,
          info.seq_len, info.vocab);

    // Read with Python's gzip: train-images [0, 55000) and [55000, 60000) (their sums add up
    // to the whole file's, 3431114169: the two ranges partition it), the t10k images.
    static const long train_count[10] = {5479, 5503, 5510, 5492, 5473, 5497, 5533, 5550, 5485, 5478};
    static const long val_count[10] = {521, 497, 490, 508, 527, 503, 467, 450, 515, 522};
    static const int first_val_labels[20] = {0, 8, 0, 6, 5, 8, 0, 4, 7, 8, 6, 7, 0, 9, 7, 3, 5, 0, 6, 0};
    static const int first_test_labels[20] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7, 4, 5, 7, 3, 4, 1, 2, 4, 8, 0};
    const long long train_pixel_sum = 3142732765LL, val_pixel_sum = 288381404LL, test_pixel_sum = 573469082LL;
    CHECK(train_pixel_sum + val_pixel_sum == 3431114169LL, "the training and validation sums partition the file");

    // One epoch in batches of 5500: the first 55 000 images, each once.
    Batch b = batch_alloc(&info, 5500);
    CHECK(b.images && !b.tokens && b.targets, "image batch buffers");
    gsl_rng *rng = rng_seeded(1);
    long long sum = 0;
    long count[10] = {0};
    for (int k = 0; k < 10; k++) {
        dataset_train_batch(d, &b, rng);
        for (size_t i = 0; i < (size_t)b.B * IMG_PIXELS; i++) sum += pixel_of(b.images[i]);
        for (int i = 0; i < b.B; i++) count[b.targets[i]]++;
    }
    CHECK(sum == train_pixel_sum, "training pixel sum over one epoch %lld, want %lld", sum, train_pixel_sum);
    for (int k = 0; k < 10; k++)
        CHECK(count[k] == train_count[k], "class %d seen %ld times in one epoch, want %ld", k, count[k], train_count[k]);

    // Held out, in file order: validation in batches of 3000 (the second holds 2000 real
    // rows), test in batches of 6000 (4000).
    int first[20];
    CHECK(held_out_sums(d, SPLIT_VAL, 3000, &sum, count, first) == 5000, "validation rows");
    CHECK(sum == val_pixel_sum, "validation pixel sum %lld, want %lld", sum, val_pixel_sum);
    for (int k = 0; k < 10; k++) CHECK(count[k] == val_count[k], "class %d validation %ld times", k, count[k]);
    CHECK(!memcmp(first, first_val_labels, sizeof first), "the first validation labels are not train-images 55000..");
    CHECK(held_out_sums(d, SPLIT_TEST, 6000, &sum, count, first) == 10000, "test rows");
    CHECK(sum == test_pixel_sum, "test pixel sum %lld, want %lld", sum, test_pixel_sum);
    for (int k = 0; k < 10; k++) CHECK(count[k] == 1000, "class %d test %ld times", k, count[k]);
    CHECK(!memcmp(first, first_test_labels, sizeof first), "the first test labels are not t10k's");

    gsl_rng_free(rng);
    batch_free(&b);
    dataset_free(d);
}

// ---- Fashion-MNIST: small IDX files written here

// train-images holds SMALL_FILE images: SMALL_TRAIN for training, then the 5000 of
// validation; t10k holds SMALL_TEST, numbered from TEST_ID.
enum { SMALL_TRAIN = 50, SMALL_VAL = 5000, SMALL_FILE = SMALL_TRAIN + SMALL_VAL, SMALL_TEST = 13, TEST_ID = 6000 };

// Image `id` carries its number in its first two pixels (low byte, high byte).
static uint8_t small_pixel(int id, int j) {
    return j == 0 ? (uint8_t)(id & 255) : j == 1 ? (uint8_t)(id >> 8) : (uint8_t)((id * 7 + j * 3) % 256);
}
static int image_id(const float *x) { return pixel_of(x[0]) + 256 * pixel_of(x[1]); }

// Write a gzip'd IDX file: magic, big-endian dims, then `n` bytes of data.
static void write_idx(const char *path, uint32_t magic, const uint32_t *dims, int ndims, const uint8_t *data,
                      size_t n) {
    gzFile f = gzopen(path, "wb1");
    uint8_t h[4];
    for (int k = -1; k < ndims; k++) {
        uint32_t v = k < 0 ? magic : dims[k];
        h[0] = (uint8_t)(v >> 24), h[1] = (uint8_t)(v >> 16), h[2] = (uint8_t)(v >> 8), h[3] = (uint8_t)v;
        gzwrite(f, h, 4);
    }
    if (n) gzwrite(f, data, (unsigned)n);
    gzclose(f);
}

// A Fashion-MNIST directory: image `id` (train-images: 0.., t10k: TEST_ID..) has label
// id % 10. `flaw` spoils one file in one way (0: none).
static void write_small_fashion(const char *dir, int flaw) {
    mkdir(dir, 0755);
    const char *prefix[2] = {"train", "t10k"};
    const int first_id[2] = {0, TEST_ID};
    uint32_t n[2] = {SMALL_FILE, SMALL_TEST};
    if (flaw == 7) n[0] = SMALL_VAL;  // nothing left for training
    for (int s = 0; s < 2; s++) {
        uint8_t *px = calloc((size_t)n[s] * IMG_PIXELS + 1, 1), *labels = calloc(n[s] + 1, 1);
        for (uint32_t i = 0; i < n[s]; i++) {
            const int id = first_id[s] + (int)i;
            for (int j = 0; j < IMG_PIXELS; j++) px[i * IMG_PIXELS + j] = small_pixel(id, j);
            labels[i] = (uint8_t)(id % 10);
        }
        char path[512];
        uint32_t idims[3] = {n[s], 28, 28}, ldims[1] = {n[s]};
        size_t npx = (size_t)n[s] * IMG_PIXELS, nlab = n[s];
        uint32_t imagic = 0x803;
        if (s == 0 && flaw == 1) imagic = 0x802;
        if (s == 0 && flaw == 2) idims[2] = 27;
        if (s == 1 && flaw == 3) ldims[0] = n[s] - 1, nlab--;
        if (s == 1 && flaw == 4) labels[5] = 10;
        if (s == 0 && flaw == 5) npx -= 100;
        if (s == 0 && flaw == 6) npx++;
        snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte.gz", dir, prefix[s]);
        write_idx(path, imagic, idims, 3, px, npx);
        snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte.gz", dir, prefix[s]);
        write_idx(path, 0x801, ldims, 1, labels, nlab);
        free(px);
        free(labels);
    }
}

// Records that image id was seen in split `which` (1 training, 2 validation, 3 test);
// returns 0 if it was seen in another one before.
static int seen_only_in(unsigned char *split_of, int id, unsigned char which) {
    const int ok = !split_of[id] || split_of[id] == which;
    split_of[id] = which;
    return ok;
}

static void test_fashion_mnist_epochs_are_permutations(void) {
    char dir[128];
    snprintf(dir, sizeof dir, "%s/fm", tmpdir);
    write_small_fashion(dir, 0);
    TrialConfig c = config_for(TASK_FASHION_MNIST, dir);
    Dataset *d = dataset_open(&c);
    DatasetInfo info = dataset_info(d);
    CHECK(info.n_train == SMALL_TRAIN && info.n_val == SMALL_VAL && info.n_test == SMALL_TEST,
          "small sizes %ld/%ld/%ld", info.n_train, info.n_val, info.n_test);

    // The split each image was seen in: no image may be in two.
    static unsigned char split_of[TEST_ID + SMALL_TEST];
    int disjoint = 1;

    // B = 7 does not divide 50: epochs end inside batches. 22 batches = 3 epochs + 4 rows.
    Batch b = batch_alloc(&info, 7);
    gsl_rng *rng = rng_seeded(5);
    int seen[3][SMALL_TRAIN] = {{0}}, order[3][SMALL_TRAIN];
    long row = 0;
    double max_err = 0;
    for (int k = 0; k < 22; k++) {
        dataset_train_batch(d, &b, rng);
        for (int i = 0; i < b.B; i++, row++) {
            const float *x = b.images + (size_t)i * IMG_PIXELS;
            int id = image_id(x);
            CHECK(id >= 0 && id < SMALL_TRAIN && b.targets[i] == id % 10, "row %ld: image %d label %d", row, id,
                  b.targets[i]);
            if (id < 0 || id >= SMALL_TRAIN) continue;
            disjoint &= seen_only_in(split_of, id, 1);
            for (int j = 0; j < IMG_PIXELS; j++) {
                double want = ((double)small_pixel(id, j) / 255.0 - 0.2860) / 0.3530;
                max_err = worst_diff(max_err, x[j], want);
            }
            if (row < 3 * SMALL_TRAIN) {
                seen[row / SMALL_TRAIN][id]++;
                order[row / SMALL_TRAIN][row % SMALL_TRAIN] = id;
            }
        }
    }
    CHECK(max_err < 1e-6, "pixel normalisation (p/255 - 0.2860)/0.3530: max error %g", max_err);
    for (int e = 0; e < 3; e++)
        for (int i = 0; i < SMALL_TRAIN; i++) CHECK(seen[e][i] == 1, "epoch %d: image %d seen %d times", e, i, seen[e][i]);
    CHECK(memcmp(order[0], order[1], sizeof order[0]) != 0, "epochs 0 and 1 in the same order");

    // Held out, in file order: validation is train-images [SMALL_TRAIN, SMALL_FILE), test
    // is t10k; a partial last batch is padded with zero images and targets -1.
    Batch e = batch_alloc(&info, 7);
    for (int split = SPLIT_VAL; split <= SPLIT_TEST; split++) {
        const long n = split == SPLIT_VAL ? SMALL_VAL : SMALL_TEST;
        const int id0 = split == SPLIT_VAL ? SMALL_TRAIN : TEST_ID;
        int in_order = 1, padded = 1;
        for (long start = 0; start < n; start += e.B) {
            int rows = dataset_eval_batch(d, (EvalSplit)split, &e, start);
            CHECK(rows == (n - start < e.B ? n - start : e.B), "split %d: rows at %ld: %d", split, start, rows);
            for (int i = 0; i < e.B; i++) {
                const float *x = e.images + (size_t)i * IMG_PIXELS;
                if (i < rows) {
                    const int id = image_id(x);
                    in_order &= id == id0 + start + i && e.targets[i] == id % 10;
                    if (id >= 0 && id < TEST_ID + SMALL_TEST) disjoint &= seen_only_in(split_of, id, (unsigned char)(2 + split));
                } else {
                    int zero = 1;
                    for (int j = 0; j < IMG_PIXELS; j++) zero &= x[j] == 0.0f;
                    padded &= zero && e.targets[i] == -1;
                }
            }
        }
        CHECK(in_order, "split %d: not images %d.. in file order", split, id0);
        CHECK(padded, "split %d: padding rows not zero with targets -1", split);
        CHECK(dataset_eval_batch(d, (EvalSplit)split, &e, n) == 0, "split %d: rows past the end", split);
    }
    CHECK(disjoint, "an image is in two of training, validation and test");

    gsl_rng_free(rng);
    batch_free(&b);
    batch_free(&e);
    dataset_free(d);
}

static void test_fashion_mnist_bad_files(void) {
    TrialConfig c = config_for(TASK_FASHION_MNIST, "/nonexistent/attnsweep-data");
    check_open_fails(&c, "/nonexistent/attnsweep-data/train-images-idx3-ubyte.gz: No such file",
                     NULL, "missing fashion-mnist directory");

    static const struct {
        const char *file, *says;
    } flaws[] = {
        {"train-images-idx3-ubyte.gz", "magic"},       {"train-images-idx3-ubyte.gz", "28x27"},
        {"t10k-labels-idx1-ubyte.gz", "12 labels"},    {"t10k-labels-idx1-ubyte.gz", "out of range"},
        {"train-images-idx3-ubyte.gz", "truncated"},   {"train-images-idx3-ubyte.gz", "after the last"},
        {"train-images-idx3-ubyte.gz", "holds 5000 images; needs more than 5000 (its last 5000 are the validation set)"},
    };
    for (int f = 0; f < 7; f++) {
        char dir[128], want[256], what[64];
        snprintf(dir, sizeof dir, "%s/bad%d", tmpdir, f + 1);
        write_small_fashion(dir, f + 1);
        c = config_for(TASK_FASHION_MNIST, dir);
        snprintf(want, sizeof want, "%s/%s", dir, flaws[f].file);
        snprintf(what, sizeof what, "fashion-mnist flaw %d", f + 1);
        check_open_fails(&c, want, flaws[f].says, what);
    }
}

static void test_same_seed_same_batches(const TrialConfig *c) {
    int task = c->task;
    Dataset *d1 = dataset_open(c), *d2 = dataset_open(c), *d3 = dataset_open(c);
    DatasetInfo info = dataset_info(d1);
    Batch b1 = batch_alloc(&info, 16), b2 = batch_alloc(&info, 16), b3 = batch_alloc(&info, 16);
    gsl_rng *r1 = rng_seeded(42), *r2 = rng_seeded(42), *r3 = rng_seeded(43);
    int same = 1, differ = 0;
    for (int k = 0; k < 5; k++) {
        dataset_train_batch(d1, &b1, r1);
        dataset_train_batch(d2, &b2, r2);
        dataset_train_batch(d3, &b3, r3);
        same &= same_batch(&b1, &b2, &info);
        differ |= !same_batch(&b1, &b3, &info);
    }
    CHECK(same, "%s: same seed gave different batches", task_names[task]);
    CHECK(differ, "%s: different seeds gave the same batches", task_names[task]);
    gsl_rng_free(r1);
    gsl_rng_free(r2);
    gsl_rng_free(r3);
    batch_free(&b1);
    batch_free(&b2);
    batch_free(&b3);
    dataset_free(d1);
    dataset_free(d2);
    dataset_free(d3);
}

// ---- charlm

typedef struct {
    char *p;
    size_t len;
} Buf;

static void buf_add(Buf *b, const char *s, size_t n) {
    b->p = realloc(b->p, b->len + n + 1);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void write_file(const char *dir, const char *name, const char *text) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
}

static int occurs_in(const char *hay, size_t n, const int *w, int len) {
    for (size_t s = 0; s + (size_t)len <= n; s++) {
        int k = 0;
        while (k < len && (unsigned char)hay[s + k] == w[k]) k++;
        if (k == len) return 1;
    }
    return 0;
}

// Two databases ("alpha", "beta") with 23 fortunes in all, plus what must be skipped:
// their .dat indexes, a .u8 symlink, "gamma" (no index) and empty fortunes. Fortune 9
// (validation) holds the only '@', fortune 19 (test) the only '#'.
static void test_charlm_split_rule(void) {
    char dir[128], line[128];
    snprintf(dir, sizeof dir, "%s/fortunes", tmpdir);
    mkdir(dir, 0755);
    Buf alpha = {0}, beta = {0}, train = {0}, held[2] = {{0}};  // held: by EvalSplit
    buf_add(&alpha, "%\n", 2);  // a leading separator: no empty fortune
    for (int i = 0; i < 23; i++) {
        Buf *db = i < 12 ? &alpha : &beta;
        // fortune text: lines, one of them looks like a separator but is not
        int n = snprintf(line, sizeof line, "fortune %d%s\n%%%%\n  %% said %d\n", i,
                         i % 20 == 9 ? " @" : i % 20 == 19 ? " #" : "", i);
        if (i == 22) n--;  // the last line of the last file has no newline
        buf_add(db, line, (size_t)n);
        Buf *dst = i % 20 == 9 ? &held[SPLIT_VAL] : i % 20 == 19 ? &held[SPLIT_TEST] : &train;
        buf_add(dst, line, (size_t)n);
        buf_add(dst, "\n", 1);
        if (i == 5) buf_add(db, "%\n", 2);  // "%" twice in a row
        if (i < 11 || (i >= 12 && i < 22)) buf_add(db, "%\n", 2);
    }
    write_file(dir, "alpha", alpha.p);
    write_file(dir, "beta", beta.p);
    write_file(dir, "alpha.dat", "index");
    write_file(dir, "beta.dat", "index");
    write_file(dir, "gamma", "not a database\n%\nno index beside it\n");
    char link[256];
    snprintf(link, sizeof link, "%s/beta.u8", dir);
    CHECK(symlink("beta", link) == 0, "symlink %s", link);

    const int T = 5;
    TrialConfig c = config_for(TASK_CHARLM, dir);
    c.seq_len = T;
    Dataset *d = dataset_open(&c);
    DatasetInfo info = dataset_info(d);
    CHECK(info.seq_len == T && info.vocab == 256 && info.n_classes == 256, "info %d %d %d", info.seq_len,
          info.vocab, info.n_classes);
    CHECK(info.n_train == (long)train.len / T, "n_train %ld, want %zu/%d", info.n_train, train.len, T);
    CHECK(info.n_val == (long)(held[SPLIT_VAL].len - 1) / T, "n_val %ld, want (%zu-1)/%d", info.n_val,
          held[SPLIT_VAL].len, T);
    CHECK(info.n_test == (long)(held[SPLIT_TEST].len - 1) / T, "n_test %ld, want (%zu-1)/%d", info.n_test,
          held[SPLIT_TEST].len, T);

    // Held out: window k of a split is bytes [kT, kT + T] of its text, exactly.
    Batch b = batch_alloc(&info, 4);
    CHECK(!b.images && b.tokens && b.targets, "token batch buffers");
    for (int split = SPLIT_VAL; split <= SPLIT_TEST; split++) {
        const Buf *text = &held[split];
        const long n = split == SPLIT_VAL ? info.n_val : info.n_test;
        for (long start = 0; start < n + 4; start += 4) {
            int rows = dataset_eval_batch(d, (EvalSplit)split, &b, start);
            long left = n - start, want_rows = left < 0 ? 0 : left < 4 ? left : 4;
            CHECK(rows == want_rows, "split %d: rows at %ld: %d want %ld", split, start, rows, want_rows);
            for (int i = 0; i < b.B; i++)
                for (int t = 0; t < T; t++) {
                    int x = b.tokens[i * T + t], y = b.targets[i * T + t];
                    if (i < rows) {
                        size_t at = (size_t)(start + i) * T + t;
                        CHECK(x == (unsigned char)text->p[at] && y == (unsigned char)text->p[at + 1],
                              "split %d: window %ld position %d: %d->%d", split, start + i, t, x, y);
                    } else {
                        CHECK(x == 0 && y == -1, "padding row %d: %d %d", i, x, y);
                    }
                }
        }
    }
    CHECK(strchr(held[SPLIT_VAL].p, '@') && !strchr(held[SPLIT_VAL].p, '#') && strchr(held[SPLIT_TEST].p, '#') &&
              !strchr(held[SPLIT_TEST].p, '@'),
          "fortune 9 is not validation alone, or fortune 19 not test alone");

    // Training windows: T + 1 consecutive bytes of the training text; targets shifted
    // by one; starts reach the last window, which ends with the last byte of the text;
    // never a byte of fortune 9 or 19 (every start is drawn many times over).
    gsl_rng *rng = rng_seeded(3);
    int inside = 1, shifted = 1, last = 0, apart = 1, w[64];
    for (int k = 0; k < 1000; k++) {
        dataset_train_batch(d, &b, rng);
        for (int i = 0; i < b.B; i++) {
            for (int t = 0; t < T; t++) w[t] = b.tokens[i * T + t];
            w[T] = b.targets[i * T + T - 1];
            for (int t = 0; t + 1 < T; t++) shifted &= b.targets[i * T + t] == b.tokens[i * T + t + 1];
            for (int t = 0; t <= T; t++) apart &= w[t] != '@' && w[t] != '#';
            inside &= occurs_in(train.p, train.len, w, T + 1);
            last |= occurs_in(train.p + train.len - (T + 1), T + 1, w, T + 1);
        }
    }
    CHECK(last, "the last training window (start len-T-1) was never drawn in 4000 windows");
    CHECK(shifted, "training targets are not the inputs shifted by one");
    CHECK(inside, "a training window is not in the training text");
    CHECK(apart, "a training window holds a byte of the validation or the test fortune");

    gsl_rng_free(rng);
    batch_free(&b);
    dataset_free(d);
    free(alpha.p), free(beta.p), free(train.p), free(held[0].p), free(held[1].p);

    test_same_seed_same_batches(&c);
}

// The installed fortunes, counted by Python with the same rule.
static void test_charlm_installed_fortunes(void) {
    const char *py =
        "/usr/bin/python3 -c '\n"
        "import os, re\n"
        "d = \"/usr/share/games/fortunes\"\n"
        "n = tr = va = te = 0\n"
        "for f in sorted(os.listdir(d)):\n"
        "    p = os.path.join(d, f)\n"
        "    if f.startswith(\".\") or f.endswith(\".dat\") or os.path.islink(p) or not os.path.isfile(p) \\\n"
        "       or not os.path.exists(p + \".dat\"): continue\n"
        "    for x in re.split(rb\"(?m)^%(?:\\n|\\Z)\", open(p, \"rb\").read()):\n"
        "        if not x: continue\n"
        "        if n % 20 == 9: va += len(x) + 1\n"
        "        elif n % 20 == 19: te += len(x) + 1\n"
        "        else: tr += len(x) + 1\n"
        "        n += 1\n"
        "print(n, tr, va, te)'";
    FILE *p = popen(py, "r");
    long n = 0, tr = 0, va = 0, te = 0;
    int got = p ? fscanf(p, "%ld %ld %ld %ld", &n, &tr, &va, &te) : 0;
    if (p) pclose(p);
    CHECK(got == 4, "python3 did not count the fortunes");
    if (got != 4) return;

    TrialConfig c = config_for(TASK_CHARLM, "");
    Dataset *d = dataset_open(&c);
    DatasetInfo info = dataset_info(d);
    int T = c.seq_len;
    CHECK(info.n_train == tr / T, "n_train %ld, want %ld/%d", info.n_train, tr, T);
    CHECK(info.n_val == (va - 1) / T, "n_val %ld, want (%ld-1)/%d", info.n_val, va, T);
    CHECK(info.n_test == (te - 1) / T, "n_test %ld, want (%ld-1)/%d", info.n_test, te, T);
    printf("charlm: %ld fortunes; %ld training, %ld validation, %ld test bytes; T=%d: %ld/%ld/%ld windows\n", n, tr,
           va, te, T, info.n_train, info.n_val, info.n_test);
    dataset_free(d);
}

static void test_charlm_missing_dir(void) {
    TrialConfig c = config_for(TASK_CHARLM, "/nonexistent/fortunes");
    check_open_fails(&c, "/nonexistent/fortunes: No such file", NULL, "missing fortunes directory");
    c = config_for(TASK_CHARLM, tmpdir);  // exists, holds no databases
    check_open_fails(&c, tmpdir, "no fortune databases", "directory without fortunes");
}

// ---- recall

// One sequence's structure; returns 1 if it is a well-formed MQAR sequence: P pairs of
// distinct keys [0, K) and distinct values [K, V), then each key once as a query at an
// even position, each followed by any token; targets only at the queries, each the value
// paired with its key.
static int recall_ok(const int *x, const int *y, int P, int V) {
    int T = 4 * P, K = V / 2, n_targets = 0;
    for (int t = 0; t < T; t++) {
        const int is_key = t % 2 == 0, in_pairs = t < 2 * P;
        if (x[t] < 0 || x[t] >= V) return 0;
        if ((in_pairs || is_key) && (x[t] < (is_key ? 0 : K) || x[t] >= (is_key ? K : V))) return 0;
        if (y[t] != -1) {
            n_targets++;
            if (in_pairs || !is_key) return 0;  // only at query keys
        }
    }
    if (n_targets != P) return 0;
    for (int i = 0; i < P; i++) {
        int k = x[2 * i], v = x[2 * i + 1], asked = 0;
        for (int j = 0; j < i; j++)
            if (x[2 * j] == k || x[2 * j + 1] == v) return 0;  // keys distinct, values distinct
        for (int j = 0; j < P; j++) {
            if (x[2 * P + 2 * j] != k) continue;
            if (y[2 * P + 2 * j] != v) return 0;  // the answer is the value paired with the key
            asked++;
        }
        if (asked != 1) return 0;  // each key queried once
    }
    return 1;
}

static void test_recall(int P, int V) {
    TrialConfig c = config_for(TASK_RECALL, "");
    c.recall_pairs = P;
    c.recall_vocab = V;
    c.seed = 1;
    Dataset *d = dataset_open(&c);
    DatasetInfo info = dataset_info(d);
    int T = 4 * P;
    CHECK(info.seq_len == T && info.vocab == V && info.n_classes == V, "recall info %d %d %d", info.seq_len,
          info.vocab, info.n_classes);
    CHECK(info.n_train == 384000 && info.n_val == 2000 && info.n_test == 2000, "recall sizes %ld %ld %ld",
          info.n_train, info.n_val, info.n_test);

    Batch b = batch_alloc(&info, 64);
    gsl_rng *rng = rng_seeded(7);
    int ok = 1, shuffled = 0, key_seen[256] = {0}, value_seen[256] = {0};  // V <= 256 here
    for (int k = 0; k < 4; k++) {
        dataset_train_batch(d, &b, rng);
        for (int i = 0; i < b.B; i++) {
            ok &= recall_ok(b.tokens + i * T, b.targets + i * T, P, V);
            for (int j = 0; j < P; j++) shuffled |= b.tokens[i * T + 2 * P + 2 * j] != b.tokens[i * T + 2 * j];
            for (int t = 0; t < 2 * P; t += 2) key_seen[b.tokens[i * T + t]]++, value_seen[b.tokens[i * T + t + 1]]++;
        }
    }
    CHECK(ok, "P=%d V=%d: a training sequence is malformed", P, V);
    CHECK(shuffled, "P=%d V=%d: queries always come in the order of the pairs", P, V);
    int all_keys = 1, all_values = 1;
    for (int k = 0; k < V / 2; k++) all_keys &= key_seen[k] > 0, all_values &= value_seen[V / 2 + k] > 0;
    CHECK(all_keys && all_values, "P=%d V=%d: some keys or values never drawn in %d sequences", P, V, 4 * b.B);
    // No answer in the input: the token after a query is its answer only by chance (1/V)
    long answered = 0, queries = 0;
    for (int k = 0; k < 16; k++) {
        dataset_train_batch(d, &b, rng);
        for (int i = 0; i < b.B; i++)
            for (int j = 0; j < P; j++, queries++)
                answered += b.tokens[i * T + 2 * P + 2 * j + 1] == b.targets[i * T + 2 * P + 2 * j];
    }
    CHECK((double)answered / (double)queries < 3.0 / V, "P=%d V=%d: %ld of %ld queries have their answer next", P, V,
          answered, queries);

    c.seed = 2;
    Dataset *d2 = dataset_open(&c);

    // A training batch depends on the rng alone, not on what was drawn before.
    Batch e = batch_alloc(&info, 64), e2 = batch_alloc(&info, 64);
    gsl_rng *r1 = rng_seeded(11), *r2 = rng_seeded(11);
    dataset_train_batch(d, &e, r1);
    dataset_train_batch(d2, &e2, r2);
    CHECK(same_batch(&e, &e2, &info), "P=%d V=%d: training batches depend on earlier draws", P, V);
    gsl_rng_free(r1);
    gsl_rng_free(r2);

    // Validation and test: each well formed, padded past the end, the same for another
    // seed; the two differ from each other (a row equal at the same place is chance) and
    // from the training stream.
    Batch v = batch_alloc(&info, 64);
    long equal_rows = 0;
    for (int split = SPLIT_VAL; split <= SPLIT_TEST; split++) {
        int same = 1;
        ok = 1;
        for (long start = 0; start < 2000; start += e.B) {
            int rows = dataset_eval_batch(d, (EvalSplit)split, &e, start);
            CHECK(dataset_eval_batch(d2, (EvalSplit)split, &e2, start) == rows, "split %d: rows differ at %ld",
                  split, start);
            same &= same_batch(&e, &e2, &info);
            for (int i = 0; i < e.B; i++) {
                if (i < rows) {
                    ok &= recall_ok(e.tokens + i * T, e.targets + i * T, P, V);
                } else {
                    for (int t = 0; t < T; t++) ok &= e.tokens[i * T + t] == 0 && e.targets[i * T + t] == -1;
                }
            }
            if (start + e.B > 2000) CHECK(rows == 2000 - start, "split %d: last batch has %d rows", split, rows);
            if (split == SPLIT_TEST) {  // against validation, row by row
                dataset_eval_batch(d, SPLIT_VAL, &v, start);
                for (int i = 0; i < rows; i++)
                    equal_rows += !memcmp(e.tokens + i * T, v.tokens + i * T, (size_t)T * sizeof(int));
            }
        }
        CHECK(ok, "P=%d V=%d: a sequence of split %d is malformed", P, V, split);
        CHECK(same, "P=%d V=%d: split %d depends on the seed", P, V, split);
    }
    CHECK(equal_rows < 200, "P=%d V=%d: validation and test agree in %ld of 2000 sequences", P, V, equal_rows);
    dataset_eval_batch(d, SPLIT_VAL, &v, 0);
    dataset_eval_batch(d, SPLIT_TEST, &e, 0);
    CHECK(!same_batch(&b, &v, &info) && !same_batch(&b, &e, &info) && !same_batch(&v, &e, &info),
          "P=%d V=%d: training, validation and test batches coincide", P, V);
    batch_free(&v);

    gsl_rng_free(rng);
    batch_free(&b);
    batch_free(&e);
    batch_free(&e2);
    dataset_free(d);
    dataset_free(d2);
}

static void test_recall_bad_config(void) {
    TrialConfig c = config_for(TASK_RECALL, "");
    c.recall_vocab = 63;
    check_open_fails(&c, "recall_vocab", "even", "odd recall vocabulary");
    c.recall_vocab = 8;
    c.recall_pairs = 5;
    check_open_fails(&c, "recall_pairs", NULL, "more pairs than keys");
}

int main(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/attnsweep-test-data.XXXXXX");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    char fm[128];
    snprintf(fm, sizeof fm, "%s/fm", tmpdir);

    test_fashion_mnist_real_files();
    test_fashion_mnist_epochs_are_permutations();
    TrialConfig c = config_for(TASK_FASHION_MNIST, fm);
    test_same_seed_same_batches(&c);
    test_fashion_mnist_bad_files();
    test_charlm_split_rule();
    test_charlm_installed_fortunes();
    test_charlm_missing_dir();
    test_recall(8, 64);
    test_recall(4, 8);  // every key in every sequence
    c = config_for(TASK_RECALL, "");
    test_same_seed_same_batches(&c);
    test_recall_bad_config();

    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", tmpdir);
    return check_report("test_data");
}
