/*
 * IntentQueue's message pattern in plain C (rabbitmq-c and SQLite), with none
 * of IntentQueue's code: the independent check of intent-bench's ceiling phase.
 *
 *   ceiling --host H --port P --user U --password W --vhost V
 *           --exchange intents --key SendMessage --work-queue Q --status-exchange X --ledger-queue L
 *           --intent-body FILE --status-body FILE[=routing.key] [--status-body …]
 *           --intents N --producers P --window W --prefetch F --batch B --db PATH
 *           [--rate R [--linger-us U] [--sync-ms S]] [--effects PATH]
 *
 * The topology must exist (intent-bench declares it). P producer threads
 * publish N intents (persistent, mandatory, message id, type, timestamp) with
 * confirms, at most W unconfirmed each. One worker thread consumes the work
 * queue with prefetch F and, for each delivery, publishes every status body
 * (persistent, confirmed) to the status exchange, then acks it (`multiple`)
 * once they are confirmed. As IntentQueue's worker sends a round of several
 * commands, the events of deliveries read together leave together: the
 * socket is corked while deliveries already in rabbitmq-c's buffer are read
 * (without waiting) and their events published, and uncorked before any read
 * that would wait; acks go uncorked. One recorder thread consumes the ledger queue
 * (every intent and every status event) and writes each message as a row in
 * SQLite (WAL, synchronous=FULL), in transactions of at most B, acking each
 * batch after its commit. Prints one JSON object: seconds from the start to
 * the last commit, intents per second, this process's CPU seconds and each
 * kind of thread's (producers, worker, recorder).
 *
 * With --rate the producers offer R intents/s in all (open loop: each intent
 * at its own time), and the JSON adds latency percentiles from each publish
 * to the commit of the intent's status event. --sync-ms makes the recorder
 * write as IntentQueue's does at a moderate load: an open batch is written once
 * nothing more is waiting (--linger-us 0), commits with synchronous=NORMAL
 * (visible at once), and the first commit S ms after the last sync is a FULL
 * one, after which everything before it is acked. --linger-us U lets an open
 * batch wait U µs of quiet for more (5 U at most); rabbitmq-c waits in whole
 * milliseconds, rounded down, so under 1000 it does not wait at all.
 *
 * --effects PATH adds what IntentQueue's once-only effects cost at the least: the worker holds the deliveries it
 * reads together, commits one row per intent (its effect and outcome, keyed by the message id) in one synced
 * transaction of a SQLite file of its own (WAL, synchronous=FULL), and only then publishes their status events,
 * as a handler's `once` commits before the worker publishes the outcome. One commit per delivery at a light load,
 * one per read at full speed.
 */
#include <amqp.h>
#include <amqp_tcp_socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>

#define MAX_EVENTS 8

static struct {
    const char *host, *user, *password, *vhost;
    int port;
    const char *exchange, *key, *work_queue, *status_exchange, *ledger_queue, *db, *effects;
    amqp_bytes_t intent_body;
    amqp_bytes_t status_bodies[MAX_EVENTS];
    const char *status_keys[MAX_EVENTS];
    int events;
    long intents;
    int producers, window, prefetch, batch;
    double rate;
    int sync_ms, linger_us;
} config = {.host = "127.0.0.1", .user = "guest", .password = "guest", .vhost = "/", .port = 5672,
            .producers = 2, .window = 128, .prefetch = 64, .batch = 500};

static pthread_barrier_t start_gate;
static double started_at;
/* With --rate: when each intent was published (index = sequence × producers + producer), and when its last
 * status event was committed by the recorder. */
static double *published_at, *finished_at;

/* CPU seconds of the calling thread so far. */
static double thread_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Each thread's CPU, from the start gate to its end: the producers', the worker's and the recorder's. */
static double producers_cpu, worker_cpu, recorder_cpu;
static pthread_mutex_t cpu_lock = PTHREAD_MUTEX_INITIALIZER;

static void add_cpu(double *total, double since) {
    pthread_mutex_lock(&cpu_lock);
    *total += thread_cpu() - since;
    pthread_mutex_unlock(&cpu_lock);
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noreturn, format(printf, 1, 2))) static void die(const char *format, ...) {
    va_list args;
    va_start(args, format);
    fprintf(stderr, "ceiling: ");
    vfprintf(stderr, format, args);
    fprintf(stderr, "\n");
    va_end(args);
    exit(1);
}

