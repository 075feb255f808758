#include "common/config_json.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/util.h"

cJSON *json_must(cJSON *item) {
    if (!item) die(EXIT_RUNTIME, "out of memory building JSON");
    return item;
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
        case PT_INTLIST:  // the offsets, counted by n_offsets
            cJSON_AddItemToObject(obj, p->name, json_must(cJSON_CreateIntArray((const int *)base, c->n_offsets)));
            break;
        }
    }
    return obj;
}

char *config_to_json_text(const TrialConfig *c) {
    cJSON *json = config_to_json(c);
    char *text = cJSON_PrintUnformatted(json);
    if (!text) die(EXIT_RUNTIME, "out of memory printing JSON");
    cJSON_Delete(json);
    return text;
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
    case PT_INTLIST: {
        if (!cJSON_IsArray(v)) break;
        const cJSON *item;
        out[0] = 0;
        cJSON_ArrayForEach(item, v) {
            if (!cJSON_IsNumber(item)) {
                snprintf(err, errlen, "%s must be an array of integers, got %s in it", p->name, json_kind(item));
                return -1;
            }
            char num[32];
            size_t used = strlen(out);
            format_number(item->valuedouble, num, sizeof num);
            snprintf(out + used, outlen - used, "%s%s", used ? "," : "", num);
        }
        return 0;
    }
    }
    static const char *const wanted[] = {
        [PT_INT] = "an integer", [PT_REAL] = "a number", [PT_CHOICE] = "a string",
        [PT_TEXT] = "a string", [PT_INTLIST] = "an array of integers"};
    snprintf(err, errlen, "%s must be %s, got %s", p->name, wanted[p->type], json_kind(v));
    return -1;
}

int config_from_json(TrialConfig *c, const cJSON *obj, char *err, size_t errlen) {
    config_defaults(c);
    if (!cJSON_IsObject(obj)) {
        snprintf(err, errlen, "config must be a JSON object, got %s", json_kind(obj));
        return -1;
    }
    const cJSON *v;
    cJSON_ArrayForEach(v, obj) {
        const ParamSpec *p = config_find(v->string);
        if (!p) {
            const char *hint = config_closest(v->string);
            if (hint)
                snprintf(err, errlen, "unknown parameter '%s' (did you mean '%s'?)", v->string, hint);
            else
                snprintf(err, errlen, "unknown parameter '%s'", v->string);
            return -1;
        }
        char text[CONFIG_TEXT];
        if (value_text(p, v, text, sizeof text, err, errlen) != 0) return -1;
        if (config_set(c, p, text, err, errlen) != 0) return -1;
    }
    return 0;
}
