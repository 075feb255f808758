#include "params/config_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

cJSON *json_must(cJSON *item) {
    if (!item) die(EXIT_RUNTIME, "out of memory building JSON");
    return item;
}

// "program": {name: value, ...} in slot order, null for a slot the configuration lacks.
static void program_to_json(cJSON *obj, const TrialConfig *c) {
    cJSON *prog = json_must(cJSON_CreateObject());
    for (int i = 0; i < c->n_program; i++) {
        const ProgramValue *v = &c->program[i];
        cJSON *item = !v->set               ? cJSON_CreateNull()
                      : v->type == PT_TEXT ? cJSON_CreateString(v->text)
                                           : cJSON_CreateNumber(v->number);
        cJSON_AddItemToObject(prog, v->name, json_must(item));
    }
    cJSON_AddItemToObject(obj, "program", prog);
}

// The offset schedule: one group as an array of numbers ([1, 2, 4]), several as an
// array of such arrays ([[1, 2], [4, 8]]).
static cJSON *schedule_to_json(const TrialConfig *c) {
    if (c->n_groups == 1) return json_must(cJSON_CreateIntArray(c->offsets, c->n_offsets));
    cJSON *groups = json_must(cJSON_CreateArray());
    for (int g = 0, start = 0; g < c->n_groups; start += c->group_len[g++])
        cJSON_AddItemToArray(groups, json_must(cJSON_CreateIntArray(c->offsets + start, c->group_len[g])));
    return groups;
}

cJSON *config_to_json(const TrialConfig *c) {
    cJSON *obj = json_must(cJSON_CreateObject());
    for (int i = 0; i < config_nparams; i++) {
        const ParamSpec *p = &config_params[i];
        const char *base = (const char *)c + p->offset;
        switch (p->type) {
        case PT_INT: json_must(cJSON_AddNumberToObject(obj, p->name, *(const int *)base)); break;
        case PT_REAL: json_must(cJSON_AddNumberToObject(obj, p->name, *(const double *)base)); break;
        case PT_CHOICE: json_must(cJSON_AddStringToObject(obj, p->name, p->choices[*(const int *)base])); break;
        case PT_TEXT: json_must(cJSON_AddStringToObject(obj, p->name, base)); break;
        case PT_INTLIST: cJSON_AddItemToObject(obj, p->name, schedule_to_json(c)); break;
        }
    }
    if (c->n_program > 0) program_to_json(obj, c);
    return obj;
}

char *config_to_json_text(const TrialConfig *c) {
    cJSON *json = config_to_json(c);
    char *text = cJSON_PrintUnformatted(json);
    if (!text) die(EXIT_RUNTIME, "out of memory printing JSON");
    cJSON_Delete(json);
    return text;
}

// Whether two numbers print alike in JSON: equal ones do; cJSON prints a real with 15
// digits when they read back within its tolerance, so two a unit in the last place apart
// may too.
static int same_json_number(double a, double b) {
    if (a == b) return 1;
    cJSON *x = json_must(cJSON_CreateNumber(a)), *y = json_must(cJSON_CreateNumber(b));
    char *tx = cJSON_PrintUnformatted(x), *ty = cJSON_PrintUnformatted(y);
    if (!tx || !ty) die(EXIT_RUNTIME, "out of memory printing JSON");
    const int same = !strcmp(tx, ty);
    cJSON_free(tx);
    cJSON_free(ty);
    cJSON_Delete(x);
    cJSON_Delete(y);
    return same;
}

static int same_schedule(const TrialConfig *a, const TrialConfig *b) {
    if (a->n_groups != b->n_groups) return 0;
    if (a->n_groups == 1) return a->n_offsets == b->n_offsets && !memcmp(a->offsets, b->offsets, (size_t)a->n_offsets * sizeof(int));
    int total = 0;
    for (int g = 0; g < a->n_groups; g++) {
        if (a->group_len[g] != b->group_len[g]) return 0;
        total += a->group_len[g];
    }
    return !memcmp(a->offsets, b->offsets, (size_t)total * sizeof(int));
}

