// space_values.c: a parameter's value in a sweep file, always through config_set (the rules
// the command line uses): the text config_set takes for a node (a scalar, an offset
// schedule's groups, or W&B's Python objects as JSON for a program), and where the file
// sets each parameter (a second place is an error).
#define _POSIX_C_SOURCE 200809L
#include "space/space_read.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "common/util.h"
#include "params/config_json.h"
#include "space/space_impl.h"

const ParamSpec *space_param_named(const char *name) {
    const ParamSpec *p = config_find(name);
    if (!p) {
        fprintf(stderr, "attnsweep: internal error: no parameter %s\n", name);
        abort();
    }
    return p;
}

int space_param_index(const ParamSpec *p) { return (int)(p - config_params); }

// The scalars of sequence n joined by sep... into buf: a group of the offset schedule.
static int join_scalars(Loader *L, const ParamSpec *p, yaml_node_t *n, const char *sep, char *buf, size_t len) {
    char b[64];
    for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
        yaml_node_t *e = space_node(L, *it);
        const char *et = space_text(e);
        if (!et)
            return space_fail(L, space_mark(e), "%s lists integers, got %s", p->name, space_describe(e, b, sizeof b));
        size_t used = strlen(buf), add = strlen(et);
        if (used + add + 2 > len) return space_fail(L, space_mark(n), "%s: value too long", p->name);
        if (used) buf[used++] = *sep;
        sep = ",";
        memcpy(buf + used, et, add + 1);
    }
    return 0;
}

ScalarKind space_scalar_kind(const yaml_node_t *n) {
    const char *t = space_text(n);
    if (!t || !t[0] || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return SCALAR_TEXT;
    if (strspn(t + (t[0] == '-' || t[0] == '+'), "0123456789") == strlen(t) - (t[0] == '-' || t[0] == '+') &&
        strlen(t) > (size_t)(t[0] == '-' || t[0] == '+'))
        return SCALAR_INT;
    char *end;
    errno = 0;
    const double v = strtod(t, &end);
    return *end == 0 && errno == 0 && isfinite(v) && !strpbrk(t, "xXnNiIpP") ? SCALAR_REAL : SCALAR_TEXT;
}

// A plain scalar W&B's YAML reader (PyYAML, YAML 1.1) makes a boolean ("true") or None
// ("null"), or NULL.
static const char *yaml11_word(const yaml_node_t *n) {
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", NULL};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", NULL};
    static const char *const none[] = {"null", "Null", "NULL", "~", "", NULL};
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE) return NULL;
    const char *t = space_text(n);
    return space_find_name(t, yes, space_name_count(yes)) >= 0     ? "true"
           : space_find_name(t, no, space_name_count(no)) >= 0     ? "false"
           : space_find_name(t, none, space_name_count(none)) >= 0 ? "null"
                                                                   : NULL;
}

// Whether a value reaches the program as W&B's Python object rather than a number or a
// text: a boolean, None, a list or a mapping.
int space_structured(const yaml_node_t *n) { return n->type != YAML_SCALAR_NODE || yaml11_word(n); }

static void put_text(Bytes *b, const char *t) { memcpy(bytes_extend(b, strlen(t)), t, strlen(t)); }

// n as JSON (json.dumps' spacing, reals as Python writes them) at the end of b.
static void put_json(Loader *L, yaml_node_t *n, Bytes *b) {
    if (n->type == YAML_SEQUENCE_NODE || n->type == YAML_MAPPING_NODE) {
        const int seq = n->type == YAML_SEQUENCE_NODE;
        put_text(b, seq ? "[" : "{");
        if (seq)
            for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
                if (it > n->data.sequence.items.start) put_text(b, ", ");
                put_json(L, space_node(L, *it), b);
            }
        else
            for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
                if (pr > n->data.mapping.pairs.start) put_text(b, ", ");
                put_json(L, space_node(L, pr->key), b);
                put_text(b, ": ");
                put_json(L, space_node(L, pr->value), b);
            }
        put_text(b, seq ? "]" : "}");
        return;
    }
    const char *word = yaml11_word(n);
    const ScalarKind kind = space_scalar_kind(n);
    char num[64];
    if (word) {
        put_text(b, word);
    } else if (kind == SCALAR_INT) {
        snprintf(num, sizeof num, "%lld", strtoll(space_text(n), NULL, 10));
        put_text(b, num);
    } else if (kind == SCALAR_REAL) {
        program_real_text(strtod(space_text(n), NULL), num, sizeof num);
        put_text(b, num);
    } else {
        cJSON *str = json_must(cJSON_CreateString(space_text(n) ? space_text(n) : ""));
        char *t = cJSON_PrintUnformatted(str);
        if (!t) die(EXIT_RUNTIME, "out of memory printing JSON");
        put_text(b, t);
        cJSON_free(t);
        cJSON_Delete(str);
    }
}

