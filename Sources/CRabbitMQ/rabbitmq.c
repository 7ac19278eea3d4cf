// rabbitmq-c through dlopen: see CRabbitMQ.h.

#include "CRabbitMQ.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

// Every library function IntentQueue calls, by name; each gets a pointer of its own type.
#define IQ_FUNCTIONS(X)                                                                                               \
    X(amqp_new_connection) X(amqp_destroy_connection) X(amqp_tcp_socket_new) X(amqp_ssl_socket_new)                 \
    X(amqp_ssl_socket_set_cacert) X(amqp_ssl_socket_set_verify_peer) X(amqp_ssl_socket_set_verify_hostname)         \
    X(amqp_socket_open_noblock) X(amqp_get_socket) X(amqp_get_sockfd) X(amqp_set_rpc_timeout)                       \
    X(amqp_set_handshake_timeout) X(amqp_login_with_properties) X(amqp_get_rpc_reply) X(amqp_connection_close) X(amqp_channel_open) \
    X(amqp_channel_close) X(amqp_confirm_select) X(amqp_basic_qos) X(amqp_exchange_declare) X(amqp_exchange_delete) \
    X(amqp_queue_declare) X(amqp_queue_bind) X(amqp_queue_unbind) X(amqp_queue_delete) X(amqp_basic_consume) X(amqp_basic_cancel)        \
    X(amqp_basic_publish) X(amqp_basic_get) X(amqp_basic_ack) X(amqp_basic_reject) X(amqp_send_method)             \
    X(amqp_consume_message) X(amqp_destroy_envelope) X(amqp_read_message) X(amqp_destroy_message)                   \
    X(amqp_simple_wait_frame) X(amqp_frames_enqueued) X(amqp_data_in_buffer) X(amqp_maybe_release_buffers)          \
    X(amqp_error_string2)

#define IQ_POINTER(name) static __typeof__(&name) p_##name;
IQ_FUNCTIONS(IQ_POINTER)

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char failure[512];

static void load(void) {
    // RTLD_LOCAL: its symbols (and OpenSSL's) stay out of the global namespace.
    void *library = dlopen(IQ_RABBITMQ_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "could not load rabbitmq-c (%s, Debian package librabbitmq4): %s",
                 IQ_RABBITMQ_LIBRARY, why ? why : "no reason given");
        return;
    }
#define IQ_RESOLVE(name)                                                                                              \
    p_##name = (__typeof__(p_##name))dlsym(library, #name);                                                          \
    if (p_##name == NULL) {                                                                                          \
        snprintf(failure, sizeof failure, "%s has no %s: rabbitmq-c 0.11 or later is needed", IQ_RABBITMQ_LIBRARY,   \
                 #name);                                                                                             \
        return;                                                                                                      \
    }
    IQ_FUNCTIONS(IQ_RESOLVE)
#undef IQ_RESOLVE
    loaded = 1;
}

int iq_rabbitmq_load(void) {
    pthread_once(&once, load);
    return loaded;
}

const char *iq_rabbitmq_error(void) {
    pthread_once(&once, load);
    return loaded ? NULL : failure;
}

amqp_connection_state_t iq_amqp_new_connection(void) {
    return iq_rabbitmq_load() ? p_amqp_new_connection() : NULL;
}

const char *iq_amqp_error_string2(int err) {
    return iq_rabbitmq_load() ? p_amqp_error_string2(err) : failure;
}

// The rest are called with a connection, so the library is loaded: they call straight through.

int iq_amqp_destroy_connection(amqp_connection_state_t state) { return p_amqp_destroy_connection(state); }

amqp_socket_t *iq_amqp_tcp_socket_new(amqp_connection_state_t state) { return p_amqp_tcp_socket_new(state); }

amqp_socket_t *iq_amqp_ssl_socket_new(amqp_connection_state_t state) { return p_amqp_ssl_socket_new(state); }

int iq_amqp_ssl_socket_set_cacert(amqp_socket_t *self, const char *cacert) {
    return p_amqp_ssl_socket_set_cacert(self, cacert);
}

void iq_amqp_ssl_socket_set_verify_peer(amqp_socket_t *self, amqp_boolean_t verify) {
    p_amqp_ssl_socket_set_verify_peer(self, verify);
}

