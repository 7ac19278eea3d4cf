#ifndef INTENTQUEUE_CRABBITMQ_H
#define INTENTQUEUE_CRABBITMQ_H

// rabbitmq-c, loaded when the first connection is made rather than when a tool
// starts: loading it maps OpenSSL too (libssl, libcrypto), about 1.4 ms of
// every process start, which a lookup in the status store never needs.
//
// The types and constants are rabbitmq-c's own (its headers); every function
// IntentQueue calls is one of the `iq_` forms below, which call the library
// loaded with dlopen. Calling an `amqp_` function directly fails to link: the
// executables do not link librabbitmq.

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

/// The shared library loaded (its Debian package is librabbitmq4).
#if defined(__APPLE__)
#define IQ_RABBITMQ_LIBRARY "librabbitmq.4.dylib"
#else
#define IQ_RABBITMQ_LIBRARY "librabbitmq.so.4"
#endif

/// Loads rabbitmq-c once; returns 1 when it is loaded, or 0 with `iq_rabbitmq_error` saying why.
int iq_rabbitmq_load(void);
/// Why loading failed (the dynamic loader's words), or NULL.
const char *iq_rabbitmq_error(void);

/// A new connection, loading the library first; NULL when it cannot be loaded
/// (`iq_rabbitmq_error` says why) or there is no memory. Every other function
/// below that takes a connection may be called once one exists.
amqp_connection_state_t iq_amqp_new_connection(void);
int iq_amqp_destroy_connection(amqp_connection_state_t state);
amqp_socket_t *iq_amqp_tcp_socket_new(amqp_connection_state_t state);
amqp_socket_t *iq_amqp_ssl_socket_new(amqp_connection_state_t state);
int iq_amqp_ssl_socket_set_cacert(amqp_socket_t *self, const char *cacert);
void iq_amqp_ssl_socket_set_verify_peer(amqp_socket_t *self, amqp_boolean_t verify);
void iq_amqp_ssl_socket_set_verify_hostname(amqp_socket_t *self, amqp_boolean_t verify);
int iq_amqp_socket_open_noblock(amqp_socket_t *self, const char *host, int port, const struct timeval *timeout);
amqp_socket_t *iq_amqp_get_socket(amqp_connection_state_t state);
int iq_amqp_get_sockfd(amqp_connection_state_t state);
int iq_amqp_set_rpc_timeout(amqp_connection_state_t state, const struct timeval *timeout);
int iq_amqp_set_handshake_timeout(amqp_connection_state_t state, const struct timeval *timeout);
/// amqp_login is variadic, which Swift cannot call: this is the PLAIN-only form.
amqp_rpc_reply_t iq_amqp_login_plain(amqp_connection_state_t state, const char *vhost, int channel_max, int frame_max,
                                     int heartbeat, const char *user, const char *password);
amqp_rpc_reply_t iq_amqp_get_rpc_reply(amqp_connection_state_t state);
amqp_rpc_reply_t iq_amqp_connection_close(amqp_connection_state_t state, int code);
amqp_channel_open_ok_t *iq_amqp_channel_open(amqp_connection_state_t state, amqp_channel_t channel);
amqp_rpc_reply_t iq_amqp_channel_close(amqp_connection_state_t state, amqp_channel_t channel, int code);
amqp_confirm_select_ok_t *iq_amqp_confirm_select(amqp_connection_state_t state, amqp_channel_t channel);
amqp_basic_qos_ok_t *iq_amqp_basic_qos(amqp_connection_state_t state, amqp_channel_t channel, uint32_t prefetch_size,
                                       uint16_t prefetch_count, amqp_boolean_t global);
amqp_exchange_declare_ok_t *iq_amqp_exchange_declare(amqp_connection_state_t state, amqp_channel_t channel,
                                                     amqp_bytes_t exchange, amqp_bytes_t type, amqp_boolean_t passive,
                                                     amqp_boolean_t durable, amqp_boolean_t auto_delete,
                                                     amqp_boolean_t internal, amqp_table_t arguments);
amqp_exchange_delete_ok_t *iq_amqp_exchange_delete(amqp_connection_state_t state, amqp_channel_t channel,
                                                   amqp_bytes_t exchange, amqp_boolean_t if_unused);
amqp_queue_declare_ok_t *iq_amqp_queue_declare(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                               amqp_boolean_t passive, amqp_boolean_t durable, amqp_boolean_t exclusive,
                                               amqp_boolean_t auto_delete, amqp_table_t arguments);
