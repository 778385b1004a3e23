/*
 * ty_kv.h - a borrowed name/value pair: an HTTP header as received or to be signed, a query
 * parameter. The HTTP server fills arrays of them and SigV4 signs and verifies over them, so
 * neither depends on the other for the type.
 *
 * Owns: nothing; both strings belong to whoever filled the pair.
 */
#ifndef TY_CP_CORE_TY_KV_H
#define TY_CP_CORE_TY_KV_H

struct ty_kv {
    const char *name;  /* borrowed; any case */
    const char *value; /* borrowed; raw value as received */
};

#endif
