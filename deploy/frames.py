#!/usr/bin/env python3
"""AMQP 0-9-1 frames per intent, read from a loopback capture (deploy/frames.sh makes one).

    frames.py CAPTURE.pcap INTENTS[,INTENTS…] [--port 5672]
    frames.py --self-test

Reassembles each TCP connection to the broker's port from the capture, reads
the AMQP frames both ways, and groups the connections into the phases of an
intent-bench run: connections whose lifetimes overlap belong to one phase
(intent-bench closes each phase's connections before it opens the next's).
Connections that publish or are delivered fewer than INTENTS / 100 messages
(at least 10), such as the run's control connection, are counted apart and
left out of the phases. For each phase it prints, per intent: frames from the
clients to the broker and from the broker to the clients by method, content
headers and bodies, the TCP segments that carried them, and the bytes.
INTENTS may be a list, one count per phase, for a run whose phases carry
different numbers of intents; it then stops with an error when it finds
another number of phases.
"""
import math
import struct
import sys
from collections import Counter, defaultdict

METHODS = {
    (10, 10): "connection.start", (10, 11): "connection.start-ok", (10, 30): "connection.tune",
    (10, 31): "connection.tune-ok", (10, 40): "connection.open", (10, 41): "connection.open-ok",
    (10, 50): "connection.close", (10, 51): "connection.close-ok",
    (20, 10): "channel.open", (20, 11): "channel.open-ok", (20, 40): "channel.close", (20, 41): "channel.close-ok",
    (40, 10): "exchange.declare", (40, 11): "exchange.declare-ok", (40, 30): "exchange.bind", (40, 31): "exchange.bind-ok",
    (50, 10): "queue.declare", (50, 11): "queue.declare-ok", (50, 20): "queue.bind", (50, 21): "queue.bind-ok",
    (50, 40): "queue.delete", (50, 41): "queue.delete-ok",
    (60, 10): "basic.qos", (60, 11): "basic.qos-ok", (60, 20): "basic.consume", (60, 21): "basic.consume-ok",
    (60, 30): "basic.cancel", (60, 31): "basic.cancel-ok", (60, 40): "basic.publish", (60, 50): "basic.return",
    (60, 60): "basic.deliver", (60, 70): "basic.get", (60, 71): "basic.get-ok", (60, 72): "basic.get-empty",
    (60, 80): "basic.ack", (60, 90): "basic.reject", (60, 120): "basic.nack",
    (85, 10): "confirm.select", (85, 11): "confirm.select-ok",
}


def packets(path):
    """(time, src, sport, dst, dport, seq, payload) of each TCP segment with a payload."""
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        sys.exit("frames.py: not a pcap file: %s" % path)
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    linktype = struct.unpack(endian + "I", data[20:24])[0]
    link = {1: 14, 113: 16, 276: 20, 0: 4}.get(linktype)
    if link is None:
        sys.exit("frames.py: unsupported link type %d" % linktype)
    offset = 24
    while offset + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack(endian + "IIII", data[offset:offset + 16])
        frame = data[offset + 16:offset + 16 + incl]
        offset += 16 + incl
        ip = frame[link:]
        if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != 6:
            continue
        ihl = (ip[0] & 15) * 4
        total = struct.unpack(">H", ip[2:4])[0]
        tcp = ip[ihl:total]
        if len(tcp) < 20:
            continue
        sport, dport, seq = struct.unpack(">HHI", tcp[:8])
        payload = tcp[(tcp[12] >> 4) * 4:]
        if payload:
            yield sec + frac / (1e9 if nano else 1e6), ip[12:16], sport, ip[16:20], dport, seq, payload


