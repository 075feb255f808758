// program.c: a researcher's program as a sweep describes it (external.h ProgramSpec: its
// bytes for the workers) and the command a trial runs it with, W&B's macros expanded.
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "params/config_json.h"
#include "trial/external.h"

// ---------------------------------------------------------------- the spec

void program_spec_free(ProgramSpec *p) {
    for (int k = 0; k < p->n_command; k++) free(p->command[k]);
    free(p->command);
    free(p->program);
    free(p->trials_dir);
    memset(p, 0, sizeof *p);
}

// A text that may be NULL: u8 present, then the text (common/bytes.h).
static void put_text(Bytes *b, const char *s) {
    bytes_put_u8(b, s != NULL);
    if (s) bytes_put_text(b, s, strlen(s));
}

static char *get_text(ByteReader *rd) {
    const unsigned present = br_u8(rd);
    if (present > 1) br_fail(rd, "a text's flag is %u (0 or 1)", present);
    if (present != 1) return NULL;
    size_t n;
    const char *t = br_text(rd, SIZE_MAX, &n, "a text");
    if (!t) return NULL;
    char *out = xmalloc(n + 1);
    memcpy(out, t, n);
    out[n] = 0;
    return out;
}

// A metric key (PROGRAM_KEY bytes with its NUL) into out.
static void get_key(ByteReader *rd, char *out) {
    size_t n;
    const char *t = br_text(rd, PROGRAM_KEY, &n, "a metric key");
    if (t) memcpy(out, t, n), out[n] = 0;
}

void program_spec_pack(Bytes *b, const ProgramSpec *p) {
    bytes_put_u32(b, (uint32_t)p->n_command);
    for (int k = 0; k < p->n_command; k++) put_text(b, p->command[k]);
    put_text(b, p->program);
    put_text(b, p->trials_dir);
    bytes_put_f64(b, p->grace);
    bytes_put_f64(b, p->max_output);
    bytes_put_i32(b, p->needs_checkpoint);
    bytes_put_i32(b, p->gpus);
    bytes_put_i32(b, p->cpus);
    bytes_put_text(b, p->accuracy, strlen(p->accuracy));
    bytes_put_text(b, p->metric, strlen(p->metric));
    for (int k = 0; k < MAX_PROGRAM_PARAMS; k++) bytes_put_u8(b, p->form[k]);
    bytes_put_u8(b, (unsigned)p->count_reports);
}

int program_spec_unpack(ProgramSpec *p, const unsigned char *data, size_t len) {
    memset(p, 0, sizeof *p);
    char err[160];
    ByteReader rd = byte_reader(data, len, "program spec", err, sizeof err);
    const int n = br_count(&rd, 1, "command words");
    p->command = xcalloc(n ? (size_t)n : 1, sizeof *p->command);
    for (int k = 0; k < n && !rd.failed; k++) {
        p->command[k] = get_text(&rd);
        p->n_command = k + 1;
        if (!p->command[k]) br_fail(&rd, "command word %d is missing", k);
    }
    p->program = get_text(&rd);
    p->trials_dir = get_text(&rd);
    p->grace = br_f64(&rd);
    p->max_output = br_f64(&rd);
    p->needs_checkpoint = br_i32(&rd);
    p->gpus = br_i32(&rd);
    p->cpus = br_i32(&rd);
    get_key(&rd, p->accuracy);
    get_key(&rd, p->metric);
    for (int k = 0; k < MAX_PROGRAM_PARAMS; k++) p->form[k] = (unsigned char)br_u8(&rd);
    p->count_reports = (int)br_u8(&rd);
    if (!rd.failed && rd.left) br_fail(&rd, "%zu bytes after the end", rd.left);
    if (rd.failed || !p->trials_dir) {
        program_spec_free(p);
        return -1;
    }
    return 0;
}

// ---------------------------------------------------------------- the command
// W&B's agent (wandb/wandb_agent.py, _command_run; wandb/sdk/launch/sweeps/utils.py,
// create_sweep_command and create_sweep_command_args) is the reference: a macro is a
// whole word; ${envvar:NAME} (NAME of A-Z, 0-9, _) is replaced anywhere in a word, by
// the variable's value or, unset, by NAME itself; ${interpreter} is "python"; a value is
// written as Python's str() writes it (True, None, [1, 2], {'lr': 0.1}), and the JSON
// macros as json.dumps does ({"a": 1, "b": [1, 2]}).

typedef enum { M_ENV, M_INTERPRETER, M_PROGRAM, M_ARGS, M_ARGS_NO_HYPHENS, M_ARGS_NO_BOOLEAN_FLAGS, M_ARGS_NO_EQUALS,
               M_ARGS_APPEND_HYDRA, M_ARGS_OVERRIDE_HYDRA, M_ARGS_JSON, M_ARGS_JSON_FILE, M_N } Macro;
