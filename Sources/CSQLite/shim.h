#ifndef INTENTQUEUE_CSQLITE_SHIM_H
#define INTENTQUEUE_CSQLITE_SHIM_H

#include <sqlite3.h>

/// SQLITE_TRANSIENT is a macro casting -1 to a function pointer, which Swift
/// cannot import: bind a blob SQLite must copy through this wrapper instead.
/// (Texts are bound as SQLITE_STATIC, a nil destructor: see `Statement.bind`.)
static inline int iq_sqlite3_bind_blob(sqlite3_stmt *stmt, int index, const void *bytes, int length) {
    return sqlite3_bind_blob(stmt, index, bytes, length, SQLITE_TRANSIENT);
}

#endif