static int same_program(const TrialConfig *a, const TrialConfig *b) {
    if (a->n_program != b->n_program) return 0;
    for (int i = 0; i < a->n_program; i++) {
        const ProgramValue *x = &a->program[i], *y = &b->program[i];
        const int kx = !x->set ? 0 : x->type == PT_TEXT ? 1 : 2, ky = !y->set ? 0 : y->type == PT_TEXT ? 1 : 2;
        if (strcmp(x->name, y->name) || kx != ky || (kx == 1 && strcmp(x->text, y->text)) ||
            (kx == 2 && !same_json_number(x->number, y->number)))
            return 0;
    }
    return 1;
}

int config_same_json(const TrialConfig *a, const TrialConfig *b) {
    for (int i = 0; i < config_nparams; i++) {
        const ParamSpec *p = &config_params[i];
        const char *x = (const char *)a + p->offset, *y = (const char *)b + p->offset;
        int same = 1;
        switch (p->type) {
        case PT_INT:
        case PT_CHOICE: same = *(const int *)x == *(const int *)y; break;
        case PT_REAL: same = same_json_number(*(const double *)x, *(const double *)y); break;
        case PT_TEXT: same = !strcmp(x, y); break;
        case PT_INTLIST: same = same_schedule(a, b); break;
        }
        if (!same) return 0;
    }
    return same_program(a, b);
}

static const char *json_kind(const cJSON *v) {
    if (cJSON_IsNumber(v)) return "a number";
    if (cJSON_IsString(v)) return "a string";
    if (cJSON_IsArray(v)) return "an array";
    if (cJSON_IsObject(v)) return "an object";
    if (cJSON_IsBool(v)) return "a boolean";
    return "null";
}

// A JSON number as config_set text: integers without exponent or fraction, anything
// else with every digit, so config_set reports "must be an integer, got '2.5'".
static void format_number(double v, char *out, size_t outlen) {
    if (v == trunc(v) && fabs(v) < 1e15)
        snprintf(out, outlen, "%.0f", v);
    else
        snprintf(out, outlen, "%.17g", v);
}

// Appends "sep" and the number to out; -1 if it does not fit.
static int append_number(const cJSON *item, const char *sep, char *out, size_t outlen) {
    char num[32];
    format_number(item->valuedouble, num, sizeof num);
    size_t used = strlen(out);
    return snprintf(out + used, outlen - used, "%s%s", used ? sep : "", num) < (int)(outlen - used) ? 0 : -1;
}

// [1, 2, 4] as "1,2,4" and [[1, 2], [4, 8]] as "1,2;4,8", the text config_set parses.
static int schedule_text(const ParamSpec *p, const cJSON *v, char *out, size_t outlen, char *err, size_t errlen) {
    const cJSON *item, *sub;
    out[0] = 0;
    const int nested = cJSON_IsArray(cJSON_GetArrayItem(v, 0));
    cJSON_ArrayForEach(item, v) {
        if (nested && cJSON_IsArray(item) && cJSON_GetArraySize(item) == 0) {
            snprintf(err, errlen, "%s needs at least one offset in every layer's group", p->name);
            return -1;
        }
        if (!(nested ? cJSON_IsArray(item) : cJSON_IsNumber(item))) {
            snprintf(err, errlen, "%s must be an array of integers or of arrays of integers, got %s in it", p->name,
                     json_kind(item));
            return -1;
        }
        int fits = 0;
        if (!nested) fits = append_number(item, ",", out, outlen) == 0;
        else {
            fits = 1;
            int k = 0;
            cJSON_ArrayForEach(sub, item) {
                if (!cJSON_IsNumber(sub)) {
                    snprintf(err, errlen, "%s must be an array of integers or of arrays of integers, got %s in it",
                             p->name, json_kind(sub));
                    return -1;
                }
                fits = fits && append_number(sub, k++ ? "," : ";", out, outlen) == 0;
            }
        }
        if (!fits) {
            snprintf(err, errlen, "%s is longer than %zu characters", p->name, outlen - 1);
            return -1;
        }
    }
    return 0;
}

