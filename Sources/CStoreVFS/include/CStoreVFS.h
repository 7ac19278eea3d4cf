#ifndef INTENTQUEUE_CSTOREVFS_H
#define INTENTQUEUE_CSTOREVFS_H

// SQLite writes each frame of a write-ahead log in two system calls: the frame's
// 24-byte header, then its page, at the next offset. IntentQueue's stores write
// five to eight frames an intent, so half of their `pwrite`s carry 24 bytes.
//
// The "intentqueue" VFS is the platform's default VFS with one change: on a log
// file, a 24-byte write is held until the next call on that file, and when that
// call writes the bytes that follow it, both go in one write. Anything else on
// the file (another write, a read, a sync, a truncation, its size, a file
// control, closing it) writes the held header first, so the file sees the same
// bytes in the same order before any of those, and a sync still covers every
// write made before it. SQLite writes a frame's header and page within one
// function, so a header is never held past the frame it belongs to. The files
// are SQLite's own format, readable through any VFS.
//
// And it syncs commits itself. A connection opened through it runs with
// `synchronous=NORMAL`, and while its database is durable (the default, or
// `iq_store_vfs_set_durable`), the VFS syncs the log as soon as the page of a
// commit frame (one whose header gives the database's size) is written: where
// `synchronous=FULL` syncs it, after the commit's last frame and before the
// commit is visible to any reader. NORMAL and FULL differ in nothing else in
// WAL mode, so a durable commit is what FULL makes it, and switching between
// the two costs no statement (SQLite compiles `PRAGMA synchronous` again each
// time it runs).

#include <sqlite3.h>

/// The name to open a database with (`sqlite3_open_v2`'s last argument).
#define IQ_STORE_VFS_NAME "intentqueue"

/// Registers the VFS (not as the default) once per process; SQLITE_OK, or SQLite's error.
int iq_store_vfs_register(void);

/// How many headers went out in one write with their page, in this process (for tests).
long long iq_store_vfs_joined_writes(void);

/// Whether `db`'s commits are synced (1, the default) or only written (0); SQLITE_NOTFOUND when `db` was not opened
/// through this VFS.
int iq_store_vfs_set_durable(sqlite3 *db, int durable);

/// How many of `db`'s commits this VFS synced, or -1 when `db` was not opened through it (for tests).
long long iq_store_vfs_commit_syncs(sqlite3 *db);

#endif
