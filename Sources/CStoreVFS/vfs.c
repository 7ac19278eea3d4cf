#include "CStoreVFS.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { FRAME_HEADER_SIZE = 24, LOG_HEADER_SIZE = 32 };

typedef struct StoreFile StoreFile;

struct StoreFile {
    sqlite3_file base;
    sqlite3_file *real;
    /// A frame header held back, where it goes, and whether it is a commit frame's.
    int held;
    sqlite3_int64 heldOffset;
    int heldCommit;
    unsigned char header[FRAME_HEADER_SIZE];
    /// The header and its page, joined for one write.
    unsigned char *joined;
    int joinedSize;
    /// Whether the last call on the file was a read (SQLite reads a frame before it writes its header again).
    int lastWasRead;
    /// A log: its database's file, when it is one of this VFS's; where the page of a commit frame whose header went
    /// out alone is to be written (0: none); whether a commit frame was written since the last sync (the next sync,
    /// within the same hold of the log's locks, is that commit's); and how many syncs it made.
    StoreFile *database;
    sqlite3_int64 commitPageOffset;
    int commitWritten;
    long long syncs;
    /// A database: its log while it is open, whether its commits are synced, and how many were; and how many of its
    /// log's next syncs are to fail (for tests).
    StoreFile *log;
    int durable;
    long long commitSyncs;
    int failingLogSyncs;
    /// A database: whether a sync of it or its log failed since its log was last checkpointed whole, truncated and
    /// synced (`iq_store_recover_log`). A failed `fsync` may have dropped the pages it was writing, and a later one
    /// succeeds without them, so no later sync proves a commit durable until then.
    int syncFailed;
};

static sqlite3_vfs storeVFS;
static sqlite3_io_methods logMethods;
static sqlite3_io_methods otherMethods;
static pthread_once_t registerOnce = PTHREAD_ONCE_INIT;
static int registerResult = SQLITE_ERROR;
static atomic_llong joinedWrites;
/// Every sync of this process's files through the VFS, timed: how many, how many took over 5 and over 20 ms, their
/// total time, and the slowest since `iq_store_vfs_reset_slowest_sync`.
static atomic_llong syncCount;
static atomic_llong syncsOver5ms;
static atomic_llong syncsOver20ms;
static atomic_llong syncNanoseconds;
static atomic_llong slowestSync;

static long long monotonicNanoseconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
}

/// Syncs `file` and counts the time it took.
static int timedSync(sqlite3_file *file, int flags) {
    long long start = monotonicNanoseconds();
    int rc = file->pMethods->xSync(file, flags);
    long long took = monotonicNanoseconds() - start;
    atomic_fetch_add_explicit(&syncCount, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&syncNanoseconds, took, memory_order_relaxed);
    if (took > 5000000LL) atomic_fetch_add_explicit(&syncsOver5ms, 1, memory_order_relaxed);
    if (took > 20000000LL) atomic_fetch_add_explicit(&syncsOver20ms, 1, memory_order_relaxed);
    long long slowest = atomic_load_explicit(&slowestSync, memory_order_relaxed);
    while (took > slowest &&
           !atomic_compare_exchange_weak_explicit(&slowestSync, &slowest, took, memory_order_relaxed, memory_order_relaxed)) {
    }
    return rc;
}

static sqlite3_vfs *realVFS(void) { return (sqlite3_vfs *)storeVFS.pAppData; }
static sqlite3_file *realFile(sqlite3_file *file) { return ((StoreFile *)file)->real; }

/// Writes the held header, if any, where it belongs.
static int writeHeld(StoreFile *file) {
    if (!file->held) return SQLITE_OK;
    file->held = 0;
    return file->real->pMethods->xWrite(file->real, file->header, FRAME_HEADER_SIZE, file->heldOffset);
}

static int storeClose(sqlite3_file *file) {
    StoreFile *store = (StoreFile *)file;
    int rc = writeHeld(store);
    if (store->database != NULL && store->database->log == store) store->database->log = NULL;
    if (store->log != NULL && store->log->database == store) store->log->database = NULL;
    int closed = store->real->pMethods ? store->real->pMethods->xClose(store->real) : SQLITE_OK;
    free(store->joined);
    store->joined = NULL;
    return rc != SQLITE_OK ? rc : closed;
}

static int storeRead(sqlite3_file *file, void *buffer, int amount, sqlite3_int64 offset) {
    StoreFile *store = (StoreFile *)file;
    int rc = writeHeld(store);
    if (rc != SQLITE_OK) return rc;
    store->lastWasRead = 1;
    return store->real->pMethods->xRead(store->real, buffer, amount, offset);
}