class Stream:
    """One direction of one connection, reassembled by sequence number."""

    def __init__(self):
        self.expected = None
        self.buffer = bytearray()
        self.segments = 0
        self.bytes = 0
        self.pending = {}  # sequence number → payload, for segments recorded before the ones they follow
        self.frames = Counter()
        self.multiple_acks = 0
        self.started = False
        self.lost = False  # a frame did not end where its size said: the rest cannot be read

    def add(self, seq, payload):
        # Every segment is kept until the bytes before it have been read (the capture can record two segments in
        # the other order); what is still kept at the end was lost to the capture. A segment of bytes read already
        # is a retransmission, and only its new part, if any, is read.
        if self.expected is None:
            self.expected = seq
        if len(payload) > len(self.pending.get(seq, b"")):
            self.pending[seq] = payload
        while ready := [kept for kept in self.pending if self.behind(kept) < 0x80000000]:
            for kept in ready:
                data = self.pending.pop(kept)
                if self.behind(kept) < len(data):
                    self.take(data[self.behind(kept):])

    def behind(self, seq):
        """How many bytes before the next one to read `seq` is; 2^31 or more when it is ahead of it."""
        return (self.expected - seq) & 0xFFFFFFFF

    @property
    def unread(self):
        """True when the stream could not be read to its end: a frame that did not end where its size said, or
        bytes left over that make no whole frame (a frame cut off, or what was read as a size was not one)."""
        return self.lost or len(self.buffer) > 0

    @property
    def gaps(self):
        """Segments kept for want of the bytes before them: the capture lost those."""
        return len(self.pending)

    def take(self, payload):
        self.expected = (self.expected + len(payload)) & 0xFFFFFFFF
        self.segments += 1
        self.bytes += len(payload)
        self.buffer += payload
        self.parse()

    def parse(self):
        buffer = self.buffer
        if self.lost:
            buffer.clear()
            return
        position = 0
        if not self.started:
            if buffer[:4] == b"AMQP":
                if len(buffer) < 8:
                    return
                position = 8
            self.started = True
        while len(buffer) - position >= 8:
            kind, _, size = struct.unpack(">BHI", buffer[position:position + 7])
            if len(buffer) - position < size + 8:
                break
            if buffer[position + 7 + size] != 0xCE:
                self.lost = True
                buffer.clear()
                return
            body = buffer[position + 7:position + 7 + size]
            if kind == 1 and size >= 4:
                key = struct.unpack(">HH", body[:4])
                name = METHODS.get(key, "method %d.%d" % key)
                self.frames[name] += 1
                if key == (60, 80) and size >= 13 and body[12] & 1:
                    self.multiple_acks += 1
            elif kind == 2:
                self.frames["content header"] += 1
            elif kind == 3:
                self.frames["content body"] += 1
            elif kind == 8:
                self.frames["heartbeat"] += 1
            position += size + 8
        del buffer[:position]


def read_capture(path, port):
    """The streams of each connection to `port` (keyed by the client's port and "up" or "down"), and when each
    connection was first and last seen."""
    streams = defaultdict(Stream)  # (client port, "up" | "down")
    opened, last = {}, {}
    for time, src, sport, dst, dport, seq, payload in packets(path):
        if dport == port:
            key = (sport, "up")
        elif sport == port:
            key = (dport, "down")
        else:
            continue
        opened.setdefault(key[0], time)
        last[key[0]] = time
        streams[key].add(seq, payload)
    return streams, opened, last


def self_test():
    """Reads a capture made up here: two connections, frames split across segments, a segment sent twice."""
    import os
    import tempfile

    def frame(kind, payload):
        return struct.pack(">BHI", kind, 1, len(payload)) + payload + b"\xce"

    def method(class_id, method_id, rest=b""):
        return frame(1, struct.pack(">HH", class_id, method_id) + rest)

    publish = method(60, 40, b"\0\0\0") + frame(2, bytes(range(1, 15))) + frame(3, b"{}")
    up = b"AMQP\0\0\x09\x01" + publish * 2 + method(60, 80, struct.pack(">QB", 8, 1))
    down = method(60, 60, b"\0" * 12) + frame(2, b"\0" * 14) + frame(3, b"{}") + method(60, 80, struct.pack(">QB", 2, 0))
    records = []

    def segments(data, sport, dport, ranges, first=1000):
        for start, end in ranges:
            tcp = struct.pack(">HHIIBBHHH", sport, dport, (first + start) & 0xFFFFFFFF, 0, 5 << 4, 0x18, 65535, 0, 0)
            ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(tcp) + end - start, 0, 0, 64, 6, 0,
                             b"\x7f\0\0\x01", b"\x7f\0\0\x01")
            packet = b"\0" * 12 + b"\x08\0" + ip + tcp + data[start:end]
            records.append(struct.pack("<IIII", 1, len(records), len(packet), len(packet)) + packet)

    # Split mid-frame, one segment sent twice, one that overlaps the one before it, and the last two recorded in
    # the other order; its sequence numbers wrap past 2^32 on the way.
    segments(up, 40001, 5672, [(0, 5), (5, 30), (5, 30), (20, 31), (len(up) - 3, len(up)), (31, len(up) - 3)],
             first=2**32 - 25)
    segments(down, 5672, 40001, [(0, 12), (12, len(down))])
    segments(up[:8] + publish, 40002, 5672, [(0, 8 + len(publish))])
    # A frame that does not end where its size says: the rest of that stream cannot be read.
    bad = up[:8] + publish[:-1] + b"\0" + publish
    segments(bad, 40003, 5672, [(0, len(bad))])
    handle, path = tempfile.mkstemp(suffix=".pcap")
    with os.fdopen(handle, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 262144, 1) + b"".join(records))
    try:
        streams, opened, _ = read_capture(path, 5672)
    finally:
        os.remove(path)
    # Frames, acks with `multiple`, and segments read (the one sent twice is read once).
    expected = {
        (40001, "up"): ({"basic.publish": 2, "content header": 2, "content body": 2, "basic.ack": 1}, 1, 5),
        (40001, "down"): ({"basic.deliver": 1, "content header": 1, "content body": 1, "basic.ack": 1}, 0, 2),
        (40002, "up"): ({"basic.publish": 1, "content header": 1, "content body": 1}, 0, 1),
        (40003, "up"): ({"basic.publish": 1, "content header": 1}, 0, 1),
    }
    failures = []
    for key, (frames, multiple, count) in expected.items():
        stream = streams[key]
        if (dict(stream.frames), stream.multiple_acks, stream.segments, stream.gaps, stream.lost) != (
            frames, multiple, count, 0, key[0] == 40003):
            failures.append("%s: %s, %d with multiple, %d segments, %d gaps, lost %s"
                            % (key, dict(stream.frames), stream.multiple_acks, stream.segments, stream.gaps, stream.lost))
    if sorted(opened) != [40001, 40002, 40003]:
        failures.append("connections: %s" % sorted(opened))
    if failures:
        sys.exit("frames.py --self-test failed: " + "; ".join(failures))
    print("frames.py: self-test passed")


