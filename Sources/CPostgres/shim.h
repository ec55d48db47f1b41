#ifndef HAUL_CPOSTGRES_SHIM_H
#define HAUL_CPOSTGRES_SHIM_H

#include <libpq-fe.h>

/// The SQLSTATE field code of PQresultErrorField, a character macro Swift does not import.
static inline int haul_pg_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }

#endif
