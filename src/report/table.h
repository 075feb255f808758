// table.h: the report's tables, built once and printed three ways: aligned text (units
// in the headers), CSV (a "# key" line, a header row, the rows) and JSON (an array of
// row objects, or one object for a single-row table). Every section of
// `attnsweep report` is one or more of these, so the three formats cannot disagree.
#ifndef ATTN_TABLE_H
#define ATTN_TABLE_H

#include <cjson/cJSON.h>
#include <stdio.h>

typedef enum {
    COL_TEXT,     // a string; NULL is empty
    COL_INT,      // a whole number
    COL_REAL,     // a real; NaN is empty
    COL_MEAN_SD,  // mean ± sd: CSV columns KEY_mean and KEY_sd, JSON {"mean": m, "sd": s}
} ColumnKind;

typedef struct {
    char *key;           // CSV header and JSON key (the /summary column name where there is one)
    char *head;          // header of the text table, with the unit
    ColumnKind kind;
    const char *format;  // printf format of a COL_REAL / COL_MEAN_SD value in the text table
} Column;

typedef struct {
    double value, sd;
    char *text;     // as given (JSON escapes it itself)
    char *printed;  // text_escape'd, for the text table and CSV: a file's bytes never reach a terminal raw
} Cell;

typedef struct {
    char *key;    // where it goes: "leaderboard", "failures.by_status" (JSON path, CSV section)
    char *title;  // heading in the text table
    char *note;   // lines under the heading in the text table (NULL: none)
    int single;   // exactly one row, printed in JSON as an object
    int n_cols, n_rows, cap;
    Column *cols;
    Cell *cells;  // n_rows × n_cols, row-major
    int filled;   // cells of the last row set so far
} Table;

Table *table_new(const char *key, const char *title);
void table_free(Table *t);
// Add a line under the heading (text table only).
void table_note(Table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// Columns are added before the first row.
void table_column(Table *t, const char *key, const char *head, ColumnKind kind, const char *format);
// Start a row; then one call per column, in column order.
void table_row(Table *t);
void table_text(Table *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void table_empty(Table *t);  // no value (JSON null)
void table_number(Table *t, double v);  // COL_INT or COL_REAL
void table_mean_sd(Table *t, double mean, double sd);

void table_print_text(const Table *t, FILE *f);
void table_print_csv(const Table *t, FILE *f);
// How the JSON printers hand out their text: to f, or through the HTML page's escaping.
typedef void (*JsonPut)(FILE *f, const char *text, size_t len);
void table_put(FILE *f, const char *text, size_t len);  // fwrite
// The tables t[0..n) as members of a JSON object whose opening brace (and, unless first,
// other members) the caller has printed: each table's rows as an array (a single-row
// table: its row) under its key, nested by the dots of the key ("verdict.tau" is "tau" of
// the object "verdict"; the tables of a prefix must be together). The text is what
// cJSON_PrintUnformatted prints of that object, made one row's tree at a time, so no tree
// of a whole table is built.
void table_print_json_members(const Table *const *t, int n, int first, FILE *f, JsonPut put);

#endif
