#ifndef INTENTQUEUE_CMICROHTTPD_SHIM_H
#define INTENTQUEUE_CMICROHTTPD_SHIM_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <microhttpd.h>

/// Leaves a URL's path and query arguments as they came: the gateway decodes
/// each path segment itself, so an id holding an encoded '/' stays one segment.
static inline size_t iq_mhd_keep_escaped(void *context, struct MHD_Connection *connection, char *text) {
    (void)context;
    (void)connection;
    size_t length = 0;
    while (text[length] != 0) length++;
    return length;
}

/// MHD_start_daemon is variadic, which Swift cannot call: this is the form the
/// gateway uses. epoll, run by the gateway's own thread (MHD_run), so that it
/// knows when a round of callbacks is over; connections may be suspended and
/// resumed from other threads (the gateway wakes its thread then);
/// `address` is where to listen; the limits bound what one client can
/// take: idle seconds before a connection is closed, connections in all and per
/// address, and the memory one connection's headers may use.
static inline struct MHD_Daemon *iq_mhd_start(const struct sockaddr *address, uint16_t port,
                                              MHD_AccessHandlerCallback handler, void *handler_context,
                                              MHD_RequestCompletedCallback completed, void *completed_context,
                                              unsigned int idle_timeout, unsigned int connection_limit,
                                              unsigned int per_address_limit, size_t connection_memory) {
    unsigned int flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    if (address->sa_family == AF_INET6) flags |= MHD_USE_IPv6;
    return MHD_start_daemon(flags, port, NULL, NULL, handler, handler_context,
                            MHD_OPTION_SOCK_ADDR, address,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_context,
                            MHD_OPTION_CONNECTION_TIMEOUT, idle_timeout,
                            MHD_OPTION_CONNECTION_LIMIT, connection_limit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, per_address_limit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connection_memory,
                            MHD_OPTION_LISTEN_BACKLOG_SIZE, 1024u,
                            MHD_OPTION_UNESCAPE_CALLBACK, iq_mhd_keep_escaped, NULL,
                            MHD_OPTION_END);
}

/// The epoll descriptor the gateway's thread waits on (readable when the daemon has work).
static inline int iq_mhd_epoll_fd(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_EPOLL_FD);
    return info == NULL ? -1 : info->epoll_fd;
}

/// The longest the gateway's thread may wait before running the daemon again, in milliseconds, at most `cap`.
static inline int iq_mhd_wait_ms(struct MHD_Daemon *daemon, int cap) {
    MHD_UNSIGNED_LONG_LONG timeout = 0;
    if (MHD_get_timeout(daemon, &timeout) != MHD_YES) return cap;
    return timeout < (MHD_UNSIGNED_LONG_LONG)cap ? (int)timeout : cap;
}

/// The port the daemon listens on (useful when it was asked for port 0).
static inline uint16_t iq_mhd_port(struct MHD_Daemon *daemon) {
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

#endif