static void check_reply(amqp_rpc_reply_t reply, const char *what) {
    if (reply.reply_type == AMQP_RESPONSE_NORMAL) return;
    if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION) die("%s: %s", what, amqp_error_string2(reply.library_error));
    die("%s: the broker closed the channel or connection", what);
}

static void check_status(int status, const char *what) {
    if (status != AMQP_STATUS_OK) die("%s: %s", what, amqp_error_string2(status));
}

static amqp_connection_state_t open_connection(void) {
    amqp_connection_state_t connection = amqp_new_connection();
    amqp_socket_t *socket = amqp_tcp_socket_new(connection);
    if (!socket) die("cannot create a socket");
    check_status(amqp_socket_open(socket, config.host, config.port), "connecting");
    check_reply(amqp_login(connection, config.vhost, 0, 131072, 0, AMQP_SASL_METHOD_PLAIN, config.user, config.password),
                "logging in");
    amqp_channel_open(connection, 1);
    check_reply(amqp_get_rpc_reply(connection), "opening a channel");
    return connection;
}

static void close_connection(amqp_connection_state_t connection) {
    amqp_channel_close(connection, 1, AMQP_REPLY_SUCCESS);
    amqp_connection_close(connection, AMQP_REPLY_SUCCESS);
    amqp_destroy_connection(connection);
}

static void enable_confirms(amqp_connection_state_t connection) {
    amqp_confirm_select(connection, 1);
    check_reply(amqp_get_rpc_reply(connection), "confirm.select");
}

/* Reads one frame that is not a delivery: a confirm (returns its tag and
 * sets *multiple), a return (fatal), or anything else (returns 0). */
static uint64_t read_confirm(amqp_connection_state_t connection, struct timeval *timeout, int *multiple, int *got) {
    amqp_frame_t frame;
    *got = 0;
    int status = amqp_simple_wait_frame_noblock(connection, &frame, timeout);
    if (status == AMQP_STATUS_TIMEOUT) return 0;
    check_status(status, "reading a frame");
    if (frame.frame_type != AMQP_FRAME_METHOD) return 0;
    switch (frame.payload.method.id) {
    case AMQP_BASIC_ACK_METHOD: {
        amqp_basic_ack_t *ack = frame.payload.method.decoded;
        *multiple = ack->multiple;
        *got = 1;
        return ack->delivery_tag;
    }
    case AMQP_BASIC_NACK_METHOD: die("the broker refused a publish (basic.nack)");
    case AMQP_BASIC_RETURN_METHOD: die("a publish was returned: nothing is bound for it");
    case AMQP_CHANNEL_CLOSE_METHOD: die("the broker closed the channel");
    case AMQP_CONNECTION_CLOSE_METHOD: die("the broker closed the connection");
    }
    return 0;
}

/* ── producers ─────────────────────────────────────────────────────────── */

struct producer {
    pthread_t thread;
    long count;
    int index;
    double finished;
};

static void *produce(void *argument) {
    struct producer *self = argument;
    amqp_connection_state_t connection = open_connection();
    enable_confirms(connection);
    char id[64];
    amqp_basic_properties_t properties = {0};
    properties._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TYPE_FLAG |
                        AMQP_BASIC_TIMESTAMP_FLAG | AMQP_BASIC_CONTENT_TYPE_FLAG;
    properties.delivery_mode = 2;
    properties.content_type = amqp_cstring_bytes("application/json");
    properties.type = amqp_cstring_bytes(config.key);
    pthread_barrier_wait(&start_gate);
    double start = now(), cpu_start = thread_cpu();
    uint64_t published = 0, confirmed = 0;
    while (confirmed < (uint64_t)self->count) {
        double due = 0;
        while (published < (uint64_t)self->count && published - confirmed < (uint64_t)config.window) {
            long index = (long)published * config.producers + self->index;
            if (config.rate > 0) {
                /* Open loop: each intent at its own time, whatever the earlier ones' confirms. */
                due = start + index / config.rate;
                if (now() < due) break;
                published_at[index] = now();
            }
            snprintf(id, sizeof id, "ceiling-%d-%llu", self->index, (unsigned long long)published);
            properties.message_id = amqp_cstring_bytes(id);
            properties.timestamp = (uint64_t)time(NULL);
            check_status(amqp_basic_publish(connection, 1, amqp_cstring_bytes(config.exchange), amqp_cstring_bytes(config.key),
                                            1, 0, &properties, config.intent_body),
                         "publishing an intent");
            published++;
        }
        struct timeval timeout = {10, 0};
        if (config.rate > 0 && published < (uint64_t)self->count && due > 0) {
            double wait = due - now();
            if (wait < 0) wait = 0;
            if (wait < 0.001) {
                /* rabbitmq-c waits in whole milliseconds: a shorter wait would spin. */
                struct timespec pause = {0, (long)(wait * 1e9)};
                nanosleep(&pause, NULL);
                continue;
            }
            timeout.tv_sec = (long)wait;
            timeout.tv_usec = (long)((wait - (long)wait) * 1e6);
        }
        int multiple, got;
        uint64_t tag = read_confirm(connection, &timeout, &multiple, &got);
        if (!got) continue;
        /* Confirms come in order on one channel; a single one for the next message counts like a multiple one. */
        (void)multiple;
        if (tag > confirmed) confirmed = tag;
    }
    self->finished = now();
    add_cpu(&producers_cpu, cpu_start);
    close_connection(connection);
    return NULL;
}