// The value as the text config_set parses, or -1 if its JSON type is wrong.
static int value_text(const ParamSpec *p, const cJSON *v, char *out, size_t outlen, char *err, size_t errlen) {
    switch (p->type) {
    case PT_INT:
    case PT_REAL:
        if (!cJSON_IsNumber(v)) break;
        format_number(v->valuedouble, out, outlen);
        return 0;
    case PT_CHOICE:
    case PT_TEXT:
        if (!cJSON_IsString(v)) break;
        snprintf(out, outlen, "%s", v->valuestring);
        return 0;
    case PT_INTLIST:
        if (!cJSON_IsArray(v)) break;
        return schedule_text(p, v, out, outlen, err, errlen);
    }
    static const char *const wanted[] = {
        [PT_INT] = "an integer", [PT_REAL] = "a number", [PT_CHOICE] = "a string",
        [PT_TEXT] = "a string", [PT_INTLIST] = "an array of integers or of arrays of integers"};
    snprintf(err, errlen, "%s must be %s, got %s", p->name, wanted[p->type], json_kind(v));
    return -1;
}

// The "program" object into c's slots, in its order: a number is an integer when it is
// whole (within ±2^53), else a real; a string is a text; null a slot not set.
static int program_from_json(TrialConfig *c, const cJSON *obj, char *err, size_t errlen) {
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "program must be an object of the program's parameters, got %s", json_kind(obj));
        return -1;
    }
    const cJSON *v;
    int slot = 0;
    cJSON_ArrayForEach(v, obj) {
        if (slot == MAX_PROGRAM_PARAMS) {
            snprintf(err, errlen, "program has more than %d parameters", MAX_PROGRAM_PARAMS);
            return -1;
        }
        if (!v->string[0] || strlen(v->string) >= PROGRAM_NAME) {
            snprintf(err, errlen, "program parameter names have 1 to %d characters, got '%.40s'", PROGRAM_NAME - 1,
                     v->string);
            return -1;
        }
        const int whole = cJSON_IsNumber(v) && v->valuedouble == trunc(v->valuedouble) &&
                          fabs(v->valuedouble) <= 9007199254740992.0;
        ParamSpec p;
        config_program_param(&p, v->string, NULL, cJSON_IsString(v) ? PT_TEXT : whole ? PT_INT : PT_REAL, slot++);
        char text[CONFIG_TEXT];
        if (cJSON_IsNull(v)) {
            config_program_declare(c, &p);
            continue;
        }
        if (!cJSON_IsString(v) && !cJSON_IsNumber(v)) {
            snprintf(err, errlen, "program parameter %s must be a number, a string or null, got %s", v->string,
                     json_kind(v));
            return -1;
        }
        if (cJSON_IsNumber(v) && config_set_number(c, &p, v->valuedouble) == 0) continue;
        if (cJSON_IsString(v))
            snprintf(text, sizeof text, "%s", v->valuestring);
        else
            format_number(v->valuedouble, text, sizeof text);
        if (config_set(c, &p, text, err, errlen) != 0) return -1;
    }
    return 0;
}

int config_from_json(TrialConfig *c, const cJSON *obj, char *err, size_t errlen) {
    config_defaults(c);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "config must be a JSON object, got %s", json_kind(obj));
        return -1;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        if (!strcmp(v->string, "program")) {
            if (program_from_json(c, v, err, errlen) != 0) return -1;
            continue;
        }
        const ParamSpec *p = config_find(v->string);
        if (!p) {
            const char *hint = config_closest(v->string);
            if (hint)
                snprintf(err, errlen, "unknown parameter '%s' (did you mean '%s'?)", v->string, hint);
            else
                snprintf(err, errlen, "unknown parameter '%s'", v->string);
            return -1;
        }
        if (cJSON_IsNumber(v) && config_set_number(c, p, v->valuedouble) == 0) continue;  // as its text would be
        char text[CONFIG_TEXT];
        if (value_text(p, v, text, sizeof text, err, errlen) != 0) return -1;
        if (config_set(c, p, text, err, errlen) != 0) return -1;
    }
    return 0;
}
