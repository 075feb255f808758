// attnsweep schema: the results file's vocabulary (store/schema.h), as text or as the JSON
// every results file carries in its root attribute `schema`. The text is made from the
// JSON, so the two cannot differ.
#include <cjson/cJSON.h>
#include <stdio.h>

#include "cmds/args.h"
#include "cmds/cmds.h"
#include "store/schema.h"

static const char *text_of(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

// One line a column: name, type (with its shape), unit, then what it is.
static void print_columns(const char *title, const cJSON *cols) {
    printf("%s\n", title);
    const cJSON *c;
    cJSON_ArrayForEach(c, cols) {
        char type[48];
        snprintf(type, sizeof type, "%s%s%s%s", text_of(c, "type"), text_of(c, "shape")[0] ? " [" : "",
                 text_of(c, "shape"), text_of(c, "shape")[0] ? "]" : "");
        printf("  %-22s %-22s %-5s %s", text_of(c, "name"), type, text_of(c, "unit"), text_of(c, "about"));
        if (text_of(c, "goal")[0]) printf(" (%s, %s)", text_of(c, "goal"), text_of(c, "use"));
        printf("\n");
    }
}

static void print_text(const cJSON *j) {
    const cJSON *tables = cJSON_GetObjectItemCaseSensitive(j, "tables");
    const cJSON *summary = cJSON_GetObjectItemCaseSensitive(tables, "summary");
    printf("results format %d\n\nstatuses:", cJSON_GetObjectItemCaseSensitive(j, "format_version")->valueint);
    const cJSON *s;
    cJSON_ArrayForEach(s, cJSON_GetObjectItemCaseSensitive(j, "statuses"))
        printf(" %s%s", text_of(s, "name"),
               cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(s, "recorded")) ? "" : " (never recorded)");
    printf("\n\n/summary: %s\n", text_of(summary, "order"));
    print_columns("lead", cJSON_GetObjectItemCaseSensitive(summary, "lead"));
    print_columns("parameters (the built-in engine's)", cJSON_GetObjectItemCaseSensitive(summary, "parameters"));
    printf("  (%s)\n", text_of(summary, "program_parameters"));
    print_columns("metrics", cJSON_GetObjectItemCaseSensitive(j, "metrics"));
    print_columns("trail", cJSON_GetObjectItemCaseSensitive(summary, "trail"));
    print_columns("costs (trail columns a report may rank by)", cJSON_GetObjectItemCaseSensitive(j, "costs"));
    const char *const per_trial[] = {"curves", "invariants"};
    for (int k = 0; k < 2; k++) {
        const cJSON *t = cJSON_GetObjectItemCaseSensitive(tables, per_trial[k]);
        char title[64];
        snprintf(title, sizeof title, "\n%s", text_of(t, "path"));
        print_columns(title, cJSON_GetObjectItemCaseSensitive(t, "columns"));
    }
    print_columns("\nroot attributes", cJSON_GetObjectItemCaseSensitive(j, "root_attributes"));
}

int cmd_schema(int argc, char **argv) {
    int json = 0;
    const Option options[] = {
        OPT_FLAG("--json", NULL, &json, 1, "print it as JSON, as each results file holds it (root attribute schema)"),
        OPT_END,
    };
    const Command cmd = {"schema", "attnsweep schema [--json]",
                         "Prints the results file's vocabulary: its format version, the trial statuses, the\n"
                         "/summary columns (the trial's facts, the parameters, the metrics with their units and\n"
                         "goals), the curves and invariants tables of each trial and the root attributes. Every\n"
                         "results file carries the same as JSON in its root attribute `schema`;\n"
                         "python/attnsweep/results.py reads files through it.\n\n",
                         options, NULL, {0, "no arguments", NULL}};
    args_parse(&cmd, argc, argv, NULL);
    cJSON *j = schema_json();
    if (json) {
        char *text = cJSON_Print(j);
        printf("%s\n", text);
        cJSON_free(text);
    } else {
        print_text(j);
    }
    cJSON_Delete(j);
    return 0;
}