static const char *const macros[M_N] = {"${env}", "${interpreter}", "${program}", "${args}", "${args_no_hyphens}",
                                        "${args_no_boolean_flags}", "${args_no_equals}", "${args_append_hydra}",
                                        "${args_override_hydra}", "${args_json}", "${args_json_file}"};
#define ENVVAR "${envvar:"
#define ENVVAR_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"

static void put_raw(Bytes *b, const void *p, size_t n) { memcpy(bytes_extend(b, n), p, n); }

static int macro_of(const char *word) {
    for (int k = 0; k < M_N; k++)
        if (!strcmp(word, macros[k])) return k;
    return -1;
}

// The length of the ${envvar:NAME} at t (0: none there).
static size_t envvar_at(const char *t) {
    if (strncmp(t, ENVVAR, strlen(ENVVAR))) return 0;
    const size_t n = strspn(t + strlen(ENVVAR), ENVVAR_CHARS);
    return t[strlen(ENVVAR) + n] == '}' ? strlen(ENVVAR) + n + 1 : 0;
}

int program_macro_known(const char *word, char *err, size_t errlen) {
    if (macro_of(word) >= 0) return 1;
    for (const char *t = strstr(word, "${"); t; t = strstr(t + 1, "${")) {
        if (envvar_at(t)) continue;
        if (!strncmp(t, ENVVAR, strlen(ENVVAR)))
            snprintf(err, errlen, "'%s': ${envvar:NAME} takes a NAME of A-Z, 0-9 and '_' (W&B's rule)", word);
        else if (t != word || word[strlen(word) - 1] != '}' || strchr(t + 2, '$'))
            snprintf(err, errlen, "'%s': a macro other than ${envvar:NAME} is a word of its own (W&B's rule), e.g. - "
                                  "${args}", word);
        else
            snprintf(err, errlen, "unknown macro %s (allowed: ${env}, ${interpreter}, ${program}, ${args}, "
                                  "${args_no_hyphens}, ${args_no_boolean_flags}, ${args_no_equals}, "
                                  "${args_append_hydra}, ${args_override_hydra}, ${args_json}, ${args_json_file}, "
                                  "${envvar:NAME})", word);
        return 0;
    }
    return 1;
}

// word with each ${envvar:NAME} replaced as W&B does.
static char *expand_envvars(const char *word) {
    Bytes b = {0};
    for (const char *t = word; *t;) {
        const size_t n = envvar_at(t);
        if (!n) {
            put_raw(&b, t++, 1);
            continue;
        }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(n - strlen(ENVVAR) - 1), t + strlen(ENVVAR));
        const char *value = getenv(name);
        put_raw(&b, value ? value : name, strlen(value ? value : name));
        t += n;
    }
    put_raw(&b, "", 1);
    return (char *)b.data;
}