/* ── worker ────────────────────────────────────────────────────────────── */

/* Holds the socket's segments (TCP_CORK) until uncorked, which sends them. */
static void cork(amqp_connection_state_t connection, int on) {
    int fd = amqp_get_sockfd(connection);
    if (fd >= 0) (void)setsockopt(fd, IPPROTO_TCP, TCP_CORK, &on, sizeof on);
}

/* Publishes every status event of one intent; returns the publish sequence of the last. */
static uint64_t publish_events(amqp_connection_state_t connection, amqp_basic_properties_t *properties, uint64_t sequence) {
    for (int event = 0; event < config.events; event++) {
        check_status(amqp_basic_publish(connection, 1, amqp_cstring_bytes(config.status_exchange),
                                        amqp_cstring_bytes(config.status_keys[event]), 0, 0, properties,
                                        config.status_bodies[event]),
                     "publishing a status event");
        sequence++;
    }
    return sequence;
}

/* With --effects: the worker's database, where each intent's effect and outcome are committed (synced) before its
 * status events are published, as a handler's `once` does; the deliveries read together share one commit. */
struct effects {
    sqlite3 *db;
    sqlite3_stmt *insert;
    /* Deliveries read and not yet committed: their message ids (copied) and delivery tags. */
    amqp_bytes_t *ids;
    uint64_t *tags;
    int count;
};

static void sql(sqlite3 *db, const char *statement);

static void open_effects(struct effects *effects) {
    if (sqlite3_open(config.effects, &effects->db) != SQLITE_OK) die("cannot open %s", config.effects);
    sqlite3_busy_timeout(effects->db, 5000);
    sql(effects->db, "PRAGMA journal_mode=WAL");
    sql(effects->db, "PRAGMA synchronous=FULL");
    sql(effects->db, "CREATE TABLE IF NOT EXISTS effect (id TEXT PRIMARY KEY NOT NULL, outcome TEXT NOT NULL, at REAL NOT NULL)");
    if (sqlite3_prepare_v2(effects->db, "INSERT OR IGNORE INTO effect(id, outcome, at) VALUES (?, 'success', ?)", -1,
                           &effects->insert, NULL) != SQLITE_OK)
        die("preparing: %s", sqlite3_errmsg(effects->db));
    effects->ids = calloc((size_t)config.prefetch, sizeof *effects->ids);
    effects->tags = calloc((size_t)config.prefetch, sizeof *effects->tags);
    if (!effects->ids || !effects->tags) die("out of memory");
}

/* Commits the held deliveries' effects in one synced transaction. */
static void commit_effects(struct effects *effects) {
    sql(effects->db, "BEGIN IMMEDIATE");
    for (int i = 0; i < effects->count; i++) {
        sqlite3_bind_text(effects->insert, 1, effects->ids[i].bytes, (int)effects->ids[i].len, SQLITE_STATIC);
        sqlite3_bind_double(effects->insert, 2, now());
        if (sqlite3_step(effects->insert) != SQLITE_DONE) die("recording an effect: %s", sqlite3_errmsg(effects->db));
        sqlite3_reset(effects->insert);
    }
    sql(effects->db, "COMMIT");
}