def main():
    arguments = sys.argv[1:]
    if arguments == ["--self-test"]:
        self_test()
        return
    port = 5672
    if "--port" in arguments:
        index = arguments.index("--port")
        port = int(arguments[index + 1])
        del arguments[index:index + 2]
    counts = arguments[1].split(",") if len(arguments) == 2 else []
    if not counts or not all(count.isdigit() and int(count) > 0 for count in counts):
        sys.exit("usage: frames.py CAPTURE.pcap INTENTS[,INTENTS…] [--port 5672] (see the top of this file)")
    path, counts = arguments[0], [int(count) for count in counts]
    # A phase's connections publish or are delivered at least one message per intent: the smallest count's
    # hundredth (and at least 10) keeps the others apart.
    least = max(10, math.ceil(min(counts) / 100))
    streams, opened, last = read_capture(path, port)

    def messages(client):
        return sum(streams[(client, way)].frames[name] for way in ("up", "down") for name in ("basic.publish", "basic.deliver"))

    busy = sorted((client for client in opened if messages(client) >= least), key=lambda c: opened[c])
    quiet = [client for client in opened if client not in busy]
    phases = []
    phase_end = None
    for client in busy:
        if phases and opened[client] <= phase_end:
            phases[-1].append(client)
        else:
            phases.append([client])
            phase_end = last[client]
        phase_end = max(phase_end, last[client])
    gaps = sum(stream.gaps for stream in streams.values())
    lost = sum(stream.unread for stream in streams.values())
    print("%d connections, %d in %d phases, %d quiet (under %d messages published or delivered); segments the capture lost: %d;"
          " streams not read to the end: %d" % (len(opened), len(busy), len(phases), len(quiet), least, gaps, lost))
    if not phases:
        sys.exit("frames.py: no phase found (no connection published or was delivered %d messages)" % least)
    if len(counts) > 1 and len(counts) != len(phases):
        sys.exit("frames.py: %d intent counts given for %d phases: another client on the port, or phases that overlap?"
                 % (len(counts), len(phases)))
    for number, clients in enumerate(phases, 1):
        intents = counts[min(number, len(counts)) - 1]
        print("\nphase %d: %d connections opened at +%.1f s, per intent (%d intents)"
              % (number, len(clients), opened[clients[0]] - min(opened.values()), intents))
        for way, title in (("up", "clients → broker"), ("down", "broker → clients")):
            frames = Counter()
            segments = octets = multiple = 0
            for client in clients:
                stream = streams[(client, way)]
                frames.update(stream.frames)
                segments += stream.segments
                octets += stream.bytes
                multiple += stream.multiple_acks
            count = sum(frames.values())
            print("  %s: %.2f frames in %.2f segments, %.0f bytes" % (title, count / intents, segments / intents, octets / intents))
            for name, n in frames.most_common():
                if n / intents >= 0.005:
                    extra = " (%.2f with multiple)" % (multiple / intents) if name == "basic.ack" else ""
                    print("    %-18s %.3f%s" % (name, n / intents, extra))


if __name__ == "__main__":
    main()
