// table.c: building the report's tables and printing them as text, CSV and JSON.
#include "report/table.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { CELL_CHARS = 128 };  // a formatted number (texts are printed as they are)

Table *table_new(const char *key, const char *title) {
    Table *t = xcalloc(1, sizeof *t);
    t->key = xstrdup(key);
    t->title = xstrdup(title);
    return t;
}

void table_free(Table *t) {
    if (!t) return;
    for (int i = 0; i < t->n_rows * t->n_cols; i++) free(t->cells[i].text), free(t->cells[i].printed);
    for (int c = 0; c < t->n_cols; c++) free(t->cols[c].key), free(t->cols[c].head);
    free(t->cells);
    free(t->cols);
    free(t->key);
    free(t->title);
    free(t->note);
    free(t);
}

static char *vformat(const char *fmt, va_list ap) {
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = xmalloc((size_t)n + 1);
    vsnprintf(s, (size_t)n + 1, fmt, again);
    va_end(again);
    return s;
}

void table_note(Table *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char *line = vformat(fmt, ap);
    va_end(ap);
    if (t->note) {
        const size_t n = strlen(t->note);
        t->note = xrealloc(t->note, n + strlen(line) + 2);
        sprintf(t->note + n, "\n%s", line);
        free(line);
    } else {
        t->note = line;
    }
}

void table_column(Table *t, const char *key, const char *head, ColumnKind kind, const char *format) {
    if (t->n_rows) die(EXIT_RUNTIME, "internal error: column %s added to table %s after its rows", key, t->key);
    if ((kind == COL_REAL || kind == COL_MEAN_SD) && !format)
        die(EXIT_RUNTIME, "internal error: real column %s of table %s has no format", key, t->key);
    t->cols = xrealloc(t->cols, (size_t)(t->n_cols + 1) * sizeof *t->cols);
    t->cols[t->n_cols++] = (Column){xstrdup(key), xstrdup(head), kind, format};
}

// Every row has all its cells before the next row starts and before the table is printed.
static void check_complete(const Table *t) {
    if (t->n_rows && t->filled != t->n_cols)
        die(EXIT_RUNTIME, "internal error: the last row of table %s has %d of %d cells", t->key, t->filled, t->n_cols);
}

void table_row(Table *t) {
    check_complete(t);
    if (t->n_rows == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 16;
        t->cells = xrealloc(t->cells, (size_t)t->cap * (size_t)t->n_cols * sizeof *t->cells);
    }
    memset(&t->cells[t->n_rows * t->n_cols], 0, (size_t)t->n_cols * sizeof *t->cells);
    t->n_rows++;
    t->filled = 0;
}

// The next cell of the current row, which must be of a column of one of the kinds allowed.
static Cell *next_cell(Table *t, ColumnKind a, ColumnKind b) {
    if (!t->n_rows || t->filled == t->n_cols)
        die(EXIT_RUNTIME, "internal error: too many cells in a row of table %s", t->key);
    const Column *col = &t->cols[t->filled];
    if (col->kind != a && col->kind != b)
        die(EXIT_RUNTIME, "internal error: wrong kind of value for column %s of table %s", col->key, t->key);
    return &t->cells[(t->n_rows - 1) * t->n_cols + t->filled++];
}

void table_text(Table *t, const char *fmt, ...) {
    Cell *c = next_cell(t, COL_TEXT, COL_TEXT);
    va_list ap;
    va_start(ap, fmt);
    c->text = vformat(fmt, ap);
    va_end(ap);
    c->printed = text_escaped(c->text);
}

void table_empty(Table *t) {
    if (!t->n_rows || t->filled == t->n_cols)
        die(EXIT_RUNTIME, "internal error: too many cells in a row of table %s", t->key);
    Cell *c = &t->cells[(t->n_rows - 1) * t->n_cols + t->filled++];
    c->value = c->sd = NAN;
}

void table_number(Table *t, double v) { next_cell(t, COL_INT, COL_REAL)->value = v; }

void table_mean_sd(Table *t, double mean, double sd) {
    Cell *c = next_cell(t, COL_MEAN_SD, COL_MEAN_SD);
    c->value = mean, c->sd = sd;
}

static const Cell *cell(const Table *t, int r, int c) { return &t->cells[r * t->n_cols + c]; }


// ---------------------------------------------------------------- text

