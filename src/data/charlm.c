// charlm.c: byte-level language modelling on the fortune databases (Debian package
// fortunes, about 2.8 MB of quotations).
//
// A database is a regular file with a "NAME.dat" index beside it (the .dat files
// and the NAME.u8 symlinks are not databases). Its fortunes are separated by lines
// holding a single "%". Fortune i, counted over all databases in sorted name order,
// goes to the validation text when i % 20 == 9, to the test text when i % 20 == 19, and
// to the training text otherwise (90 %), as its text followed by "\n".
#define _POSIX_C_SOURCE 200809L
#include "data/tasks.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/util.h"

#define FORTUNES_DIR "/usr/share/games/fortunes"

enum { SPLIT_EVERY = 20, VAL_AT = 9, TEST_AT = 19, VOCAB = 256, PATH_LEN = 4096 };

typedef struct {
    unsigned char *p;
    long len, cap;
} Text;

struct CharLM {
    Text train, val, test;
    int T;  // bytes per window (inputs; targets are the next T bytes)
};

static void text_append(Text *t, const void *src, long n) {
    if (t->len + n > t->cap) {
        t->cap = 2 * (t->len + n) + 4096;
        t->p = xrealloc(t->p, (size_t)t->cap);
    }
    memcpy(t->p + t->len, src, (size_t)n);
    t->len += n;
}

// Append a finished fortune to the text its global index says; empty ones (a "%"
// on the first line, two "%" lines in a row) are not fortunes and get no index.
static void add_fortune(CharLM *lm, Text *fortune, long *index) {
    if (fortune->len == 0) return;
    const long k = *index % SPLIT_EVERY;
    Text *dst = k == VAL_AT ? &lm->val : k == TEST_AT ? &lm->test : &lm->train;
    text_append(dst, fortune->p, fortune->len);
    text_append(dst, "\n", 1);
    fortune->len = 0;
    (*index)++;
}

static void split_database(CharLM *lm, const char *path, long *index) {
    FILE *f = xfopen(path, "r");
    Text fortune = {0};
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        if ((n == 1 && line[0] == '%') || (n == 2 && line[0] == '%' && line[1] == '\n'))
            add_fortune(lm, &fortune, index);
        else
            text_append(&fortune, line, n);
    }
    if (ferror(f)) die(EXIT_BADINPUT, "%s: read error: %s", path, strerror(errno));
    add_fortune(lm, &fortune, index);  // the last one needs no "%" after it
    free(line);
    free(fortune.p);
    fclose(f);
}

static int is_database(const char *dir, const char *name) {
    size_t len = strlen(name);
    if (name[0] == '.' || (len >= 4 && strcmp(name + len - 4, ".dat") == 0)) return 0;
    char path[PATH_LEN];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;  // skips NAME.u8 symlinks
    snprintf(path, sizeof path, "%s/%s.dat", dir, name);
    return stat(path, &st) == 0;
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

CharLM *charlm_open(const TrialConfig *c, DatasetInfo *info) {
    const char *dir = c->data_dir[0] ? c->data_dir : FORTUNES_DIR;
    int T = c->seq_len;
    if (T < 1) die(EXIT_BADINPUT, "charlm: seq_len must be at least 1, got %d", T);

    DIR *dp = opendir(dir);
    if (!dp) {
        if (errno == ENOENT)
            die(EXIT_BADINPUT, "%s: No such file or directory (install the Debian package "
                "fortunes or pass --data-dir)", dir);
        die(EXIT_BADINPUT, "%s: %s", dir, strerror(errno));
    }
    char **names = NULL;
    int n_names = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        if (!is_database(dir, e->d_name)) continue;
        names = xrealloc(names, (size_t)(n_names + 1) * sizeof *names);
        names[n_names++] = xstrdup(e->d_name);
    }
    closedir(dp);
    if (n_names == 0)
        die(EXIT_BADINPUT, "%s: no fortune databases (text files with a NAME.dat index beside them)", dir);
    qsort(names, (size_t)n_names, sizeof *names, compare_names);

    CharLM *lm = xcalloc(1, sizeof *lm);
    lm->T = T;
    long index = 0;
    for (int i = 0; i < n_names; i++) {
        char path[PATH_LEN];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        split_database(lm, path, &index);
        free(names[i]);
    }
    free(names);
    if (lm->train.len < T + 1 || lm->val.len < T + 1 || lm->test.len < T + 1)
        die(EXIT_BADINPUT, "%s: too little text for seq_len %d (%ld training, %ld validation and %ld test "
            "bytes in %ld fortunes; each needs at least %d)", dir, T, lm->train.len, lm->val.len, lm->test.len,
            index, T + 1);

    info->seq_len = T;
    info->vocab = VOCAB;
    info->n_classes = VOCAB;
    info->n_train = lm->train.len / T;
    info->n_val = (lm->val.len - 1) / T;
    info->n_test = (lm->test.len - 1) / T;
    return lm;
}

void charlm_free(CharLM *lm) {
    if (!lm) return;
    free(lm->train.p);
    free(lm->val.p);
    free(lm->test.p);
    free(lm);
}

// Row `row` := inputs w[0..T), targets w[1..T] (the next byte at every position).
static void put_window(const unsigned char *w, int T, Batch *b, int row) {
    int *x = b->tokens + (size_t)row * T, *y = b->targets + (size_t)row * T;
    for (int t = 0; t < T; t++) {
        x[t] = w[t];
        y[t] = w[t + 1];
    }
}

void charlm_train_batch(const CharLM *lm, Batch *b, gsl_rng *rng) {
    for (int row = 0; row < b->B; row++) {
        // start uniform in [0, len - T - 1], so the window's T + 1 bytes fit
        unsigned long s = gsl_rng_uniform_int(rng, (unsigned long)(lm->train.len - lm->T));
        put_window(lm->train.p + s, lm->T, b, row);
    }
}

void charlm_eval_rows(const CharLM *lm, EvalSplit split, Batch *b, long start, int rows) {
    const Text *t = split == SPLIT_VAL ? &lm->val : &lm->test;
    for (int row = 0; row < rows; row++) put_window(t->p + (start + row) * lm->T, lm->T, b, row);
}