static int storeWrite(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    StoreFile *store = (StoreFile *)file;
    sqlite3_file *real = store->real;
    int afterRead = store->lastWasRead;
    store->lastWasRead = 0;
    if (store->held && offset == store->heldOffset + FRAME_HEADER_SIZE && amount > 0) {
        int commit = store->heldCommit;
        int size = FRAME_HEADER_SIZE + amount;
        int rc;
        if (store->joinedSize < size) {
            unsigned char *grown = realloc(store->joined, (size_t)size);
            if (grown != NULL) {
                store->joined = grown;
                store->joinedSize = size;
            }
        }
        if (store->joinedSize >= size) {
            memcpy(store->joined, store->header, FRAME_HEADER_SIZE);
            memcpy(store->joined + FRAME_HEADER_SIZE, buffer, (size_t)amount);
            store->held = 0;
            atomic_fetch_add_explicit(&joinedWrites, 1, memory_order_relaxed);
            rc = real->pMethods->xWrite(real, store->joined, size, store->heldOffset);
        } else {
            rc = writeHeld(store);
            if (rc == SQLITE_OK) rc = real->pMethods->xWrite(real, buffer, amount, offset);
        }
        if (rc == SQLITE_OK && commit) store->commitWritten = 1;
        return rc;
    }
    int rc = writeHeld(store);
    if (rc != SQLITE_OK) return rc;
    const unsigned char *pages = (const unsigned char *)buffer + 4;
    // A frame's header as `walWriteOneFrame` writes it, its page next. One written after a read is SQLite
    // writing the header of a frame already in the log again (new checksums), with no page after it: written now.
    if (amount == FRAME_HEADER_SIZE && offset >= LOG_HEADER_SIZE && !afterRead) {
        memcpy(store->header, buffer, FRAME_HEADER_SIZE);
        store->heldOffset = offset;
        store->held = 1;
        // A frame header's second word is the database's size in pages after a commit frame, 0 in any other.
        store->heldCommit = (pages[0] | pages[1] | pages[2] | pages[3]) != 0;
        store->commitWritten = 0;
        return SQLITE_OK;
    }
    if (amount == FRAME_HEADER_SIZE && offset >= LOG_HEADER_SIZE && (pages[0] | pages[1] | pages[2] | pages[3]) != 0) {
        // A commit frame's header written alone (after a read), or written again: its page, if it follows, is the
        // commit's last write.
        store->commitPageOffset = offset + FRAME_HEADER_SIZE;
    }
    rc = real->pMethods->xWrite(real, buffer, amount, offset);
    if (rc == SQLITE_OK && store->commitPageOffset != 0 && offset == store->commitPageOffset && amount != FRAME_HEADER_SIZE) {
        store->commitPageOffset = 0;
        store->commitWritten = 1;
    }
    return rc;
}

static int storeTruncate(sqlite3_file *file, sqlite3_int64 size) {
    int rc = writeHeld((StoreFile *)file);
    if (rc != SQLITE_OK) return rc;
    return realFile(file)->pMethods->xTruncate(realFile(file), size);
}

/// The database a file belongs to: itself for a database (or any other file but a log), its database for a log
/// of this VFS's database; NULL for a log whose database is not this VFS's.
static StoreFile *owningDatabase(StoreFile *store) {
    if (store->base.pMethods == &logMethods) return store->database;
    return store;
}

static int storeSync(sqlite3_file *file, int flags) {
    StoreFile *store = (StoreFile *)file;
    int rc = writeHeld(store);
    if (rc != SQLITE_OK) return rc;
    StoreFile *owner = owningDatabase(store);
    int commits = 0;
    if (store->commitWritten) {
        // With `synchronous=FULL` the first sync after a commit frame is written is that commit's (a checkpoint's
        // comes after it): skipped when the database is not durable, which is all `synchronous=NORMAL` changes.
        store->commitWritten = 0;
        if (store->database != NULL) {
            if (!store->database->durable) return SQLITE_OK;
            store->database->commitSyncs += 1;
            commits = 1;
        }
    }
    if (store->database != NULL && store->database->failingLogSyncs > 0) {
        store->database->failingLogSyncs -= 1;
        store->database->syncFailed = 1;
        return SQLITE_IOERR_FSYNC;
    }
    store->syncs += 1;
    rc = timedSync(store->real, flags);
    if (rc != SQLITE_OK) {
        if (owner != NULL) owner->syncFailed = 1;
        return rc;
    }
    // A commit's sync after an earlier sync failed proves nothing about the frames that one was writing: refused (the
    // commit is rolled back) until the log is recovered. A checkpoint's syncs go through: recovery needs them.
    if (commits && owner != NULL && owner->syncFailed) return SQLITE_IOERR_FSYNC;
    return SQLITE_OK;
}