void iq_amqp_ssl_socket_set_verify_hostname(amqp_socket_t *self, amqp_boolean_t verify) {
    p_amqp_ssl_socket_set_verify_hostname(self, verify);
}

int iq_amqp_socket_open_noblock(amqp_socket_t *self, const char *host, int port, const struct timeval *timeout) {
    return p_amqp_socket_open_noblock(self, host, port, timeout);
}

amqp_socket_t *iq_amqp_get_socket(amqp_connection_state_t state) { return p_amqp_get_socket(state); }

int iq_amqp_get_sockfd(amqp_connection_state_t state) { return p_amqp_get_sockfd(state); }

int iq_amqp_set_rpc_timeout(amqp_connection_state_t state, const struct timeval *timeout) {
    return p_amqp_set_rpc_timeout(state, timeout);
}

int iq_amqp_set_handshake_timeout(amqp_connection_state_t state, const struct timeval *timeout) {
    return p_amqp_set_handshake_timeout(state, timeout);
}

amqp_rpc_reply_t iq_amqp_login_plain(amqp_connection_state_t state, const char *vhost, int channel_max, int frame_max,
                                     int heartbeat, const char *user, const char *password) {
    // The client says it understands a consumer canceled by the broker (consumer_cancel_notify): without it, RabbitMQ
    // cancels the consumer of a queue deleted under it without a word, and the client waits on it for ever.
    // rabbitmq-c merges this capability with its own (authentication_failure_close, exchange_exchange_bindings).
    amqp_table_entry_t capability;
    capability.key = (amqp_bytes_t){sizeof "consumer_cancel_notify" - 1, (void *)"consumer_cancel_notify"};
    capability.value.kind = AMQP_FIELD_KIND_BOOLEAN;
    capability.value.value.boolean = 1;
    amqp_table_entry_t property;
    property.key = (amqp_bytes_t){sizeof "capabilities" - 1, (void *)"capabilities"};
    property.value.kind = AMQP_FIELD_KIND_TABLE;
    property.value.value.table.num_entries = 1;
    property.value.value.table.entries = &capability;
    amqp_table_t properties = {1, &property};
    return p_amqp_login_with_properties(state, vhost, channel_max, frame_max, heartbeat, &properties, AMQP_SASL_METHOD_PLAIN,
                                        user, password);
}

amqp_rpc_reply_t iq_amqp_get_rpc_reply(amqp_connection_state_t state) { return p_amqp_get_rpc_reply(state); }

amqp_rpc_reply_t iq_amqp_connection_close(amqp_connection_state_t state, int code) {
    return p_amqp_connection_close(state, code);
}

amqp_channel_open_ok_t *iq_amqp_channel_open(amqp_connection_state_t state, amqp_channel_t channel) {
    return p_amqp_channel_open(state, channel);
}

amqp_rpc_reply_t iq_amqp_channel_close(amqp_connection_state_t state, amqp_channel_t channel, int code) {
    return p_amqp_channel_close(state, channel, code);
}

amqp_confirm_select_ok_t *iq_amqp_confirm_select(amqp_connection_state_t state, amqp_channel_t channel) {
    return p_amqp_confirm_select(state, channel);
}

amqp_basic_qos_ok_t *iq_amqp_basic_qos(amqp_connection_state_t state, amqp_channel_t channel, uint32_t prefetch_size,
                                       uint16_t prefetch_count, amqp_boolean_t global) {
    return p_amqp_basic_qos(state, channel, prefetch_size, prefetch_count, global);
}

amqp_exchange_declare_ok_t *iq_amqp_exchange_declare(amqp_connection_state_t state, amqp_channel_t channel,
                                                     amqp_bytes_t exchange, amqp_bytes_t type, amqp_boolean_t passive,
                                                     amqp_boolean_t durable, amqp_boolean_t auto_delete,
                                                     amqp_boolean_t internal, amqp_table_t arguments) {
    return p_amqp_exchange_declare(state, channel, exchange, type, passive, durable, auto_delete, internal, arguments);
}

amqp_exchange_delete_ok_t *iq_amqp_exchange_delete(amqp_connection_state_t state, amqp_channel_t channel,
                                                   amqp_bytes_t exchange, amqp_boolean_t if_unused) {
    return p_amqp_exchange_delete(state, channel, exchange, if_unused);
}

