// config_json.h: a trial configuration as JSON (cJSON).
//
// The JSON form is the one stored in the HDF5 trial attribute "config" and printed
// by `attnsweep train --json`: an object with every parameter of config_params
// under its YAML name (integers and reals as numbers, choices and text as strings,
// the offsets list as an array of numbers), and for a program's configuration the key
// "program": an object of its parameters in their order (numbers, strings, and null
// for one this configuration lacks).
#ifndef ATTN_CONFIG_JSON_H
#define ATTN_CONFIG_JSON_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "params/config.h"

// Every parameter of c; the caller frees the object with cJSON_Delete.
cJSON *config_to_json(const TrialConfig *c);
// The same printed on one line (exits on allocation failure); free with cJSON_free.
char *config_to_json_text(const TrialConfig *c);
// Whether a and b have the same config_to_json_text, without printing them (a resume
// compares every trial of the journal with the search space's).
int config_same_json(const TrialConfig *a, const TrialConfig *b);
// Start from config_defaults and set each key present in obj. On an unknown key
// (with a "did you mean" hint), a value of the wrong type or out of range, returns
// -1 with one line in err (no file prefix: the caller adds it). Cross-parameter
// checks are left to config_check.
int config_from_json(TrialConfig *c, const cJSON *obj, char *err, size_t errlen);
// cJSON returns NULL only when malloc fails: the item, or exit as xmalloc does.
cJSON *json_must(cJSON *item);

#endif