amqp_queue_bind_ok_t *iq_amqp_queue_bind(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                         amqp_bytes_t exchange, amqp_bytes_t routing_key, amqp_table_t arguments);
amqp_queue_unbind_ok_t *iq_amqp_queue_unbind(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                             amqp_bytes_t exchange, amqp_bytes_t routing_key, amqp_table_t arguments);
amqp_queue_delete_ok_t *iq_amqp_queue_delete(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                             amqp_boolean_t if_unused, amqp_boolean_t if_empty);
amqp_basic_consume_ok_t *iq_amqp_basic_consume(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                               amqp_bytes_t consumer_tag, amqp_boolean_t no_local, amqp_boolean_t no_ack,
                                               amqp_boolean_t exclusive, amqp_table_t arguments);
amqp_basic_cancel_ok_t *iq_amqp_basic_cancel(amqp_connection_state_t state, amqp_channel_t channel,
                                             amqp_bytes_t consumer_tag);
int iq_amqp_basic_publish(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t exchange,
                          amqp_bytes_t routing_key, amqp_boolean_t mandatory, amqp_boolean_t immediate,
                          struct amqp_basic_properties_t_ const *properties, amqp_bytes_t body);
amqp_rpc_reply_t iq_amqp_basic_get(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                   amqp_boolean_t no_ack);
int iq_amqp_basic_ack(amqp_connection_state_t state, amqp_channel_t channel, uint64_t delivery_tag,
                      amqp_boolean_t multiple);
int iq_amqp_basic_reject(amqp_connection_state_t state, amqp_channel_t channel, uint64_t delivery_tag,
                         amqp_boolean_t requeue);
int iq_amqp_send_method(amqp_connection_state_t state, amqp_channel_t channel, amqp_method_number_t id, void *decoded);
amqp_rpc_reply_t iq_amqp_consume_message(amqp_connection_state_t state, amqp_envelope_t *envelope,
                                         const struct timeval *timeout, int flags);
void iq_amqp_destroy_envelope(amqp_envelope_t *envelope);
amqp_rpc_reply_t iq_amqp_read_message(amqp_connection_state_t state, amqp_channel_t channel, amqp_message_t *message,
                                      int flags);
void iq_amqp_destroy_message(amqp_message_t *message);
int iq_amqp_simple_wait_frame(amqp_connection_state_t state, amqp_frame_t *decoded_frame);
amqp_boolean_t iq_amqp_frames_enqueued(amqp_connection_state_t state);
amqp_boolean_t iq_amqp_data_in_buffer(amqp_connection_state_t state);
void iq_amqp_maybe_release_buffers(amqp_connection_state_t state);
/// The library's text for an error code; before it is loaded, a text saying so.
const char *iq_amqp_error_string2(int err);

/// The bytes of a C string, not copied (as amqp_cstring_bytes).
static inline amqp_bytes_t iq_amqp_cstring_bytes(const char *cstr) {
    amqp_bytes_t bytes = {strlen(cstr), (void *)cstr};
    return bytes;
}

/// An empty table and empty bytes (rabbitmq-c's amqp_empty_table and amqp_empty_bytes).
static inline amqp_table_t iq_amqp_empty_table(void) {
    amqp_table_t table = {0, NULL};
    return table;
}
static inline amqp_bytes_t iq_amqp_empty_bytes(void) {
    amqp_bytes_t bytes = {0, NULL};
    return bytes;
}

/// Reads an integer-valued header of any integer kind; returns 0 when the entry holds no integer.
static inline int iq_amqp_entry_integer(const amqp_field_value_t *value, int64_t *out) {
    switch (value->kind) {
    case AMQP_FIELD_KIND_I8: *out = value->value.i8; return 1;
    case AMQP_FIELD_KIND_U8: *out = value->value.u8; return 1;
    case AMQP_FIELD_KIND_I16: *out = value->value.i16; return 1;
    case AMQP_FIELD_KIND_U16: *out = value->value.u16; return 1;
    case AMQP_FIELD_KIND_I32: *out = value->value.i32; return 1;
    case AMQP_FIELD_KIND_U32: *out = value->value.u32; return 1;
    case AMQP_FIELD_KIND_I64: *out = value->value.i64; return 1;
    case AMQP_FIELD_KIND_U64: *out = (int64_t)value->value.u64; return 1;
    default: return 0;
    }
}

/// Reads a string-valued header (long string or byte array); returns 0 otherwise.
static inline int iq_amqp_entry_bytes(const amqp_field_value_t *value, amqp_bytes_t *out) {
    if (value->kind == AMQP_FIELD_KIND_UTF8 || value->kind == AMQP_FIELD_KIND_BYTES) {
        *out = value->value.bytes;
        return 1;
    }
    return 0;
}

#endif