// The value of a parameter whose values are W&B's Python objects, as JSON text.
static int json_text(Loader *L, const ParamSpec *p, yaml_node_t *n, char *buf, size_t len) {
    Bytes b = {0};
    put_json(L, n, &b);
    const size_t used = b.len;
    if (used < len) memcpy(buf, b.data, used), buf[used] = 0;
    bytes_free(&b);
    if (used >= len) return space_fail(L, space_mark(n), "%s: value too long (%zu characters as JSON)", p->name, used);
    return 0;
}

// The text config_set takes for p: a scalar, or for the offset schedule (grassmann_offsets)
// also a list of scalars, joined with commas ([1, 2, 4]: one group for every layer), or a
// list of such lists joined with ';' ([[1, 2], [4, 8]]: one group a layer).
static int value_text(Loader *L, const ParamSpec *p, yaml_node_t *n, char *buf, size_t len) {
    char b[64];
    const char *t = space_text(n);
    if (p->program && L->s->program.form[p - L->s->program_params] & PROGRAM_FORM_JSON)
        return json_text(L, p, n, buf, len);
    if (t) {
        if (strlen(t) >= len)
            return space_fail(L, space_mark(n), "%s: value too long (%zu characters)", p->name, strlen(t));
        memcpy(buf, t, strlen(t) + 1);
        return 0;
    }
    if (p->type != PT_INTLIST || n->type != YAML_SEQUENCE_NODE)
        return space_fail(L, space_mark(n), "%s takes a single value here, got %s", p->name,
                          space_describe(n, b, sizeof b));
    buf[0] = 0;
    yaml_node_item_t *first = n->data.sequence.items.start;
    if (first == n->data.sequence.items.top || space_node(L, *first)->type != YAML_SEQUENCE_NODE)
        return join_scalars(L, p, n, ",", buf, len);
    for (yaml_node_item_t *it = first; it < n->data.sequence.items.top; it++) {
        yaml_node_t *g = space_node(L, *it);
        if (g->type != YAML_SEQUENCE_NODE)
            return space_fail(L, space_mark(g), "%s lists groups of integers, got %s", p->name,
                              space_describe(g, b, sizeof b));
        if (g->data.sequence.items.start == g->data.sequence.items.top)
            return space_fail(L, space_mark(g), "%s needs at least one offset in every layer's group", p->name);
        if (join_scalars(L, p, g, it == first ? "," : ";", buf, len)) return -1;
    }
    return 0;
}

// Parse n into c's field for p, with config_set's rules and message; text (TEXT_MAX
// bytes, or NULL) gets the value as written.
int space_set_value(Loader *L, TrialConfig *c, const ParamSpec *p, yaml_node_t *n, char *text) {
    char buf[TEXT_MAX], msg[TEXT_MAX];
    if (!text) text = buf;
    if (value_text(L, p, n, text, TEXT_MAX)) return -1;
    if (config_set(c, p, text, msg, sizeof msg)) return space_fail(L, space_mark(n), "%s", msg);
    return 0;
}

// Record where the file sets p; a second place is an error.
int space_claim(Loader *L, const ParamSpec *p, Mark m, const char *where) {
    if (p->program) return 0;  // set under parameters only, where a duplicate key is caught
    int i = space_param_index(p);
    if (L->set_at[i].line)
        return space_fail(L, m, "%s is set twice (also in %s at %d:%d)", p->name, L->set_in[i], L->set_at[i].line,
                          L->set_at[i].col);
    L->set_at[i] = m;
    L->set_in[i] = where;
    return 0;
}
