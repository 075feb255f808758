// man.c: the manual pages in roff (man.h). Every word of a verb's page comes from its
// Command and the parameter table; this file only lays them out.
#include "cmds/man.h"

#include <string.h>

#include "common/util.h"

static const Verb *requested;
enum { USAGE_INDENT = sizeof "usage: " - 1 };  // how --help indents a synopsis's further lines

void man_request(const Verb *v) { requested = v; }
int man_requested(void) { return requested != NULL; }

// len bytes of s as roff text: backslashes and minus signs escaped, every other character
// beyond ASCII as its code point (\[u03C4]), so that groff reads the page in any locale.
static void put_text(FILE *f, const char *s, size_t len) {
    if (len && (s[0] == '.' || s[0] == '\'')) fputs("\\&", f);  // not a request
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '\\') fputs("\\e", f);
        else if (c == '-') fputs("\\-", f);
        else if (c < 0x80) fputc(c, f);
        else {
            const int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : 1;
            unsigned code = c & (0x3F >> extra);
            for (int k = 0; k < extra && i + 1 < len; k++) code = code << 6 | ((unsigned char)s[++i] & 0x3F);
            fprintf(f, "\\[u%04X]", code);
        }
    }
}

// Text written for --help, one line a "\n": filled as a paragraph, a blank line starting
// the next one, an indented line (a formula, a command) kept on a line of its own.
static void put_block(FILE *f, const char *text) {
    int lines = 0, paragraph_ends = 0;
    for (const char *s = text; *s;) {
        const size_t len = strcspn(s, "\n");
        if (len == 0) paragraph_ends = lines > 0;
        else {
            if (paragraph_ends) fputs(".PP\n", f);
            paragraph_ends = 0;
            lines++;
            put_text(f, s, len);
            fputs(s[0] == ' ' ? "\n.br\n" : "\n", f);
        }
        s += len;
        if (*s) s++;
    }
}

// One entry of a list: the term in bold, then its text.
static void put_item(FILE *f, const char *term, const char *text) {
    fputs(".TP\n\\fB", f);
    put_text(f, term, strlen(term));
    fputs("\\fR\n", f);
    put_block(f, text);
}

static void put_header(FILE *f, const char *name, const char *summary) {
    char upper[64];
    snprintf(upper, sizeof upper, "%s", name);
    for (char *c = upper; *c; c++)
        if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
    fputs(".TH ", f);
    put_text(f, upper, strlen(upper));
    fprintf(f, " 1 \"\" \"attnsweep %s\" \"attnsweep manual\"\n.SH NAME\n", ATTNSWEEP_VERSION);
    put_text(f, name, strlen(name));
    fputs(" \\- ", f);
    put_text(f, summary, strlen(summary));
    fputs("\n.SH SYNOPSIS\n.nf\n", f);
}

void man_command(const Command *cmd, FILE *f) {
    char name[64], names[64], help[512];
    snprintf(name, sizeof name, "attnsweep-%s", requested->name);
    put_header(f, name, requested->summary);
    for (const char *s = cmd->usage; *s;) {  // its lines without the indent of "usage: " in --help
        const size_t len = strcspn(s, "\n");
        const char *line = s;
        if (s != cmd->usage)
            while (line < s + USAGE_INDENT && *line == ' ') line++;
        put_text(f, line, len - (size_t)(line - s));
        fputc('\n', f);
        s += len;
        if (*s) s++;
    }
    fputs(".fi\n.SH DESCRIPTION\n", f);
    put_block(f, cmd->about);
    fputs(".SH OPTIONS\n", f);
    const Option *params = NULL;
    for (const Option *o = cmd->options; o->name || o->value; o++) {
        if (o->type == OPT_PARAMS) {
            params = o;
            continue;
        }
        args_option_names(o, names, sizeof names);
        put_item(f, names, o->help);
    }
    put_item(f, "-h, --help", "print the usage and exit");
    if (params) {
        fputs(".SH PARAMETERS\n", f);
        put_block(f, params->help);
        for (int i = 0; i < config_nparams; i++) {
            args_param_help(&config_params[i], names, sizeof names, help, sizeof help);
            put_item(f, names, help);
        }
    }
    if (requested->sweep_file) {
        fputs(".SH \"SWEEP FILE PARAMETERS\"\n", f);
        put_block(f, "The built-in engine's trial parameters, as a sweep file's parameters: section names\n"
                     "them (a program's sweep names its own); defaults in brackets.\n");
        for (int i = 0; i < config_nparams; i++) {
            args_param_help(&config_params[i], names, sizeof names, help, sizeof help);
            put_item(f, config_params[i].name, help);
        }
    }
    if (cmd->footer) {
        fputs(".SH NOTES\n", f);
        put_block(f, cmd->footer);
    }
    fputs(".SH SEE ALSO\n\\fBattnsweep\\fR(1); README.md and docs/ in attnsweep's source tree\n", f);
}

void man_top(const char *synopsis, const char *about, const Verb *verbs, int n, FILE *f) {
    put_header(f, "attnsweep", about);
    put_text(f, synopsis, strlen(synopsis));
    fputs("\nattnsweep \\-\\-version\n.fi\n.SH DESCRIPTION\n", f);
    char what[256];
    snprintf(what, sizeof what, "attnsweep is %s.\n", about);
    put_block(f, what);
    put_block(f, "Each command has a page of its own, attnsweep-COMMAND(1), made from the table that\n"
                 "parses its options and prints its --help.\n");
    fputs(".SH COMMANDS\n", f);
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, "attnsweep-%s(1)", verbs[i].name);
        put_item(f, name, verbs[i].summary);
    }
    fputs(".SH \"EXIT STATUS\"\n", f);
    put_block(f, "0: done; 1: the work failed (a file could not be written, a run whose trials all failed);\n"
                 "2: bad input, told in one line on standard error, nothing written; 3: a sweep stopped\n"
                 "by a signal, which --resume continues.\n");
    fputs(".SH \"SEE ALSO\"\n", f);
    for (int i = 0; i < n; i++) fprintf(f, "\\fBattnsweep\\-%s\\fR(1)%s\n", verbs[i].name, i + 1 < n ? "," : "");
}
