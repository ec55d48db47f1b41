#ifndef HAUL_CSQLITE_SHIM_H
#define HAUL_CSQLITE_SHIM_H

#include <sqlite3.h>

/* SQLITE_TRANSIENT and SQLITE_STATIC are macros that cast an integer to a function pointer,
   which Swift cannot import. These return the same destructor constants. */

static inline sqlite3_destructor_type haul_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

static inline sqlite3_destructor_type haul_sqlite_static(void) {
    return SQLITE_STATIC;
}

#endif /* HAUL_CSQLITE_SHIM_H */