static int storeFileSize(sqlite3_file *file, sqlite3_int64 *size) {
    int rc = writeHeld((StoreFile *)file);
    if (rc != SQLITE_OK) return rc;
    return realFile(file)->pMethods->xFileSize(realFile(file), size);
}

static int storeLock(sqlite3_file *file, int lock) { return realFile(file)->pMethods->xLock(realFile(file), lock); }
static int storeUnlock(sqlite3_file *file, int lock) { return realFile(file)->pMethods->xUnlock(realFile(file), lock); }

static int storeCheckReservedLock(sqlite3_file *file, int *out) {
    return realFile(file)->pMethods->xCheckReservedLock(realFile(file), out);
}

static int storeFileControl(sqlite3_file *file, int op, void *argument) {
    int rc = writeHeld((StoreFile *)file);
    if (rc != SQLITE_OK) return rc;
    return realFile(file)->pMethods->xFileControl(realFile(file), op, argument);
}

static int storeSectorSize(sqlite3_file *file) { return realFile(file)->pMethods->xSectorSize(realFile(file)); }

static int storeDeviceCharacteristics(sqlite3_file *file) {
    return realFile(file)->pMethods->xDeviceCharacteristics(realFile(file));
}

static int storeShmMap(sqlite3_file *file, int page, int pageSize, int extend, void volatile **out) {
    return realFile(file)->pMethods->xShmMap(realFile(file), page, pageSize, extend, out);
}

static int storeShmLock(sqlite3_file *file, int offset, int count, int flags) {
    // A database's log locks go through its file: no header of the log is held past one (none is, as SQLite
    // writes a frame's header and page in one function; this makes sure another connection never finds one).
    StoreFile *log = ((StoreFile *)file)->log;
    if (log != NULL) {
        int rc = writeHeld(log);
        if (rc != SQLITE_OK) return rc;
        // A commit's frames and its sync fall within one hold of the log's write lock: a commit frame written
        // before this call (a commit that failed before its sync, or one under `synchronous=NORMAL`, which makes
        // none) has no sync to skip after it.
        log->commitWritten = 0;
        log->commitPageOffset = 0;
    }
    return realFile(file)->pMethods->xShmLock(realFile(file), offset, count, flags);
}

static void storeShmBarrier(sqlite3_file *file) { realFile(file)->pMethods->xShmBarrier(realFile(file)); }

static int storeShmUnmap(sqlite3_file *file, int deleteFlag) {
    return realFile(file)->pMethods->xShmUnmap(realFile(file), deleteFlag);
}

static int storeFetch(sqlite3_file *file, sqlite3_int64 offset, int amount, void **out) {
    int rc = writeHeld((StoreFile *)file);
    if (rc != SQLITE_OK) return rc;
    return realFile(file)->pMethods->xFetch(realFile(file), offset, amount, out);
}

static int storeUnfetch(sqlite3_file *file, sqlite3_int64 offset, void *page) {
    return realFile(file)->pMethods->xUnfetch(realFile(file), offset, page);
}

static int plainWrite(sqlite3_file *file, const void *buffer, int amount, sqlite3_int64 offset) {
    return realFile(file)->pMethods->xWrite(realFile(file), buffer, amount, offset);
}

static int storeOpen(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *file, int flags, int *outFlags) {
    (void)vfs;
    StoreFile *store = (StoreFile *)file;
    memset(store, 0, sizeof(StoreFile));
    store->real = (sqlite3_file *)&store[1];
    int rc = realVFS()->xOpen(realVFS(), name, store->real, flags, outFlags);
    if (store->real->pMethods == NULL) {
        // SQLite calls no method of a file whose pMethods is NULL, not even xClose.
        store->base.pMethods = NULL;
        return rc;
    }
    const sqlite3_io_methods *real = store->real->pMethods;
    if (real->iVersion < 3) {
        // The wrappers call the version 3 methods: a file without them cannot be opened through this VFS.
        store->base.pMethods = NULL;
        real->xClose(store->real);
        return SQLITE_CANTOPEN;
    }
    store->durable = 1;
    if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL)) {
        sqlite3_file *database = sqlite3_database_file_object(name);
        if (database != NULL && database->pMethods == &otherMethods) {
            store->database = (StoreFile *)database;
            store->database->log = store;
        }
    }
    store->base.pMethods = (flags & SQLITE_OPEN_WAL) ? &logMethods : &otherMethods;
    return rc;
}

