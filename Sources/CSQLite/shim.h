#ifndef HAUL_CSQLITE_SHIM_H
#define HAUL_CSQLITE_SHIM_H

#include <sqlite3.h>

/* SQLITE_TRANSIENT is a macro that casts an integer to a function pointer, which Swift cannot
   import. This returns the same destructor constant. */

static inline sqlite3_destructor_type haul_sqlite_transient(void) {
    return SQLITE_TRANSIENT;
}

#endif /* HAUL_CSQLITE_SHIM_H */
