// space_yaml.c: a sweep file as YAML, for the files that read it (space_read.h): the guard
// before libyaml, the node tree with its positions, the one-line messages, and the readers
// of a node (a section's keys, a number, one of a list of words).
//
// Errors are one line "FILE:LINE:COL: message" (1-based), control characters escaped.
#define _POSIX_C_SOURCE 200809L
#include "space/space_read.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"

enum { MAX_FLOW_DEPTH = 64 };  // nested [ ] and { }: libyaml's time grows with depth squared

const char *const space_bool_names[] = {"false", "true", NULL};

int space_fail(Loader *L, Mark m, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    int n = snprintf(L->err, L->errlen, "%s:%d:%d: ", L->path, m.line, m.col);
    // One line whatever the file holds: control characters (a multi-line scalar) escaped.
    for (const char *c = msg; n >= 0 && (size_t)n + 5 < L->errlen && *c; c++) {
        unsigned char u = (unsigned char)*c;
        if (u >= 0x20 && u != 0x7f)
            L->err[n++] = *c;
        else
            n += snprintf(L->err + n, 5, u == '\n' ? "\\n" : u == '\t' ? "\\t" : "\\x%02x", u);
    }
    if (n >= 0 && (size_t)n < L->errlen) L->err[n] = 0;
    return -1;
}

// A line validate prints about the file (a W&B key ignored, a mapping to attnsweep's).
void space_note(Loader *L, const char *fmt, ...) {
    SweepSpec *s = L->s;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    s->notes = xrealloc(s->notes, (size_t)(s->n_notes + 1) * sizeof *s->notes);
    s->notes[s->n_notes++] = xstrdup(msg);
}

Mark space_mark(const yaml_node_t *n) {
    return (Mark){(int)n->start_mark.line + 1, (int)n->start_mark.column + 1};
}

yaml_node_t *space_node(Loader *L, int index) { return yaml_document_get_node(&L->doc, index); }

// A scalar's text; NULL for lists, mappings and texts holding a NUL byte.
const char *space_text(const yaml_node_t *n) {
    if (n->type != YAML_SCALAR_NODE) return NULL;
    const char *t = (const char *)n->data.scalar.value;
    return strlen(t) == n->data.scalar.length ? t : NULL;
}

// How a node reads in a message: 'text', nothing, a list, a mapping.
const char *space_describe(const yaml_node_t *n, char *buf, size_t len) {
    if (n->type == YAML_SEQUENCE_NODE) return "a list";
    if (n->type == YAML_MAPPING_NODE) return "a mapping";
    const char *t = space_text(n);
    if (!t) return "a text with a NUL byte";
    if (!t[0] && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) return "nothing";
    if (strlen(t) > 40)
        snprintf(buf, len, "'%.37s...'", t);
    else
        snprintf(buf, len, "'%s'", t);
    return buf;
}

static void join_names(const char *const *names, int n, char *out, size_t len) {
    out[0] = 0;
    for (int i = 0; i < n && names[i]; i++) {
        size_t used = strlen(out);
        snprintf(out + used, len - used, "%s%s", i ? ", " : "", names[i]);
    }
}

int space_name_count(const char *const *names) {
    int n = 0;
    while (names[n]) n++;
    return n;
}

int space_find_name(const char *name, const char *const *names, int n) {
    for (int i = 0; i < n; i++)
        if (!strcmp(name, names[i])) return i;
    return -1;
}

// A mapping key: it must be a scalar.
int space_key_text(Loader *L, const yaml_node_t *k, const char **out) {
    char b[64];
    if (!(*out = space_text(k)))
        return space_fail(L, space_mark(k), "keys must be names, got %s", space_describe(k, b, sizeof b));
    return 0;
}

