/*
 * apimodel.h - the AWS service model: request validation driven by the service-model subset
 * committed in api/.
 *
 * Owns: loading the api/ JSON files (botocore shapes and operations, doc strings dropped), the
 * operation table, and validating a JSON request against an operation's input shape: types,
 * required members, min/max lengths and ranges, enums and patterns (PCRE2), with AWS's wording: "1
 * validation error detected: Value 'bad_name!' at 'trainingJobName' failed to satisfy constraint:
 * Member must satisfy regular expression pattern: ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}" Several
 * errors: "N validation errors detected: ...; ...". Member paths are lowerCamelCase, nested as AWS
 * does ('resourceConfig.instanceCount', 'hyperParameters' map entries, list indexes
 * 'inputDataConfig.1.member.channelName'). Unknown members are ignored; JSON null counts as absent.
 * Lists and maps of scalars report once per collection, as AWS does: "Member must satisfy
 * constraint: [...]", "Map keys must satisfy constraint: [...]", "Map value must satisfy
 * constraint: [...]". Wrong JSON types stay ValidationExceptions ("Member must be a string").
 * Patterns must match the whole value (AWS applies Java's String.matches), with Java-only
 * syntax (\p{Alnum}, \uXXXX) translated for PCRE2; each is compiled once, at load.
 * A loaded model is immutable and may be shared between threads.
 */
#ifndef TY_CP_APIMODEL_H
#define TY_CP_APIMODEL_H

#include <jansson.h>

#include "ty_err.h"

struct apimodel;

/*
 * Loads every service model file in dir (api/sagemaker.json, api/logs.json, ...).
 * new: caller frees with apimodel_free(). NULL and err set on failure.
 */
struct apimodel *apimodel_load(const char *dir, struct ty_err *err);
/*
 * Loads the copy of the api/ JSON files compiled into the binary (so trainyard-server needs no
 * files at run time). new: caller frees with apimodel_free(). NULL and err set on failure.
 */
struct apimodel *apimodel_load_embedded(struct ty_err *err);
void apimodel_free(struct apimodel *m);

/* 1 when service ("sagemaker", "logs") has operation op in the loaded subset, else 0. */
int apimodel_has_op(const struct apimodel *m, const char *service, const char *op);

/*
 * Validates input (borrowed) against the input shape of service's op. Returns 0, or
 * -TY_EINVAL with AWS's message in err (err->field: the member path of the first error, cut to
 * fit; err->msg: every error, cut on a UTF-8 boundary to fit), -TY_EUNKNOWNOP when the
 * operation is not in the model (or m is NULL), -TY_ESERIAL when input is not a JSON object,
 * or -TY_ENOMEM. err may be NULL. Thread-safe: any number of calls may share one model.
 */
int apimodel_validate(const struct apimodel *m, const char *service, const char *op, json_t *input,
                      struct ty_err *err);

#endif