static int storeDelete(sqlite3_vfs *vfs, const char *name, int syncDirectory) {
    (void)vfs;
    return realVFS()->xDelete(realVFS(), name, syncDirectory);
}

static int storeAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    (void)vfs;
    return realVFS()->xAccess(realVFS(), name, flags, out);
}

static int storeFullPathname(sqlite3_vfs *vfs, const char *name, int size, char *out) {
    (void)vfs;
    return realVFS()->xFullPathname(realVFS(), name, size, out);
}

static void *storeDlOpen(sqlite3_vfs *vfs, const char *name) {
    (void)vfs;
    return realVFS()->xDlOpen(realVFS(), name);
}

static void storeDlError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    realVFS()->xDlError(realVFS(), size, out);
}

static void (*storeDlSym(sqlite3_vfs *vfs, void *library, const char *symbol))(void) {
    (void)vfs;
    return realVFS()->xDlSym(realVFS(), library, symbol);
}

static void storeDlClose(sqlite3_vfs *vfs, void *library) {
    (void)vfs;
    realVFS()->xDlClose(realVFS(), library);
}

static int storeRandomness(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return realVFS()->xRandomness(realVFS(), size, out);
}

static int storeSleep(sqlite3_vfs *vfs, int microseconds) {
    (void)vfs;
    return realVFS()->xSleep(realVFS(), microseconds);
}

static int storeCurrentTime(sqlite3_vfs *vfs, double *out) {
    (void)vfs;
    return realVFS()->xCurrentTime(realVFS(), out);
}

static int storeGetLastError(sqlite3_vfs *vfs, int size, char *out) {
    (void)vfs;
    return realVFS()->xGetLastError ? realVFS()->xGetLastError(realVFS(), size, out) : 0;
}

static int storeCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    return realVFS()->xCurrentTimeInt64(realVFS(), out);
}

static void fillMethods(sqlite3_io_methods *methods, int log) {
    methods->iVersion = 3;
    methods->xClose = storeClose;
    methods->xRead = storeRead;
    methods->xWrite = log ? storeWrite : plainWrite;
    methods->xTruncate = storeTruncate;
    methods->xSync = storeSync;
    methods->xFileSize = storeFileSize;
    methods->xLock = storeLock;
    methods->xUnlock = storeUnlock;
    methods->xCheckReservedLock = storeCheckReservedLock;
    methods->xFileControl = storeFileControl;
    methods->xSectorSize = storeSectorSize;
    methods->xDeviceCharacteristics = storeDeviceCharacteristics;
    methods->xShmMap = storeShmMap;
    methods->xShmLock = storeShmLock;
    methods->xShmBarrier = storeShmBarrier;
    methods->xShmUnmap = storeShmUnmap;
    methods->xFetch = storeFetch;
    methods->xUnfetch = storeUnfetch;
}

static void registerVFS(void) {
    // Before SQLite initializes (finding the default VFS does it): no count of the memory SQLite holds, which
    // IntentQueue never asks for and which took a process-wide mutex around every allocation SQLite made. When
    // something in the process initialized SQLite first, this is refused (SQLITE_MISUSE) and changes nothing.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    if (real == NULL || real->iVersion < 2) {
        registerResult = SQLITE_ERROR;
        return;
    }
    fillMethods(&logMethods, 1);
    fillMethods(&otherMethods, 0);
    storeVFS.iVersion = 2;
    storeVFS.szOsFile = (int)sizeof(StoreFile) + real->szOsFile;
    storeVFS.mxPathname = real->mxPathname;
    storeVFS.zName = IQ_STORE_VFS_NAME;
    storeVFS.pAppData = real;
    storeVFS.xOpen = storeOpen;
    storeVFS.xDelete = storeDelete;
    storeVFS.xAccess = storeAccess;
    storeVFS.xFullPathname = storeFullPathname;
    storeVFS.xDlOpen = storeDlOpen;
    storeVFS.xDlError = storeDlError;
    storeVFS.xDlSym = storeDlSym;
    storeVFS.xDlClose = storeDlClose;
    storeVFS.xRandomness = storeRandomness;
    storeVFS.xSleep = storeSleep;
    storeVFS.xCurrentTime = storeCurrentTime;
    storeVFS.xGetLastError = storeGetLastError;
    storeVFS.xCurrentTimeInt64 = storeCurrentTimeInt64;
    registerResult = sqlite3_vfs_register(&storeVFS, 0);
}