// Reads the mapping `map` whose keys come from keys[0..n): val[k] and key_at[k] get key k's
// value and position (val[k] NULL when absent). what names it in messages (NULL: the top).
int space_read_section(Loader *L, yaml_node_t *map, const char *what, const char *const *keys, int n, yaml_node_t **val,
                       Mark *key_at) {
    char allowed[256], b[64];
    join_names(keys, n, allowed, sizeof allowed);
    if (map->type != YAML_MAPPING_NODE)
        return space_fail(L, space_mark(map), "%s must be a mapping (%s), got %s", what ? what : "the file", allowed,
                          space_describe(map, b, sizeof b));
    for (int k = 0; k < n; k++) val[k] = NULL;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        yaml_node_t *kn = space_node(L, pr->key);
        const char *name;
        if (space_key_text(L, kn, &name)) return -1;
        int k = space_find_name(name, keys, n);
        if (k < 0) {
            char in[128] = "";
            if (what) snprintf(in, sizeof in, " in %s", what);
            const char *hint = closest_name(name, keys, n);
            if (hint) return space_fail(L, space_mark(kn), "unknown key '%s'%s (did you mean '%s'?)", name, in, hint);
            return space_fail(L, space_mark(kn), "unknown key '%s'%s (allowed: %s)", name, in, allowed);
        }
        if (val[k])
            return space_fail(L, space_mark(kn), "duplicate key '%s' (first at %d:%d)", name, key_at[k].line,
                              key_at[k].col);
        val[k] = space_node(L, pr->value);
        key_at[k] = space_mark(kn);
    }
    return 0;
}

// A number from a scalar: whole (an integer) or real, in [lo, hi] (lo excluded if lo_open).
int space_read_number(Loader *L, yaml_node_t *n, const char *what, int whole, double lo, double hi, int lo_open,
                      double *out) {
    char b[64];
    const char *t = space_text(n);
    char *end;
    errno = 0;
    double v = 0;
    if (t && whole) {
        long long w = strtoll(t, &end, 10);
        v = (double)w;
        if (errno == ERANGE) v = w < 0 ? -HUGE_VAL : HUGE_VAL;
    } else if (t) {
        v = strtod(t, &end);
    }
    if (!t || !t[0] || *end != 0 || (!whole && (errno != 0 || !isfinite(v))))
        return space_fail(L, space_mark(n), "%s must be %s, got %s", what, whole ? "an integer" : "a number",
                          space_describe(n, b, sizeof b));
    if (v < lo || v > hi || (lo_open && v == lo)) {
        if (whole) return space_fail(L, space_mark(n), "%s must be in [%.0f, %.0f], got %s", what, lo, hi, t);
        return space_fail(L, space_mark(n), "%s must be in %c%g, %g], got %g", what, lo_open ? '(' : '[', lo, hi, v);
    }
    *out = v;
    return 0;
}

int space_read_int(Loader *L, yaml_node_t *n, const char *what, int lo, int hi, int *out) {
    double v = 0;  // set on 0; gcc cannot see that space_fail (another file) returns -1
    if (space_read_number(L, n, what, 1, lo, hi, 0, &v)) return -1;
    *out = (int)v;
    return 0;
}

// One of names (NULL-terminated).
int space_read_choice(Loader *L, yaml_node_t *n, const char *what, const char *const *names, int *out) {
    char allowed[256], b[64];
    int count = space_name_count(names);
    join_names(names, count, allowed, sizeof allowed);
    const char *t = space_text(n);
    if (t) {
        int k = space_find_name(t, names, count);
        if (k >= 0) {
            *out = k;
            return 0;
        }
        const char *hint = closest_name(t, names, count);
        if (hint) return space_fail(L, space_mark(n), "unknown %s '%s' (did you mean '%s'?)", what, t, hint);
    }
    return space_fail(L, space_mark(n), "unknown %s %s (allowed: %s)", what, space_describe(n, b, sizeof b), allowed);
}

// The value of key in mapping map, or NULL.
yaml_node_t *space_map_get(Loader *L, yaml_node_t *map, const char *key) {
    if (map->type != YAML_MAPPING_NODE) return NULL;
    for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
        const char *k = space_text(space_node(L, pr->key));
        if (k && !strcmp(k, key)) return space_node(L, pr->value);
    }
    return NULL;
}

// ---- libyaml