static void *work(void *argument) {
    (void)argument;
    struct effects effects = {0};
    if (config.effects) open_effects(&effects);
    amqp_connection_state_t connection = open_connection();
    enable_confirms(connection);
    amqp_basic_qos(connection, 1, 0, (uint16_t)config.prefetch, 0);
    check_reply(amqp_get_rpc_reply(connection), "basic.qos");
    amqp_basic_consume(connection, 1, amqp_cstring_bytes(config.work_queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    check_reply(amqp_get_rpc_reply(connection), "basic.consume");
    /* Deliveries in order, each with the publish sequence of its last status event. */
    uint64_t *last_sequence = calloc((size_t)config.intents, sizeof *last_sequence);
    uint64_t *delivery_tag = calloc((size_t)config.intents, sizeof *delivery_tag);
    if (!last_sequence || !delivery_tag) die("out of memory");
    long received = 0, settled = 0;
    uint64_t sequence = 0, confirmed = 0, ack_up_to = 0;
    int corked = 0;
    amqp_basic_properties_t properties = {0};
    properties._flags = AMQP_BASIC_DELIVERY_MODE_FLAG | AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TYPE_FLAG |
                        AMQP_BASIC_CONTENT_TYPE_FLAG;
    properties.delivery_mode = 2;
    properties.content_type = amqp_cstring_bytes("application/json");
    properties.type = amqp_cstring_bytes(config.key);
    pthread_barrier_wait(&start_gate);
    double cpu_start = thread_cpu();
    while (settled < config.intents) {
        amqp_envelope_t envelope;
        struct timeval timeout = {10, 0}, no_wait = {0, 0};
        int nothing = 0;
        amqp_maybe_release_buffers(connection);
        /* While corked, only what rabbitmq-c already holds is read: a read that would wait uncorks first. */
        amqp_rpc_reply_t reply = amqp_consume_message(connection, &envelope, corked ? &no_wait : &timeout, 0);
        if (reply.reply_type == AMQP_RESPONSE_NORMAL) {
            if (received + effects.count >= config.intents) die("more deliveries than intents");
            if (config.effects) {
                /* Held until the deliveries read together are committed. */
                if (effects.count == config.prefetch) die("more unacked deliveries than the prefetch");
                effects.ids[effects.count] = amqp_bytes_malloc_dup(envelope.message.properties.message_id);
                effects.tags[effects.count++] = envelope.delivery_tag;
            } else {
                properties.message_id = envelope.message.properties.message_id;
                if (!corked && amqp_data_in_buffer(connection)) {
                    cork(connection, 1);
                    corked = 1;
                }
                sequence = publish_events(connection, &properties, sequence);
                last_sequence[received] = sequence;
                delivery_tag[received] = envelope.delivery_tag;
                received++;
            }
            amqp_destroy_envelope(&envelope);
        } else if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && reply.library_error == AMQP_STATUS_UNEXPECTED_STATE) {
            struct timeval zero = {0, 0};
            int multiple, got;
            uint64_t tag = read_confirm(connection, &zero, &multiple, &got);
            if (got) {
                (void)multiple;
                if (tag > confirmed) confirmed = tag;
                while (settled < received && last_sequence[settled] <= confirmed) {
                    ack_up_to = delivery_tag[settled];
                    settled++;
                }
            }
        } else if (reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && reply.library_error == AMQP_STATUS_TIMEOUT) {
            if (!corked) die("the worker waited 10 s for a delivery or a confirm");
            nothing = 1;
        } else {
            check_reply(reply, "consuming");
        }
        /* What was corked leaves once nothing complete waits in the buffer; then one ack for everything settled. */
        int drained = settled == config.intents || !amqp_data_in_buffer(connection);
        if (effects.count > 0 && (drained || nothing)) {
            commit_effects(&effects);
            if (effects.count > 1 && !corked) {
                cork(connection, 1);
                corked = 1;
            }
            for (int i = 0; i < effects.count; i++) {
                properties.message_id = effects.ids[i];
                sequence = publish_events(connection, &properties, sequence);
                last_sequence[received] = sequence;
                delivery_tag[received] = effects.tags[i];
                received++;
                amqp_bytes_free(effects.ids[i]);
            }
            effects.count = 0;
        }
        if (corked && (drained || nothing)) {
            cork(connection, 0);
            corked = 0;
        }
        if (ack_up_to && drained) {
            check_status(amqp_basic_ack(connection, 1, ack_up_to, 1), "acking");
            ack_up_to = 0;
        }
    }
    add_cpu(&worker_cpu, cpu_start);
    if (config.effects) {
        sqlite3_finalize(effects.insert);
        sqlite3_close(effects.db);
        free(effects.ids);
        free(effects.tags);
    }
    free(last_sequence);
    free(delivery_tag);
    close_connection(connection);
    return NULL;
}

/* ── recorder ──────────────────────────────────────────────────────────── */

static double last_commit;

static void sql(sqlite3 *db, const char *statement) {
    char *error = NULL;
    if (sqlite3_exec(db, statement, NULL, NULL, &error) != SQLITE_OK) die("SQLite: %s: %s", statement, error);
}

static void *record(void *argument) {
    (void)argument;
    sqlite3 *db;
    if (sqlite3_open(config.db, &db) != SQLITE_OK) die("cannot open %s", config.db);
    sqlite3_busy_timeout(db, 5000);
    sql(db, "PRAGMA journal_mode=WAL");
    sql(db, "PRAGMA synchronous=FULL");
    sql(db, "CREATE TABLE IF NOT EXISTS ledger (id INTEGER PRIMARY KEY, routing_key TEXT NOT NULL, body TEXT NOT NULL)");
    sqlite3_stmt *insert;
    if (sqlite3_prepare_v2(db, "INSERT INTO ledger(routing_key, body) VALUES (?, ?)", -1, &insert, NULL) != SQLITE_OK)
        die("preparing: %s", sqlite3_errmsg(db));
    amqp_connection_state_t connection = open_connection();
    amqp_basic_qos(connection, 1, 0, (uint16_t)(config.batch * 2 > 65535 ? 65535 : config.batch * 2), 0);
    check_reply(amqp_get_rpc_reply(connection), "basic.qos");
    amqp_basic_consume(connection, 1, amqp_cstring_bytes(config.ledger_queue), amqp_empty_bytes, 0, 0, 0, amqp_empty_table);
    check_reply(amqp_get_rpc_reply(connection), "basic.consume");
    long expected = config.intents * (1 + config.events), written = 0;
    int in_batch = 0, synced_commit = 1;
    double batch_started = 0, last_sync = 0;
    /* With --rate: the intents whose status events this batch holds, to note when it commits. */
    long *batch_intents = calloc((size_t)config.batch, sizeof *batch_intents);
    int batch_finished = 0;
    if (!batch_intents) die("out of memory");
    uint64_t last_tag = 0;
    pthread_barrier_wait(&start_gate);
    double cpu_start = thread_cpu();
    while (written < expected) {
        amqp_envelope_t envelope;
        struct timeval poll_only = {0, 0}, wait = {10, 0};
        if (in_batch && config.linger_us > 0) {
            /* An open batch waits for more, up to linger of quiet and 5 × linger in all (IntentQueue's does not). */
            double left = batch_started + 5 * config.linger_us / 1e6 - now();
            if (left > config.linger_us / 1e6) left = config.linger_us / 1e6;
            if (left > 0) poll_only.tv_usec = (long)(left * 1e6);
        }
        amqp_maybe_release_buffers(connection);
        amqp_rpc_reply_t reply = amqp_consume_message(connection, &envelope, in_batch ? &poll_only : &wait, 0);
        int have = reply.reply_type == AMQP_RESPONSE_NORMAL;
        if (!have && !(reply.reply_type == AMQP_RESPONSE_LIBRARY_EXCEPTION && reply.library_error == AMQP_STATUS_TIMEOUT))
            check_reply(reply, "consuming the ledger");
        if (!have && !in_batch) die("the recorder waited 10 s for a message");
        if (have) {
            if (!in_batch) {
                batch_started = now();
                if (config.sync_ms > 0) {
                    /* As IntentQueue's recorder: a batch is written at once and synced (then acked) at most sync_ms later. */
                    int durable = batch_started - last_sync >= config.sync_ms / 1000.0;
                    if (durable != synced_commit) sql(db, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL");
                    synced_commit = durable;
                }
                sql(db, "BEGIN IMMEDIATE");
            }
            sqlite3_bind_text(insert, 1, envelope.routing_key.bytes, (int)envelope.routing_key.len, SQLITE_TRANSIENT);
            sqlite3_bind_text(insert, 2, envelope.message.body.bytes, (int)envelope.message.body.len, SQLITE_TRANSIENT);
            if (sqlite3_step(insert) != SQLITE_DONE) die("inserting: %s", sqlite3_errmsg(db));
            sqlite3_reset(insert);
            last_tag = envelope.delivery_tag;
            in_batch++;
            int producer;
            unsigned long long sequence;
            amqp_bytes_t key = envelope.routing_key, mid = envelope.message.properties.message_id;
            char text[64];
            int is_status = !(key.len == strlen(config.key) && !memcmp(key.bytes, config.key, key.len));
            if (config.rate > 0 && is_status && mid.len < sizeof text) {
                memcpy(text, mid.bytes, mid.len);
                text[mid.len] = '\0';
                if (sscanf(text, "ceiling-%d-%llu", &producer, &sequence) == 2)
                    batch_intents[batch_finished++] = (long)sequence * config.producers + producer;
            }
            amqp_destroy_envelope(&envelope);
        }
        if (in_batch && (!have || in_batch >= config.batch || written + in_batch >= expected)) {
            sql(db, "COMMIT");
            if (synced_commit || written + in_batch >= expected) {
                /* The last batch, committed unsynced: a checkpoint syncs the log before it copies it back. */
                if (!synced_commit) sql(db, "PRAGMA wal_checkpoint(PASSIVE)");
                check_status(amqp_basic_ack(connection, 1, last_tag, 1), "acking the ledger");
                last_sync = now();
            }
            written += in_batch;
            in_batch = 0;
            last_commit = now();
            for (int i = 0; i < batch_finished; i++)
                if (batch_intents[i] >= 0 && batch_intents[i] < config.intents) finished_at[batch_intents[i]] = last_commit;
            batch_finished = 0;
        }
    }
    add_cpu(&recorder_cpu, cpu_start);
    sqlite3_finalize(insert);
    sqlite3_close(db);
    close_connection(connection);
    return NULL;
}

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* ── main ──────────────────────────────────────────────────────────────── */

static amqp_bytes_t read_file(const char *path) {
    FILE *file = fopen(path, "rb");
    if (!file) die("cannot read %s", path);
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    amqp_bytes_t bytes = amqp_bytes_malloc((size_t)size);
    if (size > 0 && fread(bytes.bytes, 1, (size_t)size, file) != (size_t)size) die("cannot read %s", path);
    fclose(file);
    return bytes;
}

static long number(const char *text, const char *option, long low, long high) {
    char *end;
    long value = strtol(text, &end, 10);
    if (*text == '\0' || *end != '\0' || value < low || value > high) die("%s takes a number from %ld to %ld, not '%s'", option, low, high, text);
    return value;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *option = argv[i];
        if (i + 1 >= argc) die("%s needs a value", option);
        const char *value = argv[++i];
        if (!strcmp(option, "--host")) config.host = value;
        else if (!strcmp(option, "--port")) config.port = (int)number(value, option, 1, 65535);
        else if (!strcmp(option, "--user")) config.user = value;
        else if (!strcmp(option, "--password")) config.password = value;
        else if (!strcmp(option, "--vhost")) config.vhost = value;
        else if (!strcmp(option, "--exchange")) config.exchange = value;
        else if (!strcmp(option, "--key")) config.key = value;
        else if (!strcmp(option, "--work-queue")) config.work_queue = value;
        else if (!strcmp(option, "--status-exchange")) config.status_exchange = value;
        else if (!strcmp(option, "--ledger-queue")) config.ledger_queue = value;
        else if (!strcmp(option, "--db")) config.db = value;
        else if (!strcmp(option, "--effects")) config.effects = value;
        else if (!strcmp(option, "--intent-body")) config.intent_body = read_file(value);
        else if (!strcmp(option, "--status-body")) {
            if (config.events == MAX_EVENTS) die("at most %d --status-body", MAX_EVENTS);
            char *copy = strdup(value), *key = strchr(copy, '=');
            if (!key) die("--status-body takes FILE=routing.key, not '%s'", value);
            *key++ = '\0';
            config.status_bodies[config.events] = read_file(copy);
            config.status_keys[config.events++] = key;
        } else if (!strcmp(option, "--intents")) config.intents = number(value, option, 1, 100000000);
        else if (!strcmp(option, "--producers")) config.producers = (int)number(value, option, 1, 64);
        else if (!strcmp(option, "--window")) config.window = (int)number(value, option, 1, 100000);
        else if (!strcmp(option, "--prefetch")) config.prefetch = (int)number(value, option, 1, 65535);
        else if (!strcmp(option, "--batch")) config.batch = (int)number(value, option, 1, 100000);
        else if (!strcmp(option, "--rate")) config.rate = (double)number(value, option, 1, 1000000);
        else if (!strcmp(option, "--sync-ms")) config.sync_ms = (int)number(value, option, 0, 10000);
        else if (!strcmp(option, "--linger-us")) config.linger_us = (int)number(value, option, 0, 1000000);
        else die("unknown option %s", option);
    }
    if (!config.exchange || !config.key || !config.work_queue || !config.status_exchange || !config.ledger_queue || !config.db ||
        !config.intent_body.bytes || config.intents == 0)
        die("needs --exchange, --key, --work-queue, --status-exchange, --ledger-queue, --db, --intent-body and --intents");
    if (config.producers > config.intents) config.producers = (int)config.intents;
    published_at = calloc((size_t)config.intents, sizeof *published_at);
    finished_at = calloc((size_t)config.intents, sizeof *finished_at);
    if (!published_at || !finished_at) die("out of memory");

    pthread_barrier_init(&start_gate, NULL, (unsigned)(config.producers + 3));
    struct producer *producers = calloc((size_t)config.producers, sizeof *producers);
    pthread_t worker, recorder;
    pthread_create(&recorder, NULL, record, NULL);
    pthread_create(&worker, NULL, work, NULL);
    for (int i = 0; i < config.producers; i++) {
        producers[i].index = i;
        producers[i].count = config.intents / config.producers + (i < config.intents % config.producers ? 1 : 0);
        pthread_create(&producers[i].thread, NULL, produce, &producers[i]);
    }
    struct rusage before, after;
    pthread_barrier_wait(&start_gate);
    getrusage(RUSAGE_SELF, &before);
    started_at = now();
    for (int i = 0; i < config.producers; i++) pthread_join(producers[i].thread, NULL);
    pthread_join(worker, NULL);
    pthread_join(recorder, NULL);
    getrusage(RUSAGE_SELF, &after);
    double seconds = last_commit - started_at;
    double cpu = (after.ru_utime.tv_sec - before.ru_utime.tv_sec) + (after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6 +
                 (after.ru_stime.tv_sec - before.ru_stime.tv_sec) + (after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
    double submitted = 0;
    for (int i = 0; i < config.producers; i++)
        if (producers[i].finished > submitted) submitted = producers[i].finished;
    printf("{\"intents\":%ld,\"seconds\":%.3f,\"perSecond\":%.1f,\"cpuSeconds\":%.3f,\"submitSeconds\":%.3f,\"statusEvents\":%d,"
           "\"producersCpuSeconds\":%.3f,\"workerCpuSeconds\":%.3f,\"recorderCpuSeconds\":%.3f",
           config.intents, seconds, config.intents / seconds, cpu, submitted - started_at, config.events, producers_cpu, worker_cpu,
           recorder_cpu);
    if (config.rate > 0) {
        /* Submit (just before the publish) to the commit of the intent's last status event, in ms. */
        double *latency = malloc((size_t)config.intents * sizeof *latency);
        long measured = 0;
        for (long i = 0; i < config.intents; i++)
            if (finished_at[i] > 0 && published_at[i] > 0) latency[measured++] = (finished_at[i] - published_at[i]) * 1000;
        qsort(latency, (size_t)measured, sizeof *latency, compare_doubles);
        if (measured > 0)
            printf(",\"rate\":%.0f,\"latencyMs\":{\"p50\":%.2f,\"p95\":%.2f,\"p99\":%.2f,\"max\":%.2f}", config.rate,
                   latency[measured / 2], latency[measured * 95 / 100], latency[measured * 99 / 100], latency[measured - 1]);
        free(latency);
    }
    printf("}\n");
    return 0;
}
