#ifndef INTENTQUEUE_CRABBITMQ_SHIM_H
#define INTENTQUEUE_CRABBITMQ_SHIM_H

#include <amqp.h>
#include <amqp_framing.h>
#include <amqp_tcp_socket.h>
#include <amqp_ssl_socket.h>
#include <poll.h>
#include <unistd.h>

/// amqp_login is variadic, which Swift cannot call: this is the PLAIN-only form.
static inline amqp_rpc_reply_t iq_amqp_login_plain(amqp_connection_state_t state, const char *vhost,
                                                   int channel_max, int frame_max, int heartbeat,
                                                   const char *user, const char *password) {
    return amqp_login(state, vhost, channel_max, frame_max, heartbeat, AMQP_SASL_METHOD_PLAIN, user, password);
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