int iq_store_vfs_register(void) {
    pthread_once(&registerOnce, registerVFS);
    return registerResult;
}

long long iq_store_vfs_joined_writes(void) { return atomic_load_explicit(&joinedWrites, memory_order_relaxed); }

IQSyncTimes iq_store_vfs_sync_times(void) {
    IQSyncTimes times;
    times.count = atomic_load_explicit(&syncCount, memory_order_relaxed);
    times.over5ms = atomic_load_explicit(&syncsOver5ms, memory_order_relaxed);
    times.over20ms = atomic_load_explicit(&syncsOver20ms, memory_order_relaxed);
    times.nanoseconds = atomic_load_explicit(&syncNanoseconds, memory_order_relaxed);
    times.slowestNanoseconds = atomic_load_explicit(&slowestSync, memory_order_relaxed);
    return times;
}

void iq_store_vfs_reset_slowest_sync(void) { atomic_store_explicit(&slowestSync, 0, memory_order_relaxed); }

/// The database file of `db`'s main schema, when it is one of this VFS's.
static StoreFile *databaseFile(sqlite3 *db) {
    sqlite3_file *file = NULL;
    if (sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK || file == NULL) return NULL;
    return file->pMethods == &otherMethods ? (StoreFile *)file : NULL;
}

int iq_store_vfs_set_durable(sqlite3 *db, int durable) {
    StoreFile *file = databaseFile(db);
    if (file == NULL) return SQLITE_NOTFOUND;
    file->durable = durable != 0;
    return SQLITE_OK;
}

int iq_store_sync_log(sqlite3 *db) {
    StoreFile *database = databaseFile(db);
    sqlite3_file *log = NULL;
    int rc = sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER, &log);
    if (rc != SQLITE_OK) return rc;
    if (log != NULL && log->pMethods != NULL) rc = log->pMethods->xSync(log, SQLITE_SYNC_NORMAL);
    if (rc == SQLITE_OK && database != NULL && database->syncFailed) return SQLITE_IOERR_FSYNC;
    return rc;
}

void *iq_store_vfs_database_file(sqlite3 *db) { return databaseFile(db); }

int iq_store_vfs_file_sync_failed(void *file) { return file != NULL && ((StoreFile *)file)->syncFailed; }

int iq_store_recover_log(sqlite3 *db) {
    StoreFile *database = databaseFile(db);
    if (database == NULL || !database->syncFailed) return SQLITE_OK;
    if (!sqlite3_get_autocommit(db)) return SQLITE_BUSY;
    int frames = -1;
    int copied = -1;
    // Every frame into the database file, which SQLite then syncs, and the log cut to nothing: the frames a failed
    // sync may have lost are read from the page cache, and nothing refers to them afterwards.
    int rc = sqlite3_wal_checkpoint_v2(db, "main", SQLITE_CHECKPOINT_TRUNCATE, &frames, &copied);
    if (rc != SQLITE_OK) return rc;
    if (frames > 0) return SQLITE_BUSY;
    // The database file again (a checkpoint that found no frame to copy syncs nothing), and the cut: should the old
    // log come back after a crash, its frames up to the lost ones would be put over the newer pages of the database.
    rc = database->real->pMethods->xSync(database->real, SQLITE_SYNC_NORMAL);
    if (rc == SQLITE_OK && database->log != NULL) rc = database->log->real->pMethods->xSync(database->log->real, SQLITE_SYNC_NORMAL);
    if (rc != SQLITE_OK) return rc;
    database->syncFailed = 0;
    return SQLITE_OK;
}

int iq_store_vfs_fail_log_syncs(sqlite3 *db, int count) {
    StoreFile *file = databaseFile(db);
    if (file == NULL) return SQLITE_NOTFOUND;
    file->failingLogSyncs = count;
    return SQLITE_OK;
}

long long iq_store_vfs_commit_syncs(sqlite3 *db) {
    StoreFile *file = databaseFile(db);
    return file == NULL ? -1 : file->commitSyncs;
}

long long iq_store_vfs_log_syncs(sqlite3 *db) {
    StoreFile *file = databaseFile(db);
    return file == NULL || file->log == NULL ? -1 : file->log->syncs;
}
