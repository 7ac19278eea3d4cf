#ifndef INTENTQUEUE_CSTOREVFS_H
#define INTENTQUEUE_CSTOREVFS_H

// SQLite writes each frame of a write-ahead log in two system calls: the frame's
// 24-byte header, then its page, at the next offset. IntentQueue's stores write
// five to ten frames an intent, so half of their `pwrite`s carry 24 bytes.
//
// The "intentqueue" VFS is the platform's default VFS with two changes.
//
// On a log file, a frame's header is held until the next call on that file, and
// when that call writes the bytes that follow it (its page), both go in one
// write. Anything else on the file (another write, a read, a sync, a truncation,
// its size, a file control, closing it), and any lock its database takes on the
// log's shared index, writes the held header first, so the file sees the same
// bytes in the same order before any of those. Only a header SQLite writes as
// `walWriteOneFrame` does, its page right after, is held: one written right after
// a read is SQLite writing a frame's header again (new checksums, after a large
// transaction wrote a page twice), with no page after it, and goes out at once.
// The files are SQLite's own format, readable through any VFS.
//
// And a connection runs with `synchronous=FULL` but may say its commits need not
// be durable (`iq_store_vfs_set_durable`): the VFS then skips the one sync FULL
// adds to NORMAL in WAL mode, the log's sync right after a commit's frames. It is
// the first sync after a commit frame is written, while the connection still
// holds the log's write lock (a checkpoint's comes after it, a commit that failed
// before its sync has none, and any lock taken on the log's shared index ends
// the wait); any other goes through. So switching between the two costs no statement
// (SQLite compiles `PRAGMA synchronous` again each time it runs), and should the
// VFS ever mistake a sync, it is one sync too many, never one too few.

#include <sqlite3.h>

/// The name to open a database with (`sqlite3_open_v2`'s last argument).
#define IQ_STORE_VFS_NAME "intentqueue"

/// Registers the VFS (not as the default) once per process; SQLITE_OK, or SQLite's error. Called before the
/// process's first connection opens: it first turns off SQLite's count of its memory (SQLITE_CONFIG_MEMSTATUS),
/// which only a call before SQLite initializes can do.
int iq_store_vfs_register(void);

/// How many headers went out in one write with their page, in this process (for tests).
long long iq_store_vfs_joined_writes(void);

/// Whether `db`'s commits are synced (1, the default) or only written (0, as with `synchronous=NORMAL`; the
/// connection itself runs FULL); SQLITE_NOTFOUND when `db` was not opened through this VFS.
int iq_store_vfs_set_durable(sqlite3 *db, int durable);

/// Syncs the write-ahead log of `db`'s main database now, through whichever VFS opened it: for commits made while
/// not durable when the durable commit after them wrote nothing (and so synced nothing). SQLITE_OK when there is no
/// log open (nothing was written to one), else the sync's result.
int iq_store_sync_log(sqlite3 *db);

/// Makes the next `count` syncs of `db`'s log fail with SQLITE_IOERR_FSYNC, as a failing disk would (for tests).
int iq_store_vfs_fail_log_syncs(sqlite3 *db, int count);

/// The database file of `db`'s main schema when it was opened through this VFS, else NULL: valid as long as the
/// connection is open, for `iq_store_vfs_file_sync_failed`.
void *iq_store_vfs_database_file(sqlite3 *db);

/// Whether a sync of that database or its log failed since its log was last recovered (`iq_store_recover_log`); 0 for
/// NULL. On Linux a failed `fsync` may drop the pages it was writing while a later one succeeds, so once one failed,
/// a commit's own sync and `iq_store_sync_log` report SQLITE_IOERR_FSYNC whatever the disk says, until then.
int iq_store_vfs_file_sync_failed(void *file);

/// After a failed sync: copies every frame of `db`'s log into the database file (a TRUNCATE checkpoint, which syncs
/// that file), cuts the log to nothing and syncs both; only then are syncs believed again. SQLITE_OK when done or
/// when no sync failed; SQLITE_BUSY when a transaction is open on `db` or a reader's snapshot kept frames in the
/// log (try again later); else the error of the checkpoint or a sync.
int iq_store_recover_log(sqlite3 *db);

/// How many of `db`'s commits this VFS synced, or -1 when `db` was not opened through it (for tests).
long long iq_store_vfs_commit_syncs(sqlite3 *db);

/// How many syncs of `db`'s log this VFS made, commits' and checkpoints' alike, or -1 when `db` was not opened
/// through it or has no log open (for tests).
long long iq_store_vfs_log_syncs(sqlite3 *db);

/// The syncs this process made through the VFS (every file's: logs and databases, commits and checkpoints): how
/// many, how many took over 5 and over 20 ms, their total time, and the slowest since the last reset.
typedef struct {
    long long count;
    long long over5ms;
    long long over20ms;
    long long nanoseconds;
    long long slowestNanoseconds;
} IQSyncTimes;
IQSyncTimes iq_store_vfs_sync_times(void);
/// Starts the slowest sync over (a benchmark's phase).
void iq_store_vfs_reset_slowest_sync(void);
#endif