void program_real_text(double v, char *out, size_t len) {
    int digits = 1;
    char e[64];
    while (digits < 17 && (snprintf(e, sizeof e, "%.*e", digits - 1, v), strtod(e, NULL) != v)) digits++;
    snprintf(e, sizeof e, "%.*e", digits - 1, v);
    const int exp10 = atoi(strchr(e, 'e') + 1);
    if (!isfinite(v)) snprintf(out, len, "%s", isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
    else if (exp10 >= -4 && exp10 < 16) snprintf(out, len, "%.*f", digits - 1 - exp10 > 0 ? digits - 1 - exp10 : 1, v);
    else snprintf(out, len, "%s", e);
}

// The JSON text of a set parameter's value (its own text when its values are JSON).
static void value_json(const ProgramSpec *spec, int slot, const ProgramValue *v, Bytes *b) {
    char num[64];
    if (v->type == PT_TEXT && spec->form[slot] & PROGRAM_FORM_JSON) {
        put_raw(b, v->text, strlen(v->text));
    } else if (v->type == PT_TEXT) {
        cJSON *str = json_must(cJSON_CreateString(v->text));
        char *t = cJSON_PrintUnformatted(str);
        if (!t) die(EXIT_RUNTIME, "out of memory printing JSON");
        put_raw(b, t, strlen(t));
        cJSON_free(t);
        cJSON_Delete(str);
    } else {
        if (v->type == PT_INT) snprintf(num, sizeof num, "%.0f", v->number);
        else program_real_text(v->number, num, sizeof num);
        put_raw(b, num, strlen(num));
    }
}

// One argument as W&B's agent gets it: a name and its value's JSON (json.dumps' spacing).
typedef struct {
    char name[PROGRAM_NAME];
    Bytes json;
} Arg;

// The nested parameters (PROGRAM_FORM_NESTED, names "a.b.c") whose first part is
// slots[0]'s, as the JSON object of that part, keys in the order of their full names
// (W&B's HyperParameterSet.to_config); each slot used is marked in done.
static void nested_json(const ProgramSpec *spec, const TrialConfig *c, const char *prefix, unsigned char *done,
                        Bytes *b) {
    const size_t plen = strlen(prefix);
    int order[MAX_PROGRAM_PARAMS], n = 0;
    for (int k = 0; k < c->n_program; k++)
        if (!done[k] && spec->form[k] & PROGRAM_FORM_NESTED && !strncmp(c->program[k].name, prefix, plen) &&
            c->program[k].name[plen] == '.') {
            int at = n++;
            while (at > 0 && strcmp(c->program[order[at - 1]].name, c->program[k].name) > 0) order[at] = order[at - 1], at--;
            order[at] = k;
        }
    put_raw(b, "{", 1);
    int first = 1;
    for (int i = 0; i < n; i++) {
        const int k = order[i];
        if (done[k]) continue;
        const char *rest = c->program[k].name + plen + 1, *dot = strchr(rest, '.');
        const size_t keylen = dot ? (size_t)(dot - rest) : strlen(rest);
        char key[PROGRAM_NAME], sub[PROGRAM_NAME];
        snprintf(key, sizeof key, "%.*s", (int)keylen, rest);
        if (!dot && !c->program[k].set) {
            done[k] = 1;
            continue;
        }
        Bytes inner = {0};
        if (dot) {
            snprintf(sub, sizeof sub, "%.*s", (int)(plen + 1 + keylen), c->program[k].name);
            nested_json(spec, c, sub, done, &inner);
            if (inner.len == 2) {  // "{}": none of its parameters is set
                bytes_free(&inner);
                continue;
            }
        } else {
            value_json(spec, k, &c->program[k], &inner);
            done[k] = 1;
        }
        char head[PROGRAM_NAME + 8];
        snprintf(head, sizeof head, "%s\"%s\": ", first ? "" : ", ", key);
        put_raw(b, head, strlen(head));
        put_raw(b, inner.data, inner.len);
        bytes_free(&inner);
        first = 0;
    }
    put_raw(b, "}", 1);
}

// The arguments of configuration c in the sweep's order, a nested group at its first
// parameter's place; *n of them (free with args_free).
static Arg *args_of(const ProgramSpec *spec, const TrialConfig *c, int *n) {
    Arg *a = xcalloc(MAX_PROGRAM_PARAMS, sizeof *a);
    unsigned char done[MAX_PROGRAM_PARAMS] = {0};
    *n = 0;
    for (int k = 0; k < c->n_program; k++) {
        const ProgramValue *v = &c->program[k];
        if (done[k]) continue;
        Arg *x = &a[*n];
        if (spec->form[k] & PROGRAM_FORM_NESTED) {
            snprintf(x->name, sizeof x->name, "%.*s", (int)strcspn(v->name, "."), v->name);
            nested_json(spec, c, x->name, done, &x->json);
            if (x->json.len == 2) {
                bytes_free(&x->json);
                continue;
            }
        } else {
            done[k] = 1;
            if (!v->set) continue;
            snprintf(x->name, sizeof x->name, "%s", v->name);
            value_json(spec, k, v, &x->json);
        }
        put_raw(&x->json, "", 1);
        (*n)++;
    }
    return a;
}

static void args_free(Arg *a, int n) {
    for (int k = 0; k < n; k++) bytes_free(&a[k].json);
    free(a);
}

// JSON text as Python's str() writes the value: a string bare at the top, quoted '...'
// inside; true, false, null as True, False, None; numbers and the rest as they are.
static char *python_text(const char *json) {
    Bytes b = {0};
    if (json[0] == '"') {  // a string: itself
        cJSON *s = cJSON_Parse(json);
        const char *t = cJSON_GetStringValue(s);
        put_raw(&b, t ? t : "", strlen(t ? t : ""));
        cJSON_Delete(s);
    }
    for (const char *t = json; json[0] != '"' && *t;) {
        if (*t == '"') {  // a string inside: repr's quotes ('...', or "..." when it holds a ' and no ")
            const char *end = t + 1;
            while (*end && *end != '"') end += *end == '\\' && end[1] ? 2 : 1;
            const int single = !memchr(t + 1, '\'', (size_t)(end - t - 1)) || memchr(t + 1, '\\', (size_t)(end - t - 1));
            put_raw(&b, single ? "'" : "\"", 1);
            for (const char *q = t + 1; q < end; q++) {
                if (*q == '\\' && q[1] == '"') q++;
                else if (single && *q == '\'') put_raw(&b, "\\", 1);
                put_raw(&b, q, 1);
            }
            put_raw(&b, single ? "'" : "\"", 1);
            t = *end ? end + 1 : end;
        } else if (!strncmp(t, "true", 4) || !strncmp(t, "false", 5) || !strncmp(t, "null", 4)) {
            const char *py = t[0] == 't' ? "True" : t[0] == 'f' ? "False" : "None";
            put_raw(&b, py, strlen(py));
            t += t[0] == 'f' ? 5 : 4;
        } else {
            put_raw(&b, t++, 1);
        }
    }
    put_raw(&b, "", 1);
    return (char *)b.data;
}

// The parameters as one JSON object, json.dumps' spacing.
static char *args_json(const Arg *a, int n) {
    Bytes b = {0};
    put_raw(&b, "{", 1);
    for (int k = 0; k < n; k++) {
        char head[PROGRAM_NAME + 8];
        snprintf(head, sizeof head, "%s\"%s\": ", k ? ", " : "", a[k].name);
        put_raw(&b, head, strlen(head));
        put_raw(&b, a[k].json.data, a[k].json.len - 1);
    }
    put_raw(&b, "}", 2);
    return (char *)b.data;
}

char *program_args_json(const ProgramSpec *spec, const TrialConfig *c) {
    int n;
    Arg *a = args_of(spec, c, &n);
    char *text = args_json(a, n);
    args_free(a, n);
    return text;
}

static char *word_of(const char *prefix, const char *name, const char *value) {  // prefix name [= value]
    char *s = xmalloc(strlen(prefix) + strlen(name) + (value ? strlen(value) + 1 : 0) + 1);
    sprintf(s, "%s%s%s%s", prefix, name, value ? "=" : "", value ? value : "");
    return s;
}

// The words one of the ${args...} macros gives for the arguments.
static void add_args(Words *w, const Arg *a, int n, Macro m) {
    for (int k = 0; k < n; k++) {
        const char *json = (const char *)a[k].json.data, *name = a[k].name;
        char *value = python_text(json);
        switch (m) {
        case M_ARGS_NO_HYPHENS: words_add(w, word_of("", name, value)); break;
        case M_ARGS_APPEND_HYDRA: words_add(w, word_of("+", name, value)); break;
        case M_ARGS_OVERRIDE_HYDRA: words_add(w, word_of("++", name, value)); break;
        case M_ARGS_NO_EQUALS: words_add(w, word_of("--", name, NULL)), words_add(w, xstrdup(value)); break;
        case M_ARGS_NO_BOOLEAN_FLAGS:  // true: a bare flag; false: left out
            if (strcmp(json, "false")) words_add(w, word_of("--", name, strcmp(json, "true") ? value : NULL));
            break;
        default: words_add(w, word_of("--", name, value)); break;  // M_ARGS
        }
        free(value);
    }
}
void program_argv_free(char **argv) {
    for (int k = 0; argv && argv[k]; k++) free(argv[k]);
    free(argv);
}

int program_command(const ProgramSpec *spec, const TrialConfig *c, const char *args_json_path, char ***argv,
                    int *argc, char *err, size_t errlen) {
    Words w = {0};
    words_add(&w, NULL), w.n = 0;  // an empty, NULL-terminated list
    int n_args;
    Arg *args = args_of(spec, c, &n_args);
    for (int k = 0; k < spec->n_command; k++) {
        const char *word = spec->command[k];
        if (!program_macro_known(word, err, errlen)) {
            args_free(args, n_args);
            program_argv_free(w.v);
            return -1;
        }
        switch (macro_of(word)) {
        case M_ENV: words_add(&w, xstrdup("/usr/bin/env")); break;
        case M_INTERPRETER: words_add(&w, xstrdup(PROGRAM_INTERPRETER)); break;
        case M_PROGRAM: words_add(&w, xstrdup(spec->program ? spec->program : "")); break;
        case M_ARGS_JSON: words_add(&w, args_json(args, n_args)); break;
        case M_ARGS_JSON_FILE: words_add(&w, xstrdup(args_json_path)); break;
        case -1: words_add(&w, expand_envvars(word)); break;
        default: add_args(&w, args, n_args, (Macro)macro_of(word)); break;
        }
    }
    args_free(args, n_args);
    if (w.n == 0 || !w.v[0][0]) {
        snprintf(err, errlen, "the command expands to %s", w.n ? "an empty first word" : "nothing");
        program_argv_free(w.v);
        return -1;
    }
    *argv = w.v;
    *argc = w.n;
    return 0;
}