// Line and column (1-based, in characters) of byte offset `at`.
static Mark mark_at_offset(const char *text, size_t len, size_t at) {
    Mark m = {1, 1};
    for (size_t i = 0; i < at && i < len; i++) {
        if (text[i] == '\n')
            m.line++, m.col = 1;
        else if (((unsigned char)text[i] & 0xC0) != 0x80)
            m.col++;
    }
    return m;
}

// The byte at a 1-based line and character column, or 0.
static char char_at(const char *text, size_t len, Mark m) {
    size_t i = 0;
    for (int line = 1; line < m.line && i < len; i++)
        if (text[i] == '\n') line++;
    for (int col = 1; i < len && text[i] != '\n'; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80 && col++ == m.col) return text[i];
    return 0;
}

static int syntax_error(Loader *L, const yaml_parser_t *P) {
    if (P->error == YAML_MEMORY_ERROR) return space_fail(L, (Mark){1, 1}, "out of memory while reading the YAML");
    if (P->error == YAML_READER_ERROR) {
        Mark m = mark_at_offset(L->text, L->len, P->problem_offset);
        if (P->problem_value >= 0)
            return space_fail(L, m, "YAML syntax error: %s (byte 0x%02x)", P->problem,
                              (unsigned)P->problem_value & 0xFF);
        return space_fail(L, m, "YAML syntax error: %s", P->problem);
    }
    Mark m = {(int)P->problem_mark.line + 1, (int)P->problem_mark.column + 1};
    const char *problem = P->problem ? P->problem : "malformed YAML";
    if (char_at(L->text, L->len, m) == '\t')
        return space_fail(L, m, "YAML syntax error: %s (a tab: indent with spaces)", problem);
    if (P->context)
        return space_fail(L, m, "YAML syntax error: %s (%s at %d:%d)", problem, P->context,
                          (int)P->context_mark.line + 1, (int)P->context_mark.column + 1);
    return space_fail(L, m, "YAML syntax error: %s", problem);
}

int space_yaml_guard(const char *text, size_t len, int *line, int *col, char *why, size_t whylen) {
    *line = *col = 1;
    if (len > MAX_FILE_BYTES) {
        snprintf(why, whylen, "larger than %d bytes: not a sweep file", MAX_FILE_BYTES);
        return -1;
    }
    int depth = 0, comment = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c == '\n') {
            ++*line, *col = 1, comment = 0;
            continue;
        }
        if (c == '#' && (i == 0 || strchr(" \t\n", text[i - 1]))) comment = 1;
        if (!comment && (c == '[' || c == '{') && ++depth > MAX_FLOW_DEPTH) {
            snprintf(why, whylen, "lists and mappings nested more than %d deep", MAX_FLOW_DEPTH);
            return -1;
        }
        if (!comment && (c == ']' || c == '}') && depth > 0) depth--;
        if (((unsigned char)c & 0xC0) != 0x80) ++*col;
    }
    return 0;
}

static int check_nesting(Loader *L) {
    Mark m;
    char why[128];
    return space_yaml_guard(L->text, L->len, &m.line, &m.col, why, sizeof why) ? space_fail(L, m, "%s", why) : 0;
}

static int load_yaml(Loader *L) {
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) return space_fail(L, (Mark){1, 1}, "out of memory while reading the YAML");
    yaml_parser_set_input_string(&parser, (const unsigned char *)L->text, L->len);
    int rc = 0;
    if (!yaml_parser_load(&parser, &L->doc)) {
        rc = syntax_error(L, &parser);
    } else {
        L->have_doc = 1;
        yaml_document_t extra;
        if (!yaml_parser_load(&parser, &extra)) {
            rc = syntax_error(L, &parser);
        } else {
            yaml_node_t *r = yaml_document_get_root_node(&extra);
            if (r) rc = space_fail(L, space_mark(r), "a second YAML document: a sweep file holds one");
            yaml_document_delete(&extra);
        }
    }
    yaml_parser_delete(&parser);
    return rc;
}

int space_load_yaml(Loader *L) { return check_nesting(L) || load_yaml(L) ? -1 : 0; }