// Characters on screen of UTF-8 text (every character the report prints is one column wide).
static int display_width(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xC0) != 0x80;
    return n;
}

static const char *text_cell(const Table *t, int r, int c, char *buf) {
    const Cell *x = cell(t, r, c);
    const Column *col = &t->cols[c];
    switch (col->kind) {
    case COL_TEXT: return x->text ? x->printed : "–";
    case COL_INT:
        if (isnan(x->value)) return "–";
        snprintf(buf, CELL_CHARS, "%.0f", x->value);
        return buf;
    case COL_REAL:
        if (isnan(x->value)) return "–";
        snprintf(buf, CELL_CHARS, col->format, x->value);
        return buf;
    case COL_MEAN_SD:
        if (isnan(x->value)) return "–";
        // Each part after the last that fit is left out: a value of a file's (1e300 with
        // "%.4f") may fill the cell alone.
        int n = snprintf(buf, CELL_CHARS, col->format, x->value);
        if (n >= 0 && n < CELL_CHARS) n += snprintf(buf + n, (size_t)(CELL_CHARS - n), isnan(x->sd) ? " ± –" : " ± ");
        if (n >= 0 && n < CELL_CHARS && !isnan(x->sd)) snprintf(buf + n, (size_t)(CELL_CHARS - n), col->format, x->sd);
        return buf;
    }
    return "";
}

static void pad(FILE *f, int n) {
    for (; n > 0; n--) fputc(' ', f);
}

// Numbers right-aligned, text left-aligned, two spaces between columns.
static void print_cell(FILE *f, const char *s, int width, int right, int last) {
    int fill = width - display_width(s);
    if (right) pad(f, fill);
    fputs(s, f);
    if (!right && !last) pad(f, fill);
    if (!last) fputs("  ", f);
}

void table_print_text(const Table *t, FILE *f) {
    check_complete(t);
    fprintf(f, "%s\n", t->title);
    if (t->note) fprintf(f, "%s\n", t->note);
    if (!t->n_rows) {
        fprintf(f, "  (none)\n");
        return;
    }
    int *width = xcalloc((size_t)t->n_cols, sizeof *width);
    char buf[CELL_CHARS];
    for (int c = 0; c < t->n_cols; c++) {
        width[c] = display_width(t->cols[c].head);
        for (int r = 0; r < t->n_rows; r++) {
            int w = display_width(text_cell(t, r, c, buf));
            if (w > width[c]) width[c] = w;
        }
    }
    for (int r = -1; r < t->n_rows; r++) {
        fputs("  ", f);
        for (int c = 0; c < t->n_cols; c++) {
            const int right = t->cols[c].kind != COL_TEXT, last = c == t->n_cols - 1;
            print_cell(f, r < 0 ? t->cols[c].head : text_cell(t, r, c, buf), width[c], right, last);
        }
        fputc('\n', f);
    }
    free(width);
}

// ---------------------------------------------------------------- CSV (RFC 4180)