amqp_queue_declare_ok_t *iq_amqp_queue_declare(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                               amqp_boolean_t passive, amqp_boolean_t durable, amqp_boolean_t exclusive,
                                               amqp_boolean_t auto_delete, amqp_table_t arguments) {
    return p_amqp_queue_declare(state, channel, queue, passive, durable, exclusive, auto_delete, arguments);
}

amqp_queue_bind_ok_t *iq_amqp_queue_bind(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                         amqp_bytes_t exchange, amqp_bytes_t routing_key, amqp_table_t arguments) {
    return p_amqp_queue_bind(state, channel, queue, exchange, routing_key, arguments);
}

amqp_queue_unbind_ok_t *iq_amqp_queue_unbind(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                             amqp_bytes_t exchange, amqp_bytes_t routing_key, amqp_table_t arguments) {
    return p_amqp_queue_unbind(state, channel, queue, exchange, routing_key, arguments);
}

amqp_queue_delete_ok_t *iq_amqp_queue_delete(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                             amqp_boolean_t if_unused, amqp_boolean_t if_empty) {
    return p_amqp_queue_delete(state, channel, queue, if_unused, if_empty);
}

amqp_basic_consume_ok_t *iq_amqp_basic_consume(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                               amqp_bytes_t consumer_tag, amqp_boolean_t no_local, amqp_boolean_t no_ack,
                                               amqp_boolean_t exclusive, amqp_table_t arguments) {
    return p_amqp_basic_consume(state, channel, queue, consumer_tag, no_local, no_ack, exclusive, arguments);
}

amqp_basic_cancel_ok_t *iq_amqp_basic_cancel(amqp_connection_state_t state, amqp_channel_t channel,
                                             amqp_bytes_t consumer_tag) {
    return p_amqp_basic_cancel(state, channel, consumer_tag);
}

int iq_amqp_basic_publish(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t exchange,
                          amqp_bytes_t routing_key, amqp_boolean_t mandatory, amqp_boolean_t immediate,
                          struct amqp_basic_properties_t_ const *properties, amqp_bytes_t body) {
    return p_amqp_basic_publish(state, channel, exchange, routing_key, mandatory, immediate, properties, body);
}

amqp_rpc_reply_t iq_amqp_basic_get(amqp_connection_state_t state, amqp_channel_t channel, amqp_bytes_t queue,
                                   amqp_boolean_t no_ack) {
    return p_amqp_basic_get(state, channel, queue, no_ack);
}

int iq_amqp_basic_ack(amqp_connection_state_t state, amqp_channel_t channel, uint64_t delivery_tag,
                      amqp_boolean_t multiple) {
    return p_amqp_basic_ack(state, channel, delivery_tag, multiple);
}

int iq_amqp_basic_reject(amqp_connection_state_t state, amqp_channel_t channel, uint64_t delivery_tag,
                         amqp_boolean_t requeue) {
    return p_amqp_basic_reject(state, channel, delivery_tag, requeue);
}

int iq_amqp_send_method(amqp_connection_state_t state, amqp_channel_t channel, amqp_method_number_t id, void *decoded) {
    return p_amqp_send_method(state, channel, id, decoded);
}

amqp_rpc_reply_t iq_amqp_consume_message(amqp_connection_state_t state, amqp_envelope_t *envelope,
                                         const struct timeval *timeout, int flags) {
    return p_amqp_consume_message(state, envelope, timeout, flags);
}

void iq_amqp_destroy_envelope(amqp_envelope_t *envelope) { p_amqp_destroy_envelope(envelope); }

amqp_rpc_reply_t iq_amqp_read_message(amqp_connection_state_t state, amqp_channel_t channel, amqp_message_t *message,
                                      int flags) {
    return p_amqp_read_message(state, channel, message, flags);
}

void iq_amqp_destroy_message(amqp_message_t *message) { p_amqp_destroy_message(message); }

int iq_amqp_simple_wait_frame(amqp_connection_state_t state, amqp_frame_t *decoded_frame) {
    return p_amqp_simple_wait_frame(state, decoded_frame);
}

amqp_boolean_t iq_amqp_frames_enqueued(amqp_connection_state_t state) { return p_amqp_frames_enqueued(state); }

amqp_boolean_t iq_amqp_data_in_buffer(amqp_connection_state_t state) { return p_amqp_data_in_buffer(state); }

void iq_amqp_maybe_release_buffers(amqp_connection_state_t state) { p_amqp_maybe_release_buffers(state); }
