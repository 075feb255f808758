// report_tables.h: the report tests' way into a Report (report/report.h): a table by its
// key and a cell by its row and column key; either missing ends the test (a test bug).
#ifndef ATTN_REPORT_TABLES_H
#define ATTN_REPORT_TABLES_H

#include <string.h>

#include "common/util.h"
#include "report/report.h"

static inline const Table *find_table(const Report *r, const char *key) {
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->tables[i]->key, key)) return r->tables[i];
    die(EXIT_RUNTIME, "no table %s", key);
}

static inline const Cell *at(const Table *t, int row, const char *col) {
    for (int c = 0; c < t->n_cols; c++)
        if (!strcmp(t->cols[c].key, col)) return &t->cells[row * t->n_cols + c];
    die(EXIT_RUNTIME, "table %s has no column %s", t->key, col);
}

#endif