static void csv_text(FILE *f, const char *s) {
    if (!s) return;
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void csv_number(FILE *f, double v) {
    if (!isnan(v)) fprintf(f, "%.10g", v);
}

void table_print_csv(const Table *t, FILE *f) {
    check_complete(t);
    fprintf(f, "# %s\n", t->key);
    for (int c = 0; c < t->n_cols; c++) {
        const Column *col = &t->cols[c];
        if (col->kind == COL_MEAN_SD)
            fprintf(f, "%s%s_mean,%s_sd", c ? "," : "", col->key, col->key);
        else
            fprintf(f, "%s%s", c ? "," : "", col->key);
    }
    fputc('\n', f);
    for (int r = 0; r < t->n_rows; r++) {
        for (int c = 0; c < t->n_cols; c++) {
            const Cell *x = cell(t, r, c);
            if (c) fputc(',', f);
            switch (t->cols[c].kind) {
            case COL_TEXT: csv_text(f, x->printed); break;
            case COL_INT:
            case COL_REAL: csv_number(f, x->value); break;
            case COL_MEAN_SD:
                csv_number(f, x->value);
                fputc(',', f);
                csv_number(f, x->sd);
                break;
            }
        }
        fputc('\n', f);
    }
}

// ---------------------------------------------------------------- JSON

static cJSON *json_number(double v) { return isnan(v) ? cJSON_CreateNull() : cJSON_CreateNumber(v); }

static cJSON *json_row(const Table *t, int r) {
    cJSON *o = cJSON_CreateObject();
    for (int c = 0; c < t->n_cols; c++) {
        const Cell *x = cell(t, r, c);
        cJSON *v;
        switch (t->cols[c].kind) {
        case COL_TEXT: v = x->text ? cJSON_CreateString(x->text) : cJSON_CreateNull(); break;
        case COL_MEAN_SD:
            v = cJSON_CreateObject();
            cJSON_AddItemToObject(v, "mean", json_number(x->value));
            cJSON_AddItemToObject(v, "sd", json_number(x->sd));
            break;
        default: v = json_number(x->value); break;
        }
        cJSON_AddItemToObject(o, t->cols[c].key, v);
    }
    return o;
}

// Print the JSON text of a tree and free both.
static void put_tree(cJSON *tree, FILE *f, JsonPut put) {
    char *text = tree ? cJSON_PrintUnformatted(tree) : NULL;
    if (!text) die(EXIT_RUNTIME, "out of memory printing JSON");
    put(f, text, strlen(text));
    cJSON_free(text);
    cJSON_Delete(tree);
}

// ,"name": (no comma for an object's first member)
static void put_key(const char *name, size_t len, int first, FILE *f, JsonPut put) {
    char *copy = xmalloc(len + 1);
    memcpy(copy, name, len), copy[len] = 0;
    if (!first) put(f, ",", 1);
    put_tree(cJSON_CreateString(copy), f, put);
    put(f, ":", 1);
    free(copy);
}

// The length of the parent path of a key ("verdict" of "verdict.tau"), 0 for none.
static size_t parent_len(const char *key) {
    const char *dot = strrchr(key, '.');
    return dot ? (size_t)(dot - key) : 0;
}

// The objects of the parent path key[0..len), one per dot-separated component, that a
// parent path shares with another (the other's key at least as long): how many.
static int shared_objects(const char *key, size_t len, const char *other, size_t other_len) {
    int n = 0;
    for (size_t i = 0; len && other_len; i++) {
        const int end = i == len, other_end = i == other_len;
        if (end || other_end) return n + ((end || key[i] == '.') && (other_end || other[i] == '.'));
        if (key[i] != other[i]) return n;
        n += key[i] == '.';
    }
    return n;
}

static int objects_in(size_t len, const char *key) {  // the components of key[0..len)
    int n = len > 0;
    for (size_t i = 0; i < len; i++) n += key[i] == '.';
    return n;
}

void table_print_json_members(const Table *const *t, int n, int first, FILE *f, JsonPut put) {
    int depth = 0;  // the objects open: the previous table's parent path
    for (int i = 0; i < n; i++) {
        check_complete(t[i]);
        const char *key = t[i]->key;
        const size_t len = parent_len(key);
        const int keep = i ? shared_objects(key, len, t[i - 1]->key, parent_len(t[i - 1]->key)) : 0;
        for (int j = 0; j + 1 < i && len; j++)  // a parent closed before would be merged into by cJSON
            if (shared_objects(key, len, t[j]->key, parent_len(t[j]->key)) > keep)
                die(EXIT_RUNTIME, "internal error: table %s is not beside the other tables of its prefix", key);
        for (; depth > keep; depth--) put(f, "}", 1);
        for (; depth < objects_in(len, key); depth++) {  // open the new components
            const char *from = key;
            for (int d = 0; d < depth; d++) from = strchr(from, '.') + 1;
            const char *to = memchr(from, '.', len - (size_t)(from - key));
            put_key(from, to ? (size_t)(to - from) : len - (size_t)(from - key), first, f, put);
            put(f, "{", 1), first = 1;
        }
        const char *name = len ? key + len + 1 : key;
        put_key(name, strlen(name), first, f, put);
        first = 0;
        if (t[i]->single) {
            if (t[i]->n_rows != 1) die(EXIT_RUNTIME, "internal error: table %s has %d rows, not one", key, t[i]->n_rows);
            put_tree(json_row(t[i], 0), f, put);
            continue;
        }
        put(f, "[", 1);
        for (int r = 0; r < t[i]->n_rows; r++) {
            if (r) put(f, ",", 1);
            put_tree(json_row(t[i], r), f, put);
        }
        put(f, "]", 1);
    }
    for (; depth > 0; depth--) put(f, "}", 1);
}

void table_put(FILE *f, const char *text, size_t len) { fwrite(text, 1, len, f); }
